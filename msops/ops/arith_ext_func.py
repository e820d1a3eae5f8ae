"""More element-wise arithmetic with `mindspore.ops`' names, arguments and defaults:
addcdiv, addcmul, divide, floor_divide, truncate_div, truncate_mod, positive, sgn, signbit,
isneginf, isposinf, isreal, is_complex, logical_xor, ldexp, eq, tensor_gt, tensor_lt, inv,
approximate_equal, gcd, lcm, nextafter, accumulate_n, angle, polar, view_as_real,
bitwise_left_shift, bitwise_right_shift and eps.

Each is a primitive call (arith_ext_ops: TruncateDiv, TruncateMod, LogicalXor, Inv,
ApproximateEqual, Addcdiv, Addcmul, AccumulateNV2; Gcd, Lcm, NextAfter, SignBit) or an exact
composite of primitives, so it traces, shards
(element-wise: no communication) and differentiates as they do. Mixed operand dtypes are
promoted as the Tensor operators promote them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _binary, _prim
from msops.ops.math_func import div
from msops.primitives.arith_ext_ops import (AccumulateNV2, Addcdiv, Addcmul, ApproximateEqual,
                                           Eps, Inv, LeftShift, LogicalXor, RightShift,
                                           TruncateDiv, TruncateMod)
from msops.primitives.arith_ops import Gcd, Lcm, NextAfter
from msops.primitives.elementwise_ops import (FloorDiv, Greater, Less, NotEqual, Pow, Select,
                                              Sqrt, ZerosLike)
from msops.primitives.fft_ops import Imag, Real
from msops.primitives.math_ops import Add, Cast, Equal, Mul, RealDiv, Square, promoted
from msops.primitives.piecewise_ops import SignBit
from msops.primitives.stack_ops import Stack
from msops.primitives.transcendental_ops import Atan2
from msops.primitives.unary_ops import Cos, Sign, Sin

__all__ = ["addcdiv", "addcmul", "divide", "floor_divide", "truncate_div", "truncate_mod",
           "positive", "sgn", "signbit", "isneginf", "isposinf", "isreal", "is_complex",
           "logical_xor", "ldexp", "eq", "tensor_gt", "tensor_lt", "inv", "approximate_equal",
           "gcd", "lcm", "nextafter", "accumulate_n", "angle", "polar", "view_as_real",
           "bitwise_left_shift", "bitwise_right_shift", "eps"]

_REAL = mstype.float_type + mstype.int_type + mstype.uint_type

divide = div
floor_divide = _binary(FloorDiv, "`FloorDiv()(input, other)`: floor(input / other).")
truncate_mod = _binary(TruncateMod, "`TruncateMod()(x, y)`: x - trunc(x / y) * y (the sign of "
                                   "x).")
truncate_div = _binary(TruncateDiv, "`TruncateDiv()(x, y)`: x / y rounded towards zero, in the "
                                    "operands' dtype.")
eq = _binary(Equal, "`Equal()(input, other)`: input == other (bool), broadcast.")
tensor_gt = _binary(Greater, "`Greater()(input, other)`: input > other (bool).")
tensor_lt = _binary(Less, "`Less()(input, other)`: input < other (bool).")
gcd = _binary(Gcd, "`Gcd()(input, other)`: the greatest common divisor (int32 / int64).")
lcm = _binary(Lcm, "`Lcm()(input, other)`: the least common multiple (int32 / int64).")
nextafter = _binary(NextAfter, "`NextAfter()(input, other)`: the float after input towards "
                               "other (float32 / float64).")


def _tensor(name: str, arg: str, x: Any) -> Any:
    return check_tensor(name, arg, x)


def _scaled_update(name: str, cls: type, input: Any, tensor1: Any, tensor2: Any,
                   value: Any) -> Any:
    """`cls()(input, tensor1, tensor2, value)`, value (a number or a Tensor) and the Tensors
    promoted to one dtype."""
    for arg, v in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _tensor(name, arg, v)
    if not isinstance(value, (int, float, Tensor)) or isinstance(value, bool):
        raise TypeError(f"For '{name}', the 'value' should be a number or a Tensor, but got "
                        f"{type(value).__name__}.")
    args = promoted((input, tensor1, tensor2, value), floating=cls is Addcdiv)
    dtype = next(a.dtype for a in args if isinstance(a, Tensor))
    args = [a if isinstance(a, Tensor) else Tensor(np.asarray(a, dtype.np_dtype)) for a in args]
    return _prim(cls)(*args)


def addcdiv(input: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    """`Addcdiv()(input, tensor1, tensor2, value)`: input + value * tensor1 / tensor2,
    broadcast (ints as float32)."""
    return _scaled_update("addcdiv", Addcdiv, input, tensor1, tensor2, value)


def addcmul(input: Any, tensor1: Any, tensor2: Any, value: Any = 1) -> Any:
    """`Addcmul()(input, tensor1, tensor2, value)`: input + value * tensor1 * tensor2,
    broadcast."""
    return _scaled_update("addcmul", Addcmul, input, tensor1, tensor2, value)


def positive(input: Any) -> Any:
    """input itself (a bool Tensor is a TypeError, as MindSpore's)."""
    _tensor("positive", "input", input)
    if input.dtype == mstype.bool_:
        raise TypeError("For 'positive', the 'input' should be a numeric Tensor, but got "
                        "Bool.")
    return input


def sgn(input: Any) -> Any:
    """The sign extended to complex numbers: input / |input| (0 at 0) for complex input;
    sign(input) for real input."""
    _tensor("sgn", "input", input)
    if input.dtype not in mstype.complex_type:
        return _prim(Sign)(input)
    re, im = _prim(Real)(input), _prim(Imag)(input)
    modulus = _prim(Sqrt)(_prim(Add)(_prim(Square)(re), _prim(Square)(im)))
    zero = _prim(Equal)(modulus, 0)
    safe = _prim(Select)(zero, _prim(Add)(_prim(ZerosLike)(modulus), 1), modulus)
    unit = _prim(RealDiv)(input, _prim(Cast)(safe, input.dtype))
    return _prim(Select)(zero, _prim(ZerosLike)(input), unit)


def signbit(input: Any) -> Any:
    """`SignBit()(input)`: True where input's sign bit is set (-0.0 and negative NaN too)."""
    return _prim(SignBit)(_tensor("signbit", "input", input))


def _infinity(name: str, input: Any, value: float) -> Any:
    _tensor(name, "input", input)
    if input.dtype in mstype.float_type:
        return _prim(Equal)(input, value)
    validator.check_tensor_dtype_valid("input", input.dtype, _REAL + (mstype.bool_,), name)
    return _prim(Cast)(_prim(ZerosLike)(input), mstype.bool_)


def isneginf(input: Any) -> Any:
    """True where input is -inf (never for an integer input)."""
    return _infinity("isneginf", input, float("-inf"))


def isposinf(input: Any) -> Any:
    """True where input is +inf (never for an integer input)."""
    return _infinity("isposinf", input, float("inf"))


def isreal(input: Any) -> Any:
    """True where input's imaginary part is 0 (everywhere for a real input)."""
    _tensor("isreal", "input", input)
    if input.dtype in mstype.complex_type:
        return _prim(Equal)(_prim(Imag)(input), 0)
    return _prim(Equal)(_prim(ZerosLike)(input), _prim(ZerosLike)(input))


def is_complex(input: Any) -> bool:
    """Whether input's dtype is complex64 or complex128."""
    return _tensor("is_complex", "input", input).dtype in mstype.complex_type


def _as_bool(x: Any) -> Any:
    return x if x.dtype == mstype.bool_ else _prim(NotEqual)(x, _prim(ZerosLike)(x))


def logical_xor(input: Any, other: Any) -> Any:
    """input xor other, broadcast (non-bool Tensors read as input != 0)."""
    _tensor("logical_xor", "input", input)
    _tensor("logical_xor", "other", other)
    return _prim(LogicalXor)(_as_bool(input), _as_bool(other))


def ldexp(x: Any, other: Any) -> Any:
    """x * 2 ** other, broadcast (ints as float32)."""
    x, other = promoted((_tensor("ldexp", "x", x), other), floating=True)
    return _prim(Mul)(x, _prim(Pow)(2.0, other) if isinstance(other, Tensor) else 2.0 ** other)


def inv(x: Any) -> Any:
    """`Inv()(x)`: 1 / x (floats and complex)."""
    return _prim(Inv)(_tensor("inv", "x", x))


def approximate_equal(x: Any, y: Any, tolerance: float = 1e-5) -> Any:
    """|x - y| < tolerance element-wise (bool), x and y of one float dtype."""
    validator.check_value_type("tolerance", tolerance, (float, int), "approximate_equal")
    for arg, v in (("x", x), ("y", y)):
        validator.check_tensor_dtype_valid(arg, getattr(v, "dtype", None), mstype.float_type,
                                           "approximate_equal")
    if x.dtype != y.dtype:
        raise TypeError(f"For 'approximate_equal', the 'x' and 'y' should have one dtype, but "
                        f"got {x.dtype} and {y.dtype}.")
    return _prim(ApproximateEqual, float(tolerance))(x, y)


def accumulate_n(x: Any) -> Any:
    """`AccumulateNV2()(x)`: the sum of a list or tuple of Tensors of one shape and dtype."""
    return _prim(AccumulateNV2)(tuple(x))


def angle(input: Any) -> Any:
    """The argument of each element: atan2(imag, real), in [-pi, pi] (a real input: 0 or
    pi)."""
    _tensor("angle", "input", input)
    if input.dtype in mstype.complex_type:
        return _prim(Atan2)(_prim(Imag)(input), _prim(Real)(input))
    x = promoted((input,), floating=True)[0]
    return _prim(Atan2)(_prim(ZerosLike)(x), x)


def polar(abs: Any, angle: Any) -> Any:  # noqa: A002 (MindSpore's names)
    """abs * (cos(angle) + i sin(angle)): complex64 from float32, complex128 from float64."""
    for arg, v in (("abs", abs), ("angle", angle)):
        validator.check_tensor_dtype_valid(arg, getattr(v, "dtype", None),
                                           (mstype.float32, mstype.float64), "polar")
    if abs.dtype != angle.dtype:
        raise TypeError(f"For 'polar', the 'abs' and 'angle' should have one dtype, but got "
                        f"{abs.dtype} and {angle.dtype}.")
    cdtype = mstype.complex64 if abs.dtype == mstype.float32 else mstype.complex128
    re = _prim(Cast)(_prim(Mul)(abs, _prim(Cos)(angle)), cdtype)
    im = _prim(Cast)(_prim(Mul)(abs, _prim(Sin)(angle)), cdtype)
    return _prim(Add)(re, _prim(Mul)(im, 1j))


def view_as_real(input: Any) -> Any:
    """A complex Tensor as reals: its shape plus a last dim of 2 (real, imaginary)."""
    validator.check_tensor_dtype_valid("input", getattr(input, "dtype", None),
                                       mstype.complex_type, "view_as_real")
    return _prim(Stack, -1)((_prim(Real)(input), _prim(Imag)(input)))


def _shift(name: str, cls: type, input: Any, other: Any) -> Any:
    _tensor(name, "input", input)
    if not isinstance(other, Tensor):
        if isinstance(other, bool) or not isinstance(other, int):
            raise TypeError(f"For '{name}', the 'other' should be an int or a Tensor, but got "
                            f"{type(other).__name__}.")
        other = Tensor(np.asarray(other, input.dtype.np_dtype))
    return _prim(cls)(*promoted((input, other)))


def bitwise_left_shift(input: Any, other: Any) -> Any:
    """`LeftShift()(input, other)`: input << other (ints; other a Tensor or an int)."""
    return _shift("bitwise_left_shift", LeftShift, input, other)


def bitwise_right_shift(input: Any, other: Any) -> Any:
    """`RightShift()(input, other)`: input >> other, the sign filling in (ints; other a
    Tensor or an int)."""
    return _shift("bitwise_right_shift", RightShift, input, other)


def eps(x: Any) -> Any:
    """`Eps()(x)`: x's shape filled with its float dtype's machine epsilon."""
    return _prim(Eps)(_tensor("eps", "x", x))
