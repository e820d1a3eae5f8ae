"""Redistribution planning: turn a tensor laid out as `src` into `dst`, moving the fewest bytes.

A plan is a tuple of small frozen steps, each over the groups along one device axis:

    # Transition table (per device axis a). A dim split over several axes (major first)
    # gives up only its minor-most axis; a new split always becomes the minor-most.
    #   split(i) over a   -> replicated over a   AllGatherDim(i, a)     all-gather
    #   split(i) over a   -> split(j) over a     AllToAllDims(i, j, a)  all-to-all
    #   replicated over a -> split(j) over a     Slice(j, a)            local slice, no comm
    #   partial -> replicated = all-reduce, partial -> split = reduce-scatter: emitted by
    #   the op's sharding rule, not planned here.

`plan(src, dst)` is pure and cached. Layouts on different device matrices with the same
device count are first refined to their common device matrix (`common_device_matrix`;
steps then name axes of that matrix, which each step carries). When no common matrix
exists (e.g. (2, 3) and (3, 2)) the plan gathers to full replication over src's matrix
and slices over dst's: exactly gather-then-slice. Otherwise an A* search over the per-dim
stacks of device axes returns the sequence moving the fewest bytes per rank (cost model
for a local slice of S bytes in a group of n: all-gather (n-1)*S, all-to-all (n-1)/n*S,
slice 0; ties: fewer steps). It can park a split on a third dim with an all-to-all (a
swap of two splits costs three all-to-alls, not a gather). `simulate_plan` executes a
plan for every rank at once in numpy; `redistribution_emit` turns steps into graph
nodes (and `run_plan` runs them over MPI with those very emitters).
"""
from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass, fields
from typing import Callable, Sequence

import numpy as np

from msops.common import validator
from msops.parallel.device_matrix import (axis_coordinate, axis_groups, axis_size,
                                          axis_stride, common_device_matrix)
from msops.parallel.layout import TensorLayout, compact

__all__ = ["Step", "Slice", "AllGatherDim", "AllToAllDims", "plan", "explain", "plan_bytes",
           "gather_then_slice_bytes", "simulate_plan"]

Stacks = tuple[tuple[int, ...], ...]          # per tensor dim: its device axes, major first


@dataclass(frozen=True, kw_only=True)
class Step:
    """One step over the groups along device axis `axis` of `device_matrix`.

    `in_shape`/`out_shape`: this rank's local shape before/after the step (the same on
    every rank); `bytes_sent`/`bytes_recv`: what each rank sends/receives in it.
    """

    device_matrix: tuple[int, ...]
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    bytes_sent: int = 0
    bytes_recv: int = 0

    @property
    def group_size(self) -> int:
        return axis_size(self.device_matrix, self.axis)

    def groups(self) -> tuple[tuple[int, ...], ...]:
        """The partition of ranks into this step's groups (`create_group_partition` input)."""
        return axis_groups(self.device_matrix, self.axis)

    def coordinate(self, rank: int) -> int:
        """`rank`'s position in its group (its coordinate along the axis)."""
        return axis_coordinate(self.device_matrix, self.axis, rank)

    def group_index(self, rank: int) -> int:
        """Which of `groups()` holds `rank`."""
        stride, size = axis_stride(self.device_matrix, self.axis), self.group_size
        return (rank // (stride * size)) * stride + rank % stride

    @property
    def label(self) -> str:
        """`Kind(dim=.., axis=..)`: the step without its shapes and bytes."""
        own = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self) if not f.kw_only)
        return f"{type(self).__name__}({own})"

    def __str__(self) -> str:
        return (f"{self.label} over {self.group_size} ranks: {compact(self.in_shape)} -> "
                f"{compact(self.out_shape)}, sends {self.bytes_sent} B, "
                f"receives {self.bytes_recv} B")


@dataclass(frozen=True)
class Slice(Step):
    """replicated -> split: keep this rank's block of `dim` along `axis` (no communication)."""

    dim: int
    axis: int


@dataclass(frozen=True)
class AllGatherDim(Step):
    """split -> replicated: concatenate the group's blocks along `dim` (all-gather)."""

    dim: int
    axis: int


@dataclass(frozen=True)
class AllToAllDims(Step):
    """split(src_dim) -> split(dst_dim) over `axis` (all-to-all: n x less than gather+slice)."""

    src_dim: int
    dst_dim: int
    axis: int


# -- planning ------------------------------------------------------------------------------
def _check_pair(src: TensorLayout, dst: TensorLayout, api: str) -> None:
    validator.check_value_type("src", src, TensorLayout, api)
    validator.check_value_type("dst", dst, TensorLayout, api)
    if src.tensor_shape != dst.tensor_shape:
        raise ValueError(f"For '{api}', the 'dst' tensor_shape should be {src.tensor_shape} "
                         f"(src's), but got {dst} from {src}.")
    if src.device_num != dst.device_num:
        raise ValueError(f"For '{api}', the 'dst' device count should be {src.device_num} "
                         f"(src's), but got {dst.device_num} in {dst} from {src}.")


