"""More of `mindspore.ops`' array functions: shapes and dtypes taken from a size or another
tensor (expand, expand_as, type_as, view_as), MindSpore's slicing spellings (strided_slice,
slice, reverse, take), repeats (repeat_elements), masks and reorderings built from a length per
row (sequence_mask, reverse_sequence, index_fill), range, aminmax, top_k, and
population_count and unique_with_pad (the PopulationCount and UniqueWithPad primitives).

Each is a composition of existing primitives (BroadcastTo, Cast, Reshape, StridedSlice,
GatherD, Select, ReduceMin / ReduceMax, TopK) with static shapes, so it traces, shards and
differentiates as they do; the constants it needs (iotas, masks) are numpy constants.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.creation_func import arange, number
from msops.ops.mask_func import masked_fill
from msops.ops.slice_func import _axis, _int, flip, repeat_interleave
from msops.primitives.array_ops import Reshape, StridedSlice
from msops.primitives.elementwise_ops import Less, Select
from msops.primitives.gather_ops import Gather, GatherD
from msops.primitives.math_ops import Add, Cast, Equal, ReduceMax, Sub
from msops.primitives.reduce_ops import ReduceAny, ReduceMin
from msops.primitives.shape_ops import BroadcastTo
from msops.primitives.piecewise_ops import PopulationCount
from msops.primitives.sort_ops import TopK, UniqueWithPad

__all__ = ["expand", "expand_as", "type_as", "view_as", "range", "strided_slice", "slice",
           "reverse", "repeat_elements", "sequence_mask", "reverse_sequence", "index_fill",
           "aminmax", "top_k", "take", "population_count", "unique_with_pad"]


def _known_ints(name: str, arg: str, value: Any) -> tuple:
    """A tuple of ints from a tuple / list of ints or an int Tensor whose values are known
    when the graph is built (the result's shape depends on them)."""
    if isinstance(value, Tensor):
        try:
            array = value.asnumpy()
        except Exception:
            raise ValueError(f"For '{name}', the '{arg}' should be a tuple of ints or a Tensor "
                             f"whose values are known when the graph is built (a shape made "
                             f"from a traced value would depend on data), but got a traced "
                             f"Tensor.") from None
        if array.dtype.kind not in "iu" or array.ndim > 1:
            raise TypeError(f"For '{name}', a Tensor '{arg}' should be a 1-D int Tensor, but "
                            f"got {value.dtype} of rank {array.ndim}.")
        return tuple(int(v) for v in array.reshape(-1))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"For '{name}', the '{arg}' should be a tuple of ints or an int Tensor, "
                        f"but got {type(value).__name__}.")
    return tuple(_int(name, arg, v) for v in value)


def expand(input_x: Any, size: Any) -> Any:
    """input_x broadcast to `size` (a tuple or an int Tensor of known values; -1 keeps the
    input's dim; extra leading dims are added), numpy's broadcasting rules."""
    check_tensor("expand", "input_x", input_x)
    size = _known_ints("expand", "size", size)
    shape = tuple(input_x.shape)
    if len(size) < len(shape):
        raise ValueError(f"For 'expand', the 'size' should have at least the rank of "
                         f"'input_x' ({len(shape)}), but got {list(size)}.")
    lead = len(size) - len(shape)
    for i, (want, have) in enumerate(zip(size[lead:], shape)):
        if want != -1 and have not in (1, want):
            raise ValueError(f"For 'expand', the 'size[{lead + i}]' should be -1, {have} or "
                             f"any size when input_x's dim is 1, but got {want} (input_x "
                             f"shape {list(shape)}).")
    if any(s == -1 for s in size[:lead]) or any(s < -1 for s in size):
        raise ValueError(f"For 'expand', the 'size' should hold sizes >= 0 (-1 only for the "
                         f"input's own dims), but got {list(size)}.")
    return _prim(BroadcastTo, size)(input_x)


def expand_as(input: Any, other: Any) -> Any:
    """input broadcast to `other`'s shape."""
    check_tensor("expand_as", "input", input)
    check_tensor("expand_as", "other", other)
    return expand(input, tuple(other.shape))


def type_as(input: Any, other: Any) -> Any:
    """input cast to `other`'s dtype (input itself when they agree)."""
    check_tensor("type_as", "input", input)
    check_tensor("type_as", "other", other)
    return input if input.dtype == other.dtype else _prim(Cast)(input, other.dtype)


