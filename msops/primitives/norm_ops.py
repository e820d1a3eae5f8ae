"""LayerNorm: normalisation over the trailing dims of each sample, as MindSpore's.

Sharded, the normalised dims may be split too: the expansion then sums the statistics'
partial sums across the ranks of those dims (two AllReduces), so the sharded op equals
the serial one (MindSpore's LayerNormInfo refuses such a split).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.comm_ops import AllReduce, ReduceOp
from msops.primitives.elementwise_ops import Sqrt
from msops.primitives.math_ops import (Add, Cast, Mul, RealDiv, ReduceMean, ReduceSum, Square,
                                       Sub, check_rank, check_same_dtype, compute_dtype,
                                       scalar)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import per_element, to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, expansion_rule, sharding_rule
from msops.primitives.sharding import DimSpec, ShardedCall, dims

__all__ = ["LayerNorm"]


class LayerNorm(PrimitiveWithInfer):
    """`LayerNorm(begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7)(input_x, gamma, beta)`.

    Normalises x over its dims from `begin_norm_axis` on: y = (x - mean) / sqrt(variance +
    epsilon) * gamma + beta, with gamma and beta of shape x.shape[begin_params_axis:].
    Outputs (y, mean, variance): y like x; mean and (biased) variance of shape
    x.shape[:begin_norm_axis] followed by 1s, in x's dtype. Float16/bfloat16 are computed
    in float32.

    >>> y, mean, var = LayerNorm()(Tensor(np.array([[1.0, 3.0]], np.float32)),
    ...                            Tensor(np.ones(2, np.float32)), Tensor(np.zeros(2, np.float32)))
    >>> y.asnumpy().round(4), mean.asnumpy(), var.asnumpy()
    (array([[-1.,  1.]], dtype=float32), array([[2.]], dtype=float32), array([[1.]], dtype=float32))
    """

    @prim_attr_register
    def __init__(self, begin_norm_axis: int = 1, begin_params_axis: int = 1,
                 epsilon: float = 1e-7) -> None:
        validator.check_int("begin_norm_axis", begin_norm_axis, self.name)
        validator.check_int("begin_params_axis", begin_params_axis, self.name)
        validator.check_value_type("epsilon", epsilon, float, self.name)
        if not epsilon > 0:
            raise ValueError(f"For '{self.name}', the 'epsilon' should be > 0, but got {epsilon}.")

    def axes(self, ndim: int) -> tuple[int, int]:
        """(begin_norm_axis, begin_params_axis) normalised for an input of rank `ndim`."""
        bna = validator.check_axis_in_range(self.begin_norm_axis, ndim, "begin_norm_axis",
                                            self.name)
        bpa = validator.check_axis_in_range(self.begin_params_axis, ndim,
                                            "begin_params_axis", self.name)
        return bna, bpa

    def infer_shape(self, x_shape: list, gamma_shape: list, beta_shape: list) -> tuple:
        check_rank(self.name, "input_x", x_shape, 1)
        bna, bpa = self.axes(len(x_shape))
        want = list(x_shape[bpa:])
        for arg, shape in (("gamma", gamma_shape), ("beta", beta_shape)):
            if list(shape) != want:
                raise ValueError(f"For '{self.name}', the '{arg} shape' should be == input_x "
                                 f"shape {list(x_shape)} from begin_params_axis {bpa}: {want}, "
                                 f"but got {list(shape)}.")
        stats = list(x_shape[:bna]) + [1] * (len(x_shape) - bna)
        return list(x_shape), stats, list(stats)

    def infer_dtype(self, x_dtype: mstype.Type, gamma_dtype: mstype.Type,
                    beta_dtype: mstype.Type) -> tuple:
        t = check_same_dtype(self.name, {"input_x": x_dtype, "gamma": gamma_dtype,
                                         "beta": beta_dtype}, mstype.float_type)
        return t, t, t

    def kernel(self, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> tuple:
        bna, _ = self.axes(x.ndim)
        ct = compute_dtype(x.dtype)
        xc = x.astype(ct, copy=False)
        axes = tuple(range(bna, x.ndim))
        mean = xc.mean(axis=axes, keepdims=True)
        var = np.square(xc - mean).mean(axis=axes, keepdims=True)
        y = (xc - mean) / np.sqrt(var + ct.type(self.epsilon)) * gamma.astype(ct) + \
            beta.astype(ct)
        return tuple(contiguous(v.astype(x.dtype, copy=False)) for v in (y, mean, var))


@sharding_rule(LayerNorm)
def layer_norm_spec(prim: LayerNorm, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's letters in and out; gamma and beta share x's letters from begin_params_axis; the
    statistics keep the leading dims (their normalised dims are 1s). A split normalised dim
    is reduced inside the op (expansion), so it leaves no partial result."""
    x = dims(len(ins[0]))
    bna, bpa = prim.axes(len(x))
    stats = x[:bna] + (None,) * (len(x) - bna)
    return DimSpec((x, x[bpa:], x[bpa:]), (x, stats, stats))


