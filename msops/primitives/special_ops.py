"""Special functions as element-wise primitives: Lgamma, Digamma, Polygamma, Zeta (Hurwitz),
Erfinv and the modified Bessel functions BesselI0, BesselI0e, BesselI1, BesselI1e
(MindSpore's primitives of those names, without attributes).

They join math_ops' element-wise family (numpy broadcasting, the `writes_output` kernel,
the element-wise sharding rule: no communication). Kernels are special_kernels' float64
numpy, rounded once into the output dtype (float16, float32, float64). Each differentiates
as MindSpore's does: lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' =
polygamma(n + 1), erfinv' = sqrt(pi) / 2 * exp(erfinv^2), i0' = i1, ...
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives import special_kernels as sk
from msops.primitives.elementwise_ops import Select, ZerosLike, computed
from msops.primitives.primitive import prim_attr_register
from msops.primitives.math_ops import (Add, Equal, Exp, Log, Mul, Neg, RealDiv, Square, Sub,
                                       UnaryElementwise, _Binary, broadcast_shape, scalar,
                                       sum_to)
from msops.primitives.rules import bprop, declare_without
from msops.primitives.unary_ops import Sign

__all__ = ["Lgamma", "Digamma", "Polygamma", "Zeta", "Erfinv", "BesselI0", "BesselI0e",
           "BesselI1", "BesselI1e", "Mvlgamma", "Igamma", "Igammac", "BesselJ0", "BesselJ1",
           "BesselY0", "BesselY1", "BesselK0", "BesselK0e", "BesselK1", "BesselK1e"]

_FLOATS = (mstype.float16, mstype.float32, mstype.float64)


def _float64(fn: Callable) -> Callable:
    """`fn` of the inputs widened to float64 (the kernels' precision)."""
    return lambda *xs: fn(*(x.astype(np.float64, copy=False) for x in xs))


class _Special(UnaryElementwise):
    """`_kernel` of x in float64, rounded once into x's dtype; float16/32/64."""

    valid_types = _FLOATS
    _kernel: Callable = None

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_float64(type(self)._kernel), out_abstract)


class Lgamma(_Special):
    """log |Gamma(x)| element-wise; +inf at the poles 0, -1, -2, ...

    >>> Lgamma()(Tensor(np.array([0.5, 1.0, 3.0], np.float32))).asnumpy()
    array([0.5723649, 0.       , 0.6931472], dtype=float32)
    """

    _kernel = staticmethod(sk.lgamma)


class Digamma(_Special):
    """psi(x), the derivative of lgamma, element-wise; -inf at 0, NaN at -1, -2, ..."""

    _kernel = staticmethod(sk.digamma)


class Erfinv(_Special):
    """The inverse error function element-wise: +-inf at +-1, NaN outside [-1, 1]."""

    _kernel = staticmethod(sk.erfinv)


class BesselI0(_Special):
    """I0(x), the modified Bessel function of the first kind of order 0."""

    _kernel = staticmethod(sk.bessel_i0)


class BesselI0e(_Special):
    """exp(-|x|) I0(x): I0 without its exponential growth."""

    _kernel = staticmethod(sk.bessel_i0e)


class BesselI1(_Special):
    """I1(x), the modified Bessel function of the first kind of order 1."""

    _kernel = staticmethod(sk.bessel_i1)


class BesselI1e(_Special):
    """exp(-|x|) I1(x)."""

    _kernel = staticmethod(sk.bessel_i1e)


class BesselJ0(_Special):
    """J0(x), the Bessel function of the first kind of order 0."""

    _kernel = staticmethod(sk.bessel_j0)


class BesselJ1(_Special):
    """J1(x), the Bessel function of the first kind of order 1."""

    _kernel = staticmethod(sk.bessel_j1)


class BesselY0(_Special):
    """Y0(x), the Bessel function of the second kind of order 0 (-inf at 0, NaN below)."""

    _kernel = staticmethod(sk.bessel_y0)


class BesselY1(_Special):
    """Y1(x), the Bessel function of the second kind of order 1 (-inf at 0, NaN below)."""

    _kernel = staticmethod(sk.bessel_y1)


class BesselK0(_Special):
    """K0(x), the modified Bessel function of the second kind of order 0 (inf at 0, NaN
    below)."""

    _kernel = staticmethod(sk.bessel_k0)


class BesselK0e(_Special):
    """exp(x) K0(x): K0 without its exponential decay."""

    _kernel = staticmethod(sk.bessel_k0e)


class BesselK1(_Special):
    """K1(x), the modified Bessel function of the second kind of order 1."""

    _kernel = staticmethod(sk.bessel_k1)


