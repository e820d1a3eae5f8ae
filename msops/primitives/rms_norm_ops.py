"""RmsNorm: root-mean-square normalisation over the trailing dims gamma covers, as
MindSpore's; its backward, sharding and batch rules beside it."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.batching import per_element, to_front
from msops.primitives.math_ops import (Add, Cast, Mul, ReduceMean, ReduceSum, Sub, check_same_dtype,
                                       compute_dtype)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import batch_rule, bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["RmsNorm"]


class RmsNorm(PrimitiveWithInfer):
    """`RmsNorm(epsilon=1e-6)(x, gamma)` -> (y, rstd).

    rstd = 1 / sqrt(mean(x^2) + epsilon) over x's last gamma.ndim dims (gamma's shape is
    x's trailing shape); y = x * rstd * gamma like x; rstd has x's leading dims then 1s,
    in float32 (float64 for float64 x). float16/bfloat16 are computed in float32.

    >>> x, gamma = Tensor(np.array([[3.0, 4.0]], np.float32)), Tensor(np.ones(2, np.float32))
    >>> y, rstd = RmsNorm()(x, gamma)
    >>> rstd.asnumpy().round(4), y.asnumpy().round(4)
    (array([[0.2828]], dtype=float32), array([[0.8485, 1.1314]], dtype=float32))
    """

    @prim_attr_register
    def __init__(self, epsilon: float = 1e-6) -> None:
        validator.check_value_type("epsilon", epsilon, float, self.name)
        if not 0 < epsilon <= 1:
            raise ValueError(f"For '{self.name}', the 'epsilon' should be in (0, 1], but got "
                             f"{epsilon}.")

    def infer_shape(self, x_shape: list, gamma_shape: list) -> tuple:
        k = len(gamma_shape)
        if not 0 < k <= len(x_shape) or list(x_shape[len(x_shape) - k:]) != list(gamma_shape):
            raise ValueError(f"For '{self.name}', the 'gamma shape' should be x's trailing "
                             f"shape (of x shape {list(x_shape)}, rank >= 1), but got "
                             f"{list(gamma_shape)}.")
        return list(x_shape), list(x_shape[:len(x_shape) - k]) + [1] * k

    def infer_dtype(self, x_dtype: mstype.Type, gamma_dtype: mstype.Type) -> tuple:
        t = check_same_dtype(self.name, {"x": x_dtype, "gamma": gamma_dtype}, mstype.float_type)
        return t, (mstype.float64 if t == mstype.float64 else mstype.float32)

    def kernel(self, x: np.ndarray, gamma: np.ndarray) -> tuple:
        ct = compute_dtype(x.dtype)
        xc = x.astype(ct, copy=False)
        axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
        rstd = 1 / np.sqrt(np.mean(xc * xc, axis=axes, keepdims=True) + ct.type(self.epsilon))
        y = xc * rstd * gamma.astype(ct, copy=False)
        st = np.float64 if x.dtype == np.float64 else np.float32
        return contiguous(y.astype(x.dtype, copy=False)), contiguous(rstd.astype(st))


@sharding_rule(RmsNorm)
def rms_norm_spec(prim: RmsNorm, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's letters in and out; gamma shares the normalised (trailing) letters, which stay
    whole; rstd keeps the leading letters (its normalised dims are 1s)."""
    x = dims(len(ins[0]))
    lead = len(x) - len(ins[1])
    why = f"{prim.name} normalises over them"
    return DimSpec((x, x[lead:]), (x, x[:lead] + (None,) * len(ins[1])),
                   unsplittable=tuple((letter, why) for letter in x[lead:]))


@bprop(RmsNorm)
def rms_norm_bprop(prim: RmsNorm, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """With r = rstd, xhat = x r, dg = dy * gamma, means over the normalised dims (n):
        dx = r (dg - xhat mean(dg xhat)) - drstd r^3 x / n,  dgamma = sum(dy xhat)
    (the sum over the leading dims); computed in x's dtype."""
    x, gamma = inputs
    dy, drstd = dout
    ndim, k = len(x.shape), len(gamma.shape)
    r = g.getitem(out, 1)
    if r.dtype != x.dtype:
        r = g.apply(Cast(), [r, g.add_const(x.dtype)])
        drstd = g.apply(Cast(), [drstd, g.add_const(x.dtype)])
    axes = g.add_const(tuple(range(ndim - k, ndim)))
    xhat = g.apply(Mul(), [x, r])
    dg = g.apply(Mul(), [dy, gamma])
    proj = g.apply(ReduceMean(keep_dims=True), [g.apply(Mul(), [dg, xhat]), axes])
    dx = g.apply(Mul(), [g.apply(Sub(), [dg, g.apply(Mul(), [xhat, proj])]), r])
    n = math.prod(x.shape[ndim - k:])
    r3 = g.apply(Mul(), [g.apply(Mul(), [r, r]), r])
    coeff = g.apply(Mul(), [g.apply(Mul(), [drstd, r3]),
                            g.add_const(np.asarray(-1.0 / n, x.dtype.np_dtype))])
    dx = g.apply(Add(), [dx, g.apply(Mul(), [coeff, x])])
    dgamma = g.apply(Mul(), [dy, xhat])
    if ndim > k:
        dgamma = g.apply(ReduceSum(keep_dims=False), [dgamma, g.add_const(tuple(range(ndim - k)))])
    return dx, dgamma


@batch_rule(RmsNorm)
def rms_norm_batch(prim: RmsNorm, args: list, dims_: list, size: int) -> tuple:
    """x batched (gamma not): the batch axis moved to the front, a leading dim the op keeps;
    a batched gamma: per element."""
    if dims_[1] is not None:
        return per_element(prim, args, dims_, size)
    return prim(to_front(args[0], dims_[0]), args[1]), (0, 0)
