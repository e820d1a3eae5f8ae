"""Device-matrix arithmetic: axis sizes, rank strides, coordinates and groups.

Ranks `0..prod(device_matrix)-1` are laid out row-major over the device matrix. Device
axes are numbered as tensor maps number them (MindSpore's convention): **from the
right**, axis 0 = the last entry of the device matrix. `axis_position` is the one
place that converts; everything else goes through it or `axis_size`.
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

__all__ = ["axis_position", "axis_size", "rank_strides", "axis_stride", "axis_coordinate",
           "axis_groups", "groups_over", "common_device_matrix"]


def axis_position(device_matrix: Sequence[int], axis: int) -> int:
    """The index in `device_matrix` of device axis `axis` (and back: the map is its own
    inverse)."""
    return len(device_matrix) - 1 - axis


def axis_size(device_matrix: Sequence[int], axis: int) -> int:
    """The size of device axis `axis`."""
    return device_matrix[axis_position(device_matrix, axis)]


def rank_strides(device_matrix: Sequence[int]) -> list[int]:
    """strides[k] = number of ranks between neighbours along axis k; strides[len] = the
    device count. Axis k spans rank strides [strides[k], strides[k+1])."""
    out = [1]
    for axis in range(len(device_matrix)):
        out.append(out[-1] * axis_size(device_matrix, axis))
    return out


def axis_stride(device_matrix: Sequence[int], axis: int) -> int:
    """Rank distance between neighbours along device axis `axis`."""
    return rank_strides(device_matrix)[axis]


def axis_coordinate(device_matrix: Sequence[int], axis: int, rank: int) -> int:
    """`rank`'s coordinate along device axis `axis`."""
    return (rank // axis_stride(device_matrix, axis)) % axis_size(device_matrix, axis)


@functools.lru_cache(maxsize=4096)
def axis_groups(device_matrix: tuple[int, ...], axis: int) -> tuple[tuple[int, ...], ...]:
    """Partition ranks `0..prod(device_matrix)-1` into the groups along device axis `axis`.

    A group holds the ranks that differ only in that axis's coordinate, ordered by the
    coordinate (so group rank == coordinate); groups are ordered by their first rank.
    """
    size = axis_size(device_matrix, axis)
    stride = axis_stride(device_matrix, axis)
    total = math.prod(device_matrix)
    return tuple(tuple(base + c * stride for c in range(size))
                 for base in range(total) if (base // stride) % size == 0)


@functools.lru_cache(maxsize=1024)
def groups_over(device_matrix: tuple[int, ...], axes: tuple[int, ...]) -> tuple:
    """Partition ranks into groups that differ only along device `axes`; inside a group
    ranks are ordered row-major over those axes (major first)."""
    if len(axes) == 1:
        return axis_groups(device_matrix, axes[0])
    pos = sorted(axis_position(device_matrix, a) for a in axes)
    others = [p for p in range(len(device_matrix)) if p not in pos]
    ranks = np.arange(math.prod(device_matrix)).reshape(device_matrix)
    rows = ranks.transpose(others + pos).reshape(-1, math.prod(device_matrix[p] for p in pos))
    return tuple(tuple(int(r) for r in row) for row in rows)


def common_device_matrix(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """The coarsest device matrix refining both `a` and `b` (same device count), or None.

    Each axis of `a` and of `b` becomes one or more consecutive axes of the result (the
    row-major rank numbering is unchanged); size-1 axes disappear. None when no such
    matrix exists, e.g. (2, 3) and (3, 2): their rank strides 3 and 2 do not nest.
    """
    if math.prod(a) != math.prod(b):
        return None
    cuts = sorted(set(rank_strides(a)) | set(rank_strides(b)))
    if any(hi % lo for lo, hi in zip(cuts, cuts[1:])):
        return None
    return tuple(hi // lo for lo, hi in reversed(list(zip(cuts, cuts[1:]))))
