"""The scatter family's functional forms with `mindspore.ops`' names and arguments:
tensor_scatter_add/sub/mul/div/max/min and tensor_scatter_elements (new tensors),
scatter_nd_add/sub/mul/div/max/min/update and scatter_add/mul/div/max/min/update (rows
addressed by an index per row; a Parameter updated in place, through `Assign`) and
unsorted_segment_sum/max/min/prod.

Each is its primitive (scatter_ops.py) or a composite of them, so it traces, shards and
differentiates as they do.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Parameter, Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.slice_func import _axis
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import GreaterEqual, Less, Select, ZerosLike
from msops.primitives.gather_ops import TensorScatterUpdate
from msops.primitives.math_ops import Add, Cast
from msops.primitives.piecewise_ops import LogicalAnd
from msops.primitives.scatter_ops import (TensorScatterAdd, TensorScatterDiv, TensorScatterMax,
                                          TensorScatterMin, TensorScatterMul, TensorScatterSub)
from msops.primitives.shape_ops import ExpandDims
from msops.primitives.stack_ops import Stack
from msops.primitives.state_ops import Assign

__all__ = ["tensor_scatter_add", "tensor_scatter_sub", "tensor_scatter_mul",
           "tensor_scatter_div", "tensor_scatter_max", "tensor_scatter_min", "scatter_nd_add",
           "scatter_nd_sub", "scatter_nd_mul", "scatter_nd_div", "scatter_nd_max",
           "scatter_nd_min", "scatter_nd_update", "scatter_add", "scatter_mul", "scatter_div",
           "scatter_max", "scatter_min", "scatter_update", "tensor_scatter_elements",
           "unsorted_segment_sum",
           "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod"]


def _tensor_scatter(name: str, cls: type, what: str) -> Any:
    def call(input_x: Any, indices: Any, updates: Any) -> Any:
        return _prim(cls)(input_x, indices, updates)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = (f"`{cls.__name__}()(input_x, indices, updates)`: input_x with `updates` "
                    f"{what} the slices `indices` (..., k) address.")
    return call


tensor_scatter_add = _tensor_scatter("tensor_scatter_add", TensorScatterAdd, "added at")
tensor_scatter_sub = _tensor_scatter("tensor_scatter_sub", TensorScatterSub, "subtracted at")
tensor_scatter_mul = _tensor_scatter("tensor_scatter_mul", TensorScatterMul,
                                     "multiplied into")
tensor_scatter_div = _tensor_scatter("tensor_scatter_div", TensorScatterDiv, "divided into")
tensor_scatter_max = _tensor_scatter("tensor_scatter_max", TensorScatterMax,
                                     "taken where larger at")
tensor_scatter_min = _tensor_scatter("tensor_scatter_min", TensorScatterMin,
                                     "taken where smaller at")


def _check_parameter(name: str, input_x: Any) -> None:
    if not isinstance(input_x, Parameter):
        raise TypeError(f"For '{name}', the 'input_x' should be a Parameter (it is updated in "
                        f"place), but got {type(input_x).__name__}.")


def _scatter_nd(name: str, cls: type) -> Any:
    def call(input_x: Any, indices: Any, updates: Any, use_locking: bool = False) -> Any:
        _check_parameter(name, input_x)
        return _prim(Assign)(input_x, _prim(cls)(input_x, indices, updates))
    call.__name__ = call.__qualname__ = name
    call.__doc__ = (f"The Parameter `input_x` updated in place by `{cls.__name__}` at "
                    f"`indices` (`use_locking` is accepted; updates are serial anyway); "
                    f"returns its new value.")
    return call


scatter_nd_add = _scatter_nd("scatter_nd_add", TensorScatterAdd)
scatter_nd_sub = _scatter_nd("scatter_nd_sub", TensorScatterSub)
scatter_nd_mul = _scatter_nd("scatter_nd_mul", TensorScatterMul)
scatter_nd_div = _scatter_nd("scatter_nd_div", TensorScatterDiv)
scatter_nd_max = _scatter_nd("scatter_nd_max", TensorScatterMax)
scatter_nd_min = _scatter_nd("scatter_nd_min", TensorScatterMin)
scatter_nd_update = _scatter_nd("scatter_nd_update", TensorScatterUpdate)


def _scatter_rows(name: str, cls: type) -> Any:
    by_nd = _scatter_nd(name, cls)

    def call(input_x: Any, indices: Any, updates: Any) -> Any:
        _check_parameter(name, input_x)
        check_tensor(name, "indices", indices)
        check_tensor(name, "updates", updates)
        if indices.dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"For '{name}', the 'indices' should be an int32 or int64 Tensor, "
                            f"but got {indices.dtype}.")
        want = tuple(indices.shape) + tuple(input_x.shape[1:])
        if len(input_x.shape) == 0 or tuple(updates.shape) != want:
            raise ValueError(f"For '{name}', the 'updates' shape should be indices.shape + "
                             f"input_x.shape[1:] = {list(want)}, but got "
                             f"{list(updates.shape)}.")
        return by_nd(input_x, _prim(ExpandDims)(indices, -1), updates)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = (f"The Parameter `input_x` with the rows `indices` (any shape) updated in "
                    f"place by `updates` (indices.shape + input_x.shape[1:]) through "
                    f"`{cls.__name__}`, every update of a row addressed twice applied; returns "
                    f"its new value.")
    return call


scatter_add = _scatter_rows("scatter_add", TensorScatterAdd)
scatter_mul = _scatter_rows("scatter_mul", TensorScatterMul)
scatter_div = _scatter_rows("scatter_div", TensorScatterDiv)
scatter_max = _scatter_rows("scatter_max", TensorScatterMax)
scatter_min = _scatter_rows("scatter_min", TensorScatterMin)
scatter_update = _scatter_rows("scatter_update", TensorScatterUpdate)


def tensor_scatter_elements(input_x: Any, indices: Any, updates: Any, axis: int = 0,
                            reduction: str = "none") -> Any:
    """input_x with out[..., indices[i], ...] = updates[i] along `axis` (torch's scatter; the
    other coordinates of an update are its own), or added there with reduction "add".
    indices and updates have one shape, of input_x's rank and no larger off `axis`; a
    negative index counts from the end. One TensorScatterUpdate / Add at full coordinates."""
    name = "tensor_scatter_elements"
    check_tensor(name, "input_x", input_x)
    check_tensor(name, "indices", indices)
    check_tensor(name, "updates", updates)
    if reduction not in ("none", "add"):
        raise ValueError(f"For '{name}', the 'reduction' should be 'none' or 'add', but got "
                         f"{reduction!r}.")
    if indices.dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For '{name}', the 'indices' should be an int32 or int64 Tensor, but "
                        f"got {indices.dtype}.")
    shape, ishape = tuple(input_x.shape), tuple(indices.shape)
    axis = _axis(name, "axis", axis, len(shape))
    if tuple(updates.shape) != ishape or len(ishape) != len(shape) or any(
            i > s for d, (i, s) in enumerate(zip(ishape, shape)) if d != axis):
        raise ValueError(f"For '{name}', the 'indices' and 'updates' should have one shape, of "
                         f"the rank of input_x {list(shape)} and no larger off axis {axis}, but "
                         f"got {list(ishape)} and {list(updates.shape)}.")
    n = shape[axis]
    try:
        known = indices.asnumpy()
    except Exception:                    # traced indices: checked by the scatter when run
        known = None
    if known is not None and known.size and not (-n <= known.min() and known.max() < n):
        raise ValueError(f"For '{name}', every value of 'indices' should be in [{-n}, {n}) "
                         f"(dim {axis} of input_x), but got {known.tolist()}.")
    index = _prim(Cast)(indices, mstype.int64)
    index = _prim(Select)(_prim(Less)(index, 0), _prim(Add)(index, n), index)
    coords = []
    for d in range(len(shape)):
        view = [1] * len(shape)
        view[d] = ishape[d]
        iota = np.broadcast_to(np.arange(ishape[d], dtype=np.int64).reshape(view), ishape)
        coords.append(index if d == axis else Tensor(np.ascontiguousarray(iota)))
    full = _prim(Stack, -1)(tuple(coords))
    cls = TensorScatterAdd if reduction == "add" else TensorScatterUpdate
    return _prim(cls)(input_x, full, updates)


def _segments(name: str, input_x: Any, segment_ids: Any, num_segments: Any, cls: type,
              empty: Any) -> Any:
    """`cls` scattering the rows of input_x into `num_segments` segments of `empty` (the
    value of a segment no row reaches). An id outside [0, num_segments) drops its row, as
    MindSpore: it is sent to segment 0 carrying `empty`, which changes nothing there."""
    check_tensor(name, "input_x", input_x)
    check_tensor(name, "segment_ids", segment_ids)
    if isinstance(num_segments, Tensor) and num_segments.shape in ((), (1,)):
        try:                              # a traced Tensor has no value yet: refused below
            num_segments = num_segments.asnumpy().reshape(()).item()
        except Exception:
            pass
    if isinstance(num_segments, bool) or not isinstance(num_segments, (int, np.integer)) \
            or num_segments <= 0:
        raise ValueError(f"For '{name}', the 'num_segments' should be a positive int, but got "
                         f"{num_segments!r}.")
    if segment_ids.dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For '{name}', the 'segment_ids' should be an int32 or int64 Tensor, "
                        f"but got {segment_ids.dtype}.")
    ids, x = tuple(segment_ids.shape), tuple(input_x.shape)
    if x[:len(ids)] != ids:
        raise ValueError(f"For '{name}', the 'segment_ids' shape should be a prefix of the "
                         f"'input_x' shape {list(x)}, but got {list(ids)}.")
    num_segments, rest = int(num_segments), x[len(ids):]
    valid = _prim(LogicalAnd)(_prim(GreaterEqual)(segment_ids, 0),
                              _prim(Less)(segment_ids, num_segments))
    safe_ids = _prim(Select)(valid, segment_ids, _prim(ZerosLike)(segment_ids))
    fill = _prim(Add)(_prim(ZerosLike)(input_x), empty)
    rows = _prim(Select)(_prim(Reshape)(valid, ids + (1,) * len(rest)), input_x, fill)
    base = Tensor(np.full((num_segments,) + rest, empty, input_x.dtype.np_dtype))
    return _prim(cls)(base, _prim(ExpandDims)(safe_ids, -1), rows)


def unsorted_segment_sum(input_x: Any, segment_ids: Any, num_segments: Any) -> Any:
    """out[s] = the sum of the rows input_x[i] with segment_ids[i] == s (0 for none);
    segment_ids' shape a prefix of input_x's."""
    return _segments("unsorted_segment_sum", input_x, segment_ids, num_segments,
                     TensorScatterAdd, 0)


def _limit(dtype: mstype.Type, highest: bool) -> Any:
    np_dtype = dtype.np_dtype
    info = np.iinfo(np_dtype) if np.issubdtype(np_dtype, np.integer) else \
        ml_dtypes.finfo(np_dtype)
    return info.max if highest else info.min


def unsorted_segment_max(x: Any, segment_ids: Any, num_segments: Any) -> Any:
    """out[s] = the maximum of the rows x[i] with segment_ids[i] == s (the dtype's lowest
    value for none); the gradient goes to the maxima."""
    check_tensor("unsorted_segment_max", "x", x)
    return _segments("unsorted_segment_max", x, segment_ids, num_segments, TensorScatterMax,
                     _limit(x.dtype, highest=False))


def unsorted_segment_min(x: Any, segment_ids: Any, num_segments: Any) -> Any:
    """out[s] = the minimum of the rows x[i] with segment_ids[i] == s (the dtype's highest
    value for none); the gradient goes to the minima."""
    check_tensor("unsorted_segment_min", "x", x)
    return _segments("unsorted_segment_min", x, segment_ids, num_segments, TensorScatterMin,
                     _limit(x.dtype, highest=True))


def unsorted_segment_prod(x: Any, segment_ids: Any, num_segments: Any) -> Any:
    """out[s] = the product of the rows x[i] with segment_ids[i] == s (1 for none)."""
    return _segments("unsorted_segment_prod", x, segment_ids, num_segments, TensorScatterMul,
                     1)
