"""More element-wise math with `mindspore.ops`' names, arguments and defaults: lerp,
logaddexp(2), trunc, frac, hypot, xlogy, xdivy, sinc, nan_to_num, deg2rad, rad2deg, log2,
log10, exp2, float_power, copysign, heaviside, logit, fmax, fmin and the inverse hyperbolic
functions.

Each is a primitive (Trunc, Hypot, Asinh, Acosh, Atanh) or an exact composite of
primitives, so it traces, shards (element-wise: no communication) and differentiates as
they do. Where a branch is undefined (log(0) in xlogy, 0/0 in sinc) the composite feeds it
a safe operand first, so neither the value nor the gradient turns into a silent NaN.
"""
from __future__ import annotations

import math
from typing import Any

import ml_dtypes

from msops.common import dtype as mstype
from msops.common import validator
from msops.ops._dispatch import _prim
from msops.ops.math_func import _unary, clamp
from msops.primitives.array_ops import StopGradient
from msops.primitives.elementwise_ops import (Greater, Less, Maximum, Minimum, OnesLike, Pow,
                                              Select, ZerosLike)
from msops.primitives.math_ops import (Add, Cast, Equal, Exp, Log, Mul, Neg, RealDiv, Sub,
                                       promoted)
from msops.primitives.piecewise_ops import IsFinite, IsNan, LogicalAnd, LogicalOr, Trunc
from msops.primitives.transcendental_ops import Acosh, Asinh, Atanh, Hypot
from msops.primitives.unary_ops import Abs, Reciprocal, Sin

__all__ = ["lerp", "logaddexp", "logaddexp2", "trunc", "frac", "hypot", "xlogy", "xdivy",
           "sinc", "nan_to_num", "deg2rad", "rad2deg", "log2", "log10", "exp2", "float_power",
           "copysign", "heaviside", "logit", "fmax", "fmin", "asinh", "arcsinh", "acosh",
           "arccosh", "atanh", "arctanh"]

_LN2 = math.log(2.0)

trunc = _unary(Trunc, "`Trunc()(input)`: input rounded towards zero.")
asinh = arcsinh = _unary(Asinh, "`Asinh()(input)`: the inverse hyperbolic sine.")
acosh = arccosh = _unary(Acosh, "`Acosh()(input)`: the inverse hyperbolic cosine.")
atanh = arctanh = _unary(Atanh, "`Atanh()(input)`: the inverse hyperbolic tangent.")


def _check_float(name: str, arg: str, x: Any) -> Any:
    validator.check_tensor_dtype_valid(arg, getattr(x, "dtype", None), mstype.float_type, name)
    return x


def _to_float(x: Any) -> Any:
    """x, an int or bool Tensor cast to float32 (as MindSpore's float-valued functions)."""
    return promoted((x,), floating=True)[0]


def _like(x: Any, value: float) -> Any:
    """`value` in x's shape and dtype, made element-wise from x (so it shards with x)."""
    return _prim(Add)(_prim(ZerosLike)(x), value)


def _where_zero(x: Any, y: Any) -> tuple:
    """(x == 0, y with 1 where x == 0): a safe y for x * log(y) and x / y, so the branch
    a Select discards holds no NaN for the backward to multiply by 0."""
    zero = _prim(Equal)(x, 0)
    return zero, _prim(Select)(zero, _prim(OnesLike)(y), y)


def lerp(input: Any, end: Any, weight: Any) -> Any:
    """input + weight * (end - input), broadcast; floats (weight a float or a Tensor)."""
    input, end = promoted((input, end))
    _check_float("lerp", "input", input)
    return _prim(Add)(input, _prim(Mul)(*promoted((weight, _prim(Sub)(end, input)))))


def logaddexp(input: Any, other: Any) -> Any:
    """log(exp(input) + exp(other)) without overflow: m + log(exp(input - m) + exp(other -
    m)), m the larger (held constant for the gradient, which is then exact)."""
    x, y = promoted((input, other), floating=True)
    top = _prim(StopGradient)(_prim(Maximum)(x, y))
    top = _prim(Select)(_prim(IsFinite)(top), top, _prim(ZerosLike)(top))
    total = _prim(Add)(_prim(Exp)(_prim(Sub)(x, top)), _prim(Exp)(_prim(Sub)(y, top)))
    return _prim(Add)(_prim(Log)(total), top)


def logaddexp2(input: Any, other: Any) -> Any:
    """log2(2**input + 2**other), as logaddexp in natural units."""
    x, y = promoted((input, other), floating=True)
    return _prim(Mul)(logaddexp(_prim(Mul)(x, _LN2), _prim(Mul)(y, _LN2)), 1.0 / _LN2)


def frac(x: Any) -> Any:
    """The fractional part, x - trunc(x) (with x's sign)."""
    return _prim(Sub)(x, _prim(Trunc)(x))


def hypot(input: Any, other: Any) -> Any:
    """`Hypot()(input, other)`: sqrt(input**2 + other**2), broadcast (ints as float32)."""
    return _prim(Hypot)(*promoted((input, other), floating=True))


def xlogy(input: Any, other: Any) -> Any:
    """input * log(other), and 0 where input == 0 (whatever other is), broadcast; as
    MindSpore's, both gradients are 0 where input == 0."""
    x, y = promoted((input, other), floating=True)
    zero, safe = _where_zero(x, y)
    out = _prim(Mul)(x, _prim(Log)(safe))
    return _prim(Select)(zero, _prim(ZerosLike)(out), out)


