"""Picking parts of a Tensor along one dim, as `mindspore.ops` has it: chunk, narrow,
index_select, repeat_interleave, flip, roll. Compositions of StridedSlice, Concat, Gather,
Tile and Reshape with static shapes, so they trace, shard and differentiate as those do."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Concat, Reshape, StridedSlice
from msops.primitives.gather_ops import Gather
from msops.primitives.shape_ops import Tile

__all__ = ["chunk", "narrow", "index_select", "repeat_interleave", "flip", "roll"]


def _int(name: str, arg: str, v: Any) -> int:
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"For '{name}', the '{arg}' should be an int, but got "
                        f"{type(v).__name__}.")
    return int(v)


def _axis(name: str, arg: str, axis: Any, ndim: int) -> int:
    axis = _int(name, arg, axis)
    if not -ndim <= axis < max(ndim, 1) or ndim == 0:
        raise ValueError(f"For '{name}', the '{arg}' should be in [{-ndim}, {ndim}), but got "
                         f"{axis}.")
    return axis % ndim


def slice_along(x: Any, axis: int, begin: int, end: int, stride: int = 1) -> Any:
    """x[..., begin:end:stride, ...] on dim `axis` (a negative stride with begin = end = None
    reverses the dim); the whole x when the slice is all of it."""
    n = x.shape[axis]
    if stride == 1 and begin == 0 and end == n:
        return x
    ndim = len(x.shape)
    begins, ends, strides = [0] * ndim, list(x.shape), [1] * ndim
    masks = 0
    if begin is None:                              # both ends open: a reversed dim
        masks = 1 << axis
    else:
        begins[axis], ends[axis] = begin, end
    strides[axis] = stride
    return _prim(StridedSlice, masks, masks, 0, 0, 0)(x, tuple(begins), tuple(ends),
                                                     tuple(strides))


def chunk(input: Any, chunks: int, axis: int = 0) -> tuple:
    """`input` cut along `axis` into pieces of ceil(size / chunks) (the last one smaller, so
    there may be fewer than `chunks` pieces)."""
    check_tensor("chunk", "input", input)
    chunks = _int("chunk", "chunks", chunks)
    if chunks <= 0:
        raise ValueError(f"For 'chunk', the 'chunks' should be a positive int, but got "
                         f"{chunks}.")
    axis = _axis("chunk", "axis", axis, len(input.shape))
    n = input.shape[axis]
    if n == 0:
        return (input,)
    step = -(-n // chunks)
    return tuple(slice_along(input, axis, b, min(b + step, n)) for b in range(0, n, step))


def narrow(input: Any, axis: int, start: int, length: int) -> Any:
    """input[..., start:start + length, ...] on dim `axis` (start may be negative)."""
    check_tensor("narrow", "input", input)
    axis = _axis("narrow", "axis", axis, len(input.shape))
    n = input.shape[axis]
    start, length = _int("narrow", "start", start), _int("narrow", "length", length)
    if not -n <= start <= n:
        raise ValueError(f"For 'narrow', the 'start' should be in [{-n}, {n}], but got "
                         f"{start}.")
    start = start + n if start < 0 else start
    if not 0 <= length <= n - start:
        raise ValueError(f"For 'narrow', the 'length' should be in [0, {n - start}] (the "
                         f"size {n} of dim {axis} after start {start}), but got {length}.")
    return slice_along(input, axis, start, start + length)


def index_select(input: Any, axis: int, index: Any) -> Any:
    """The slices of `input` along `axis` at the int32/int64 1-D `index`, in its order."""
    check_tensor("index_select", "input", input)
    check_tensor("index_select", "index", index)
    if index.dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For 'index_select', the 'index' should be an int32 or int64 Tensor, "
                        f"but got {index.dtype}.")
    if len(index.shape) != 1:
        raise ValueError(f"For 'index_select', the 'index' should be 1-D, but got rank "
                         f"{len(index.shape)}.")
    axis = _axis("index_select", "axis", axis, len(input.shape))
    return _prim(Gather, 0)(input, index, axis)


def _repeats(repeats: Any, n: int) -> int | list:
    """An int, or one count per element: from an int, a list/tuple or a Tensor whose values
    are known now."""
    if isinstance(repeats, Tensor):
        try:
            repeats = repeats.asnumpy()
        except Exception:
            raise ValueError("For 'repeat_interleave', the 'repeats' should be an int, a "
                             "list of ints or a Tensor whose values are known when the graph "
                             "is built (repeats from a traced value give a data-dependent "
                             "shape), but got a traced Tensor.") from None
        if repeats.dtype.kind not in "iu" or repeats.ndim > 1:
            raise TypeError(f"For 'repeat_interleave', a Tensor 'repeats' should be an int "
                            f"Tensor of rank 0 or 1, but got {repeats.dtype} of rank "
                            f"{repeats.ndim}.")
        repeats = repeats.reshape(()).item() if repeats.size == 1 else repeats.tolist()
    if isinstance(repeats, (tuple, list)):
        counts = [_int("repeat_interleave", "repeats", r) for r in repeats]
        if len(counts) == 1:
            repeats = counts[0]
        elif len(counts) != n:
            raise ValueError(f"For 'repeat_interleave', the 'repeats' should hold 1 or {n} "
                             f"counts (the size of the repeated dim), but got {len(counts)}.")
        else:
            repeats = counts
    counts = [_int("repeat_interleave", "repeats", repeats)] if not isinstance(
        repeats, list) else repeats
    if any(c < 0 for c in counts):
        raise ValueError(f"For 'repeat_interleave', the 'repeats' should be >= 0, but got "
                         f"{repeats}.")
    return repeats


def repeat_interleave(input: Any, repeats: Any, axis: int | None = None) -> Any:
    """Each element repeated `repeats` times along `axis` (the flattened input when None):
    [a, b] -> [a, a, b, b]. Per-element counts (a list or a known Tensor) gather by a
    constant index."""
    check_tensor("repeat_interleave", "input", input)
    if axis is None:
        input, axis = _prim(Reshape)(input, (-1,)), 0
    axis = _axis("repeat_interleave", "axis", axis, len(input.shape))
    shape = tuple(input.shape)
    repeats = _repeats(repeats, shape[axis])
    if isinstance(repeats, list):
        index = Tensor(np.repeat(np.arange(shape[axis], dtype=np.int64), repeats))
        return _prim(Gather, 0)(input, index, axis)
    if repeats == 1:
        return input
    if repeats == 0 or 0 in shape:
        zero = list(shape)
        zero[axis] *= repeats
        return Tensor(np.zeros(zero, input.dtype.np_dtype))
    inner = _prim(Reshape)(input, shape[:axis + 1] + (1,) + shape[axis + 1:])
    multiples = [1] * (len(shape) + 1)
    multiples[axis + 1] = repeats
    tiled = _prim(Tile)(inner, tuple(multiples))
    return _prim(Reshape)(tiled, shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:])


def _dims(name: str, arg: str, dims: Any, ndim: int) -> list:
    dims = [dims] if isinstance(dims, (int, np.integer)) else dims
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"For '{name}', the '{arg}' should be an int or a tuple/list of ints, "
                        f"but got {type(dims).__name__}.")
    out = [_axis(name, arg, d, ndim) for d in dims]
    if len(set(out)) != len(out):
        raise ValueError(f"For '{name}', the '{arg}' should not repeat a dim, but got "
                         f"{tuple(dims)}.")
    return out


def flip(input: Any, dims: Any) -> Any:
    """input with the order of its elements reversed along each of `dims`."""
    check_tensor("flip", "input", input)
    for d in _dims("flip", "dims", dims, len(input.shape)):
        input = slice_along(input, d, None, None, -1)
    return input


def roll(input: Any, shifts: Any, dims: Any = None) -> Any:
    """input's elements shifted by `shifts` along `dims`, those pushed off one end coming
    back at the other (the flattened input when dims is None, the shape kept)."""
    check_tensor("roll", "input", input)
    shape = tuple(input.shape)
    if dims is None:
        flat = roll(_prim(Reshape)(input, (-1,)), shifts, 0)
        return _prim(Reshape)(flat, shape)
    shifts = [shifts] if isinstance(shifts, (int, np.integer)) else shifts
    dims = _dims("roll", "dims", dims, len(shape))
    if not isinstance(shifts, (tuple, list)) or len(shifts) != len(dims):
        raise ValueError(f"For 'roll', the 'shifts' should hold one int per dim of 'dims' "
                         f"({len(dims)}), but got {shifts!r}.")
    for s, d in zip(shifts, dims):
        n = input.shape[d]
        s = _int("roll", "shifts", s) % n if n else 0
        if s:
            input = _prim(Concat, d)((slice_along(input, d, n - s, n),
                                      slice_along(input, d, 0, n - s)))
    return input
