"""Tensor indexing and assignment, `x[...]` and `x[...] = v`, with numpy's semantics.

Ints, slices (any step), `...` and `None` become StridedSlice's begin/end/strides and its
masks (an int drops its dim, `None` inserts one), so `x[1:, None, ..., ::-1]` is one op and
its backward. One index that is an int Tensor, list or array takes the rows it lists along
its dim (a Gather after the slice: numpy puts the index's dims where it stood, as here);
several adjacent ones among whole slices address points (one GatherNd). Negative indices
count from the end, in lists and in Tensors alike. A traced Tensor is indexed the same way;
reading by a bool mask would give a shape known only at run time and is refused.
Assignment makes x a new value: a Select of a constant mask for a static index or a bool
mask, a TensorScatterUpdate for an int Tensor of rows.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Parameter, Tensor
from msops.ops._dispatch import _prim
from msops.primitives import primitive as _primitive
from msops.primitives.array_ops import Reshape, StridedSlice, Transpose
from msops.primitives.elementwise_ops import Less, Select
from msops.primitives.gather_ops import Gather, GatherNd, TensorScatterUpdate
from msops.primitives.stack_ops import Stack
from msops.primitives.math_ops import Cast
from msops.primitives.shape_ops import BroadcastTo
from msops.primitives.state_ops import Assign

__all__ = ["getitem", "setitem", "iterate"]

_API = "Tensor.__getitem__"


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _index_array(v: Any) -> Any:
    """An integer index array as a Tensor (None when `v` is not one); a bool one refused."""
    if isinstance(v, Tensor):
        if v.dtype == mstype.bool_:
            raise IndexError(f"For '{_API}', a bool Tensor index (a mask) selects a number of "
                             f"elements known only at run time, which msops does not support: "
                             f"use ops.select or ops.masked_fill.")
        if v.dtype not in (mstype.int32, mstype.int64):
            raise IndexError(f"For '{_API}', a Tensor index should be int32 or int64, but got "
                             f"{v.dtype}.")
        return v
    if isinstance(v, (list, np.ndarray)):
        arr = np.asarray(v)
        if arr.dtype == np.bool_:
            raise IndexError(f"For '{_API}', a bool index selects a number of elements: use "
                             f"the integer positions (np.nonzero) instead.")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise IndexError(f"For '{_API}', an index list should hold ints, but got {v!r}.")
        return Tensor(arr.astype(np.int64))
    return None


def _is_array_index(v: Any) -> bool:
    return isinstance(v, (Tensor, list, np.ndarray))


def _wrapped(v: Any, size: int, dim: int) -> Tensor:
    """An index array for a dim of `size`, its negative values counting from the end: a
    list's checked and wrapped now, a Tensor's (values known only when run) by a Select."""
    array = _index_array(v)
    if isinstance(v, Tensor):
        return _prim(Select)(_prim(Less)(array, 0), array + size, array)
    values = array.asnumpy()
    if values.size and (values.min() < -size or values.max() >= size):
        raise IndexError(f"For '{_API}', the index {v!r} is out of bounds for dim {dim} of "
                         f"size {size}.")
    return Tensor(values % size)


def _points(x: Tensor, items: tuple, index: Any) -> Tensor:
    """x[i, j, ...] with several adjacent index arrays and whole slices around them
    (numpy's `x[:, rows, cols]`): the arrays broadcast and stacked address the points, one
    GatherNd (the addressed dims moved to the front by a Transpose, and the picked dims
    moved back where the arrays stood)."""
    ndim = len(x.shape)
    expanded: list = []
    for v in items:
        expanded += [slice(None)] * (ndim - len(items) + 1) if v is Ellipsis else [v]
    expanded += [slice(None)] * (ndim - len(expanded))
    at = [k for k, v in enumerate(expanded) if _is_array_index(v)]
    others = [v for k, v in enumerate(expanded) if k not in at]
    if at != list(range(at[0], at[-1] + 1)) or any(v != slice(None) for v in others):
        raise IndexError(f"For '{_API}', several index arrays should stand next to each "
                         f"other with only whole slices (`:`, `...`) around them, but got "
                         f"{index!r}.")
    arrays = []
    for k in at:
        a = _wrapped(expanded[k], x.shape[k], k)
        arrays.append(a if a.dtype == mstype.int64 else _prim(Cast)(a, mstype.int64))
    try:
        shape = tuple(np.broadcast_shapes(*(tuple(a.shape) for a in arrays)))
    except ValueError:
        raise IndexError(f"For '{_API}', the index arrays should broadcast together, but got "
                         f"shapes {[list(a.shape) for a in arrays]}.") from None
    arrays = [a if tuple(a.shape) == shape else _prim(BroadcastTo, shape)(a) for a in arrays]
    points = _prim(Stack, -1)(tuple(arrays))
    p, k = at[0], len(at)
    front = tuple(range(p, p + k)) + tuple(range(p)) + tuple(range(p + k, ndim))
    moved = x if p == 0 else _prim(Transpose)(x, front)
    out = _prim(GatherNd)(moved, points)
    if p == 0:
        return out
    n = len(shape)
    back = tuple(range(n, n + p)) + tuple(range(n)) + tuple(range(n + p, len(out.shape)))
    return _prim(Transpose)(out, back)


def getitem(x: Tensor, index: Any) -> Tensor:
    """`x[index]` (numpy's semantics for basic indexing, one integer index array, and
    several adjacent ones among whole slices)."""
    items = index if isinstance(index, tuple) else (index,)
    if sum(1 for v in items if _is_array_index(v)) > 1:
        return _points(x, items, index)
    ndim = len(x.shape)
    consuming = sum(1 for v in items if v is not None and v is not Ellipsis)
    if consuming > ndim:
        raise IndexError(f"For '{_API}', too many indices: the Tensor has {ndim} dims, but "
                         f"the index {index!r} has {consuming}.")
    if sum(1 for v in items if v is Ellipsis) > 1:
        raise IndexError(f"For '{_API}', an index can only have one ellipsis, but got "
                         f"{index!r}.")
    begin, end, strides = [], [], []
    masks = dict(begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                 shrink_axis_mask=0)
    gather, dim, out_dim = None, 0, 0         # the index array; input and output dim counters
    for k, v in enumerate(items):
        bit = 1 << k
        if v is Ellipsis:
            masks["ellipsis_mask"] |= bit
            span = ndim - consuming
            dim, out_dim = dim + span, out_dim + span
            begin.append(0), end.append(0), strides.append(1)
        elif v is None:
            masks["new_axis_mask"] |= bit
            out_dim += 1
            begin.append(0), end.append(0), strides.append(1)
        elif _is_int(v):
            size = x.shape[dim]
            if not -size <= v < size:
                raise IndexError(f"For '{_API}', the index {int(v)} is out of bounds for dim "
                                 f"{dim} of size {size}.")
            v = int(v) % size
            masks["shrink_axis_mask"] |= bit
            begin.append(v), end.append(v + 1), strides.append(1)
            dim += 1
        elif isinstance(v, slice):
            step = 1 if v.step is None else v.step
            if not _is_int(step) or step == 0:
                raise ValueError(f"For '{_API}', a slice step should be a nonzero int, but got "
                                 f"{v.step!r}.")
            for name, bound in (("start", v.start), ("stop", v.stop)):
                if bound is not None and not _is_int(bound):
                    raise TypeError(f"For '{_API}', a slice {name} should be an int or None, "
                                    f"but got {type(bound).__name__}.")
            masks["begin_mask"] |= bit if v.start is None else 0
            masks["end_mask"] |= bit if v.stop is None else 0
            begin.append(0 if v.start is None else int(v.start))
            end.append(0 if v.stop is None else int(v.stop))
            strides.append(int(step))
            dim, out_dim = dim + 1, out_dim + 1
        else:
            if not _is_array_index(v):
                raise IndexError(f"For '{_API}', an index should be an int, a slice, None, "
                                 f"..., or an int Tensor/list, but got {type(v).__name__}.")
            gather = (_wrapped(v, x.shape[dim], dim), out_dim)
            masks["begin_mask"] |= bit
            masks["end_mask"] |= bit
            begin.append(0), end.append(0), strides.append(1)
            dim, out_dim = dim + 1, out_dim + 1
    out = x
    if items and not all(isinstance(v, slice) and v == slice(None) for v in items):
        out = _prim(StridedSlice, *masks.values())(x, tuple(begin), tuple(end), tuple(strides))
    if gather is not None:
        out = _prim(Gather)(out, gather[0], gather[1])
    return out


def iterate(x: Tensor):
    """The slices x[0], x[1], ... along dim 0 (a 0-d Tensor is not iterable)."""
    if not x.shape:
        raise TypeError("For 'Tensor.__iter__', a 0-d Tensor is not iterable.")
    return (getitem(x, k) for k in range(x.shape[0]))


def _static_index(index: Any) -> Any:
    """`index` for numpy, every part known now (an index Tensor's values are not)."""
    items = index if isinstance(index, tuple) else (index,)
    for v in items:
        if isinstance(v, Tensor):
            raise IndexError("For 'Tensor.__setitem__', an index Tensor (its values data) "
                             "should be the whole index (rows of dim 0), but got it in "
                             f"{index!r}.")
    return index


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """`x[index] = value`, as MindSpore: x becomes a new value (a traced x a new node, a
    Parameter written by an Assign) equal to x except where `index` selects, which takes
    `value` (a number, or a Tensor broadcast to the selection, cast to x's dtype). An index
    known when the code runs is a Select of a constant mask and a Gather-placed value; an
    int Tensor index (rows of dim 0, its values data) a TensorScatterUpdate. Both
    differentiate (into x outside the selection, into value inside) and shard."""
    api = "Tensor.__setitem__"
    if not isinstance(value, Tensor) and \
            not isinstance(value, (bool, int, float, np.number)):
        raise TypeError(f"For '{api}', the value should be a number or a Tensor, but got "
                        f"{type(value).__name__}.")
    if isinstance(value, Tensor) and value.dtype != x.dtype:
        value = _prim(Cast)(value, x.dtype)
    if isinstance(index, Tensor) and index.dtype == mstype.bool_:
        new = _masked(x, index, value)
    elif isinstance(index, Tensor):
        new = _rows_updated(x, index, value)
    else:
        new = _selection_updated(x, index, value)
    if isinstance(x, Parameter):
        if _primitive._trace_hook is not None:
            _prim(Assign)(x, new)
        else:
            x.set_data(new.asnumpy())
    elif hasattr(x, "_node"):                      # a traced value: rebound to the new node
        x._node = new._node
    else:
        x._data = new._data
        recorder = getattr(_primitive._trace_hook, "__self__", None)
        if hasattr(recorder, "rebind"):            # a gradient's tape: x is the new value
            recorder.rebind(x, new)


def _broadcast(value: Any, shape: tuple, dtype: Any) -> Tensor:
    """`value` as a Tensor of `shape` (a number filled in, a Tensor broadcast)."""
    api = "Tensor.__setitem__"
    if not isinstance(value, Tensor):
        return Tensor(np.full(shape, value, dtype.np_dtype))
    if tuple(value.shape) == tuple(shape):
        return value
    try:
        np.broadcast_shapes(tuple(value.shape), tuple(shape))
    except ValueError:
        raise ValueError(f"For '{api}', the value of shape {list(value.shape)} should "
                         f"broadcast to the selection's shape {list(shape)}.") from None
    return _prim(BroadcastTo, tuple(shape))(value)


def _masked(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """x where a bool mask (x's shape, or broadcast to it) is False, else a single value (a
    number or a one-element Tensor: `x[x < 0] = 0`); a value per selected element would
    need the mask's count, known only at run time."""
    api = "Tensor.__setitem__"
    try:
        np.broadcast_shapes(tuple(mask.shape), tuple(x.shape))
    except ValueError:
        raise IndexError(f"For '{api}', a bool mask index should broadcast to the Tensor's "
                         f"shape {list(x.shape)}, but got {list(mask.shape)}.") from None
    if isinstance(value, Tensor):
        if int(np.prod(value.shape, dtype=np.int64)) != 1:
            raise ValueError(f"For '{api}', with a bool mask index the value should be one "
                             f"number (a value per selected element needs the mask's count, "
                             f"known only at run time), but got shape {list(value.shape)}.")
        value = _prim(Reshape)(value, ())
    else:
        value = Tensor(np.asarray(value, x.dtype.np_dtype))
    return _prim(Select)(mask, value, x)


def _rows_updated(x: Tensor, index: Tensor, value: Any) -> Tensor:
    """x with the rows (dim 0) an int Tensor lists replaced by `value` (negative indices
    count from the end; an index out of range is the TensorScatterUpdate's error)."""
    if not x.shape:
        raise IndexError("For 'Tensor.__setitem__', a 0-d Tensor has no rows to index.")
    indices = _prim(Reshape)(_wrapped(index, x.shape[0], 0), tuple(index.shape) + (1,))
    updates = _broadcast(value, tuple(index.shape) + tuple(x.shape[1:]), x.dtype)
    return _prim(TensorScatterUpdate)(x, indices, updates)


def _selection_updated(x: Tensor, index: Any, value: Any) -> Tensor:
    """x with what a static index selects replaced by `value`: Select(mask, placed, x)."""
    api = "Tensor.__setitem__"
    getitem(x, index)                        # the same checks and errors as reading it
    size = int(np.prod(x.shape, dtype=np.int64))
    try:
        picked = np.arange(size).reshape(x.shape)[_static_index(index)]
    except IndexError as err:
        raise IndexError(f"For '{api}', the index {index!r} does not fit the shape "
                         f"{list(x.shape)}: {err}.") from None
    mask = np.zeros(size, bool)
    mask[picked.ravel()] = True
    mask = Tensor(mask.reshape(x.shape))
    if isinstance(value, Tensor):
        value = _broadcast(value, tuple(picked.shape), x.dtype)
        source = np.zeros(size, np.int64)          # element of x -> element of the value
        source[picked.ravel()] = np.arange(picked.size)
        flat = _prim(Reshape)(value, (-1,))
        placed = _prim(Reshape)(_prim(Gather)(flat, Tensor(source), 0), tuple(x.shape))
    else:
        placed = Tensor(np.asarray(value, x.dtype.np_dtype))
    return _prim(Select)(mask, placed, x)
