"""Functional spellings of the ordering and scanning primitives, with `mindspore.ops`' names,
arguments and defaults: sort, argsort, topk, max, min (values and indices) and cumsum.
Thin calls of primitives (`_prim`), so they trace, shard and differentiate as they do."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import StridedSlice
from msops.primitives.elementwise_ops import Maximum, Minimum, Select
from msops.primitives.math_ops import Cast, ReduceMax
from msops.primitives.reduce_ops import ArgMaxWithValue, ArgMinWithValue, ReduceMin
from msops.primitives.scan_ops import CumSum
from msops.primitives.shape_ops import BroadcastTo
from msops.primitives.gather_ops import GatherD
from msops.primitives.sort_ops import SearchSorted, Sort, TopK

__all__ = ["sort", "argsort", "topk", "max", "min", "cumsum", "searchsorted", "bucketize"]


def sort(input_x: Any, axis: int = -1, descending: bool = False) -> tuple:
    """`Sort(axis, descending)(input_x)`: (sorted values, their int32 indices); stable."""
    return _prim(Sort, axis, descending)(input_x)


def argsort(input: Any, axis: int = -1, descending: bool = False) -> Any:
    """The int32 indices that sort `input` along `axis` (stable)."""
    return _prim(Sort, axis, descending)(input)[1]


def _check_int(name: str, arg: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"For '{name}', the '{arg}' should be an int, but got {value!r}.")


def topk(input: Any, k: int, dim: int | None = None, largest: bool = True,
         sorted: bool = True) -> tuple:  # noqa: A002
    """(values, int32 indices) of the k largest (or, `largest=False`, smallest) elements
    along `dim` (None: the last), in order; the lower index first among equals. The last
    dim's largest are one `TopK`; any other case a stable `Sort` cut to its first k."""
    shape = tuple(input.shape)
    ndim = len(shape)
    _check_int("topk", "k", k)
    if dim is None:
        dim = -1
    _check_int("topk", "dim", dim)
    if not ndim or not -ndim <= dim < ndim:
        raise ValueError(f"For 'topk', the 'dim' should be in [{-ndim}, {ndim}) for input "
                         f"shape {list(shape)}, but got {dim}.")
    dim %= ndim
    if not 0 <= k <= shape[dim]:
        raise ValueError(f"For 'topk', the 'k' should be in [0, {shape[dim]}] (dim {dim} of "
                         f"input shape {list(shape)}), but got {k}.")
    if largest and dim == ndim - 1:
        return _prim(TopK, sorted)(input, k)
    values, indices = _prim(Sort, dim, largest)(input)
    end = list(shape)
    end[dim] = k
    cut = (0,) * ndim, tuple(end), (1,) * ndim
    return _prim(StridedSlice)(values, *cut), _prim(StridedSlice)(indices, *cut)


def _extreme(name: str, with_value: type, pick: type, reduce: type, input: Any, axis: Any,
             keepdims: bool, initial: Any, where: Any) -> tuple:
    """(values, indices) of max or min: `with_value` (ArgMaxWithValue / ArgMinWithValue)
    along `axis` after `initial` bounds the elements (`pick`: Maximum / Minimum) and
    `where` replaces the unselected ones by it. With axis None (or a 0-d input) the value
    is the extreme of every element and the index 0 (int32), as MindSpore documents."""
    zero = Tensor(np.zeros((), np.int32))
    if not input.shape:
        return input, zero
    if axis is None:
        return _prim(reduce, False)(input, ()), zero
    _check_int(name, "axis", axis)
    if initial is not None:
        if not isinstance(initial, (int, float, bool, np.number)):
            raise TypeError(f"For '{name}', the 'initial' should be a number, but got "
                            f"{initial!r}.")
        bound = Tensor(np.asarray(initial, mstype.dtype_to_nptype(input.dtype)))
        input = _prim(pick)(input, bound)
    if where is not None:
        if initial is None:
            raise ValueError(f"For '{name}', the 'initial' should be given with 'where' (it "
                             f"replaces the elements where is False), but got None.")
        if not isinstance(where, Tensor):
            where = Tensor(np.asarray(where, np.bool_))
        mask = _prim(BroadcastTo, tuple(input.shape))(where)
        input = _prim(Select)(mask, input, bound)
    index, value = _prim(with_value, axis, keepdims)(input)
    return value, index


def max(input: Any, axis: int | None = None, keepdims: bool = False, *,  # noqa: A001
        initial: Any = None, where: Any = None) -> tuple:
    """(maximum, index of its first occurrence) along `axis` (`ArgMaxWithValue`); `initial`
    is the least value an output takes, `where` (with `initial`) masks elements out."""
    return _extreme("max", ArgMaxWithValue, Maximum, ReduceMax, input, axis, keepdims,
                    initial, where)


def min(input: Any, axis: int | None = None, keepdims: bool = False, *,  # noqa: A001
        initial: Any = None, where: Any = None) -> tuple:
    """(minimum, index of its first occurrence) along `axis` (`ArgMinWithValue`); `initial`
    is the greatest value an output takes, `where` (with `initial`) masks elements out."""
    return _extreme("min", ArgMinWithValue, Minimum, ReduceMin, input, axis, keepdims,
                    initial, where)


def cumsum(x: Any, axis: int, dtype: mstype.Type | None = None) -> Any:
    """`CumSum()(x, axis)`: the running sum along `axis`; `dtype` casts x first."""
    if dtype is not None:
        x = _prim(Cast)(x, dtype)
    return _prim(CumSum)(x, axis)


def searchsorted(sorted_sequence: Any, values: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Any:
    """Where each value would be inserted in its row of `sorted_sequence` (ascending along
    the last dim; or in the order `sorter`, int64 indices of that dim, gives): the first
    such index, the last with `right` / side='right'. int64, or int32 with `out_int32`."""
    api = "searchsorted"
    for arg, flag in (("out_int32", out_int32), ("right", right)):
        if not isinstance(flag, bool):
            raise TypeError(f"For '{api}', the '{arg}' should be a bool, but got "
                            f"{type(flag).__name__}.")
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"For '{api}', the 'side' should be 'left' or 'right', but got "
                             f"{side!r}.")
        if side == "left" and right:
            raise ValueError(f"For '{api}', the 'side' 'left' contradicts right=True.")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = _prim(GatherD)(sorted_sequence, -1, sorter)
    dtype = mstype.int32 if out_int32 else mstype.int64
    return _prim(SearchSorted, dtype, right)(sorted_sequence, values)


def bucketize(input: Any, boundaries: Any, *, right: bool = False) -> Any:
    """The bucket of each element of `input` among the ascending `boundaries` (a list of
    numbers): i with boundaries[i-1] < x <= boundaries[i] (right: boundaries[i-1] <= x <
    boundaries[i]); int32."""
    if not isinstance(boundaries, (list, tuple)) or not all(
            isinstance(b, (int, float)) and not isinstance(b, bool) for b in boundaries):
        raise TypeError(f"For 'bucketize', the 'boundaries' should be a list of numbers, but "
                        f"got {boundaries!r}.")
    edges = Tensor(np.asarray(boundaries, input.dtype.np_dtype).reshape(-1))
    return searchsorted(edges, input, out_int32=True, right=right)
