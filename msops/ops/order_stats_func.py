"""Order statistics and covariances with `mindspore.ops`' names, arguments and defaults:
median, nanmedian, quantile, nanquantile, histc and cov.

The order statistics read a Sort: the median is the sorted row's element at the lower middle
(GatherD of a computed position, so the gradient goes back through the Sort to the element
chosen), a quantile interpolates linearly between two neighbours. numpy's sort puts NaN
last, so a row's count of numbers gives both the NaN-propagating position (the first NaN)
and the NaN-ignoring one. histc counts through UnsortedSegmentSum; cov is two matmul-like
reductions. All are composites: they trace, shard and differentiate as their primitives.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import matmul, reshape, transpose
from msops.ops.scatter_func import unsorted_segment_sum
from msops.primitives import primitive as _primitive
from msops.primitives.elementwise_ops import (FloorDiv, Less, LessEqual, Maximum, Minimum,
                                              Select)
from msops.primitives.gather_ops import GatherD
from msops.primitives.math_ops import (Add, Cast, Equal, Mul, RealDiv, ReduceMax, ReduceSum, Sub,
                                       promoted)
from msops.primitives.piecewise_ops import Floor, IsNan, LogicalAnd, LogicalNot
from msops.primitives.reduce_ops import ReduceMin
from msops.primitives.shape_ops import Squeeze
from msops.primitives.sort_ops import Sort

__all__ = ["median", "nanmedian", "quantile", "nanquantile", "histc", "cov"]


def _sorted(name: str, input: Any, axis: int) -> tuple:
    """(sorted values, their int32 indices, the count of numbers (not NaN) per row, kept
    dims as int32) along `axis`."""
    values, indices = _prim(Sort, axis)(input)
    if input.dtype in mstype.float_type:
        numbers = _prim(Cast)(_prim(LogicalNot)(_prim(IsNan)(input)), mstype.int32)
        count = _prim(ReduceSum, True)(numbers, (axis,))
    else:
        count = Tensor(np.full([1] * len(input.shape), input.shape[axis], np.int32))
    return values, indices, count


def _median(name: str, input: Any, axis: int, keepdims: bool, skip_nan: bool) -> tuple:
    check_tensor(name, "input", input)
    validator.check_value_type("axis", axis, (int,), name)
    validator.check_value_type("keepdims", keepdims, (bool,), name)
    if not input.shape:
        return input, Tensor(np.asarray(0, np.int64))
    axis = validator.check_axis_in_range(axis, len(input.shape), "axis", name)
    n = input.shape[axis]
    if n == 0:
        raise ValueError(f"For '{name}', the 'input' should have elements along axis {axis}, "
                         f"but got shape {list(input.shape)}.")
    values, indices, count = _sorted(name, input, axis)
    if skip_nan:
        # the lower middle of the numbers (an all-NaN row: position 0, a NaN)
        pos = _prim(FloorDiv)(_prim(Maximum)(_prim(Sub)(count, 1), 0), 2)
    else:
        # a row holding NaN answers its first NaN, sorted to position `count`
        middle = Tensor(np.asarray((n - 1) // 2, np.int32))
        pos = _prim(Select)(_prim(Equal)(count, n), middle, count)
    shape = list(input.shape)
    shape[axis] = 1
    pos = _prim(Add)(pos, Tensor(np.zeros(shape, np.int32)))
    value = _prim(GatherD)(values, axis, pos)
    index = _prim(Cast)(_prim(GatherD)(indices, axis, pos), mstype.int64)
    if not keepdims:
        value, index = _prim(Squeeze, (axis,))(value), _prim(Squeeze, (axis,))(index)
    return value, index


def median(input: Any, axis: int = -1, keepdims: bool = False) -> tuple:
    """(the median along axis, its int64 index): the lower of the two middle elements for an
    even count; NaN (and a NaN's index) where a row holds NaN."""
    return _median("median", input, axis, keepdims, False)


def nanmedian(input: Any, axis: int = -1, keepdims: bool = False) -> tuple:
    """(the median of the numbers along axis, NaNs ignored, and its int64 index); NaN where a
    row is all NaN."""
    return _median("nanmedian", input, axis, keepdims, True)


def _quantile(name: str, input: Any, q: Any, axis: Any, keepdims: bool, skip_nan: bool
              ) -> Any:
    check_tensor(name, "input", input)
    validator.check_tensor_dtype_valid("input", input.dtype, (mstype.float32, mstype.float64),
                                       name)
    validator.check_value_type("keepdims", keepdims, (bool,), name)
    if isinstance(q, Tensor):
        # the values are checked when they are known (eagerly), not while tracing
        qs = q.asnumpy() if _primitive._trace_hook is None else None
        if len(q.shape) > 1:
            raise ValueError(f"For '{name}', the 'q' should be a scalar or 1-D Tensor, but got "
                             f"shape {list(q.shape)}.")
        validator.check_tensor_dtype_valid("q", q.dtype, (input.dtype,), name)
        q_shape = tuple(q.shape)
        if qs is not None and (np.any(qs < 0) or np.any(qs > 1)):
            raise ValueError(f"For '{name}', the 'q' should be in [0, 1], but got {qs}.")
    else:
        validator.check_value_type("q", q, (float,), name)
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"For '{name}', the 'q' should be in [0, 1], but got {q}.")
        q_shape = ()
        q = Tensor(np.asarray(q, input.dtype.np_dtype))
    whole = axis is None
    if whole:
        x, axis = reshape(input, (-1,)), 0
    else:
        validator.check_value_type("axis", axis, (int,), name)
        axis = validator.check_axis_in_range(axis, max(len(input.shape), 1), "axis", name)
        x = input if input.shape else reshape(input, (1,))
    n = x.shape[axis]
    if n == 0:
        raise ValueError(f"For '{name}', the 'input' should have elements along the axis, but "
                         f"got shape {list(input.shape)}.")
    values, _, count = _sorted(name, x, axis)
    nq = max(int(np.prod(q_shape)), 1)
    # the q's run along `axis` of the gathered positions: shape [..., nq, ...]
    q_col = reshape(q, tuple(nq if d == axis else 1 for d in range(len(x.shape))))
    last = _prim(Maximum)(_prim(Sub)(count, 1), 0)
    pos = _prim(Mul)(q_col, _prim(Cast)(last, x.dtype))
    low = _prim(Floor)(pos)
    frac = _prim(Sub)(pos, low)
    low_i = _prim(Cast)(low, mstype.int32)
    high_i = _prim(Minimum)(_prim(Add)(low_i, 1), last)
    lo, hi = _prim(GatherD)(values, axis, low_i), _prim(GatherD)(values, axis, high_i)
    out = _prim(Add)(lo, _prim(Mul)(frac, _prim(Sub)(hi, lo)))
    nan_rows = _prim(Equal)(count, 0) if skip_nan else _prim(Less)(count, n)
    out = _prim(Select)(nan_rows, Tensor(np.asarray(np.nan, x.dtype.np_dtype)), out)
    others = [d for d in range(len(x.shape)) if d != axis]
    if others and axis != 0:
        out = transpose(out, tuple([axis] + others))
    if keepdims:
        tail = [1] * len(input.shape) if whole else \
            [1 if d == axis else size for d, size in enumerate(input.shape)]
    else:
        tail = [] if whole else [x.shape[d] for d in others]
    return reshape(out, tuple(q_shape) + tuple(tail))


