"""Functional statistics and reductions with `mindspore.ops`' names, arguments and defaults:
var, std, var_mean, std_mean, logsumexp, all, any, count_nonzero, cumprod, nansum, nanmean.

Each is a composite of primitives (`_prim`), so it traces, shards and differentiates as they
do: a split reduced axis combines by each reduction's own partial op (a sum, a maximum,
a logical and / or).
"""
from __future__ import annotations

import math
from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.elementwise_ops import Select, Sqrt, ZerosLike
from msops.primitives.math_ops import (Add, Cast, Exp, Log, Mul, RealDiv, ReduceMax, ReduceMean,
                                       ReduceSum, Square, Sub, promoted, reduce_axes)
from msops.primitives.array_ops import StopGradient
from msops.primitives.piecewise_ops import IsFinite, IsNan, LogicalNot
from msops.primitives.reduce_ops import ReduceAll, ReduceAny
from msops.primitives.scan_ops import CumProd
from msops.primitives.shape_ops import Squeeze

__all__ = ["var", "std", "var_mean", "std_mean", "logsumexp", "all", "any", "count_nonzero",
           "cumprod", "nansum", "nanmean"]


def _axes(name: str, input: Any, axis: Any) -> tuple:
    """`axis` (None, an int, a tuple or list of ints) as sorted non-negative axes; () for a
    0-d input."""
    axis = () if axis is None else tuple(axis) if isinstance(axis, list) else axis
    return reduce_axes(name, len(input.shape), axis)


def _floating(name: str, x: Any) -> Any:
    """x, cast to float32 when it holds ints or bools (the statistics are real numbers);
    a complex or non-Tensor input is a TypeError naming the function."""
    validator.check_tensor_dtype_valid("input", getattr(x, "dtype", None), mstype.float_type +
                                       mstype.int_type + mstype.uint_type + (mstype.bool_,),
                                       name)
    return x if x.dtype in mstype.float_type else promoted((x,), floating=True)[0]


def _ddof(name: str, ddof: Any, count: int) -> int:
    """`ddof` as an int in [0, count) (True / False: 1 / 0): the divisor count - ddof must be
    positive, or the result would be a silent inf or NaN."""
    if not isinstance(ddof, int):
        raise TypeError(f"For '{name}', the 'ddof' should be an int or a bool, but got "
                        f"{type(ddof).__name__}.")
    ddof = int(ddof)
    if not 0 <= ddof < count:
        raise ValueError(f"For '{name}', the 'ddof' should be in [0, {count}) (the number of "
                         f"elements reduced), but got {ddof}.")
    return ddof


def _var_and_mean(name: str, input: Any, axis: Any, ddof: Any, keepdims: bool) -> tuple:
    """(the variance with divisor N - ddof, the mean) over `axis`: two passes, the squares
    of the deviations from the mean (no cancellation of E[x^2] - E[x]^2)."""
    x = _floating(name, input)
    axes = _axes(name, x, axis)
    count = math.prod(x.shape[a] for a in axes)
    ddof = _ddof(name, ddof, count)
    deviation = _prim(Sub)(x, _prim(ReduceMean, True)(x, axes))
    squares = _prim(ReduceSum, keepdims)(_prim(Square)(deviation), axes)
    return (_prim(Mul)(squares, 1.0 / (count - ddof)),
            _prim(ReduceMean, keepdims)(x, axes))


def var(input: Any, axis: Any = None, ddof: int | bool = 0, keepdims: bool = False) -> Any:
    """The variance over `axis` (None: every element): sum((x - mean)**2) / (N - ddof);
    `ddof=True` is Bessel's correction (1). Ints are computed in float32."""
    return _var_and_mean("var", input, axis, ddof, keepdims)[0]


def std(input: Any, axis: Any = None, ddof: int | bool = 0, keepdims: bool = False) -> Any:
    """The standard deviation over `axis`: sqrt(var(input, axis, ddof, keepdims))."""
    return _prim(Sqrt)(_var_and_mean("std", input, axis, ddof, keepdims)[0])


def var_mean(input: Any, axis: Any = None, ddof: int | bool = 0,
             keepdims: bool = False) -> tuple:
    """(variance, mean) over `axis`, as `var` and `mean`."""
    return _var_and_mean("var_mean", input, axis, ddof, keepdims)


def std_mean(input: Any, axis: Any = None, ddof: int | bool = 0,
             keepdims: bool = False) -> tuple:
    """(standard deviation, mean) over `axis`, as `std` and `mean`."""
    variance, mean = _var_and_mean("std_mean", input, axis, ddof, keepdims)
    return _prim(Sqrt)(variance), mean