def xdivy(x: Any, y: Any) -> Any:
    """x / y, and 0 where x == 0 (whatever y is), broadcast; as MindSpore's, both
    gradients are 0 where x == 0."""
    x, y = promoted((x, y), floating=True)
    zero, safe = _where_zero(x, y)
    out = _prim(RealDiv)(x, safe)
    return _prim(Select)(zero, _prim(ZerosLike)(out), out)


def sinc(input: Any) -> Any:
    """sin(pi * input) / (pi * input), 1 at input == 0 (ints as float32)."""
    x = _to_float(input)
    scaled = _prim(Mul)(x, math.pi)
    zero, safe = _where_zero(x, scaled)
    return _prim(Select)(zero, _prim(OnesLike)(x), _prim(RealDiv)(_prim(Sin)(safe), safe))


def nan_to_num(input: Any, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """input with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf` (None: the
    largest / lowest finite value of input's dtype); floats."""
    _check_float("nan_to_num", "input", input)
    for arg, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None:
            validator.check_value_type(arg, value, (int, float), "nan_to_num")
    info = ml_dtypes.finfo(input.dtype.np_dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = _prim(Select)(_prim(IsNan)(input), _like(input, nan), input)
    out = _prim(Select)(_prim(Equal)(input, math.inf), _like(input, posinf), out)
    return _prim(Select)(_prim(Equal)(input, -math.inf), _like(input, neginf), out)


def deg2rad(x: Any) -> Any:
    """x * pi / 180; floats."""
    return _prim(Mul)(_check_float("deg2rad", "x", x), math.pi / 180.0)


def rad2deg(x: Any) -> Any:
    """x * 180 / pi; floats."""
    return _prim(Mul)(_check_float("rad2deg", "x", x), 180.0 / math.pi)


def log2(input: Any) -> Any:
    """log(input) / log(2) (ints as float32)."""
    return _prim(Mul)(_prim(Log)(_to_float(input)), 1.0 / _LN2)


def log10(input: Any) -> Any:
    """log(input) / log(10) (ints as float32)."""
    return _prim(Mul)(_prim(Log)(_to_float(input)), 1.0 / math.log(10.0))


def exp2(input: Any) -> Any:
    """2 ** input (ints as float32)."""
    return _prim(Pow)(2.0, _to_float(input))


def float_power(input: Any, exponent: Any) -> Any:
    """input ** exponent computed in float64 (complex128 for complex operands), as
    MindSpore's float_power."""
    def widened(v: Any) -> Any:
        if not hasattr(v, "dtype"):
            return float(v) if not isinstance(v, complex) else v
        wide = mstype.complex128 if v.dtype in mstype.complex_type else mstype.float64
        return v if v.dtype == wide else _prim(Cast)(v, wide)
    if not hasattr(input, "dtype") and not hasattr(exponent, "dtype"):
        raise TypeError(f"For 'float_power', at least one of 'input' and 'exponent' should be "
                        f"a Tensor, but got {type(input).__name__} and "
                        f"{type(exponent).__name__}.")
    return _prim(Pow)(*promoted((widened(input), widened(exponent))))


def copysign(x: Any, other: Any) -> Any:
    """|x| with the sign of `other` (-0.0 counts as negative), broadcast (ints as float32)."""
    x, other = promoted((x, other), floating=True)
    magnitude = _prim(Abs)(x)
    # other < 0, or other is -0.0 (1 / -0.0 = -inf)
    negative = _prim(LogicalOr)(_prim(Less)(other, 0), _prim(LogicalAnd)(
        _prim(Equal)(other, 0), _prim(Less)(_prim(Reciprocal)(other), 0)))
    return _prim(Select)(negative, _prim(Neg)(magnitude), magnitude)


def heaviside(input: Any, values: Any) -> Any:
    """0 where input < 0, `values` where input == 0, 1 where input > 0, broadcast; values
    has input's dtype."""
    if getattr(values, "dtype", None) != getattr(input, "dtype", None):
        raise TypeError(f"For 'heaviside', the 'values' should be a Tensor of input's dtype "
                        f"{getattr(input, 'dtype', None)}, but got "
                        f"{getattr(values, 'dtype', type(values).__name__)}.")
    at_zero = _prim(Select)(_prim(Less)(input, 0), _prim(ZerosLike)(input), values)
    return _prim(Select)(_prim(Greater)(input, 0), _prim(OnesLike)(input), at_zero)


def logit(input: Any, eps: float | None = None) -> Any:
    """log(input / (1 - input)), input first clipped to [eps, 1 - eps] when eps is given;
    floats."""
    _check_float("logit", "input", input)
    if eps is not None:
        validator.check_value_type("eps", eps, (float,), "logit")
        input = clamp(input, eps, 1.0 - eps)
    return _prim(Log)(_prim(RealDiv)(input, _prim(Sub)(1.0, input)))


def _nan_ignoring(extreme: type, input: Any, other: Any) -> Any:
    x, y = promoted((input, other))
    return _prim(Select)(_prim(IsNan)(x), y, _prim(Select)(_prim(IsNan)(y), x,
                                                           _prim(extreme)(x, y)))


def fmax(input: Any, other: Any) -> Any:
    """The larger of input and other, element-wise, broadcast; a NaN loses to a number
    (NaN only where both are)."""
    return _nan_ignoring(Maximum, input, other)


def fmin(input: Any, other: Any) -> Any:
    """The smaller of input and other, element-wise, broadcast; a NaN loses to a number
    (NaN only where both are)."""
    return _nan_ignoring(Minimum, input, other)
