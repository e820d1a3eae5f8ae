"""`mindspore.dataset.DSCallback`: hooks run by `Dataset.map(..., callbacks=...)` as rows
flow through that map: once at the start, at each epoch's (pass's) start and end, and at
the steps 1, 1 + step_size, 1 + 2 * step_size, ... of each epoch (a step is one row of
the map), before and after the map's operations run on that row.

Each hook gets a `DSRunContext`: `cur_epoch_num` (1-based), `cur_step_num_in_epoch`
(1-based, 0 before the epoch's first row) and `cur_step_num` (rows so far, over epochs).
"""
from __future__ import annotations

from typing import Any

from msops.common import validator

__all__ = ["DSCallback", "DSRunContext", "check_callbacks"]


class DSRunContext:
    """Where a map is in its run, as its callbacks see it."""

    def __init__(self) -> None:
        self.cur_epoch_num = 0
        self.cur_step_num_in_epoch = 0
        self.cur_step_num = 0

    def __repr__(self) -> str:
        return (f"DSRunContext(cur_epoch_num={self.cur_epoch_num}, cur_step_num_in_epoch="
                f"{self.cur_step_num_in_epoch}, cur_step_num={self.cur_step_num})")


class DSCallback:
    """Base of the dataset callbacks: override the hooks you need (no-ops by default).
    `step_size`: the step hooks run every `step_size` rows of an epoch, from its first."""

    def __init__(self, step_size: int = 1) -> None:
        self.step_size = validator.check_positive_int(step_size, "step_size", "DSCallback")

    def ds_begin(self, ds_run_context: DSRunContext) -> None:
        """Called once, before the map's first row."""

    def ds_epoch_begin(self, ds_run_context: DSRunContext) -> None:
        """Called at the start of each epoch (pass) of the map."""

    def ds_epoch_end(self, ds_run_context: DSRunContext) -> None:
        """Called after the last row of each epoch."""

    def ds_step_begin(self, ds_run_context: DSRunContext) -> None:
        """Called before the map's operations run on steps 1, 1 + step_size, ..."""

    def ds_step_end(self, ds_run_context: DSRunContext) -> None:
        """Called after the map's operations ran on steps 1, 1 + step_size, ..."""


def check_callbacks(callbacks: Any) -> list:
    """map's `callbacks` (None, a DSCallback or a list of them) as a list."""
    items = [] if callbacks is None else \
        list(callbacks) if isinstance(callbacks, (list, tuple)) else [callbacks]
    for cb in items:
        if not isinstance(cb, DSCallback):
            raise TypeError(f"For 'map', every 'callbacks' item should be a DSCallback, but "
                            f"got {type(cb).__name__}.")
    return items
