"""Special functions with `mindspore.ops`' names, arguments and defaults: lgamma, digamma,
polygamma, zeta, erfinv, i0 and the modified Bessel functions bessel_i0, bessel_i0e,
bessel_i1, bessel_i1e. Each calls its primitive (special_ops), so it traces, shards
(element-wise) and differentiates as the primitive does; an int input is computed in float32,
as MindSpore's float-valued functions."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.primitives.math_ops import promoted
from msops.primitives.special_ops import (BesselI0, BesselI0e, BesselI1, BesselI1e, BesselJ0,
                                          BesselJ1, BesselK0, BesselK0e, BesselK1, BesselK1e,
                                          BesselY0, BesselY1, Digamma,
                                          Erfinv, Igamma, Igammac, Lgamma, Mvlgamma,
                                          Polygamma, Zeta)

__all__ = ["lgamma", "digamma", "polygamma", "zeta", "erfinv", "i0", "bessel_i0",
           "bessel_i0e", "bessel_i1", "bessel_i1e", "mvlgamma", "igamma", "igammac", "bessel_j0",
           "bessel_j1", "bessel_y0", "bessel_y1", "bessel_k0", "bessel_k0e", "bessel_k1",
           "bessel_k1e"]


def _unary_float(cls: type, doc: str) -> Any:
    def call(input: Any) -> Any:
        return _prim(cls)(promoted((input,), floating=True)[0])
    call.__doc__ = doc
    return call


lgamma = _unary_float(Lgamma, "`Lgamma()(input)`: log |Gamma(input)| (ints as float32).")
digamma = _unary_float(Digamma, "`Digamma()(input)`: the logarithmic derivative of Gamma.")
erfinv = _unary_float(Erfinv, "`Erfinv()(input)`: the inverse of erf on [-1, 1].")
bessel_i0 = i0 = _unary_float(BesselI0, "`BesselI0()(x)`: the modified Bessel function I0.")
bessel_i0e = _unary_float(BesselI0e, "`BesselI0e()(x)`: exp(-|x|) I0(x).")
bessel_i1 = _unary_float(BesselI1, "`BesselI1()(x)`: the modified Bessel function I1.")
bessel_i1e = _unary_float(BesselI1e, "`BesselI1e()(x)`: exp(-|x|) I1(x).")
bessel_j0 = _unary_float(BesselJ0, "`BesselJ0()(x)`: the Bessel function J0.")
bessel_j1 = _unary_float(BesselJ1, "`BesselJ1()(x)`: the Bessel function J1.")
bessel_y0 = _unary_float(BesselY0, "`BesselY0()(x)`: the Bessel function Y0 (x >= 0).")
bessel_y1 = _unary_float(BesselY1, "`BesselY1()(x)`: the Bessel function Y1 (x >= 0).")
bessel_k0 = _unary_float(BesselK0, "`BesselK0()(x)`: the modified Bessel function K0.")
bessel_k0e = _unary_float(BesselK0e, "`BesselK0e()(x)`: exp(x) K0(x).")
bessel_k1 = _unary_float(BesselK1, "`BesselK1()(x)`: the modified Bessel function K1.")
bessel_k1e = _unary_float(BesselK1e, "`BesselK1e()(x)`: exp(x) K1(x).")


def polygamma(n: Any, input: Any) -> Any:
    """`Polygamma()(n, input)`: the n-th derivative of digamma (n a non-negative int or an
    int Tensor; polygamma(0, x) = digamma(x))."""
    if isinstance(n, bool) or not isinstance(n, (int, Tensor)):
        raise TypeError(f"For 'polygamma', the 'n' should be an int or an int Tensor, but got "
                        f"{type(n).__name__}.")
    if isinstance(n, int):
        if n < 0:
            raise ValueError(f"For 'polygamma', the 'n' should be >= 0, but got {n}.")
        n = Tensor(np.asarray(n, np.int64))
    return _prim(Polygamma)(n, promoted((input,), floating=True)[0])


def _float_pair(name: str, input: Any, other: Any) -> tuple:
    """(input, other) as Tensors of one float32 / float64 dtype (a number takes the Tensor's
    dtype)."""
    tensors = [v for v in (input, other) if isinstance(v, Tensor)]
    if not tensors:
        raise TypeError(f"For '{name}', at least one of 'input' and 'other' should be a Tensor, "
                        f"but got {type(input).__name__} and {type(other).__name__}.")
    like = tensors[0].dtype.np_dtype if tensors[0].dtype in mstype.float_type else np.float32
    x, y = promoted([v if isinstance(v, Tensor) else Tensor(np.asarray(v, like))
                     for v in (input, other)], floating=True)
    validator.check_tensor_dtype_valid("input", x.dtype, (mstype.float32, mstype.float64),
                                       name)
    return x, y


def igamma(input: Any, other: Any) -> Any:
    """`Igamma()(input, other)`: the regularized lower incomplete gamma P(input, other),
    broadcast."""
    return _prim(Igamma)(*_float_pair("igamma", input, other))


def igammac(input: Any, other: Any) -> Any:
    """`Igammac()(input, other)`: the regularized upper incomplete gamma Q(input, other) =
    1 - P, broadcast."""
    return _prim(Igammac)(*_float_pair("igammac", input, other))


def zeta(input: Any, other: Any) -> Any:
    """`Zeta()(input, other)`: the Hurwitz zeta function sum_k (other + k)^-input,
    broadcast (a number for either is taken in the other's dtype)."""
    x, q = _float_pair("zeta", input, other)
    return _prim(Zeta)(x, q)


def mvlgamma(input: Any, p: int) -> Any:
    """`Mvlgamma(p)(input)`: the multivariate log-gamma of dimension p (every element >
    (p - 1) / 2; ints as float32)."""
    validator.check_value_type("p", p, (int,), "mvlgamma")
    return _prim(Mvlgamma, p)(promoted((input,), floating=True)[0])
