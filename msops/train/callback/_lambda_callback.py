"""LambdaCallback: a callback made of plain functions (as `mindspore.train.LambdaCallback`)."""
from __future__ import annotations

from typing import Callable

from msops.train.callback._callback import Callback

__all__ = ["LambdaCallback"]

_HOOKS = ("on_train_epoch_begin", "on_train_epoch_end", "on_train_step_begin",
          "on_train_step_end", "on_train_begin", "on_train_end", "on_eval_epoch_begin",
          "on_eval_epoch_end", "on_eval_step_begin", "on_eval_step_end", "on_eval_begin",
          "on_eval_end")


class LambdaCallback(Callback):
    """Each argument given is a function of the RunContext, called as that hook; the hooks
    not given do nothing."""

    def __init__(self, on_train_epoch_begin: Callable | None = None,
                 on_train_epoch_end: Callable | None = None,
                 on_train_step_begin: Callable | None = None,
                 on_train_step_end: Callable | None = None,
                 on_train_begin: Callable | None = None, on_train_end: Callable | None = None,
                 on_eval_epoch_begin: Callable | None = None,
                 on_eval_epoch_end: Callable | None = None,
                 on_eval_step_begin: Callable | None = None,
                 on_eval_step_end: Callable | None = None,
                 on_eval_begin: Callable | None = None,
                 on_eval_end: Callable | None = None) -> None:
        super().__init__()
        given = locals()
        for hook in _HOOKS:
            fn = given[hook]
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"For 'LambdaCallback', the '{hook}' should be a function of "
                                f"the run context, but got {type(fn).__name__}.")
            setattr(self, hook, fn)