def logsumexp(input: Any, axis: Any, keep_dims: bool = False) -> Any:
    """log(sum(exp(input))) over `axis` (() : every dim), computed as m + log(sum(exp(input
    - m))) with m the (finite) maximum, so large inputs do not overflow. m is held constant
    for the gradient, which is then exactly softmax(input) whatever m is."""
    x = _floating("logsumexp", input)
    axes = _axes("logsumexp", x, axis)
    top = _prim(StopGradient)(_prim(ReduceMax, True)(x, axes))
    # an infinite maximum (all -inf, or some +inf) would make x - m NaN; 0 keeps the answer
    top = _prim(Select)(_prim(IsFinite)(top), top, _prim(ZerosLike)(top))
    summed = _prim(ReduceSum, keep_dims)(_prim(Exp)(_prim(Sub)(x, top)), axes)
    shift = top if keep_dims or not axes else _prim(Squeeze, axes)(top)
    return _prim(Add)(_prim(Log)(summed), shift)


def _as_bool(name: str, arg: str, x: Any) -> Any:
    check_tensor(name, arg, x)
    return x if x.dtype == mstype.bool_ else _prim(Cast)(x, mstype.bool_)


def all(input: Any, axis: Any = None, keep_dims: bool = False) -> Any:  # noqa: A001
    """`ReduceAll(keep_dims)(input, axis)`: True where every element over `axis` (None:
    all) is True (nonzero, for a non-bool input)."""
    return _prim(ReduceAll, keep_dims)(_as_bool("all", "input", input),
                                       _axes("all", input, axis))


def any(input: Any, axis: Any = None, keep_dims: bool = False) -> Any:  # noqa: A001
    """`ReduceAny(keep_dims)(input, axis)`: True where some element over `axis` (None: all)
    is True (nonzero, for a non-bool input)."""
    return _prim(ReduceAny, keep_dims)(_as_bool("any", "input", input),
                                       _axes("any", input, axis))


def count_nonzero(x: Any, axis: Any = (), keep_dims: bool = False,
                  dtype: mstype.Type = mstype.int32) -> Any:
    """The number of nonzero elements over `axis` (() : all), as `dtype`."""
    if not isinstance(dtype, mstype.Type):
        raise TypeError(f"For 'count_nonzero', the 'dtype' should be a msops dtype, but got "
                        f"{dtype!r}.")
    nonzero = _prim(Cast)(_as_bool("count_nonzero", "x", x), mstype.int32)
    counted = _prim(ReduceSum, keep_dims)(nonzero, _axes("count_nonzero", x, axis))
    return counted if dtype == mstype.int32 else _prim(Cast)(counted, dtype)


def cumprod(input: Any, dim: int, dtype: mstype.Type | None = None) -> Any:
    """`CumProd()(input, dim)`: the running product along `dim`; `dtype` casts input first."""
    if dtype is not None:
        input = _prim(Cast)(input, dtype)
    return _prim(CumProd)(input, dim)


def _zero_nans(name: str, input: Any) -> Any:
    check_tensor(name, "input", input)
    return _prim(Select)(_prim(IsNan)(input), _prim(ZerosLike)(input), input)


def nansum(input: Any, axis: Any = None, keepdims: bool = False, *,
           dtype: mstype.Type | None = None) -> Any:
    """The sum over `axis` (None: all) counting NaNs as zero; `dtype` casts the result."""
    out = _prim(ReduceSum, keepdims)(_zero_nans("nansum", input), _axes("nansum", input, axis))
    return out if dtype is None else _prim(Cast)(out, dtype)


def nanmean(input: Any, axis: Any = None, keepdims: bool = False, *,
            dtype: mstype.Type | None = None) -> Any:
    """The mean over `axis` (None: all) of the elements that are not NaN (NaN where all
    are); floats; `dtype` casts the result."""
    check_tensor("nanmean", "input", input)
    if input.dtype not in mstype.float_type:
        raise TypeError(f"For 'nanmean', the 'input' should be a float Tensor, but got "
                        f"{input.dtype}.")
    axes = _axes("nanmean", input, axis)
    total = _prim(ReduceSum, keepdims)(_zero_nans("nanmean", input), axes)
    kept = _prim(Cast)(_prim(LogicalNot)(_prim(IsNan)(input)), input.dtype)
    out = _prim(RealDiv)(total, _prim(ReduceSum, keepdims)(kept, axes))
    return out if dtype is None else _prim(Cast)(out, dtype)