def quantile(input: Any, q: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The q-th quantiles along axis (None: of every element), interpolated linearly between
    the sorted neighbours; q a float or a 1-D Tensor in [0, 1] whose length leads the
    output's shape; NaN where a row holds NaN."""
    return _quantile("quantile", input, q, axis, keepdims, False)


def nanquantile(input: Any, q: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """`quantile` of the numbers, NaNs ignored (NaN where a row is all NaN)."""
    return _quantile("nanquantile", input, q, axis, keepdims, True)


def histc(input: Any, bins: int = 100, min: float = 0.0, max: float = 0.0) -> Any:  # noqa: A002
    """The histogram of input in `bins` equal bins over [min, max] (both 0: the data's range;
    a flat range widened by 1 either side); elements outside, and NaN, are not counted; int32
    for an int32 input, else float32."""
    check_tensor("histc", "input", input)
    validator.check_tensor_dtype_valid("input", input.dtype, (mstype.float16, mstype.float32,
                                                              mstype.int32), "histc")
    validator.check_value_type("bins", bins, (int,), "histc")
    for arg, v in (("min", min), ("max", max)):
        validator.check_value_type(arg, v, (int, float), "histc")
    if bins <= 0:
        raise ValueError(f"For 'histc', the 'bins' should be > 0, but got {bins}.")
    if min > max:
        raise ValueError(f"For 'histc', the 'min' should be <= 'max', but got min={min}, "
                         f"max={max}.")
    x = reshape(_prim(Cast)(input, mstype.float64), (-1,))
    if min == max == 0:
        numbers = _prim(LogicalNot)(_prim(IsNan)(x))
        lo = _prim(ReduceMin)(_prim(Select)(numbers, x, _prim(Add)(_prim(Mul)(x, 0), np.inf)),
                              ())
        hi = _prim(ReduceMax)(_prim(Select)(numbers, x, _prim(Add)(_prim(Mul)(x, 0), -np.inf)),
                              ())
        flat = _prim(Equal)(lo, hi)
        lo = _prim(Select)(flat, _prim(Sub)(lo, 1.0), lo)
        hi = _prim(Select)(flat, _prim(Add)(hi, 1.0), hi)
    else:
        lo, hi = float(min), float(max)
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
        lo, hi = Tensor(np.asarray(lo)), Tensor(np.asarray(hi))
    inside = _prim(LogicalAnd)(_prim(LessEqual)(lo, x), _prim(LessEqual)(x, hi))
    scaled = _prim(Mul)(_prim(RealDiv)(_prim(Sub)(x, lo), _prim(Sub)(hi, lo)), float(bins))
    index = _prim(Minimum)(_prim(Cast)(_prim(Floor)(_prim(Select)(inside, scaled, _prim(Mul)(
        scaled, 0))), mstype.int32), bins - 1)
    index = _prim(Select)(inside, index, _prim(Add)(_prim(Mul)(index, 0), bins))  # dropped
    counts = unsorted_segment_sum(_prim(Cast)(inside, mstype.float32), index, bins)
    return _prim(Cast)(counts, mstype.int32) if input.dtype == mstype.int32 else counts


def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """The covariance matrix of input's rows (variables) over its columns (observations); a
    1-D input is one variable (a 0-d result). fweights (integer repeat counts) and aweights
    (observation weights) weight the observations; the divisor is sum(w) - correction *
    sum(w * aweights) / sum(w) (sum(w) - correction without aweights), as numpy's cov."""
    check_tensor("cov", "input", input)
    if len(input.shape) > 2:
        raise ValueError(f"For 'cov', the 'input' should be 1-D or 2-D, but got shape "
                         f"{list(input.shape)}.")
    validator.check_value_type("correction", correction, (int,), "cov")
    x = promoted((input,), floating=True)[0]
    vector = len(x.shape) < 2
    x = reshape(x, (1, -1)) if vector else x
    n = x.shape[1]
    w = None
    for arg, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is None:
            continue
        check_tensor("cov", arg, weights)
        if tuple(weights.shape) != (n,):
            raise ValueError(f"For 'cov', the '{arg}' should be 1-D of the number of "
                             f"observations {n}, but got shape {list(weights.shape)}.")
        if arg == "fweights":
            validator.check_tensor_dtype_valid(arg, weights.dtype, mstype.int_type, "cov")
        weights = _prim(Cast)(weights, x.dtype)
        w = weights if w is None else _prim(Mul)(w, weights)
    if w is None:
        total = float(n)
        mean = _prim(RealDiv)(_prim(ReduceSum, True)(x, (1,)), total)
        norm = total - correction
        centred = _prim(Sub)(x, mean)
        weighted = centred
    else:
        total = _prim(ReduceSum)(w, ())
        mean = _prim(RealDiv)(_prim(ReduceSum, True)(_prim(Mul)(x, w), (1,)), total)
        if aweights is None or correction == 0:
            norm = _prim(Sub)(total, float(correction))
        else:
            aw = _prim(Cast)(aweights, x.dtype)
            norm = _prim(Sub)(total, _prim(Mul)(_prim(RealDiv)(
                _prim(ReduceSum)(_prim(Mul)(w, aw), ()), total), float(correction)))
        centred = _prim(Sub)(x, mean)
        weighted = _prim(Mul)(centred, w)
    out = matmul(weighted, transpose(centred, (1, 0)))
    out = _prim(RealDiv)(out, norm) if isinstance(norm, Tensor) else \
        _prim(Mul)(out, 1.0 / norm if norm > 0 else float("inf"))
    return reshape(out, ()) if vector else out
