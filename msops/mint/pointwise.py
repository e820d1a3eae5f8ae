"""`mindspore.mint`'s element-wise math: PyTorch's names and arguments (`input`, `other`,
`alpha`, `rounding_mode`) over msops.ops' functional forms, which already have mint's
spelling where the name is re-exported unchanged."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.ops import (abs, ceil, clamp, cos, div, erf, exp, floor, ge,  # noqa: F401,A004
                       gt, le, log, logical_and, logical_not, logical_or, lt, maximum, minimum,
                       mul, ne, neg, pow, reciprocal, round, rsqrt, sigmoid, sin, square, tanh,
                       where)
from msops.ops import (acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and,  # noqa: F401
                       bitwise_or, bitwise_xor, cosh, exp2, expm1, float_power, fmod, hypot,
                       isfinite, isinf, isnan, lerp, log1p, log2, log10, logaddexp,
                       nan_to_num, remainder, sign, sinh, tan, trunc, xlogy)

__all__ = ["add", "sub", "mul", "div", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "pow",
           "clamp", "where", "eq", "ne", "gt", "ge", "lt", "le", "logical_and", "logical_or",
           "logical_not", "logical_xor", "sigmoid", "tanh", "erf", "sin", "cos", "floor",
           "ceil", "round", "square", "reciprocal", "maximum", "minimum"]
# the rest of mint's element-wise names: msops.ops' forms have mint's signatures
__all__ += ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
            "bitwise_or", "bitwise_xor", "cosh", "exp2", "expm1", "float_power", "fmod",
            "hypot", "isfinite", "isinf", "isnan", "lerp", "log1p", "log2", "log10",
            "logaddexp", "nan_to_num", "remainder", "sign", "sinh", "tan", "trunc", "xlogy"]


def add(input: Any, other: Any, *, alpha: float = 1) -> Any:
    """input + alpha * other, broadcast (`ops.add`; alpha scales `other` first)."""
    return ops.add(input, other if alpha == 1 else ops.mul(other, alpha))


def sub(input: Any, other: Any, *, alpha: float = 1) -> Any:
    """input - alpha * other, broadcast (`ops.subtract`)."""
    return ops.subtract(input, other, alpha=alpha)


def sqrt(input: Any) -> Any:
    """The element-wise square root (`ops.sqrt`, whose argument is named `x`)."""
    return ops.sqrt(input)


def eq(input: Any, other: Any) -> Any:
    """input == other (bool), broadcast (`ops.equal`)."""
    return ops.equal(input, other)


def logical_xor(input: Any, other: Any) -> Any:
    """input XOR other as booleans: their truth values differ (`ops.ne` of the two casts)."""
    return ops.ne(ops.cast(input, mstype.bool_), ops.cast(other, mstype.bool_))
