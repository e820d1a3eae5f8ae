"""Transcendental element-wise primitives: Log1p, Expm1, Tan, Atan, Sinh, Cosh, Asin, ACos,
Asinh, Acosh, Atanh, Erfc and the binary Atan2 and Hypot (MindSpore's primitives of those
names, without attributes).

They join math_ops' element-wise family (the `writes_output` kernel, the element-wise
sharding rule: no communication). Float16 and bfloat16 are computed in float32 and rounded
once into the output; values outside an op's domain give NaN, as in MindSpore (asin(2),
log1p(-2)), and its poles inf (log1p(-1)). Each differentiates
through existing ops.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.primitives.elementwise_ops import Sqrt, computed
from msops.primitives.math_ops import (Add, Exp, Mul, Neg, RealDiv, Square, Sub,
                                       UnaryElementwise, _Binary, real_div_types, scalar,
                                       sum_to)
from msops.primitives.rules import bprop

__all__ = ["Log1p", "Expm1", "Tan", "Atan", "Sinh", "Cosh", "Asin", "ACos", "Asinh", "Acosh",
           "Atanh", "Erfc", "Atan2", "Hypot"]


class _Transcendental(UnaryElementwise):
    """`_np_op` of x on the compute dtype, rounded once; float and complex dtypes."""

    valid_types = real_div_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(type(self)._np_op, out_abstract)


class Log1p(_Transcendental):
    """log(1 + x) element-wise, accurate for small |x|.

    >>> Log1p()(Tensor(np.array([0.0, 1e-8, 1.0], np.float32))).asnumpy()
    array([0.000000e+00, 1.000000e-08, 6.931472e-01], dtype=float32)
    """

    _np_op = np.log1p


class Expm1(_Transcendental):
    """exp(x) - 1 element-wise, accurate for small |x|."""

    _np_op = np.expm1


class Tan(_Transcendental):
    """tan(x) element-wise."""

    _np_op = np.tan


class Atan(_Transcendental):
    """arctan(x) element-wise, in (-pi/2, pi/2) for real x."""

    _np_op = np.arctan


class Sinh(_Transcendental):
    """sinh(x) element-wise."""

    _np_op = np.sinh


class Cosh(_Transcendental):
    """cosh(x) element-wise."""

    _np_op = np.cosh


class Asin(_Transcendental):
    """arcsin(x) element-wise; NaN outside [-1, 1] for real x."""

    _np_op = np.arcsin


class ACos(_Transcendental):
    """arccos(x) element-wise; NaN outside [-1, 1] for real x."""

    _np_op = np.arccos


class Asinh(_Transcendental):
    """arcsinh(x) element-wise."""

    _np_op = np.arcsinh


class Acosh(_Transcendental):
    """arccosh(x) element-wise; NaN below 1 for real x."""

    _np_op = np.arccosh


class Atanh(_Transcendental):
    """arctanh(x) element-wise; +-inf at +-1, NaN outside [-1, 1] for real x."""

    _np_op = np.arctanh


_erfc = np.frompyfunc(math.erfc, 1, 1)


class Erfc(_Transcendental):
    """1 - erf(x) element-wise, without the cancellation of that difference for large x
    (the C library's erfc per element, as `Erf`); float dtypes."""

    valid_types = mstype.float_type
    _np_op = staticmethod(lambda x: np.asarray(_erfc(x.astype(np.float64)), np.float64))


class Atan2(_Binary):
    """`Atan2()(x, y)`: the angle of the point (y, x), arctan(x / y) in the right quadrant,
    in [-pi, pi], broadcast; float dtypes.

    >>> Atan2()(Tensor(np.array([1.0, 1.0], np.float32)),
    ...         Tensor(np.array([1.0, -1.0], np.float32))).asnumpy().round(4)
    array([0.7854, 2.3562], dtype=float32)
    """

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(np.arctan2, out_abstract)


class Hypot(_Binary):
    """`Hypot()(x1, x2)`: sqrt(x1**2 + x2**2) without overflow or underflow in the squares,
    broadcast; float dtypes.

    >>> Hypot()(Tensor(np.array([3.0, 5.0], np.float32)),
    ...         Tensor(np.array([4.0, 12.0], np.float32))).asnumpy()
    array([ 5., 13.], dtype=float32)
    """

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(np.hypot, out_abstract)


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
def _one_plus(g: Any, v: Any) -> Any:
    return g.apply(Add(), [v, scalar(g, 1, v.dtype)])


@bprop(Log1p, holomorphic=True)
def log1p_bprop(prim: Log1p, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / (1 + x)."""
    return (g.apply(RealDiv(), [dout, _one_plus(g, inputs[0])]),)


@bprop(Expm1, holomorphic=True)
def expm1_bprop(prim: Expm1, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (out + 1) = dout * exp(x)."""
    return (g.apply(Mul(), [dout, _one_plus(g, out)]),)


@bprop(Tan, holomorphic=True)
def tan_bprop(prim: Tan, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (1 + out**2) = dout / cos(x)**2."""
    return (g.apply(Mul(), [dout, _one_plus(g, g.apply(Square(), [out]))]),)


@bprop(Atan, holomorphic=True)
def atan_bprop(prim: Atan, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / (1 + x**2)."""
    return (g.apply(RealDiv(), [dout, _one_plus(g, g.apply(Square(), [inputs[0]]))]),)


@bprop(Sinh, holomorphic=True)
def sinh_bprop(prim: Sinh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * cosh(x)."""
    return (g.apply(Mul(), [dout, g.apply(Cosh(), [inputs[0]])]),)


@bprop(Cosh, holomorphic=True)
def cosh_bprop(prim: Cosh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * sinh(x)."""
    return (g.apply(Mul(), [dout, g.apply(Sinh(), [inputs[0]])]),)


def _over_root(g: Any, dout: Any, root_of: Any, sign: float = 1.0) -> Any:
    """sign * dout / sqrt(root_of) (Sqrt and RealDiv: the principal root of a complex
    value too)."""
    dx = g.apply(RealDiv(), [dout, g.apply(Sqrt(), [root_of])])
    return dx if sign > 0 else g.apply(Neg(), [dx])


def _arc_bprop(sign: float) -> Callable:
    """Asin's (sign 1) and ACos's (sign -1) rule: sign * dout / sqrt(1 - x**2)."""
    def rule(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
        x = inputs[0]
        one_less = g.apply(Sub(), [scalar(g, 1, x.dtype), g.apply(Square(), [x])])
        return (_over_root(g, dout, one_less, sign),)
    return rule


# holomorphic with the principal branches numpy uses (f(conj z) = conj f(z) off the cuts)
bprop(Asin, holomorphic=True)(_arc_bprop(1.0))
bprop(ACos, holomorphic=True)(_arc_bprop(-1.0))


@bprop(Asinh, holomorphic=True)
def asinh_bprop(prim: Asinh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / sqrt(x**2 + 1)."""
    x = inputs[0]
    return (_over_root(g, dout, _one_plus(g, g.apply(Square(), [x]))),)


@bprop(Acosh, holomorphic=True)
def acosh_bprop(prim: Acosh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / (sqrt(x - 1) sqrt(x + 1)): acosh(z) = log(z + sqrt(z - 1) sqrt(z + 1)), whose
    derivative differs from 1 / sqrt(z**2 - 1) in sign where Re z < 0 (equal for real
    x > 1)."""
    x = inputs[0]
    one = scalar(g, 1, x.dtype)
    roots = g.apply(Mul(), [g.apply(Sqrt(), [g.apply(Sub(), [x, one])]),
                            g.apply(Sqrt(), [g.apply(Add(), [x, one])])])
    return (g.apply(RealDiv(), [dout, roots]),)


@bprop(Atanh, holomorphic=True)
def atanh_bprop(prim: Atanh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / (1 - x**2)."""
    x = inputs[0]
    one_less = g.apply(Sub(), [scalar(g, 1, x.dtype), g.apply(Square(), [x])])
    return (g.apply(RealDiv(), [dout, one_less]),)


@bprop(Erfc)
def erfc_bprop(prim: Erfc, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * -2 / sqrt(pi) * exp(-x**2)."""
    x = inputs[0]
    gauss = g.apply(Exp(), [g.apply(Neg(), [g.apply(Square(), [x])])])
    return (g.apply(Mul(), [dout, g.apply(Mul(), [gauss, scalar(g, -2 / math.sqrt(math.pi),
                                                               x.dtype)])]),)


@bprop(Atan2)
def atan2_bprop(prim: Atan2, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: dout * y / (x**2 + y**2); y: -dout * x / (x**2 + y**2)."""
    x, y = inputs
    scaled = g.apply(RealDiv(), [dout, g.apply(Add(), [g.apply(Square(), [x]),
                                                     g.apply(Square(), [y])])])
    dx = g.apply(Mul(), [scaled, y])
    dy = g.apply(Neg(), [g.apply(Mul(), [scaled, x])])
    return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


@bprop(Hypot)
def hypot_bprop(prim: Hypot, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x1: dout * x1 / out; x2: dout * x2 / out."""
    x1, x2 = inputs
    scaled = g.apply(RealDiv(), [dout, out])
    return (sum_to(g, g.apply(Mul(), [scaled, x1]), x1.shape),
            sum_to(g, g.apply(Mul(), [scaled, x2]), x2.shape))
