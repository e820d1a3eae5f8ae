"""TimeMonitor: the time of each epoch and of its average step."""
from __future__ import annotations

import time

from msops.common import validator
from msops.train.callback._callback import Callback, RunContext

__all__ = ["TimeMonitor"]


class TimeMonitor(Callback):
    """Prints `epoch time: T ms, per step time: S ms` after every epoch; `data_size` (steps
    per epoch) defaults to the run's batch_num."""

    def __init__(self, data_size: int | None = None) -> None:
        super().__init__()
        if data_size is not None:
            validator.check_positive_int(data_size, "data_size", "TimeMonitor")
        self.data_size = data_size
        self.epoch_time = 0.0
        self.epoch_times: list[float] = []          # ms, one per epoch (for tests and logs)

    def on_train_epoch_begin(self, run_context: RunContext) -> None:
        self.epoch_time = time.perf_counter()

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        ms = (time.perf_counter() - self.epoch_time) * 1000
        steps = self.data_size or run_context.original_args().batch_num
        self.epoch_times.append(ms)
        print(f"epoch time: {ms:5.3f} ms, per step time: {ms / steps:5.3f} ms", flush=True)