class BesselK1e(_Special):
    """exp(x) K1(x)."""

    _kernel = staticmethod(sk.bessel_k1e)


class Mvlgamma(_Special):
    """`Mvlgamma(p)(x)`: the multivariate log-gamma of dimension p element-wise,
    p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(x - j / 2); defined for x > (p - 1) / 2
    (checked when run: outside it the sum is not the function); float32 / float64.

    >>> Mvlgamma(1)(Tensor(np.array([2.5], np.float32))).asnumpy()
    array([0.28468287], dtype=float32)
    """

    valid_types = (mstype.float32, mstype.float64)

    @prim_attr_register
    def __init__(self, p: int) -> None:
        validator.check_int("p", p, self.name)
        if p < 1:
            raise ValueError(f"For '{self.name}', the 'p' should be >= 1, but got {p}.")

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        p, name = self.p, self.name
        bound = (p - 1) / 2

        def mvlgamma(x: np.ndarray) -> np.ndarray:
            low = x <= bound
            if np.any(low):
                raise ValueError(f"For '{name}', every element of 'x' should be > (p - 1) / 2 "
                                 f"= {bound}, but got {x[low].min()}.")
            return p * (p - 1) / 4 * math.log(math.pi) + sum(sk.lgamma(x - j / 2)
                                                             for j in range(p))
        return computed(_float64(mvlgamma), out_abstract)


class Polygamma(_Binary):
    """`Polygamma()(a, x)`: the a-th derivative of digamma at x, broadcast; `a` int32 or
    int64 (a whole number >= 0, checked when run), x float16/32/64, whose dtype the output
    keeps. polygamma(0, x) = digamma(x).

    >>> Polygamma()(Tensor(np.array(1, np.int64)), Tensor(np.array([1.0], np.float32))).asnumpy()
    array([1.644934], dtype=float32)
    """

    def infer_dtype(self, a_dtype: mstype.Type, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("a", a_dtype, (mstype.int32, mstype.int64),
                                           self.name)
        return validator.check_tensor_dtype_valid("x", x_dtype, _FLOATS, self.name)

    def infer_shape(self, a_shape: list, x_shape: list) -> list:
        return broadcast_shape(self.name, a_shape, x_shape, "a", "x")

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        compute = computed(_float64(sk.polygamma), out_abstract)
        name = self.name

        def polygamma(a: np.ndarray, x: np.ndarray, out: np.ndarray | None = None
                      ) -> np.ndarray:
            if a.size and a.min() < 0:
                raise ValueError(f"For '{name}', the 'a' should be >= 0, but got "
                                 f"{int(a.min())}.")
            return compute(a, x, out=out)
        return polygamma


class Zeta(_Binary):
    """`Zeta()(x, q)`: the Hurwitz zeta function sum_k (q + k)^-x, broadcast; float32 or
    float64 of one dtype. inf at x == 1, NaN for x < 1, inf at q a non-positive integer.

    >>> Zeta()(Tensor(np.array([2.0], np.float64)), Tensor(np.array([1.0]))).asnumpy()
    array([1.64493407])
    """

    valid_types = (mstype.float32, mstype.float64)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_float64(sk.hurwitz_zeta), out_abstract)


class _IncompleteGamma(_Binary):
    """`_kernel(a, x)` in float64, broadcast; float32 or float64 of one dtype."""

    valid_types = (mstype.float32, mstype.float64)
    _kernel: Callable = None

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_float64(type(self)._kernel), out_abstract)


class Igamma(_IncompleteGamma):
    """`Igamma()(a, x)`: the regularized lower incomplete gamma function P(a, x) =
    gamma(a, x) / Gamma(a), broadcast; float32 or float64 of one dtype. NaN for a < 0 or
    x < 0, as scipy's gammainc.

    >>> Igamma()(Tensor(np.array([1.0, 2.0])), Tensor(np.array([1.0, 1.0]))).asnumpy()
    array([0.63212056, 0.26424112])
    """

    _kernel = staticmethod(sk.igamma)


class Igammac(_IncompleteGamma):
    """`Igammac()(a, x)`: the regularized upper incomplete gamma function Q(a, x) =
    1 - P(a, x), computed directly (its continued fraction where x > a + 1), so small
    values keep their precision."""

    _kernel = staticmethod(sk.igammac)


class LogBeta(_IncompleteGamma):
    """`LogBeta()(x, y)`: log |Beta(x, y)| = lgamma(x) + lgamma(y) - lgamma(x + y),
    broadcast, with Stirling's series where x or y is large so the big terms never cancel;
    float32 or float64. Internal: `nn.LBeta`'s kernel."""

    _kernel = staticmethod(sk.lbeta)


