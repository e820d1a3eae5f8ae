"""Loss-scale managers, as `mindspore.train` (`mindspore.amp`): what `Model(...,
loss_scale_manager=...)` takes to train with loss scaling.

A manager holds the scale's settings and makes the cell that updates the scale inside
the training step (`get_update_cell()`, msops/nn/loss_scale.py); `update_loss_scale`
is the same rule on the host, for a loop that checks overflow itself.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell
from msops.nn.loss_scale import (DynamicLossScaleUpdateCell, FixedLossScaleUpdateCell,
                                 check_loss_scale, check_scale_factor)

__all__ = ["LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager"]


def _overflowed(overflow: Any, cls_name: str) -> bool:
    """`overflow` (a bool, or a bool Tensor of one value) as a Python bool."""
    if isinstance(overflow, Tensor):
        overflow = overflow.asnumpy()
    if isinstance(overflow, np.ndarray) and overflow.size == 1:
        overflow = overflow.reshape(())[()]
    if not isinstance(overflow, (bool, np.bool_)):
        raise TypeError(f"For '{cls_name}.update_loss_scale', the 'overflow' should be a bool, "
                        f"but got {type(overflow).__name__}.")
    return bool(overflow)


class LossScaleManager:
    """The base of loss-scale managers: `get_loss_scale()`, `update_loss_scale(overflow)`,
    `get_update_cell()` (None: the step does not check overflow)."""

    def get_loss_scale(self) -> float:
        raise NotImplementedError(f"For '{type(self).__name__}', get_loss_scale() is not "
                                  f"defined.")

    def update_loss_scale(self, overflow: Any) -> None:
        raise NotImplementedError(f"For '{type(self).__name__}', update_loss_scale() is not "
                                  f"defined.")

    def get_update_cell(self) -> Cell | None:
        raise NotImplementedError(f"For '{type(self).__name__}', get_update_cell() is not "
                                  f"defined.")


class FixedLossScaleManager(LossScaleManager):
    """`FixedLossScaleManager(loss_scale=128.0, drop_overflow_update=True)`: a constant scale.

    With `drop_overflow_update` the step checks overflow and skips an overflowing update
    (TrainOneStepWithLossScaleCell with a FixedLossScaleUpdateCell); without it Model trains
    `TrainOneStepCell(..., sens=loss_scale)` and no step is skipped: give the optimizer the
    same `loss_scale`, which divides the gradients by it."""

    def __init__(self, loss_scale: float = 128.0, drop_overflow_update: bool = True) -> None:
        name = type(self).__name__
        self._loss_scale = check_loss_scale(loss_scale, "loss_scale", name)
        self._drop_overflow_update = validator.check_bool("drop_overflow_update",
                                                          drop_overflow_update, name)

    def get_loss_scale(self) -> float:
        return self._loss_scale

    def get_drop_overflow_update(self) -> bool:
        """Whether an overflowing step skips its update."""
        return self._drop_overflow_update

    def update_loss_scale(self, overflow: Any) -> None:
        """The scale is fixed: nothing changes (the argument is checked)."""
        _overflowed(overflow, type(self).__name__)

    def get_update_cell(self) -> Cell | None:
        """A FixedLossScaleUpdateCell, or None without `drop_overflow_update`."""
        if not self._drop_overflow_update:
            return None
        return FixedLossScaleUpdateCell(self._loss_scale)


class DynamicLossScaleManager(LossScaleManager):
    """`DynamicLossScaleManager(init_loss_scale=2**24, scale_factor=2, scale_window=2000)`:
    the scale is divided by `scale_factor` (not below 1) on an overflowing step, whose update
    is skipped, and multiplied by it after `scale_window` steps in a row without overflow."""

    def __init__(self, init_loss_scale: float = 2 ** 24, scale_factor: int = 2,
                 scale_window: int = 2000) -> None:
        name = type(self).__name__
        self.loss_scale = check_loss_scale(init_loss_scale, "init_loss_scale", name)
        self.scale_factor = check_scale_factor(scale_factor, name)
        self.scale_window = validator.check_positive_int(scale_window, "scale_window", name)
        self.cur_iter = 1
        self.last_overflow_iter = 0

    def get_loss_scale(self) -> float:
        return self.loss_scale

    def get_drop_overflow_update(self) -> bool:
        """Always True: an overflowing step skips its update."""
        return True

    def update_loss_scale(self, overflow: Any) -> None:
        """The host-side rule of DynamicLossScaleUpdateCell, one step."""
        if _overflowed(overflow, type(self).__name__):
            self.loss_scale = max(self.loss_scale / self.scale_factor, 1.0)
            self.last_overflow_iter = self.cur_iter
        elif self.cur_iter - self.last_overflow_iter >= self.scale_window:
            self.loss_scale *= self.scale_factor
            self.last_overflow_iter = self.cur_iter
        self.cur_iter += 1

    def get_update_cell(self) -> Cell:
        """A DynamicLossScaleUpdateCell starting at the current scale."""
        return DynamicLossScaleUpdateCell(self.loss_scale, self.scale_factor,
                                          self.scale_window)