@expansion_rule(LayerNorm)
def layer_norm_split_statistics(prim: LayerNorm, call: ShardedCall) -> Any:
    """Normalised dims split: the mean and the variance from local sums AllReduced over
    the ranks of those dims (two collectives of the statistics' size), then normalised
    locally, so every rank's slice equals the serial op's."""
    x_shape = call.in_shapes[0]
    ndim = len(x_shape)
    bna, _ = prim.axes(ndim)
    split = sorted({k for d in range(bna, ndim) for k in call.in_axes[0][d]})
    if not split:
        return None
    x, gamma, beta = call.args()
    group = call.group(split)
    norm_axes = call.const(tuple(range(bna, ndim)))
    dtype = x.dtype
    ct = mstype.from_numpy(compute_dtype(dtype.np_dtype))

    def cast(t: Any, to: mstype.Type) -> Any:
        return t if t.dtype == to else call.apply(Cast(), [t, call.const(to)])

    def const(v: float) -> Any:
        return call.const(np.asarray(v, dtype=ct.np_dtype))

    count = math.prod(x_shape[bna:])

    def global_mean(t: Any) -> Any:
        s = call.apply(ReduceSum(keep_dims=True), [t, norm_axes])
        s = call.apply(AllReduce(ReduceOp.SUM, group), [s])
        return call.apply(Mul(), [s, const(1.0 / count)])

    xc = cast(x, ct)
    mean = global_mean(xc)
    centred = call.apply(Sub(), [xc, mean])
    var = global_mean(call.apply(Square(), [centred]))
    std = call.apply(Sqrt(), [call.apply(Add(), [var, const(prim.epsilon)])])
    y = call.apply(Mul(), [call.apply(RealDiv(), [centred, std]), cast(gamma, ct)])
    y = call.apply(Add(), [y, cast(beta, ct)])
    return call.make_tuple([cast(y, dtype), cast(mean, dtype), cast(var, dtype)])


@bprop(LayerNorm)
def layer_norm_bprop(prim: LayerNorm, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """Through all three outputs (MindSpore's rule drops the statistics' gradients; msops
    keeps them, so the op equals its sharded expansion, which differentiates them), with
    xhat = (x - mean) * rstd, dg = dy * gamma, means over the normalised dims (k of them):
        dx = rstd * (dg - mean(dg) - xhat * mean(dg * xhat)) + dmean / k
             + dvariance * 2 (x - mean) / k,
        dgamma = sum(dy * xhat), dbeta = sum(dy)  (sums over the dims before begin_params_axis)."""
    x, gamma = inputs[0], inputs[1]
    ndim = len(x.shape)
    bna, bpa = prim.axes(ndim)
    dy = dout[0]
    mean, var = g.getitem(out, 1), g.getitem(out, 2)
    std = g.apply(Sqrt(), [g.apply(Add(), [var, scalar(g, prim.epsilon, x.dtype)])])
    xhat = g.apply(RealDiv(), [g.apply(Sub(), [x, mean]), std])
    norm_axes = g.add_const(tuple(range(bna, ndim)))

    def norm_mean(t: Any) -> Any:
        return g.apply(ReduceMean(keep_dims=True), [t, norm_axes])

    dg = g.apply(Mul(), [dy, gamma])
    centred = g.apply(Sub(), [dg, norm_mean(dg)])
    centred = g.apply(Sub(), [centred, g.apply(Mul(), [xhat, norm_mean(
        g.apply(Mul(), [dg, xhat]))])])
    dx = g.apply(RealDiv(), [centred, std])
    count = math.prod(x.shape[bna:])
    d_stats = g.apply(Add(), [dout[1], g.apply(Mul(), [dout[2], g.apply(Mul(), [
        g.apply(Sub(), [x, mean]), scalar(g, 2.0, x.dtype)])])])
    dx = g.apply(Add(), [dx, g.apply(Mul(), [d_stats, scalar(g, 1.0 / count, x.dtype)])])
    dgamma, dbeta = g.apply(Mul(), [dy, xhat]), dy
    if bpa:                                  # (an empty axis tuple would sum everything)
        lead = g.add_const(tuple(range(bpa)))
        dgamma = g.apply(ReduceSum(keep_dims=False), [dgamma, lead])
        dbeta = g.apply(ReduceSum(keep_dims=False), [dbeta, lead])
    return dx, dgamma, dbeta


@batch_rule(LayerNorm)
def layer_norm_batch(prim: LayerNorm, args: list, dims: list, size: int) -> tuple:
    """Batched x moved to axis 0, both begin axes shifted past it (gamma and beta keep their
    shape); batched gamma or beta: per element (vmap)."""
    if dims[1] is not None or dims[2] is not None:
        return per_element(prim, args, dims, size)
    x = to_front(args[0], dims[0])
    if len(x.shape) < 2:                          # a 0-d element: LayerNorm's own error
        return per_element(prim, args, dims, size)
    bna, bpa = prim.axes(len(x.shape) - 1)
    out = with_attrs(prim, begin_norm_axis=bna + 1, begin_params_axis=bpa + 1)(x, *args[1:])
    return out, (0, 0, 0)
