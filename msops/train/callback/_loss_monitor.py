"""LossMonitor: print the loss every `per_print_times` steps; stop on a NaN/Inf loss."""
from __future__ import annotations

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.train.callback._callback import Callback, RunContext

__all__ = ["LossMonitor"]


def loss_value(outputs) -> float:
    """The loss of a step's outputs (a Tensor, a number, or a tuple whose first is the loss)."""
    if isinstance(outputs, (tuple, list)) and outputs:
        outputs = outputs[0]
    if isinstance(outputs, Tensor):
        outputs = outputs.asnumpy()
    return float(np.mean(outputs))


class LossMonitor(Callback):
    """Prints `epoch: E step: S, loss is L` (S counted within the epoch) every
    `per_print_times` steps (0: never); a NaN or Inf loss is a ValueError that stops
    training, as MindSpore."""

    def __init__(self, per_print_times: int = 1) -> None:
        super().__init__()
        self._per_print_times = validator.check_non_negative_int(per_print_times,
                                                                 "per_print_times", "LossMonitor")
        self._last_print_step = 0

    def on_train_step_end(self, run_context: RunContext) -> None:
        cb = run_context.original_args()
        loss = loss_value(cb.net_outputs)
        step_in_epoch = (cb.cur_step_num - 1) % cb.batch_num + 1
        if np.isnan(loss) or np.isinf(loss):
            raise ValueError(f"For 'LossMonitor', epoch: {cb.cur_epoch_num} step: "
                             f"{step_in_epoch}: invalid loss {loss}, terminating training.")
        if self._per_print_times and \
                cb.cur_step_num - self._last_print_step >= self._per_print_times:
            self._last_print_step = cb.cur_step_num
            print(f"epoch: {cb.cur_epoch_num} step: {step_in_epoch}, loss is {loss}",
                  flush=True)
