"""What EarlyStopping and ReduceLROnPlateau watch: a monitored value at an epoch's end and
whether a new value improves on a reference."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common.tensor import Tensor
from msops.communication import get_group_size
from msops.parallel.context import is_parallel
from msops.primitives.comm_ops import AllReduce
from msops.train.callback._loss_monitor import loss_value

__all__ = ["check_mode", "Monitor"]


def check_mode(mode: Any, cls_name: str) -> str:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"For '{cls_name}', the 'mode' should be one of ['auto', 'min', "
                         f"'max'], but got {mode!r}.")
    return mode


class Monitor:
    """`monitor` ("loss": the last step's training loss; else a key of
    `cb_params.eval_results`, which Model.fit fills) read at an epoch's end, and the
    improvement rule: by more than `min_delta`, upwards in mode "max" (and in "auto" for a
    name holding "acc"), else downwards."""

    def __init__(self, monitor: str, mode: str, min_delta: float) -> None:
        self.monitor = monitor
        maximize = mode == "max" or (mode == "auto" and "acc" in monitor)
        self.sign = 1.0 if maximize else -1.0        # improvement: sign * (new - old) > delta
        self.min_delta = abs(float(min_delta))

    @property
    def worst(self) -> float:
        """The value every first reading improves on."""
        return -np.inf if self.sign > 0 else np.inf

    def improves(self, current: float, reference: float) -> bool:
        return self.sign * (current - reference) > self.min_delta

    def value(self, cb: Any) -> float | None:
        """This epoch's value (None: not there), averaged over the world in a parallel run so
        every rank takes the same decision."""
        if self.monitor == "loss":
            value = None if cb.get("net_outputs") is None else loss_value(cb.net_outputs)
        else:
            value = (cb.get("eval_results") or {}).get(self.monitor)
            value = None if value is None else float(np.mean(
                value.asnumpy() if isinstance(value, Tensor) else value))
        if value is None:
            return None
        if is_parallel():
            total = AllReduce()(Tensor(np.array(value, np.float64)))
            value = float(total.asnumpy()) / get_group_size()
        return value
