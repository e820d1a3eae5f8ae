"""Array layers, as `mindspore.nn`: Tril and Triu (a matrix's triangle, `ops.tril` /
`ops.triu`, so the Tril / Triu primitives), OneHot (the OneHot primitive), Roll
(`ops.roll`: slices and a Concat), Unflatten (a Reshape), PixelShuffle and PixelUnshuffle
(`ops.pixel_shuffle` / `ops.pixel_unshuffle`), ChannelShuffle (`ops.channel_shuffle`)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell
from msops.ops import channel_func, mask_func, slice_func

__all__ = ["Tril", "Triu", "OneHot", "Roll", "Unflatten", "PixelShuffle", "PixelUnshuffle",
           "ChannelShuffle"]


class Tril(Cell):
    """`Tril()(x, k=0)`: x's lower triangle over its last two dims (column - row <= k), the
    rest zero, as `mindspore.nn.Tril`."""

    def construct(self, x: Any, k: int = 0) -> Any:
        return mask_func.tril(x, k)


class Triu(Cell):
    """`Triu()(x, k=0)`: x's upper triangle over its last two dims (column - row >= k), the
    rest zero, as `mindspore.nn.Triu`."""

    def construct(self, x: Any, k: int = 0) -> Any:
        return mask_func.triu(x, k)


class OneHot(Cell):
    """`OneHot(axis=-1, depth=1, on_value=1.0, off_value=0.0, dtype=float32)`, as
    `mindspore.nn.OneHot`: int indices (*) to a one-hot Tensor with a new dim of `depth` at
    `axis`, `on_value` where the index hits, `off_value` elsewhere, in `dtype`."""

    def __init__(self, axis: int = -1, depth: int = 1, on_value: float = 1.0,
                 off_value: float = 0.0, dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.axis = validator.check_int("axis", axis, name)
        self.depth = validator.check_non_negative_int(depth, "depth", name)
        for arg, v in (("on_value", on_value), ("off_value", off_value)):
            validator.check_value_type(arg, v, (int, float), name)
        if not isinstance(dtype, mstype.Type) or dtype not in mstype.number_type:
            raise TypeError(f"For '{name}', the 'dtype' should be a number dtype, but got "
                            f"{dtype!r}.")
        self.dtype = dtype
        self.on_value = Tensor(np.asarray(on_value, dtype.np_dtype))
        self.off_value = Tensor(np.asarray(off_value, dtype.np_dtype))
        self.onehot = ops.OneHot(axis)

    def construct(self, indices: Any) -> Any:
        return self.onehot(indices, self.depth, self.on_value, self.off_value)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        self.onehot.shard(in_strategy, out_strategy)


class Roll(Cell):
    """`Roll(shift, axis)`, as `mindspore.nn.Roll`: x's elements shifted by `shift` along
    `axis` (ints, or lists of one shift per axis), those pushed off one end coming back at
    the other (`ops.roll`)."""

    def __init__(self, shift: Any, axis: Any) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("shift", shift, (int, tuple, list), name)
        validator.check_value_type("axis", axis, (int, tuple, list), name)
        shifts = [shift] if isinstance(shift, int) else list(shift)
        axes = [axis] if isinstance(axis, int) else list(axis)
        if len(shifts) != len(axes):
            raise ValueError(f"For '{name}', the 'shift' and 'axis' should have the same "
                             f"length, but got {len(shifts)} and {len(axes)}.")
        for arg, values in (("shift", shifts), ("axis", axes)):
            for v in values:
                validator.check_value_type(arg, v, int, name)
        self.shift, self.axis = tuple(shifts), tuple(axes)

    def construct(self, input_x: Any) -> Any:
        for a in self.axis:
            validator.check_axis_in_range(a, len(input_x.shape), "axis", self.cls_name)
        return slice_func.roll(input_x, self.shift, self.axis)


class Unflatten(Cell):
    """`Unflatten(axis, unflattened_size)`, as `mindspore.nn.Unflatten`: x's dim `axis`
    expanded into `unflattened_size` (a tuple/list of ints, one of them may be -1; their
    product the dim's size) by a Reshape."""

    def __init__(self, axis: int, unflattened_size: Any) -> None:
        super().__init__()
        name = self.cls_name
        self.axis = validator.check_int("axis", axis, name)
        validator.check_value_type("unflattened_size", unflattened_size, (tuple, list), name)
        for d in unflattened_size:
            validator.check_value_type("unflattened_size", d, int, name)
        if not unflattened_size or sum(d == -1 for d in unflattened_size) > 1 or \
                any(d < -1 for d in unflattened_size):
            raise ValueError(f"For '{name}', the 'unflattened_size' should be a non-empty "
                             f"tuple of sizes >= 0 with at most one -1, but got "
                             f"{unflattened_size}.")
        self.unflattened_size = tuple(unflattened_size)
        self.reshape = ops.Reshape()

    def construct(self, input: Any) -> Any:
        shape = tuple(input.shape)
        axis = validator.check_axis_in_range(self.axis, len(shape), "axis", self.cls_name)
        sizes = self.unflattened_size
        known = math.prod(d for d in sizes if d != -1)
        if (-1 not in sizes and known != shape[axis]) or \
                (-1 in sizes and (known == 0 or shape[axis] % known)):
            raise ValueError(f"For '{self.cls_name}', the 'unflattened_size' {list(sizes)} "
                             f"should multiply to the size {shape[axis]} of dim {axis}, but "
                             f"does not.")
        return self.reshape(input, shape[:axis] + sizes + shape[axis + 1:])


class PixelShuffle(Cell):
    """`PixelShuffle(upscale_factor)`: x (*, C * r * r, H, W) to (*, C, H * r, W * r),
    as `mindspore.nn.PixelShuffle` (`ops.pixel_shuffle`)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = validator.check_positive_int(upscale_factor, "upscale_factor",
                                                           self.cls_name)

    def construct(self, input: Any) -> Any:
        return channel_func.shuffle(self.cls_name, input, self.upscale_factor)


class PixelUnshuffle(Cell):
    """`PixelUnshuffle(downscale_factor)`: x (*, C, H * r, W * r) to (*, C * r * r, H, W),
    as `mindspore.nn.PixelUnshuffle` (`ops.pixel_unshuffle`)."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = validator.check_positive_int(downscale_factor,
                                                             "downscale_factor", self.cls_name)

    def construct(self, input: Any) -> Any:
        return channel_func.unshuffle(self.cls_name, input, self.downscale_factor)


class ChannelShuffle(Cell):
    """`ChannelShuffle(groups)`: the C channels of x (N, C, *), `groups` groups of C / groups,
    interleaved (ShuffleNet), as `mindspore.nn.ChannelShuffle` (`ops.channel_shuffle`)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = validator.check_positive_int(groups, "groups", self.cls_name)

    def construct(self, x: Any) -> Any:
        return channel_func.channel_shuffle(x, self.groups)

    def extend_repr(self) -> str:
        return f"groups={self.groups}"
