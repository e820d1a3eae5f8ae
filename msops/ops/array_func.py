"""Functional spellings of the shape, index and matrix primitives, with `mindspore.ops`'
names, arguments and defaults: reshape, transpose / permute, concat / cat, stack,
unsqueeze, flatten, cast, argmax, argmin, one_hot, matmul, mm, bmm. Thin calls of
primitives (functional.py's `_prim`), so they trace, shard and differentiate as they do."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Concat, Reshape, Transpose
from msops.primitives.math_ops import BatchMatMul, Cast, MatMul
from msops.primitives.nn_ops import OneHot
from msops.primitives.reduce_ops import Argmax, Argmin
from msops.primitives.shape_ops import ExpandDims, Squeeze

__all__ = ["reshape", "transpose", "permute", "concat", "cat", "stack", "unsqueeze", "flatten",
           "cast", "argmax", "argmin", "one_hot", "matmul", "mm", "bmm"]


def reshape(input: Any, shape: Any) -> Any:
    """`Reshape()(input, shape)` (one dim may be -1)."""
    return _prim(Reshape)(input, tuple(shape))


def transpose(input: Any, dims: Any) -> Any:
    """`Transpose()(input, dims)`: dims permuted."""
    return _prim(Transpose)(input, tuple(dims))


def permute(input: Any, axis: Any) -> Any:
    """`transpose(input, axis)`."""
    return transpose(input, axis)


def concat(tensors: Any, axis: int = 0) -> Any:
    """`Concat(axis)(tensors)`."""
    return _prim(Concat, axis)(tuple(tensors))


cat = concat


def unsqueeze(input: Any, dim: int) -> Any:
    """`ExpandDims()(input, dim)`: a dim of size 1 inserted at `dim`."""
    return _prim(ExpandDims)(input, dim)


def stack(tensors: Any, axis: int = 0) -> Any:
    """Tensors of one shape joined along a new dim `axis` (each expanded, then concatenated)."""
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("For 'stack', the 'tensors' should hold at least one tensor, but got "
                         "none.")
    ndim = len(tensors[0].shape) + 1
    if not -ndim <= axis < ndim:
        raise ValueError(f"For 'stack', the 'axis' should be in [{-ndim}, {ndim}), but got "
                         f"{axis}.")
    axis %= ndim
    return _prim(Concat, axis)(tuple(_prim(ExpandDims)(t, axis) for t in tensors))


def flatten(input: Any, order: str = "C", *, start_dim: int = 1, end_dim: int = -1) -> Any:
    """Dims start_dim..end_dim (inclusive) merged into one; row-major only ("C")."""
    if order != "C":
        raise ValueError(f"For 'flatten', the 'order' should be 'C' (msops stores row-major "
                         f"only), but got {order!r}.")
    shape = tuple(input.shape)
    if not shape:
        return reshape(input, (1,))
    ndim = len(shape)
    for name, d in (("start_dim", start_dim), ("end_dim", end_dim)):
        if not -ndim <= d < ndim:
            raise ValueError(f"For 'flatten', the '{name}' should be in [{-ndim}, {ndim}), but "
                             f"got {d}.")
    start, end = start_dim % ndim, end_dim % ndim
    if start > end:
        raise ValueError(f"For 'flatten', the 'start_dim' should be <= 'end_dim': {end_dim}, "
                         f"but got {start_dim}.")
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def cast(input: Any, dtype: mstype.Type) -> Any:
    """`Cast()(input, dtype)`."""
    return _prim(Cast)(input, dtype)


def _arg_index(cls: type, input: Any, axis: Any, keepdims: bool, out: mstype.Type) -> Any:
    if axis is None:
        index = _prim(cls, 0, out)(reshape(input, (-1,)))
        return reshape(index, (1,) * len(input.shape)) if keepdims else index
    index = _prim(cls, axis, out)(input)
    return _prim(ExpandDims)(index, axis % len(input.shape)) if keepdims else index


def argmax(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """Index (int64) of the first maximum along `dim`; of the flattened input when None."""
    return _arg_index(Argmax, input, dim, keepdim, mstype.int64)


def argmin(input: Any, axis: int | None = None, keepdims: bool = False) -> Any:
    """Index (int32, as MindSpore) of the first minimum along `axis`; of the flattened input
    when None."""
    return _arg_index(Argmin, input, axis, keepdims, mstype.int32)


def one_hot(indices: Any, depth: int, on_value: Any = 1, off_value: Any = 0,
            axis: int = -1) -> Any:
    """`OneHot(axis)(indices, depth, on_value, off_value)`; Python numbers become int64
    scalars (float ones float32), as MindSpore."""
    def scalar(v: Any) -> Any:
        if hasattr(v, "dtype"):
            return v
        from msops.common.tensor import Tensor
        return Tensor(np.asarray(v, np.float32 if isinstance(v, float) else np.int64))
    return _prim(OneHot, axis)(indices, depth, scalar(on_value), scalar(off_value))


def matmul(input: Any, other: Any) -> Any:
    """The matrix product with numpy's rules: 1-D operands become a row / a column (the
    added dim removed again), batch dims broadcast (`MatMul` for 2-D x 2-D, else
    `BatchMatMul`)."""
    a_nd, b_nd = len(input.shape), len(other.shape)
    if not a_nd or not b_nd:
        raise ValueError(f"For 'matmul', both inputs should have rank >= 1, but got ranks "
                         f"{a_nd} and {b_nd}.")
    x = _prim(ExpandDims)(input, 0) if a_nd == 1 else input
    y = _prim(ExpandDims)(other, -1) if b_nd == 1 else other
    if len(x.shape) == len(y.shape) == 2:
        out = _prim(MatMul)(x, y)
    else:
        rank = max(len(x.shape), len(y.shape), 3)
        x = reshape(x, (1,) * (rank - len(x.shape)) + tuple(x.shape))
        y = reshape(y, (1,) * (rank - len(y.shape)) + tuple(y.shape))
        out = _prim(BatchMatMul)(x, y)
        out_rank = max(a_nd + (a_nd == 1), b_nd + (b_nd == 1))
        if out_rank < rank:                  # only 2-D operands were raised to 3-D
            out = reshape(out, tuple(out.shape)[rank - out_rank:])
    if a_nd == 1:
        out = _prim(Squeeze, -2)(out)
    if b_nd == 1:
        out = _prim(Squeeze, -1)(out)
    return out


def mm(input: Any, mat2: Any) -> Any:
    """`MatMul()(input, mat2)`: two matrices."""
    return _prim(MatMul)(input, mat2)


def bmm(input_x: Any, mat2: Any) -> Any:
    """`BatchMatMul()(input_x, mat2)`: batched matrices, batch dims broadcast."""
    return _prim(BatchMatMul)(input_x, mat2)