def view_as(input: Any, other: Any) -> Any:
    """input reshaped to `other`'s shape (the element counts must agree)."""
    check_tensor("view_as", "input", input)
    check_tensor("view_as", "other", other)
    if int(np.prod(input.shape)) != int(np.prod(other.shape)):
        raise ValueError(f"For 'view_as', the 'other' shape {list(other.shape)} should hold as "
                         f"many elements as the 'input' shape {list(input.shape)}.")
    return _prim(Reshape)(input, tuple(other.shape))


def range(start: Any, end: Any, step: Any, maxlen: int = 1000000) -> Tensor:  # noqa: A001
    """[start, end) in steps of `step`, a constant 1-D Tensor: int64 from ints, float32 from
    floats, a Tensor's own dtype from one-element Tensors (of known values). Ints and floats
    may not be mixed; more than `maxlen` values is an error, as MindSpore's Range."""
    args = {"start": start, "end": end, "step": step}
    dtypes = {a.dtype for a in args.values() if isinstance(a, Tensor)}
    values = {k: number("range", k, v) for k, v in args.items()}
    kinds = {isinstance(v, float) for v in values.values()}
    if any(isinstance(v, bool) for v in values.values()) or len(kinds) != 1 or len(dtypes) > 1:
        raise TypeError(f"For 'range', the 'start', 'end' and 'step' should be all ints or all "
                        f"floats of one dtype, but got {start!r}, {end!r} and {step!r}.")
    if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen <= 0:
        raise ValueError(f"For 'range', the 'maxlen' should be a positive int, but got "
                         f"{maxlen!r}.")
    if values["step"] == 0:
        raise ValueError("For 'range', the 'step' should not be 0, but got 0.")
    dtype = dtypes.pop() if dtypes else mstype.float32 if kinds == {True} else mstype.int64
    out = arange(values["start"], values["end"], values["step"], dtype=dtype)
    if out.shape[0] > maxlen:
        raise ValueError(f"For 'range', the number of values {out.shape[0]} should be <= "
                         f"'maxlen' {maxlen}.")
    return out


def strided_slice(input_x: Any, begin: Any, end: Any, strides: Any, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0) -> Any:
    """`StridedSlice(masks)(input_x, begin, end, strides)`: input_x[begin:end:strides] with
    MindSpore's begin / end / ellipsis / new-axis / shrink-axis masks (see the primitive)."""
    check_tensor("strided_slice", "input_x", input_x)
    specs = [_known_ints("strided_slice", n, v) for n, v in
             (("begin", begin), ("end", end), ("strides", strides))]
    return _prim(StridedSlice, begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                 shrink_axis_mask)(input_x, *specs)


def slice(input_x: Any, begin: Any, size: Any) -> Any:  # noqa: A001
    """input_x[begin[i]:begin[i] + size[i]] on every dim (size -1: to the end of the dim)."""
    check_tensor("slice", "input_x", input_x)
    shape = tuple(input_x.shape)
    begin, size = _known_ints("slice", "begin", begin), _known_ints("slice", "size", size)
    if not len(begin) == len(size) == len(shape):
        raise ValueError(f"For 'slice', the 'begin' and 'size' should have one entry per dim of "
                         f"'input_x' ({len(shape)}), but got {list(begin)} and {list(size)}.")
    ends = []
    for i, (b, s, n) in enumerate(zip(begin, size, shape)):
        e = n if s == -1 else b + s
        if not 0 <= b <= n or s < -1 or e > n:
            raise ValueError(f"For 'slice', the 'begin[{i}]' and 'size[{i}]' should address "
                             f"[0, {n}] (dim {i} of input_x {list(shape)}), but got begin "
                             f"{b} and size {s}.")
        ends.append(e)
    return _prim(StridedSlice)(input_x, begin, tuple(ends), (1,) * len(shape))


def reverse(x: Any, axis: Any) -> Any:
    """x with the order of its elements reversed along each dim of `axis` (`flip`)."""
    check_tensor("reverse", "x", x)
    return flip(x, axis)


