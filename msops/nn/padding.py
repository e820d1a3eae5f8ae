"""Padding layers, as `mindspore.nn`: Pad (MindSpore's per-dim pairs, CONSTANT / REFLECT /
SYMMETRIC), ZeroPad2d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d.
Each is `ops.pad`'s body (`pad_func.pad_dims`: slices, Concat, Tile), so it traces,
shards (a padded dim is taken whole) and differentiates as ops.pad does."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.cell import Cell
from msops.ops.pad_func import pad_dims

__all__ = ["Pad", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d"]


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


class Pad(Cell):
    """`Pad(paddings, mode='CONSTANT')`: x padded by paddings[d] = (before, after) on each
    dim d (one pair per dim of x, at most 4); CONSTANT fills zeros, REFLECT mirrors without
    the edge, SYMMETRIC mirrors with it."""

    _MODES = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}

    def __init__(self, paddings: tuple, mode: str = "CONSTANT") -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("paddings", paddings, tuple, name)
        if not 0 < len(paddings) <= 4 or not all(
                isinstance(p, (tuple, list)) and len(p) == 2 and all(_is_int(v) and v >= 0
                                                                     for v in p)
                for p in paddings):
            raise ValueError(f"For '{name}', the 'paddings' should be (N, 2) pairs of ints "
                             f">= 0 with 0 < N <= 4, but got {paddings}.")
        self.paddings = tuple(tuple(int(v) for v in p) for p in paddings)
        self.mode = validator.check_string("mode", mode, tuple(self._MODES), name)

    def construct(self, x: Any) -> Any:
        if len(x.shape) != len(self.paddings):
            raise ValueError(f"For '{self.cls_name}', the 'x' should have one dim per pair of "
                             f"'paddings' ({len(self.paddings)}), but got shape "
                             f"{list(x.shape)}.")
        spec = [(d, b, a) for d, (b, a) in enumerate(self.paddings)]
        return pad_dims(self.cls_name, x, spec, self._MODES[self.mode])

    def extend_repr(self) -> str:
        return f"paddings={self.paddings}, mode={self.mode}"


class _PadNd(Cell):
    """Pads the last `dims` dims of x: padding an int (every side) or a tuple (left, right,
    top, bottom, front, back: from the last dim); `ranks` the input ranks taken."""

    dims = 1
    mode = "constant"
    ranks: tuple = (2, 3)

    def __init__(self, padding: Any, value: Any = 0) -> None:
        super().__init__()
        name = self.cls_name
        sides = 2 * self.dims
        if _is_int(padding):
            padding = (int(padding),) * sides
        if not isinstance(padding, (tuple, list)) or not all(_is_int(p) for p in padding):
            raise TypeError(f"For '{name}', the 'padding' should be an int or a tuple of "
                            f"{sides} ints, but got {padding!r}.")
        if len(padding) != sides:
            raise ValueError(f"For '{name}', the 'padding' should hold {sides} ints, but got "
                             f"{len(padding)}: {padding}.")
        if self.mode != "constant" and any(p < 0 for p in padding):
            raise ValueError(f"For '{name}', the 'padding' should be >= 0, but got {padding}.")
        validator.check_value_type("value", value, (int, float), name)
        self.padding, self.value = tuple(int(p) for p in padding), value

    def construct(self, x: Any) -> Any:
        ndim = len(x.shape)
        if ndim not in self.ranks:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be "
                             f"{' or '.join(map(str, self.ranks))}-D, but got shape "
                             f"{list(x.shape)}.")
        spec = [(ndim - 1 - k, self.padding[2 * k], self.padding[2 * k + 1])
                for k in range(self.dims)]
        return pad_dims(self.cls_name, x, spec, self.mode, self.value)

    def extend_repr(self) -> str:
        return f"padding={self.padding}"


class ConstantPad1d(_PadNd):
    """`ConstantPad1d(padding, value)`: x (N, *) padded with `value` on its last dim
    (negative amounts crop)."""

    dims, ranks = 1, tuple(range(1, 9))

    def __init__(self, padding: Any, value: Any) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """`ConstantPad2d(padding, value)`: x padded with `value` on its last two dims."""

    dims, ranks = 2, tuple(range(2, 9))


class ConstantPad3d(ConstantPad1d):
    """`ConstantPad3d(padding, value)`: x padded with `value` on its last three dims."""

    dims, ranks = 3, tuple(range(3, 9))


class ZeroPad2d(_PadNd):
    """`ZeroPad2d(padding)`: x padded with zeros on its last two dims."""

    dims, ranks = 2, tuple(range(2, 9))

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0)


class _CopyPad(_PadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0)


class ReflectionPad1d(_CopyPad):
    """`ReflectionPad1d(padding)`: x (C, W) or (N, C, W) mirrored at its last dim's ends
    (without the edge; padding < W)."""

    dims, mode, ranks = 1, "reflect", (2, 3)


class ReflectionPad2d(_CopyPad):
    """`ReflectionPad2d(padding)`: x (C, H, W) or (N, C, H, W) mirrored on its last two dims."""

    dims, mode, ranks = 2, "reflect", (3, 4)


class ReflectionPad3d(_CopyPad):
    """`ReflectionPad3d(padding)`: x (C, D, H, W) or (N, C, D, H, W) mirrored on its last
    three dims."""

    dims, mode, ranks = 3, "reflect", (4, 5)


class ReplicationPad1d(_CopyPad):
    """`ReplicationPad1d(padding)`: x (C, W) or (N, C, W) with its last dim's edge values
    repeated."""

    dims, mode, ranks = 1, "replicate", (2, 3)


class ReplicationPad2d(_CopyPad):
    """`ReplicationPad2d(padding)`: x (C, H, W) or (N, C, H, W), edges repeated on its last
    two dims."""

    dims, mode, ranks = 2, "replicate", (3, 4)


class ReplicationPad3d(_CopyPad):
    """`ReplicationPad3d(padding)`: x (C, D, H, W) or (N, C, D, H, W), edges repeated on its
    last three dims."""

    dims, mode, ranks = 3, "replicate", (4, 5)