def plan(src: TensorLayout, dst: TensorLayout, itemsize: int = 4,
         alltoall: bool = True) -> tuple[Step, ...]:
    """The cheapest step sequence turning each rank's `src` slice into its `dst` slice.

    Both layouts describe the same tensor shape over the same number of devices; bytes
    are counted for elements of `itemsize` bytes. `alltoall=False` (the context's
    enable_alltoall) plans with slices and all-gathers only. Pure and cached; () when
    nothing moves.
    """
    _check_pair(src, dst, "plan")
    validator.check_positive_int(itemsize, "itemsize", "plan")
    validator.check_bool("alltoall", alltoall, "plan")
    return _plan(src, dst, itemsize, alltoall)


@functools.lru_cache(maxsize=65536)
def _plan(src: TensorLayout, dst: TensorLayout, itemsize: int,
          alltoall: bool = True) -> tuple[Step, ...]:
    dm = common_device_matrix(src.device_matrix, dst.device_matrix)
    if dm is not None:
        a, b = src.refine(dm), dst.refine(dm)
        return _search(a.dim_axes, b.dim_axes, dm, src.tensor_shape, itemsize, alltoall)
    # no common refinement: gather to replication on src's matrix, slice on dst's
    out: tuple[Step, ...] = ()
    for layout, gather in ((src, True), (dst, False)):
        own = common_device_matrix(layout.device_matrix, layout.device_matrix)
        stacks = layout.refine(own).dim_axes
        empty = ((),) * len(stacks)
        start, goal = (stacks, empty) if gather else (empty, stacks)
        out += _search(start, goal, own, layout.tensor_shape, itemsize, alltoall)
    return out


