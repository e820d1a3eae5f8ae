"""Functional spellings of the element-wise and reduction primitives, with
`mindspore.ops`' names, arguments and defaults: arithmetic (add, sub, mul, div, ...),
unary math (abs, exp, log, rsqrt, ...), activations (relu, relu6, silu, softplus,
leaky_relu, hardswish, ...) and reductions (sum, mean, prod, amax, amin). Each is a thin
call of primitives (functional.py's `_prim`), so it traces, shards and differentiates as
they do."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.ops._dispatch import _binary, _prim
from msops.primitives.elementwise_ops import (FloorDiv, Greater, Maximum, Minimum, Select,
                                              Sigmoid)
from msops.primitives.math_ops import (Add, AddN, Cast, Equal, Exp, Log, Mul, Neg, RealDiv,
                                       ReduceMax, ReduceMean, ReduceSum, Square, Sub)
from msops.primitives.nn_ops import ReLU, Softmax
from msops.primitives.reduce_ops import ReduceMin, ReduceProd
from msops.primitives.unary_ops import (Abs, Cos, HSigmoid, HSwish, ReLU6, Reciprocal, Rsqrt,
                                        Sign, Sin, Softplus)

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "true_divide", "neg",
           "negative", "abs", "absolute", "sign", "square", "exp", "log", "rsqrt",
           "reciprocal", "sin", "cos", "relu", "relu6", "hardswish", "hardsigmoid", "softplus",
           "silu", "leaky_relu", "softmax", "clamp", "clip", "addn", "sum", "mean", "prod",
           "amax", "amin", "equal", "where"]


def _unary(cls: type, doc: str) -> Any:
    def call(input: Any) -> Any:
        return _prim(cls)(input)
    call.__doc__ = doc
    return call


add = _binary(Add, "`Add()(input, other)`: input + other, broadcast.")
mul = multiply = _binary(Mul, "`Mul()(input, other)`: input * other, broadcast.")
equal = _binary(Equal, "`Equal()(input, other)`: input == other (bool), broadcast.")
neg = negative = _unary(Neg, "`Neg()(input)`: -input.")
abs = absolute = _unary(Abs, "`Abs()(input)`: |input|.")  # noqa: A001 (MindSpore's name)
sign = _unary(Sign, "`Sign()(input)`: -1, 0 or 1.")
square = _unary(Square, "`Square()(input)`: input * input.")
exp = _unary(Exp, "`Exp()(input)`: e ** input.")
log = _unary(Log, "`Log()(input)`: the natural logarithm.")
rsqrt = _unary(Rsqrt, "`Rsqrt()(input)`: 1 / sqrt(input).")
reciprocal = _unary(Reciprocal, "`Reciprocal()(input)`: 1 / input.")
sin = _unary(Sin, "`Sin()(input)`.")
cos = _unary(Cos, "`Cos()(input)`.")
hardswish = _unary(HSwish, "`HSwish()(input)`: input * relu6(input + 3) / 6.")
hardsigmoid = _unary(HSigmoid, "`HSigmoid()(input)`: relu6(input + 3) / 6.")


def sub(input: Any, other: Any) -> Any:
    """`Sub()(input, other)`: input - other, broadcast."""
    return _prim(Sub)(input, other)


def subtract(input: Any, other: Any, *, alpha: float = 1) -> Any:
    """input - alpha * other."""
    return sub(input, other if alpha == 1 else _prim(Mul)(other, alpha))


def _is_float(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is None or dtype in mstype.float_type + mstype.complex_type


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """input / other, broadcast: true division (integers give float32, as MindSpore), or
    rounded: `rounding_mode="floor"` (towards -inf) or `"trunc"` (towards 0)."""
    if rounding_mode is None:
        if not (_is_float(input) and _is_float(other)):
            input, other = (x if _is_float(x) else _prim(Cast)(x, mstype.float32)
                            for x in (input, other))
        return _prim(RealDiv)(input, other)
    if rounding_mode == "floor":
        return _prim(FloorDiv)(input, other)
    if rounding_mode == "trunc":
        # |input| // |other| rounds the magnitude down; the signs put it back
        magnitude = _prim(FloorDiv)(_prim(Abs)(input), _prim(Abs)(other))
        return _prim(Mul)(magnitude, _prim(Mul)(_prim(Sign)(input), _prim(Sign)(other)))
    raise ValueError(f"For 'div', the 'rounding_mode' should be None, 'floor' or 'trunc', but "
                     f"got {rounding_mode!r}.")


def true_divide(dividend: Any, divisor: Any) -> Any:
    """`div(dividend, divisor)` without rounding."""
    return div(dividend, divisor)


def where(condition: Any, input: Any, other: Any) -> Any:
    """`Select()(condition, input, other)`: input where condition holds, else other."""
    return _prim(Select)(condition, input, other)


def relu(input: Any, inplace: bool = False) -> Any:
    """`ReLU()(input)`: max(input, 0) (`inplace` is accepted; a new tensor is returned)."""
    return _prim(ReLU)(input)


def relu6(x: Any) -> Any:
    """`ReLU6()(x)`: min(max(x, 0), 6)."""
    return _prim(ReLU6)(x)


def softplus(input: Any, beta: float = 1, threshold: float = 20) -> Any:
    """log(1 + exp(beta * input)) / beta, and input itself where beta * input > threshold
    (MindSpore's linear tail, which keeps large inputs exact)."""
    scaled = input if beta == 1 else _prim(Mul)(input, beta)
    out = _prim(Softplus)(scaled)
    if beta != 1:
        out = _prim(Mul)(out, 1.0 / beta)
    return _prim(Select)(_prim(Greater)(scaled, threshold), input, out)


def silu(input: Any) -> Any:
    """input * sigmoid(input) (the swish activation)."""
    return _prim(Mul)(input, _prim(Sigmoid)(input))


def leaky_relu(input: Any, alpha: float = 0.2) -> Any:
    """input where input > 0, else alpha * input."""
    return _prim(Select)(_prim(Greater)(input, 0), input, _prim(Mul)(input, alpha))


def softmax(input: Any, axis: int = -1, *, dtype: mstype.Type | None = None) -> Any:
    """`Softmax(axis)(input)`, after a cast to `dtype` when given."""
    if dtype is not None:
        input = _prim(Cast)(input, dtype)
    return _prim(Softmax, axis)(input)


def clamp(input: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """input limited to [min, max] (either may be None, not both)."""
    if min is None and max is None:
        raise ValueError("For 'clamp', at least one of 'min' and 'max' should be given, but got "
                         "both None.")
    out = input
    if min is not None:
        out = _prim(Maximum)(out, min)
    if max is not None:
        out = _prim(Minimum)(out, max)
    return out


clip = clamp


def addn(x: Any) -> Any:
    """`AddN()(x)`: the sum of a tuple or list of tensors."""
    return _prim(AddN)(tuple(x))


def _axis(axis: Any) -> Any:
    return () if axis is None else tuple(axis) if isinstance(axis, list) else axis


def sum(input: Any, dim: Any = None, keepdim: bool = False, *,  # noqa: A001
        dtype: mstype.Type | None = None) -> Any:
    """`ReduceSum(keepdim)(input, dim)`; None sums every dim; `dtype` casts first."""
    if dtype is not None:
        input = _prim(Cast)(input, dtype)
    return _prim(ReduceSum, keepdim)(input, _axis(dim))


def mean(x: Any, axis: Any = None, keep_dims: bool = False) -> Any:
    """`ReduceMean(keep_dims)(x, axis)`; None averages every dim."""
    return _prim(ReduceMean, keep_dims)(x, _axis(axis))


def prod(input: Any, axis: Any = None, keep_dims: bool = False,
         dtype: mstype.Type | None = None) -> Any:
    """`ReduceProd(keep_dims)(input, axis)`; None multiplies every element."""
    if dtype is not None:
        input = _prim(Cast)(input, dtype)
    return _prim(ReduceProd, keep_dims)(input, _axis(axis))


def _no_extras(name: str, initial: Any, where: Any) -> None:
    if initial is not None or where is not None:
        raise ValueError(f"For '{name}', the 'initial' and 'where' arguments are not supported "
                         f"by msops: they should be None, but got initial={initial!r}, "
                         f"where={where!r}.")


def amax(input: Any, axis: Any = None, keepdims: bool = False, *, initial: Any = None,
         where: Any = None) -> Any:
    """`ReduceMax(keepdims)(input, axis)`; None reduces every dim."""
    _no_extras("amax", initial, where)
    return _prim(ReduceMax, keepdims)(input, _axis(axis))


def amin(input: Any, axis: Any = None, keepdims: bool = False, *, initial: Any = None,
         where: Any = None) -> Any:
    """`ReduceMin(keepdims)(input, axis)`; None reduces every dim."""
    _no_extras("amin", initial, where)
    return _prim(ReduceMin, keepdims)(input, _axis(axis))
