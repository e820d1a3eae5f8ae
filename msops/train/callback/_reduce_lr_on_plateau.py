"""ReduceLROnPlateau: lower the learning rate when a monitored value stops improving (as
`mindspore.train.ReduceLROnPlateau`)."""
from __future__ import annotations

from msops.common import validator
from msops.train.callback._callback import Callback, RunContext
from msops.train.callback._lr import lr_parameter, read_lr, write_lr
from msops.train.callback._monitor import Monitor, check_mode

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(Callback):
    """At each training epoch's end, reads `monitor` (as EarlyStopping: "loss" or a key of
    the epoch's evaluation results; an epoch without it is skipped). A value better than
    the best by more than `min_delta` resets the count; otherwise, outside the `cooldown`
    epochs that follow a reduction, the count grows, and at `patience` the rate becomes
    max(lr * factor, min_lr) (when lr > min_lr) and the cooldown starts. In a parallel run
    the value is averaged over the world, so every rank changes its rate alike. The
    optimizer's learning rate must be one number."""

    def __init__(self, monitor: str = "eval_loss", factor: float = 0.1, patience: int = 10,
                 verbose: bool = False, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0) -> None:
        super().__init__()
        name = "ReduceLROnPlateau"
        self.monitor = validator.check_value_type("monitor", monitor, str, name)
        validator.check_value_type("factor", factor, (int, float), name)
        if not 0 <= factor < 1:
            raise ValueError(f"For '{name}', the 'factor' should be in [0, 1), but got "
                             f"{factor}.")
        self.factor = float(factor)
        self.patience = validator.check_non_negative_int(patience, "patience", name)
        self.verbose = validator.check_bool("verbose", verbose, name)
        self.mode = check_mode(mode, name)
        validator.check_value_type("min_delta", min_delta, (int, float), name)
        self.cooldown = validator.check_non_negative_int(cooldown, "cooldown", name)
        validator.check_value_type("min_lr", min_lr, (int, float), name)
        if min_lr < 0:
            raise ValueError(f"For '{name}', the 'min_lr' should be >= 0, but got {min_lr}.")
        self.min_lr = float(min_lr)
        self._monitor = Monitor(monitor, mode, min_delta)
        self.min_delta = self._monitor.min_delta
        self._reset()

    def _reset(self) -> None:
        self.wait, self.cooldown_counter = 0, 0
        self.best = self._monitor.worst

    def on_train_begin(self, run_context: RunContext) -> None:
        self._reset()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        param = lr_parameter(cb, "ReduceLROnPlateau")
        current = self._monitor.value(cb)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._monitor.improves(current, self.best):
            self.best, self.wait = current, 0
            return
        if self.cooldown_counter > 0:
            return
        self.wait += 1
        lr = read_lr(param)
        if self.wait >= self.patience and lr > self.min_lr:
            new_lr = max(lr * self.factor, self.min_lr)
            write_lr(param, new_lr)
            if self.verbose:
                print(f"Epoch {cb.cur_epoch_num}: ReduceLROnPlateau reducing learning rate "
                      f"to {new_lr}.", flush=True)
            self.cooldown_counter, self.wait = self.cooldown, 0
