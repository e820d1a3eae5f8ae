"""EarlyStopping: stop training when a monitored value has stopped improving (as
`mindspore.train.EarlyStopping`)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.train.callback._callback import Callback, RunContext
from msops.train.callback._monitor import Monitor, check_mode

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """At the end of each training epoch, reads `monitor` ("loss": the last step's training
    loss; otherwise the key of `cb_params.eval_results`, which `Model.fit` fills after its
    evaluations; an epoch without it is skipped) and stops training at the `patience`-th
    epoch in a row (the first, for 0 or 1) that did not improve on the best value by more
    than `min_delta` (and, with a `baseline`, beat it too). `mode` "min", "max" or "auto"
    ("max" when the name holds "acc", else "min"). `restore_best_weights` puts back the network's
    Parameters of the best epoch when it stops. In a parallel run the value is averaged
    over the world first, so every rank stops at the same epoch."""

    def __init__(self, monitor: str = "eval_loss", min_delta: float = 0, patience: int = 0,
                 verbose: bool = False, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False) -> None:
        super().__init__()
        name = "EarlyStopping"
        self.monitor = validator.check_value_type("monitor", monitor, str, name)
        validator.check_value_type("min_delta", min_delta, (int, float), name)
        self.patience = validator.check_non_negative_int(patience, "patience", name)
        self.verbose = validator.check_bool("verbose", verbose, name)
        self.restore_best_weights = validator.check_bool("restore_best_weights",
                                                         restore_best_weights, name)
        self.mode = check_mode(mode, name)
        if baseline is not None:
            validator.check_value_type("baseline", baseline, (int, float), name)
        self.baseline = baseline
        self._monitor = Monitor(monitor, mode, min_delta)
        self.min_delta = self._monitor.min_delta
        self._reset()

    def _reset(self) -> None:
        self.wait, self.stopped_epoch, self.best_epoch = 0, 0, 0
        self.best = self._monitor.worst
        self._best_weights: dict[str, np.ndarray] | None = None

    def _improves(self, current: float, reference: float) -> bool:
        return self._monitor.improves(current, reference)

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        current = self._monitor.value(cb)
        if current is None:
            return
        network = cb.train_network
        if self.restore_best_weights and self._best_weights is None:
            self._best_weights = _weights(network)
        self.wait += 1
        if self._improves(current, self.best):
            self.best, self.best_epoch = current, cb.cur_epoch_num
            if self.restore_best_weights:
                self._best_weights = _weights(network)
            if self.baseline is None or self._improves(current, self.baseline):
                self.wait = 0
        if self.wait and self.wait >= self.patience:
            self.stopped_epoch = cb.cur_epoch_num
            run_context.request_stop()
            if self.restore_best_weights and self._best_weights is not None:
                if self.verbose:
                    print("Restoring model weights from the end of the best epoch: "
                          f"{self.best_epoch}.", flush=True)
                for p in network.get_parameters():
                    if p.name in self._best_weights:
                        p.set_data(Tensor(self._best_weights[p.name]))

    def on_train_end(self, run_context: RunContext) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch}: early stopping.", flush=True)


def _weights(network: Any) -> dict[str, np.ndarray]:
    return {p.name: p.asnumpy().copy() for p in network.get_parameters()}