def repeat_elements(x: Any, rep: int, axis: int = 0) -> Any:
    """Each slice of x along `axis` repeated `rep` (> 0) times in place: [a, b] -> [a, a, b, b]."""
    check_tensor("repeat_elements", "x", x)
    rep = _int("repeat_elements", "rep", rep)
    if rep <= 0:
        raise ValueError(f"For 'repeat_elements', the 'rep' should be > 0, but got {rep}.")
    _axis("repeat_elements", "axis", axis, len(x.shape))
    return repeat_interleave(x, rep, axis)


def _int_tensor(name: str, arg: str, value: Any) -> Any:
    check_tensor(name, arg, value)
    if value.dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For '{name}', the '{arg}' should be an int32 or int64 Tensor, but "
                        f"got {value.dtype}.")
    return value


def sequence_mask(lengths: Any, maxlen: int | None = None) -> Any:
    """A bool mask of shape lengths.shape + (maxlen,): mask[..., j] = j < lengths[...].
    `maxlen` None takes the largest length (a value: known lengths only)."""
    _int_tensor("sequence_mask", "lengths", lengths)
    if maxlen is None:
        try:
            values = lengths.asnumpy()
        except Exception:
            raise ValueError("For 'sequence_mask', the 'maxlen' should be given when 'lengths' "
                             "is traced (the output's shape would depend on data).") from None
        maxlen = int(values.max()) if values.size else 0
    maxlen = _int("sequence_mask", "maxlen", maxlen)
    if maxlen <= 0:
        raise ValueError(f"For 'sequence_mask', the 'maxlen' should be a positive int, but got "
                         f"{maxlen}.")
    shape = tuple(lengths.shape)
    column = _prim(Reshape)(lengths, shape + (1,))
    positions = Tensor(np.arange(maxlen, dtype=lengths.dtype.np_dtype))
    return _prim(Less)(positions, column)


def reverse_sequence(x: Any, seq_lengths: Any, seq_dim: int, batch_dim: int = 0) -> Any:
    """x with the first seq_lengths[b] elements along `seq_dim` reversed in each slice b of
    `batch_dim`, the rest kept: one GatherD by the index L - 1 - j (j < L) or j."""
    check_tensor("reverse_sequence", "x", x)
    _int_tensor("reverse_sequence", "seq_lengths", seq_lengths)
    shape = tuple(x.shape)
    ndim = len(shape)
    seq_dim = _axis("reverse_sequence", "seq_dim", seq_dim, ndim)
    batch_dim = _axis("reverse_sequence", "batch_dim", batch_dim, ndim)
    if seq_dim == batch_dim:
        raise ValueError(f"For 'reverse_sequence', the 'seq_dim' and 'batch_dim' should be "
                         f"different dims, but both are {seq_dim}.")
    if tuple(seq_lengths.shape) != (shape[batch_dim],):
        raise ValueError(f"For 'reverse_sequence', the 'seq_lengths' shape should be "
                         f"[{shape[batch_dim]}] (dim {batch_dim} of x), but got "
                         f"{list(seq_lengths.shape)}.")
    try:                                   # known lengths are checked; traced ones clamp
        known = seq_lengths.asnumpy()
    except Exception:
        known = None
    if known is not None and (known.min(initial=0) < 0 or known.max(initial=0) > shape[seq_dim]):
        raise ValueError(f"For 'reverse_sequence', the 'seq_lengths' should be in [0, "
                         f"{shape[seq_dim]}] (dim {seq_dim} of x), but got {known.tolist()}.")
    view = [1] * ndim
    view[batch_dim] = shape[batch_dim]
    lengths = _prim(Reshape)(_prim(Cast)(seq_lengths, mstype.int64), tuple(view))
    along = [1] * ndim
    along[seq_dim] = shape[seq_dim]
    j = Tensor(np.arange(shape[seq_dim], dtype=np.int64).reshape(along))
    flipped = _prim(Sub)(_prim(Sub)(lengths, 1), j)
    index = _prim(Select)(_prim(BroadcastTo, shape)(_prim(Less)(j, lengths)),
                          _prim(BroadcastTo, shape)(flipped), _prim(BroadcastTo, shape)(j))
    return _prim(GatherD)(x, seq_dim, index)


