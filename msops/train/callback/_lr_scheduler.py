"""LearningRateScheduler: a function of (learning rate, step) sets the rate after every step
(as `mindspore.train.LearningRateScheduler`)."""
from __future__ import annotations

import math
from typing import Callable

from msops.train.callback._callback import Callback, RunContext
from msops.train.callback._lr import lr_parameter, read_lr, write_lr

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """After each training step, `learning_rate_function(lr, cur_step_num)` is the rate of
    the next steps (written into the optimizer's learning-rate Parameter, which the compiled
    step reads: no recompile). The optimizer's learning rate must be one number."""

    def __init__(self, learning_rate_function: Callable[[float, int], float]) -> None:
        super().__init__()
        if not callable(learning_rate_function):
            raise TypeError(f"For 'LearningRateScheduler', the 'learning_rate_function' should "
                            f"be a function of (lr, step), but got "
                            f"{type(learning_rate_function).__name__}.")
        self.learning_rate_function = learning_rate_function

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        param = lr_parameter(cb, "LearningRateScheduler")
        lr = read_lr(param)
        new_lr = float(self.learning_rate_function(lr, cb.cur_step_num))
        if not math.isclose(lr, new_lr, rel_tol=1e-10):
            write_lr(param, new_lr)
