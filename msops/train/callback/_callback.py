"""The callback protocol of `Model.train` / `Model.eval` (as `mindspore.train.Callback`).

`Model` calls each hook of every callback with a `RunContext`, whose `original_args()` is
the run's `cb_params` (an attribute bag: train_network, epoch_num, batch_num,
cur_epoch_num, cur_step_num, net_outputs, ...). MindSpore 1.x's hook names (`begin`,
`epoch_begin`, `step_end`, ...) still work: the 2.x hooks call them by default.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["Callback", "RunContext", "CallbackParam", "CallbackList"]


class CallbackParam(dict):
    """cb_params: a dict whose keys read and write as attributes."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"For 'cb_params', there is no attribute '{key}'; it has "
                                 f"{sorted(self)}.") from None

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value


class RunContext:
    """What a callback receives: the run's parameters and a way to stop it."""

    def __init__(self, original_args: CallbackParam) -> None:
        self._original_args = original_args
        self._stop_requested = False

    def original_args(self) -> CallbackParam:
        return self._original_args

    def request_stop(self) -> None:
        """Stop training after the current step (Model checks after each step)."""
        self._stop_requested = True

    def get_stop_requested(self) -> bool:
        return self._stop_requested


class Callback:
    """Base of callbacks: override the hooks you need; each is a no-op by default (the
    2.x train hooks fall back to the 1.x names)."""

    def begin(self, run_context: RunContext) -> None:
        """1.x: called once before training."""

    def epoch_begin(self, run_context: RunContext) -> None:
        """1.x: called before each epoch."""

    def epoch_end(self, run_context: RunContext) -> None:
        """1.x: called after each epoch."""

    def step_begin(self, run_context: RunContext) -> None:
        """1.x: called before each step."""

    def step_end(self, run_context: RunContext) -> None:
        """1.x: called after each step."""

    def end(self, run_context: RunContext) -> None:
        """1.x: called once after training."""

    def on_train_begin(self, run_context: RunContext) -> None:
        self.begin(run_context)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_begin(run_context)

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        self.epoch_end(run_context)

    def on_train_step_begin(self, run_context: RunContext) -> None:
        self.step_begin(run_context)

    def on_train_step_end(self, run_context: RunContext) -> None:
        self.step_end(run_context)

    def on_train_end(self, run_context: RunContext) -> None:
        self.end(run_context)

    def on_eval_begin(self, run_context: RunContext) -> None:
        """Called once before evaluation."""

    def on_eval_epoch_begin(self, run_context: RunContext) -> None:
        """Called before the evaluation pass."""

    def on_eval_epoch_end(self, run_context: RunContext) -> None:
        """Called after the evaluation pass."""

    def on_eval_step_begin(self, run_context: RunContext) -> None:
        """Called before each evaluation step."""

    def on_eval_step_end(self, run_context: RunContext) -> None:
        """Called after each evaluation step."""

    def on_eval_end(self, run_context: RunContext) -> None:
        """Called once after evaluation."""

    def __enter__(self) -> "Callback":
        return self

    def __exit__(self, *err: Any) -> None:
        """Callbacks are context managers in MindSpore (`with` around a run)."""


class CallbackList(Callback):
    """Several callbacks called in order, as one."""

    def __init__(self, callbacks: Iterable[Callback]) -> None:
        self.callbacks = list(callbacks)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_") or name in ("begin", "end", "epoch_begin", "epoch_end",
                                               "step_begin", "step_end"):
            callbacks = object.__getattribute__(self, "callbacks")

            def call_all(run_context: RunContext) -> None:
                for cb in callbacks:
                    getattr(cb, name)(run_context)
            return call_all
        return object.__getattribute__(self, name)


def callback_list(callbacks: Any) -> CallbackList:
    """`callbacks` (None, a Callback or a list of them) as a CallbackList, checked."""
    items = [] if callbacks is None else \
        list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for cb in items:
        if not isinstance(cb, Callback):
            raise TypeError(f"For 'Model', every callback should be a Callback, but got "
                            f"{type(cb).__name__}.")
    return CallbackList(items)