def index_fill(x: Any, axis: int, index: Any, value: Any) -> Any:
    """x with `value` (a number or a 0-d Tensor) in every slice along `axis` that the 1-D int
    `index` names (negative indices count from the end)."""
    check_tensor("index_fill", "x", x)
    _int_tensor("index_fill", "index", index)
    shape = tuple(x.shape)
    axis = _axis("index_fill", "axis", axis, len(shape))
    if len(index.shape) > 1:
        raise ValueError(f"For 'index_fill', the 'index' should be 0-D or 1-D, but got shape "
                         f"{list(index.shape)}.")
    n = shape[axis]
    try:
        known = index.asnumpy()
    except Exception:
        known = None
    if known is not None and known.size and not (-n <= known.min() and known.max() < n):
        raise ValueError(f"For 'index_fill', the 'index' should be in [{-n}, {n}) (dim {axis} "
                         f"of x), but got {known.tolist()}.")
    index = _prim(Reshape)(index, (1, -1))
    wrapped = _prim(Select)(_prim(Less)(index, 0), _prim(Add)(index, n), index)
    rows = Tensor(np.arange(n, dtype=index.dtype.np_dtype).reshape(n, 1))
    hit = _prim(ReduceAny, False)(_prim(Equal)(rows, wrapped), (1,))
    view = [1] * len(shape)
    view[axis] = n
    return masked_fill(x, _prim(BroadcastTo, shape)(_prim(Reshape)(hit, tuple(view))), value)


def aminmax(input: Any, *, axis: int | None = 0, keepdims: bool = False) -> tuple:
    """(the minimum, the maximum) of input along `axis` (None: over every element)."""
    check_tensor("aminmax", "input", input)
    if not isinstance(keepdims, bool):
        raise TypeError(f"For 'aminmax', the 'keepdims' should be a bool, but got "
                        f"{type(keepdims).__name__}.")
    ndim = len(input.shape)
    if axis is None:
        axes = ()
    elif ndim == 0:
        if _int("aminmax", "axis", axis) not in (0, -1):
            raise ValueError(f"For 'aminmax', the 'axis' should be in [-1, 0] for a 0-d input, "
                             f"but got {axis}.")
        axes = ()
    else:
        axes = (_axis("aminmax", "axis", axis, ndim),)
    return _prim(ReduceMin, keepdims)(input, axes), _prim(ReduceMax, keepdims)(input, axes)


def top_k(input_x: Any, k: int, sorted: bool = True) -> tuple:  # noqa: A002
    """`TopK(sorted)(input_x, k)`: (values, int32 indices) of the k largest elements along
    the last dim, largest first."""
    check_tensor("top_k", "input_x", input_x)
    return _prim(TopK, sorted)(input_x, _int("top_k", "k", k))




def take(input: Any, index: Any) -> Any:
    """The elements of input, flattened, at the int64 `index` (negative counts from the end):
    index's shape. One Gather."""
    check_tensor("take", "input", input)
    check_tensor("take", "index", index)
    if index.dtype != mstype.int64:
        raise TypeError(f"For 'take', the 'index' should be an int64 Tensor, but got "
                        f"{index.dtype}.")
    n = int(np.prod(input.shape))
    try:
        known = index.asnumpy()
    except Exception:                     # traced: Gather gives zeros outside [0, n)
        known = None
    if known is not None and known.size and not (-n <= known.min() and known.max() < n):
        raise ValueError(f"For 'take', every value of 'index' should be in [{-n}, {n}) (the "
                         f"elements of input {list(input.shape)}), but got {known.tolist()}.")
    flat = _prim(Reshape)(input, (n,))
    wrapped = _prim(Select)(_prim(Less)(index, 0), _prim(Add)(index, n), index)
    return _prim(Gather, 0)(flat, wrapped, 0)


def population_count(input_x: Any) -> Any:
    """`PopulationCount()(input_x)`: the number of 1 bits of each int element (two's
    complement for negative ones), uint8."""
    check_tensor("population_count", "input_x", input_x)
    return _prim(PopulationCount)(input_x)


def unique_with_pad(x: Any, pad_num: int) -> tuple:
    """`UniqueWithPad()(x, pad_num)`: (x's distinct values in first-occurrence order padded
    with pad_num to x's length, each element's position among them)."""
    check_tensor("unique_with_pad", "x", x)
    return _prim(UniqueWithPad)(x, _int("unique_with_pad", "pad_num", pad_num))
