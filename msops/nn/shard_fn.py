"""`ms.shard(fn, in_strategy, ...)`: a Cell or a function whose inputs, outputs and named
Parameters are laid out as given, the other ops' strategies left to sharding propagation
(MindSpore 2.3+'s `mindspore.shard`, also `mindspore.parallel.shard`).

    block = ms.shard(net.block, in_strategy=((2, 1),), parameter_plan={"dense.weight": (1, 2)})
    y = block(x)            # compiled in either mode; inline inside a traced construct

As in MindSpore, the call switches the auto-parallel context to `auto_parallel` with
`search_mode="sharding_propagation"` and needs a parallel mode set before it.
"""
from __future__ import annotations

from typing import Any, Callable

from msops.jit import jit
from msops.nn.cell import Cell
from msops.parallel.context import (ParallelMode, get_auto_parallel_context,
                                    set_auto_parallel_context)

__all__ = ["shard"]

_MODES = (ParallelMode.SEMI_AUTO_PARALLEL, ParallelMode.AUTO_PARALLEL)


class _FunctionCell(Cell):
    """A function as a Cell, so `Cell.shard` pins its inputs' and outputs' layouts."""

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.__dict__["_fn"] = fn

    @property
    def cls_name(self) -> str:
        return "shard"

    def construct(self, *args: Any) -> Any:
        return self._fn(*args)


def shard(fn: Callable, in_strategy: tuple, out_strategy: tuple | None = None,
          parameter_plan: dict | None = None, device: str = "Ascend", level: int = 0) -> Callable:
    """`fn` (a Cell, sharded in place, or a function) as a callable compiled under the
    auto-parallel flow: `in_strategy` / `out_strategy` lay out its inputs / outputs (tuples
    of ints or Layouts, one per tensor), `parameter_plan` stores a Cell's named Parameters
    in the layouts it gives. Called inside a traced construct it runs inline."""
    mode = get_auto_parallel_context("parallel_mode")
    if mode not in _MODES:
        raise RuntimeError(f"For 'shard', the 'parallel_mode' should be one of {_MODES} "
                           f"(set_auto_parallel_context), but got {mode!r}.")
    if isinstance(fn, Cell):
        cell = fn.shard(in_strategy, out_strategy, parameter_plan, device, level)
    elif callable(fn):
        cell = _FunctionCell(fn).shard(in_strategy, out_strategy, parameter_plan, device, level)
    else:
        raise TypeError(f"For 'shard', the 'fn' should be a Cell or a function, but got "
                        f"{type(fn).__name__}.")
    set_auto_parallel_context(parallel_mode=ParallelMode.AUTO_PARALLEL,
                              search_mode="sharding_propagation")
    return jit(cell.__call__)
