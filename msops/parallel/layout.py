"""TensorLayout: how one tensor is split over a device matrix (MindSpore's convention).

`TensorLayout(device_matrix, tensor_map, tensor_shape)`:
  * `device_matrix` — sizes of the device axes; ranks `0..prod-1` are laid out row-major
    over it (rank = ravel_multi_index(coords, device_matrix)).
  * `tensor_map[i] = k` — tensor dim i is split over device axis k, **counted from the
    right**: axis k has size `axis_size(device_matrix, k)`; `-1` = not split.
    A tuple `(k1, k2)` splits dim i over several axes, k1 major (MindSpore's multi-axis
    Layout); the redistribution planner uses it when it refines two device matrices.
  * `tensor_shape` — the full (global) shape.

Every "axis" argument below uses the tensor-map numbering (0 = rightmost device axis).
Device axes the map does not use are replica axes: ranks that differ only there hold
the same slice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from msops.common import validator
from msops.common.validator import Rel
from msops.parallel.device_matrix import (axis_coordinate, axis_groups, axis_position,
                                          axis_size, axis_stride, rank_strides)

__all__ = ["TensorLayout", "compact"]

_NAME = "TensorLayout"


def _as_axes(entry: object, i: int) -> tuple[int, ...]:
    """One tensor_map entry as a tuple of axes, major first (-1 -> ())."""
    if isinstance(entry, (tuple, list)):
        if not entry:
            return ()
        for k in entry:
            validator.check_int(f"tensor_map[{i}] element", k, _NAME)
            validator.check_non_negative_int(k, f"tensor_map[{i}] element", _NAME)
        return tuple(entry)
    validator.check_int(f"tensor_map[{i}]", entry, _NAME)
    return () if entry == -1 else (entry,)


def _map_entry(axes: tuple[int, ...]) -> int | tuple[int, ...]:
    """Canonical tensor_map entry: -1, k, or (k1, k2, ...)."""
    return -1 if not axes else axes[0] if len(axes) == 1 else axes


def compact(values: tuple) -> str:
    """A tuple printed without spaces: (2,4), (8,), ((1,0),-1)."""
    return str(values).replace(" ", "")


def _int_tuple(value: object, arg: str, positive: bool) -> tuple[int, ...]:
    validator.check_value_type(arg, value, (tuple, list), _NAME)
    check = validator.check_positive_int if positive else validator.check_non_negative_int
    return tuple(check(v, f"{arg}[{i}]", _NAME) for i, v in enumerate(value))


@dataclass(frozen=True, repr=False)
class TensorLayout:
    """An immutable layout value; see the module docstring for the convention.

    >>> lay = TensorLayout((2, 4), (1, -1), (16, 32))
    >>> lay.slice_shape, lay.slice_of(5)
    ((8, 32), (slice(8, 16, None), slice(0, 32, None)))
    """

    device_matrix: tuple[int, ...]
    tensor_map: tuple[int | tuple[int, ...], ...]
    tensor_shape: tuple[int, ...]
    #: per tensor dim, its device axes (major first); derived, not compared
    dim_axes: tuple[tuple[int, ...], ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        dm = _int_tuple(self.device_matrix, "device_matrix", positive=True)
        shape = _int_tuple(self.tensor_shape, "tensor_shape", positive=False)
        validator.check_value_type("tensor_map", self.tensor_map, (tuple, list), _NAME)
        validator.check("len(tensor_map)", len(self.tensor_map), "len(tensor_shape)",
                        len(shape), Rel.EQ, _NAME)
        dim_axes = tuple(_as_axes(e, i) for i, e in enumerate(self.tensor_map))
        seen: set[int] = set()
        for i, axes in enumerate(dim_axes):
            for k in axes:
                validator.check_int_range(k, -1 if len(axes) == 1 else 0, len(dm),
                                          Rel.INC_LEFT, f"tensor_map[{i}]", _NAME)
                if k in seen:
                    raise ValueError(f"For '{_NAME}', the 'tensor_map' should use each device "
                                     f"axis at most once, but got axis {k} twice in "
                                     f"{tuple(self.tensor_map)}.")
                seen.add(k)
            parts = math.prod(axis_size(dm, k) for k in axes)
            if shape[i] % parts:
                raise ValueError(f"For '{_NAME}', the 'tensor_shape[{i}]' should be divisible "
                                 f"by {parts} (the devices that tensor_map[{i}] = "
                                 f"{self.tensor_map[i]} splits it over, device_matrix {dm}), "
                                 f"but got {shape[i]}.")
        object.__setattr__(self, "device_matrix", dm)
        object.__setattr__(self, "tensor_shape", shape)
        object.__setattr__(self, "tensor_map", tuple(_map_entry(a) for a in dim_axes))
        object.__setattr__(self, "dim_axes", dim_axes)

    # -- construction ------------------------------------------------------------------
    @classmethod
    def from_strategy(cls, strategy: Sequence[int], tensor_shape: Sequence[int],
                      device_num: int) -> "TensorLayout":
        """The layout of an op input whose strategy cuts dim i into `strategy[i]` slices.

        Device matrix = the strategy, dim i over device_matrix[i]. A strategy that uses
        fewer than `device_num` devices is repeated: a repeat axis of size
        `device_num // prod(strategy)` is appended on the **right** of the device matrix
        (DESIGN.md; MindSpore puts it on the left), so neighbouring ranks are replicas.
        """
        name = f"{_NAME}.from_strategy"
        validator.check_positive_int(device_num, "device_num", name)
        validator.check_value_type("strategy", strategy, (tuple, list), name)
        tensor_shape = _int_tuple(tensor_shape, "tensor_shape", positive=False)
        validator.check("len(strategy)", len(strategy), "len(tensor_shape)", len(tensor_shape),
                        Rel.EQ, name)
        for i, s in enumerate(strategy):
            validator.check_positive_int(s, f"strategy[{i}]", name)
            if tensor_shape[i] % s:
                raise ValueError(f"For '{name}', the 'tensor_shape[{i}]' should be divisible "
                                 f"by strategy[{i}]: {s}, but got {tensor_shape[i]} (strategy "
                                 f"{tuple(strategy)}, shape {tensor_shape}).")
        used = math.prod(strategy)
        if device_num % used:
            raise ValueError(f"For '{name}', the 'device_num' should be a multiple of the "
                             f"devices the strategy {tuple(strategy)} uses ({used}), "
                             f"but got {device_num}.")
        repeat = device_num // used
        dm = tuple(strategy) + ((repeat,) if repeat > 1 else ())
        return cls(dm, tuple(axis_position(dm, i) for i in range(len(strategy))), tensor_shape)

    def refine(self, device_matrix: Sequence[int]) -> "TensorLayout":
        """The same layout over a finer `device_matrix` (see `common_device_matrix`)."""
        fine = rank_strides(device_matrix)
        coarse = rank_strides(self.device_matrix)
        index = {stride: j for j, stride in enumerate(fine)}
        if fine[-1] != coarse[-1] or any(c not in index for c in coarse):
            raise ValueError(f"For '{_NAME}.refine', the 'device_matrix' should refine "
                             f"{self.device_matrix}, but got {tuple(device_matrix)}.")
        expand = [tuple(range(index[coarse[k + 1]] - 1, index[coarse[k]] - 1, -1))
                  for k in range(len(self.device_matrix))]
        tensor_map = tuple(tuple(j for k in axes for j in expand[k]) for axes in self.dim_axes)
        return TensorLayout(tuple(device_matrix), tensor_map, self.tensor_shape)

    # -- shapes and slices ---------------------------------------------------------------
    @property
    def device_num(self) -> int:
        return math.prod(self.device_matrix)

    def axis_size(self, axis: int) -> int:
        """Size of device axis `axis` (map numbering: 0 = rightmost)."""
        return axis_size(self.device_matrix, axis)

    def dim_parts(self, dim: int) -> int:
        """How many slices tensor dim `dim` is cut into."""
        return math.prod(self.axis_size(k) for k in self.dim_axes[dim])

    @property
    def slice_shape(self) -> tuple[int, ...]:
        """The shape of the slice each rank holds."""
        return tuple(s // self.dim_parts(i) for i, s in enumerate(self.tensor_shape))

    def _check_rank(self, rank: int, api: str) -> int:
        validator.check_int_range(rank, 0, self.device_num, Rel.INC_LEFT, "rank",
                                  f"{_NAME}.{api}")
        return rank

    def coordinate(self, rank: int, axis: int) -> int:
        """`rank`'s coordinate along device axis `axis`."""
        return axis_coordinate(self.device_matrix, axis, rank)

    def slice_index(self, rank: int) -> tuple[int, ...]:
        """Per tensor dim, the index of the block `rank` holds (0 on unsplit dims)."""
        self._check_rank(rank, "slice_index")
        out = []
        for axes in self.dim_axes:
            idx = 0
            for k in axes:                           # mixed radix, major axis first
                idx = idx * self.axis_size(k) + self.coordinate(rank, k)
            out.append(idx)
        return tuple(out)

    def slice_of(self, rank: int) -> tuple[slice, ...]:
        """The part of the full tensor that `rank` holds: `full[layout.slice_of(rank)]`."""
        return tuple(slice(b * n, (b + 1) * n)
                     for b, n in zip(self.slice_index(rank), self.slice_shape))

    # -- device groups ---------------------------------------------------------------------
    def axis_groups(self, axis: int) -> tuple[tuple[int, ...], ...]:
        """The partition of ranks along device axis `axis` (one MPI sub-group each)."""
        validator.check_int_range(axis, 0, len(self.device_matrix), Rel.INC_LEFT, "axis",
                                  f"{_NAME}.axis_groups")
        return axis_groups(self.device_matrix, axis)

    def group_of(self, rank: int, axis: int) -> tuple[int, ...]:
        """The ranks that differ from `rank` only along `axis`, ordered by that coordinate."""
        self._check_rank(rank, "group_of")
        stride = axis_stride(self.device_matrix, axis)
        base = rank - self.coordinate(rank, axis) * stride
        return tuple(base + c * stride for c in range(self.axis_size(axis)))

    def replica_axes(self) -> tuple[int, ...]:
        """Device axes the map does not use (ascending): the tensor is repeated over them."""
        used = {k for axes in self.dim_axes for k in axes}
        return tuple(k for k in range(len(self.device_matrix)) if k not in used)

    def replica_group(self, rank: int) -> tuple[int, ...]:
        """The ranks holding the same slice as `rank` (itself included), ascending."""
        self._check_rank(rank, "replica_group")
        group = [rank]
        for k in self.replica_axes():
            stride = axis_stride(self.device_matrix, k)
            group = [r + (c - self.coordinate(r, k)) * stride
                     for r in group for c in range(self.axis_size(k))]
        return tuple(sorted(group))

    def __str__(self) -> str:
        return (f"L[dm={compact(self.device_matrix)} map={compact(self.tensor_map)} "
                f"shape={compact(self.tensor_shape)}]")

    __repr__ = __str__
