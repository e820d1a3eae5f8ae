"""Norm and ClipByNorm, as `mindspore.nn`: the L2 norm over some axes, and a Tensor scaled
down to a maximum L2 norm; compositions of Square / ReduceSum / Sqrt (so they trace, shard
and differentiate as those do)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell
from msops.ops._tensor_args import check_float

__all__ = ["Norm", "ClipByNorm"]


def _axes(name: str, axis: Any) -> tuple:
    """An int or a tuple of ints (() and None: every dim) as a tuple."""
    if axis is None:
        return ()
    validator.check_value_type("axis", axis, (int, tuple), name)
    axes = (axis,) if isinstance(axis, int) else axis
    for a in axes:
        validator.check_value_type("axis", a, int, name)
    return tuple(axes)


class Norm(Cell):
    """`Norm(axis=(), keep_dims=False)`: sqrt(sum(x ** 2)) over `axis` (an int or a tuple;
    (): every dim), as `mindspore.nn.Norm`."""

    def __init__(self, axis: Any = (), keep_dims: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("axis", axis, (int, tuple), name)
        self.axis = _axes(name, axis)
        self.keep_dims = validator.check_bool("keep_dims", keep_dims, name)
        self.reduce_sum = ops.ReduceSum(keep_dims)
        self.square, self.sqrt = ops.Square(), ops.Sqrt()

    def construct(self, x: Any) -> Any:
        check_float(self.cls_name, "x", x)
        return self.sqrt(self.reduce_sum(self.square(x), self.axis))

    def extend_repr(self) -> str:
        return f"axis={self.axis}, keep_dims={self.keep_dims}"


class ClipByNorm(Cell):
    """`ClipByNorm(axis=None)(x, clip_norm)`, as `mindspore.nn.ClipByNorm`: x * clip_norm /
    max(l2, clip_norm), l2 the L2 norm of x over `axis` (None: every dim), kept per the
    other dims; so x is unchanged where its norm is at most clip_norm (a Tensor of shape ()
    or (1,), or broadcasting to x). The output is float32, as MindSpore's. An all-zero x
    has the gradient of the identity there (its norm is taken as 0 without sqrt(0)'s
    infinite slope)."""

    def __init__(self, axis: Any = None) -> None:
        super().__init__()
        self.axis = _axes(self.cls_name, axis)
        self.reduce_sum = ops.ReduceSum(keep_dims=True)
        self.square, self.sqrt, self.mul, self.div = ops.Square(), ops.Sqrt(), ops.Mul(), \
            ops.RealDiv()
        self.greater, self.select, self.maximum = ops.Greater(), ops.Select(), ops.Maximum()
        self.cast = ops.Cast()

    def construct(self, x: Any, clip_norm: Any) -> Any:
        name = self.cls_name
        check_float(name, "x", x)
        if not isinstance(clip_norm, Tensor):
            raise TypeError(f"For '{name}', the 'clip_norm' should be a Tensor, but got "
                            f"{type(clip_norm).__name__}.")
        try:
            np.broadcast_shapes(tuple(clip_norm.shape), tuple(x.shape))
        except ValueError:
            raise ValueError(f"For '{name}', the 'clip_norm' shape {list(clip_norm.shape)} "
                             f"should broadcast to the 'x' shape {list(x.shape)}.") from None
        x = self.cast(x, mstype.float32)
        clip = self.cast(clip_norm, mstype.float32)
        sums = self.reduce_sum(self.square(x), self.axis)
        positive = self.greater(sums, 0.0)
        safe = self.select(positive, sums, ops.ones_like(sums))
        l2 = self.select(positive, self.sqrt(safe), sums)
        return self.div(self.mul(x, clip), self.maximum(l2, clip))

    def extend_repr(self) -> str:
        return f"axis={self.axis}"
