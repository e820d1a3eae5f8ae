"""Functional spellings of the shape, index and matrix primitives, with `mindspore.ops`'
names, arguments and defaults: reshape, transpose / permute, concat / cat, stack,
unstack / unbind, split, broadcast_to, unsqueeze, flatten, cast, argmax, argmin, one_hot,
matmul, mm, bmm. Thin calls of
primitives (functional.py's `_prim`), so they trace, shard and differentiate as they do."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Concat, Reshape, Split, StridedSlice, Transpose
from msops.primitives.math_ops import BatchMatMul, Cast, MatMul
from msops.primitives.nn_ops import OneHot
from msops.primitives.reduce_ops import Argmax, Argmin
from msops.primitives.shape_ops import BroadcastTo, ExpandDims, Squeeze
from msops.primitives.stack_ops import Stack, Unstack

__all__ = ["reshape", "transpose", "permute", "concat", "cat", "stack", "unstack", "unbind",
           "split", "broadcast_to", "unsqueeze", "flatten", "cast", "argmax", "argmin", "one_hot", "matmul", "mm", "bmm"]


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
    """`Stack(axis)(tensors)`: tensors of one shape joined along a new dim `axis`."""
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("For 'stack', the 'tensors' should hold at least one tensor, but got "
                         "none.")
    return _prim(Stack, axis)(tensors)


def unstack(input_x: Any, axis: int = 0) -> tuple:
    """`Unstack(axis)(input_x)`: the slices of input_x along `axis`, each without it."""
    return _prim(Unstack, axis)(input_x)


def unbind(input: Any, dim: int = 0) -> tuple:
    """`unstack(input, dim)`."""
    return unstack(input, dim)


def broadcast_to(input: Any, shape: Any) -> Any:
    """`BroadcastTo(shape)(input)`: numpy's broadcast; a -1 in `shape` keeps input's dim."""
    return _prim(BroadcastTo, tuple(shape))(input)


def _sections(size: int, split_size_or_sections: Any) -> list:
    """The part sizes of a dim of `size`: equal parts of an int size (the last smaller when
    it does not divide), or the given list, which must add up to `size`."""
    arg = split_size_or_sections
    if isinstance(arg, int) and not isinstance(arg, bool):
        if arg <= 0:
            raise ValueError(f"For 'split', the 'split_size_or_sections' should be a positive "
                             f"int, but got {arg}.")
        return [min(arg, size - start) for start in range(0, size, arg)] or [0]
    if not isinstance(arg, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in arg):
        raise TypeError(f"For 'split', the 'split_size_or_sections' should be an int or a "
                        f"tuple/list of ints >= 0, but got {arg!r}.")
    if sum(arg) != size:
        raise ValueError(f"For 'split', the 'split_size_or_sections' should add up to the size "
                         f"{size} of the split axis, but got {tuple(arg)} (sum {sum(arg)}).")
    return list(arg)


def split(tensor: Any, split_size_or_sections: Any, axis: int = 0) -> tuple:
    """Parts of `tensor` along `axis`: of `split_size_or_sections` rows each (an int; the last
    part smaller when it does not divide) or of the listed sizes. Equal parts are one
    `Split`; unequal ones one `StridedSlice` each."""
    shape = tuple(tensor.shape)
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"For 'split', the 'axis' should be an int, but got {axis!r}.")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"For 'split', the 'axis' should be in [{-len(shape)}, {len(shape)}), "
                         f"but got {axis}.")
    axis %= len(shape)
    sizes = _sections(shape[axis], split_size_or_sections)
    if len(set(sizes)) == 1 and sizes[0] > 0:
        return tuple(_prim(Split, axis, len(sizes))(tensor))
    parts, start = [], 0
    for n in sizes:
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = start, start + n
        parts.append(_prim(StridedSlice)(tensor, tuple(begin), tuple(end), (1,) * len(shape)))
        start += n
    return tuple(parts)


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
