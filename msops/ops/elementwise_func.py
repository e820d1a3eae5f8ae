"""Functional spellings of the rounding, logical, transcendental and remainder primitives
and of the ELU-family activations, with `mindspore.ops`' names and arguments: floor, ceil,
round, isnan, logical_and, log1p, atan2, remainder, fmod, elu, mish, logsigmoid,
hardtanh, ... Each is a thin call of primitives (`_prim`), so it traces, shards and
differentiates as they do."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.ops._dispatch import _binary, _prim
from msops.ops.math_func import _unary, clamp
from msops.primitives.activation_ext_ops import Elu, HShrink, Mish, SeLU, Softsign, SoftShrink
from msops.primitives.arith_ops import FloorMod, Mod
from msops.primitives.elementwise_ops import Tanh
from msops.primitives.math_ops import Neg, Sub
from msops.primitives.piecewise_ops import (BitwiseAnd, BitwiseOr, BitwiseXor, Ceil, Floor,
                                            Invert, IsFinite, IsInf, IsNan, LogicalAnd,
                                            LogicalNot, LogicalOr, Round)
from msops.primitives.transcendental_ops import (ACos, Asin, Atan, Atan2, Cosh, Erfc, Expm1,
                                                 Log1p, Sinh, Tan)
from msops.primitives.unary_ops import Softplus

__all__ = ["floor", "ceil", "round", "isnan", "isinf", "isfinite", "logical_and",
           "logical_or", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
           "log1p", "expm1", "tan", "atan", "arctan", "atan2",
           "arctan2", "sinh", "cosh", "asin", "arcsin", "acos", "arccos", "erfc", "remainder",
           "fmod", "floor_mod", "elu", "selu", "softsign", "mish", "logsigmoid", "hardtanh",
           "tanhshrink", "softshrink", "hardshrink"]

floor = _unary(Floor, "`Floor()(input)`: the largest integer <= input.")
ceil = _unary(Ceil, "`Ceil()(input)`: the smallest integer >= input.")
isnan = _unary(IsNan, "`IsNan()(input)`: True where input is NaN.")
isinf = _unary(IsInf, "`IsInf()(input)`: True where input is +-inf.")
isfinite = _unary(IsFinite, "`IsFinite()(input)`: True where input is neither NaN nor inf.")
logical_not = _unary(LogicalNot, "`LogicalNot()(input)`: not input (bool).")
logical_and = _binary(LogicalAnd, "`LogicalAnd()(input, other)`: input and other (bool).",
                      promote=False)
logical_or = _binary(LogicalOr, "`LogicalOr()(input, other)`: input or other (bool).",
                     promote=False)
bitwise_and = _binary(BitwiseAnd, "`BitwiseAnd()(input, other)`: input & other, bit by bit.")
bitwise_or = _binary(BitwiseOr, "`BitwiseOr()(input, other)`: input | other, bit by bit.")
bitwise_xor = _binary(BitwiseXor, "`BitwiseXor()(input, other)`: input ^ other, bit by bit.")
invert = _unary(Invert, "`Invert()(input)`: ~input, bit by bit (ints).")
log1p = _unary(Log1p, "`Log1p()(input)`: log(1 + input).")
expm1 = _unary(Expm1, "`Expm1()(input)`: exp(input) - 1.")
tan = _unary(Tan, "`Tan()(input)`.")
atan = arctan = _unary(Atan, "`Atan()(input)`.")
atan2 = arctan2 = _binary(Atan2, "`Atan2()(input, other)`: the angle of (other, input).")
sinh = _unary(Sinh, "`Sinh()(input)`.")
cosh = _unary(Cosh, "`Cosh()(input)`.")
asin = arcsin = _unary(Asin, "`Asin()(input)`.")
acos = arccos = _unary(ACos, "`ACos()(input)`.")
erfc = _unary(Erfc, "`Erfc()(input)`: 1 - erf(input).")
remainder = _binary(FloorMod, "`FloorMod()(input, other)`: input - floor(input / other) * "
                              "other (the sign of other).")
fmod = _binary(Mod, "`Mod()(input, other)`: input - trunc(input / other) * other (the sign "
                    "of input).")
softsign = _unary(Softsign, "`Softsign()(x)`: x / (1 + |x|).")
mish = _unary(Mish, "`Mish()(x)`: x * tanh(softplus(x)).")
selu = _unary(SeLU, "`SeLU()(input_x)`.")


def floor_mod(x: Any, y: Any) -> Any:
    """`FloorMod()(x, y)`: x - floor(x / y) * y."""
    return _prim(FloorMod)(x, y)


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001 (MindSpore's name)
    """`Round()(input, decimals)`: to `decimals` digits (before the point when negative),
    halves to even."""
    return _prim(Round)(input) if decimals == 0 else _prim(Round)(input, decimals)


def elu(input_x: Any, alpha: float = 1.0) -> Any:
    """`Elu(alpha)(input_x)`: input_x where > 0, else alpha * (exp(input_x) - 1)."""
    return _prim(Elu, alpha)(input_x)


def _check_float(name: str, x: Any) -> None:
    validator.check_tensor_dtype_valid("x", getattr(x, "dtype", None), mstype.float_type, name)


def logsigmoid(x: Any) -> Any:
    """log(1 / (1 + exp(-x))), as -softplus(-x): no overflow for large |x|; floats."""
    _check_float("logsigmoid", x)
    return _prim(Neg)(_prim(Softplus)(_prim(Neg)(x)))


def check_hardtanh_range(name: str, min_val: float, max_val: float) -> None:
    """Hardtanh's bounds: numbers (not NaN), min_val <= max_val."""
    for arg, value in (("min_val", min_val), ("max_val", max_val)):
        validator.check_value_type(arg, value, (int, float), name)
        if value != value:
            raise ValueError(f"For '{name}', the '{arg}' should be a number, but got {value}.")
    if min_val > max_val:
        raise ValueError(f"For '{name}', the 'min_val' should be <= 'max_val' {max_val}, but "
                         f"got {min_val}.")


def hardtanh(input: Any, min_val: float = -1.0, max_val: float = 1.0) -> Any:
    """input clipped to [min_val, max_val]."""
    check_hardtanh_range("hardtanh", min_val, max_val)
    return clamp(input, min_val, max_val)


def tanhshrink(input: Any) -> Any:
    """input - tanh(input)."""
    return _prim(Sub)(input, _prim(Tanh)(input))


def softshrink(x: Any, lambd: float = 0.5) -> Any:
    """`SoftShrink(lambd)(x)`."""
    return _prim(SoftShrink, lambd)(x)


def hardshrink(x: Any, lambd: float = 0.5) -> Any:
    """`HShrink(lambd)(x)`."""
    return _prim(HShrink, lambd)(x)