class IgammaGradA(_IncompleteGamma):
    """`IgammaGradA()(a, x)`: dP(a, x) / da, Igamma's gradient in a (its power series
    differentiated term by term). Internal: made by Igamma's and Igammac's backward."""

    _kernel = staticmethod(sk.igamma_grad_a)


declare_without("bprop", IgammaGradA,
                reason="second derivatives of Igamma in a are not supported")


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
def _times(g: Any, dout: Any, v: Any) -> tuple:
    return (g.apply(Mul(), [dout, v]),)


def _order(g: Any, n: int) -> Any:
    return g.add_const(np.asarray(n, np.int64))


@bprop(Lgamma)
def lgamma_bprop(prim: Lgamma, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * digamma(x)."""
    return _times(g, dout, g.apply(Digamma(), [inputs[0]]))


@bprop(Mvlgamma)
def mvlgamma_bprop(prim: Mvlgamma, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * sum_{j < p} digamma(x - j / 2)."""
    x = inputs[0]
    slope = g.apply(Digamma(), [x])
    for j in range(1, prim.p):
        shifted = g.apply(Sub(), [x, scalar(g, j / 2, x.dtype)])
        slope = g.apply(Add(), [slope, g.apply(Digamma(), [shifted])])
    return _times(g, dout, slope)


@bprop(Digamma)
def digamma_bprop(prim: Digamma, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * polygamma(1, x)."""
    return _times(g, dout, g.apply(Polygamma(), [_order(g, 1), inputs[0]]))


@bprop(Polygamma)
def polygamma_bprop(prim: Polygamma, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """a: none (an integer); x: dout * polygamma(a + 1, x)."""
    a, x = inputs
    higher = g.apply(Add(), [a, g.add_const(np.asarray(1, a.dtype.np_dtype))])
    dx = g.apply(Mul(), [dout, g.apply(Polygamma(), [higher, x])])
    return None, sum_to(g, dx, x.shape)


@bprop(Zeta)
def zeta_bprop(prim: Zeta, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: none (as MindSpore's, whose Zeta differentiates in q only); q: -dout * x *
    zeta(x + 1, q)."""
    x, q = inputs
    shifted = g.apply(Zeta(), [g.apply(Add(), [x, scalar(g, 1, x.dtype)]), q])
    dq = g.apply(Neg(), [g.apply(Mul(), [dout, g.apply(Mul(), [x, shifted])])])
    return None, sum_to(g, dq, q.shape)


def _igamma_density(g: Any, a: Any, x: Any) -> Any:
    """dP(a, x)/dx = x^(a-1) e^-x / Gamma(a), as exp((a - 1) log x - x - lgamma(a)); x is
    replaced by 1 where a == 1, so 0 * log(0) is never formed."""
    a_less = g.apply(Sub(), [a, scalar(g, 1, a.dtype)])
    unit = g.apply(Equal(), [a_less, scalar(g, 0, a.dtype)])
    ones = g.apply(Add(), [g.apply(ZerosLike(), [x]), scalar(g, 1, x.dtype)])
    safe_x = g.apply(Select(), [unit, ones, x])
    power = g.apply(Mul(), [a_less, g.apply(Log(), [safe_x])])
    exponent = g.apply(Sub(), [power, g.apply(Add(), [x, g.apply(Lgamma(), [a])])])
    return g.apply(Exp(), [exponent])


@bprop(Igamma, Igammac)
def igamma_bprop(prim: Igamma, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """a: dout * dP/da (IgammaGradA); x: dout * x^(a-1) e^-x / Gamma(a); negated for
    Igammac (Q = 1 - P)."""
    a, x = inputs
    da = g.apply(Mul(), [dout, g.apply(IgammaGradA(), [a, x])])
    dx = g.apply(Mul(), [dout, _igamma_density(g, a, x)])
    if isinstance(prim, Igammac):
        da, dx = g.apply(Neg(), [da]), g.apply(Neg(), [dx])
    return sum_to(g, da, a.shape), sum_to(g, dx, x.shape)


@bprop(LogBeta)
def log_beta_bprop(prim: LogBeta, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: dout * (digamma(x) - digamma(x + y)); y likewise."""
    x, y = inputs
    total = g.apply(Digamma(), [g.apply(Add(), [x, y])])
    dx = g.apply(Mul(), [dout, g.apply(Sub(), [g.apply(Digamma(), [x]), total])])
    dy = g.apply(Mul(), [dout, g.apply(Sub(), [g.apply(Digamma(), [y]), total])])
    return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


@bprop(Erfinv)
def erfinv_bprop(prim: Erfinv, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * sqrt(pi) / 2 * exp(out**2) (the reciprocal of erf' at out)."""
    slope = g.apply(Exp(), [g.apply(Square(), [out])])
    return _times(g, dout, g.apply(Mul(), [slope, scalar(g, math.sqrt(math.pi) / 2,
                                                         out.dtype)]))


@bprop(BesselI0)
def bessel_i0_bprop(prim: BesselI0, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * I1(x)."""
    return _times(g, dout, g.apply(BesselI1(), [inputs[0]]))


@bprop(BesselI0e)
def bessel_i0e_bprop(prim: BesselI0e, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (i1e(x) - sign(x) i0e(x))."""
    x = inputs[0]
    slope = g.apply(Sub(), [g.apply(BesselI1e(), [x]),
                            g.apply(Mul(), [g.apply(Sign(), [x]), out])])
    return _times(g, dout, slope)


def _i1_over_x(g: Any, x: Any, i1: Any) -> Any:
    """i1(x) / x, its limit 1/2 at x == 0 (the division by a safe 1 there)."""
    zero = g.apply(Equal(), [x, scalar(g, 0, x.dtype)])
    ones = g.apply(Add(), [g.apply(ZerosLike(), [x]), scalar(g, 1, x.dtype)])
    ratio = g.apply(RealDiv(), [i1, g.apply(Select(), [zero, ones, x])])
    half = g.apply(Add(), [g.apply(ZerosLike(), [x]), scalar(g, 0.5, x.dtype)])
    return g.apply(Select(), [zero, half, ratio])


@bprop(BesselI1)
def bessel_i1_bprop(prim: BesselI1, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (I0(x) - I1(x) / x), 1/2 at x == 0."""
    x = inputs[0]
    return _times(g, dout, g.apply(Sub(), [g.apply(BesselI0(), [x]), _i1_over_x(g, x, out)]))


@bprop(BesselJ0)
def bessel_j0_bprop(prim: BesselJ0, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """-dout * J1(x)."""
    return _times(g, dout, g.apply(Neg(), [g.apply(BesselJ1(), [inputs[0]])]))


@bprop(BesselJ1)
def bessel_j1_bprop(prim: BesselJ1, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (J0(x) - J1(x) / x), 1/2 at x == 0."""
    x = inputs[0]
    return _times(g, dout, g.apply(Sub(), [g.apply(BesselJ0(), [x]), _i1_over_x(g, x, out)]))


@bprop(BesselY0)
def bessel_y0_bprop(prim: BesselY0, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """-dout * Y1(x)."""
    return _times(g, dout, g.apply(Neg(), [g.apply(BesselY1(), [inputs[0]])]))


@bprop(BesselY1)
def bessel_y1_bprop(prim: BesselY1, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (Y0(x) - Y1(x) / x)."""
    x = inputs[0]
    return _times(g, dout, g.apply(Sub(), [g.apply(BesselY0(), [x]),
                                           g.apply(RealDiv(), [out, x])]))


@bprop(BesselK0)
def bessel_k0_bprop(prim: BesselK0, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """-dout * K1(x)."""
    return _times(g, dout, g.apply(Neg(), [g.apply(BesselK1(), [inputs[0]])]))


@bprop(BesselK0e)
def bessel_k0e_bprop(prim: BesselK0e, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (k0e(x) - k1e(x))."""
    return _times(g, dout, g.apply(Sub(), [out, g.apply(BesselK1e(), [inputs[0]])]))


@bprop(BesselK1)
def bessel_k1_bprop(prim: BesselK1, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """-dout * (K0(x) + K1(x) / x)."""
    x = inputs[0]
    slope = g.apply(Add(), [g.apply(BesselK0(), [x]), g.apply(RealDiv(), [out, x])])
    return _times(g, dout, g.apply(Neg(), [slope]))


@bprop(BesselK1e)
def bessel_k1e_bprop(prim: BesselK1e, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (k1e(x) (1 - 1 / x) - k0e(x))."""
    x = inputs[0]
    slope = g.apply(Sub(), [g.apply(Sub(), [out, g.apply(RealDiv(), [out, x])]),
                            g.apply(BesselK0e(), [x])])
    return _times(g, dout, slope)


@bprop(BesselI1e)
def bessel_i1e_bprop(prim: BesselI1e, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (i0e(x) - i1e(x) (sign(x) + 1 / x)), 1/2 at x == 0."""
    x = inputs[0]
    slope = g.apply(Sub(), [g.apply(BesselI0e(), [x]), _i1_over_x(g, x, out)])
    slope = g.apply(Sub(), [slope, g.apply(Mul(), [g.apply(Sign(), [x]), out])])
    return _times(g, dout, slope)