def _local_shape(stacks: Stacks, sizes: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(s // math.prod(sizes[k] for k in st) for s, st in zip(shape, stacks))


def _cost(kind: type, elems: int, n: int) -> int:
    """Elements each rank sends (= receives) in one step of `kind` over n ranks."""
    if kind is AllGatherDim:
        return (n - 1) * elems
    if kind is AllToAllDims:
        return elems // n * (n - 1)
    return 0


def _settled(stack: tuple[int, ...], want: tuple[int, ...]) -> int:
    """Length of the common prefix of a dim's stack and the stack it should end as."""
    return next((n for n, (x, y) in enumerate(zip(stack, want)) if x != y),
                min(len(stack), len(want)))


def _replace(stacks: Stacks, dim: int, stack: tuple[int, ...]) -> Stacks:
    return stacks[:dim] + (stack,) + stacks[dim + 1:]


def _moves(state: Stacks, goal: Stacks, keep: tuple[int, ...], sizes: tuple[int, ...],
           local: tuple[int, ...], alltoall: bool = True):
    """(step kind, dims, axis, next state) for every move worth trying from `state`.

    The stack prefixes src and dst share (`keep`) never move; a new split by Slice goes
    only where dst wants it next; all-to-all may also park an axis on another dim.
    """
    for i, stack in enumerate(state):
        if len(stack) > keep[i]:
            t, popped = stack[-1], _replace(state, i, stack[:-1])
            yield AllGatherDim, (i,), t, popped
            for j in range(len(state) if alltoall else 0):
                if j != i and local[j] % sizes[t] == 0:
                    yield AllToAllDims, (i, j), t, _replace(popped, j, popped[j] + (t,))
    used = {k for stack in state for k in stack}
    for j, stack in enumerate(state):
        want = goal[j]
        if len(stack) < len(want) and want[len(stack)] not in used and \
                stack == want[:len(stack)]:
            yield Slice, (j,), want[len(stack)], _replace(state, j, stack + (want[len(stack)],))


def _search(start: Stacks, goal: Stacks, dm: tuple[int, ...], shape: tuple[int, ...],
            itemsize: int, alltoall: bool = True) -> tuple[Step, ...]:
    """A* from `start` to `goal` stacks over device matrix `dm`; cost = bytes per rank.

    Heuristic (consistent, so the first goal reached is the cheapest): the larger of
    * the growth of the local slice still to come (only an all-gather grows it, by what
      it receives), and
    * for every axis above a dim's settled prefix (the part already matching `goal`), one
      all-to-all of the smallest local slice any state can have: it must leave that dim.
    """
    sizes = tuple(axis_size(dm, k) for k in range(len(dm)))    # by device axis
    keep = tuple(_settled(s, g) for s, g in zip(start, goal))
    least = math.prod(shape) // math.prod(sizes)
    final = math.prod(_local_shape(goal, sizes, shape))

    def estimate(state: Stacks, elems: int) -> int:
        leave = sum(least * (sizes[k] - 1) // sizes[k]
                    for st, g in zip(state, goal) for k in st[_settled(st, g):])
        return max(final - elems, leave)

    best = {start: (0, 0)}
    parent: dict[Stacks, tuple] = {}
    heap = [(estimate(start, math.prod(_local_shape(start, sizes, shape))), 0, 0, 0, start)]
    tick = 0
    while heap:
        _, nsteps, _, cost, state = heapq.heappop(heap)
        if state == goal:
            break
        if (cost, nsteps) > best[state]:
            continue
        local = _local_shape(state, sizes, shape)
        elems = math.prod(local)
        for kind, dims, axis, nxt in _moves(state, goal, keep, sizes, local, alltoall):
            key = (cost + _cost(kind, elems, sizes[axis]), nsteps + 1)
            if key < best.get(nxt, (math.inf, 0)):
                best[nxt] = key
                parent[nxt] = (state, kind, dims, axis)
                tick += 1
                grown = elems * sizes[axis] if kind is AllGatherDim else \
                    elems // sizes[axis] if kind is Slice else elems
                heapq.heappush(heap, (key[0] + estimate(nxt, grown), key[1], tick, key[0], nxt))
    steps = []
    state = goal
    while state != start:
        prev, kind, dims, axis = parent[state]
        in_shape = _local_shape(prev, sizes, shape)
        moved = _cost(kind, math.prod(in_shape), sizes[axis]) * itemsize
        steps.append(kind(*dims, axis, device_matrix=dm, in_shape=in_shape,
                          out_shape=_local_shape(state, sizes, shape),
                          bytes_sent=moved, bytes_recv=moved))
        state = prev
    return tuple(reversed(steps))


def plan_bytes(steps: Sequence[Step]) -> tuple[int, int]:
    """(bytes sent, bytes received) per rank over a whole plan."""
    return sum(s.bytes_sent for s in steps), sum(s.bytes_recv for s in steps)


def gather_then_slice_bytes(src: TensorLayout, dst: TensorLayout, itemsize: int = 4) -> int:
    """Bytes each rank receives (and sends) when gathering `src` to full replication and
    slicing `dst` locally: the baseline every plan is measured against."""
    _check_pair(src, dst, "gather_then_slice_bytes")
    return (math.prod(src.tensor_shape) - math.prod(src.slice_shape)) * itemsize


def explain(src: TensorLayout, dst: TensorLayout, itemsize: int = 4) -> list[str]:
    """The plan as printable rows: header, one row per step with the bytes each rank
    sends and receives, and the per-rank totals against gather-then-slice."""
    steps = plan(src, dst, itemsize)
    sent, recv = plan_bytes(steps)
    rows = [f"{src} -> {dst}"]
    rows += [f"{i}. {s}" for i, s in enumerate(steps, 1)] or ["(no step: the layouts agree)"]
    rows.append(f"total per rank: sends {sent} B, receives {recv} B "
                f"(gather-then-slice: {gather_then_slice_bytes(src, dst, itemsize)} B)")
    return rows


# -- execution -----------------------------------------------------------------------------
def _block(x: np.ndarray, dim: int, n: int, index: int) -> np.ndarray:
    """Block `index` of `n` equal blocks of x along `dim` (a view)."""
    size = x.shape[dim] // n
    return x[(slice(None),) * dim + (slice(index * size, (index + 1) * size),)]


def _check_in_shape(step: Step, shape: tuple[int, ...], api: str) -> None:
    if tuple(shape) != step.in_shape:
        raise ValueError(f"For '{api}', the 'local shape' should be {step.in_shape} (the input "
                         f"of step {step.label}), but got {tuple(shape)}.")


def _sim_slice(step: Slice, parts: list[np.ndarray]) -> list[np.ndarray]:
    return [_block(p, step.dim, len(parts), c) for c, p in enumerate(parts)]


def _sim_gather(step: AllGatherDim, parts: list[np.ndarray]) -> list[np.ndarray]:
    whole = np.concatenate(parts, axis=step.dim)
    return [whole.copy() for _ in parts]


def _sim_alltoall(step: AllToAllDims, parts: list[np.ndarray]) -> list[np.ndarray]:
    n = len(parts)
    return [np.concatenate([_block(p, step.dst_dim, n, j) for p in parts], axis=step.src_dim)
            for j in range(n)]


_SIMULATE: dict[type, Callable] = {Slice: _sim_slice, AllGatherDim: _sim_gather,
                                   AllToAllDims: _sim_alltoall}


def simulate_plan(steps: Sequence[Step], full: np.ndarray, src: TensorLayout,
                  dst: TensorLayout | None = None) -> list[np.ndarray]:
    """Run `steps` for every rank in one process: returns each rank's final local array.

    Starts from `full[src.slice_of(r)]`; with `dst`, checks every result has dst's slice shape.
    """
    full = np.asarray(full)
    if full.shape != src.tensor_shape:
        raise ValueError(f"For 'simulate_plan', the 'full' shape should be {src.tensor_shape} "
                         f"(src's tensor_shape), but got {full.shape}.")
    parts = [full[src.slice_of(r)] for r in range(src.device_num)]
    for step in steps:
        _check_in_shape(step, parts[0].shape, "simulate_plan")
        for group in step.groups():
            for r, out in zip(group, _SIMULATE[type(step)](step, [parts[r] for r in group])):
                parts[r] = out
    if dst is not None and parts[0].shape != dst.slice_shape:
        raise ValueError(f"For 'simulate_plan', the plan should end in dst's slice shape "
                         f"{dst.slice_shape}, but got {parts[0].shape}.")
    return parts
