"""Cells that gather parameter slices for checkpoints (MindSpore's `parallel._cell_wrapper`).

MindSpore spells the module under `parallel`, but its cells are `nn.Cell`s, so it sits in
the `train` layer above `nn` (tests/test_layers.py names this one exception). The cells run
their collectives at once, outside the parallel pass: their input is already this rank's slice.
"""
from __future__ import annotations

from typing import Any

from msops.communication import GlobalComm
from msops.nn.cell import Cell
from msops.parallel.stages import stage_group
from msops.primitives.comm_ops import AllGather

__all__ = ["AllGatherCell", "SaveOptShardCkptCell", "get_allgather_cell",
           "destroy_allgather_cell"]

_allgather_cell: Cell | None = None


class _EagerCell(Cell):
    """A Cell whose construct always runs eagerly (never traced, never partitioned)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.construct(*args, **kwargs)


class AllGatherCell(_EagerCell):
    """AllGather along dim 0 over `group`: `(x1, ...) -> (N*x1, ...)` in group-rank order.

    Gathers the slices of a model-parallel parameter for a checkpoint."""

    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        super().__init__(auto_prefix=False)
        self.allgather = AllGather(group)

    def construct(self, x: Any) -> Any:
        return self.allgather(x)


class SaveOptShardCkptCell(_EagerCell):
    """AllGather over `group` (the optimizer-shard group), then over the world (a pipeline
    stage's devices when pipelined).

    `(x1, ...) -> (W*x1, ...)` with W the world (stage) size: the blocks of the first
    gather, gathered again. Optimizer-sharded weights: their group rebuilds the
    model-parallel slice, the world the whole parameter."""

    def __init__(self, group: str) -> None:
        super().__init__(auto_prefix=False)
        self.allgather1 = AllGather(group)
        self.allgather2 = AllGather(stage_group())

    def construct(self, x: Any) -> Any:
        return self.allgather2(self.allgather1(x))


def get_allgather_cell(group: str | None, need_merge_twice: bool = False) -> Cell:
    """The gathering cell for `group` (empty: the world, or this rank's pipeline stage's
    devices, which lay out its parameters), kept until `destroy_allgather_cell()`; a
    SaveOptShardCkptCell when `need_merge_twice`."""
    global _allgather_cell
    if need_merge_twice:
        _allgather_cell = SaveOptShardCkptCell(group or stage_group())
    else:
        _allgather_cell = AllGatherCell(group or stage_group())
    return _allgather_cell


def destroy_allgather_cell() -> None:
    """Forget the cell `get_allgather_cell` made."""
    global _allgather_cell
    _allgather_cell = None
