"""Emit a redistribution plan into a graph: each planned step becomes primitives.

    Slice(dim, axis)            -> StridedSlice with this rank's block bounds (no comm)
    AllGatherDim(dim, axis)     -> AllGather over the axis group; for dim != 0, Split along
                                   dim 0 and Concat along dim (one local copy)
    AllToAllDims(i, j, axis)    -> AlltoAll(split_dim=j, concat_dim=i) over the axis group

The planner (`redistribution_plan.plan`) is pure; this module only turns its steps into
nodes, so `Graph.dump()` shows every inserted collective with the bytes it moves.
`run_plan` drives the same emitters through a builder that runs each primitive at
once, so eager redistribution (`gather_full`, the MPI property tests) is the
compiler's own path.
"""
from __future__ import annotations

from math import prod

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor, contiguous
from msops.graph.ir import Graph, Node
from msops.parallel.context import get_auto_parallel_context
from msops.parallel.layout import TensorLayout
from msops.parallel.stages import create_stage_groups, layout_rank
from msops.parallel.redistribution_plan import (AllGatherDim, AllToAllDims, Slice, Step,
                                                _check_in_shape, plan)
from msops.primitives import array_ops, comm_ops

__all__ = ["Redistributor", "run_step", "run_plan"]


class Redistributor:
    """Converts local nodes of `graph` between layouts, as this `rank` of the SPMD program."""

    def __init__(self, graph: Graph, rank: int) -> None:
        self.graph = graph
        self.rank = rank
        self.fusion = 0

    def convert(self, node: Node, src: TensorLayout, dst: TensorLayout,
                source: str | None = None, fusion: int = 0) -> Node:
        """`node` (laid out as `src`) as layout `dst`; `node` itself when nothing moves.
        `fusion` > 0: the gathers carry that fusion id (graph/fusion.py may fuse them)."""
        if src == dst:
            return node
        alltoall = get_auto_parallel_context("enable_alltoall")
        self.fusion = fusion
        try:
            for step in plan(src, dst, node.dtype.itemsize, alltoall):
                node = _EMIT[type(step)](self, step, node, source)
        finally:
            self.fusion = 0
        node.layout = dst
        return node

    def _group(self, step: Step) -> str:
        return create_stage_groups(step.groups())

    def _slice(self, step: Slice, x: Node, source: str | None) -> Node:
        size = step.out_shape[step.dim]
        begin = [0] * len(x.shape)
        end = list(x.shape)
        begin[step.dim] = step.coordinate(self.rank) * size
        end[step.dim] = begin[step.dim] + size
        g = self.graph
        return g.apply(array_ops.StridedSlice(), [x, g.add_const(tuple(begin)),
                                                 g.add_const(tuple(end)),
                                                 g.add_const((1,) * len(x.shape))], source)

    def _gather(self, step: AllGatherDim, x: Node, source: str | None) -> Node:
        g = self.graph
        out = g.apply(comm_ops.AllGather(self._group(step)).add_prim_attr("fusion", self.fusion),
                      [x], source)
        out.comm_bytes = step.bytes_recv
        if step.dim != 0:
            n = step.group_size
            parts = g.apply(array_ops.Split(axis=0, output_num=n), [out], source)
            out = g.apply(array_ops.Concat(axis=step.dim), [parts], source)
        return out

    def _alltoall(self, step: AllToAllDims, x: Node, source: str | None) -> Node:
        prim = comm_ops.AlltoAll(split_count=step.group_size, split_dim=step.dst_dim,
                                 concat_dim=step.src_dim, group=self._group(step))
        out = self.graph.apply(prim, [x], source)
        out.comm_bytes = step.bytes_sent
        return out


_EMIT = {Slice: Redistributor._slice, AllGatherDim: Redistributor._gather,
         AllToAllDims: Redistributor._alltoall}


class _Value:
    """A value of the eager builder: a Tensor (or tuple of them) or a constant."""

    __slots__ = ("value", "shape", "comm_bytes", "layout")

    def __init__(self, value) -> None:
        self.value = value
        self.shape = getattr(value, "shape", None)
        self.comm_bytes = None
        self.layout = None


class _EagerBuilder:
    """Graph-shaped builder (`apply`, `add_const`) that runs each primitive at once."""

    def add_const(self, value) -> _Value:
        return _Value(value)

    def apply(self, prim, inputs, source=None) -> _Value:
        return _Value(prim(*[i.value for i in inputs]))


def run_step(step: Step, local: np.ndarray, rank: int | None = None) -> np.ndarray:
    """Execute one planned step on this rank's slice `local` (shape `step.in_shape`) over MPI,
    with the primitives the compiler would insert. Returns the new slice."""
    rank = layout_rank() if rank is None else rank
    validator.check_int_range(rank, 0, prod(step.device_matrix), validator.Rel.INC_LEFT,
                              "rank", "run_plan")
    _check_in_shape(step, np.shape(local), "run_plan")
    x = _Value(Tensor._wrap(contiguous(local)))
    return _EMIT[type(step)](Redistributor(_EagerBuilder(), rank), step, x, None).value.asnumpy()


def run_plan(steps, local: np.ndarray, rank: int | None = None) -> np.ndarray:
    """Execute `steps` on this rank's slice over MPI (SPMD: every rank calls it alike;
    sub-groups are created collectively on first use). Returns the new local slice."""
    for step in steps:
        local = run_step(step, local, rank)
    return np.asarray(local)
