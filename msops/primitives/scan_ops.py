"""CumSum, CumProd and CumulativeLogsumexp: the running sum / product / log-sum-exp along an
axis (inclusive or exclusive, forward or reversed), one `_Scan` family; Cummax and Cummin:
the running extreme and where it was found.

Float16 and bfloat16 accumulate in float32 and are rounded once per element (as the
reductions in math_ops); ints wrap in their own dtype. The scanned axis stays whole in a
parallel graph (a rank's prefix would need the sums of the slices before it).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.array_ops import whole_along
from msops.primitives.elementwise_ops import Greater, Less, Select, ZerosLike
from msops.primitives.gather_ops import GatherDGrad
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (Add, Exp, Log, Neg, Sub, arith_types, check_rank,
                                       compute_dtype, scalar)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import to_front
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["CumSum", "CumProd", "CumulativeLogsumexp", "Cummax", "Cummin"]


class _Scan(PrimitiveWithInfer):
    """`Op(exclusive=False, reverse=False)(input, axis)`: the running `_np_scan` (np.cumsum,
    np.cumprod) along `axis`; `exclusive` leaves x_i out of y_i (y_0 = `_identity`),
    `reverse` scans from the end."""

    const_inputs = (1,)
    _np_scan: Callable = None
    _identity = 0

    @prim_attr_register
    def __init__(self, exclusive: bool = False, reverse: bool = False) -> None:
        validator.check_bool("exclusive", exclusive, self.name)
        validator.check_bool("reverse", reverse, self.name)

    def _axis(self, x_shape: Sequence[int], axis: Any) -> int:
        check_rank(self.name, "input", x_shape, 1)
        return validator.check_axis_in_range(axis, len(x_shape), "axis", self.name)

    def infer_shape(self, x_shape: list, axis: Any) -> list:
        self._axis(x_shape, axis)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, axis: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("input", x_dtype, arith_types, self.name)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        axis = self._axis(shape, in_abstracts[1].value)
        ct = compute_dtype(dtype)
        exclusive, reverse = self.exclusive, self.reverse
        scan, identity = type(self)._np_scan, self._identity
        flip = (slice(None),) * axis + (slice(None, None, -1),)
        # exclusive: y[1:] = the inclusive scan of x[:-1], y[0] = the identity (in scan order)
        head = (slice(None),) * axis + (slice(0, 1),)
        body = (slice(None),) * axis + (slice(1, None),)
        last_out = (slice(None),) * axis + (slice(None, -1),)

        def scanned(x: np.ndarray, axis_: Any = None, out: np.ndarray | None = None
                    ) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            src = x[flip] if reverse else x
            acc = scan(src, axis=axis, dtype=ct)
            dst = out[flip] if reverse else out          # a view: writes land in out
            if exclusive:
                dst[head] = identity
                np.copyto(dst[body], acc[last_out], casting="unsafe")
            else:
                np.copyto(dst, acc, casting="unsafe")
            return out
        return scanned


class CumSum(_Scan):
    """`CumSum(exclusive=False, reverse=False)(input, axis)`: y_i = x_0 + ... + x_i along
    `axis`; `exclusive` leaves x_i out (y_0 = 0), `reverse` sums from the end.

    >>> CumSum(exclusive=True)(Tensor(np.array([1, 2, 3], np.int32)), 0).asnumpy()
    array([0, 1, 3], dtype=int32)
    """

    _np_scan = staticmethod(np.cumsum)


class CumProd(_Scan):
    """`CumProd(exclusive=False, reverse=False)(x, axis)`: y_i = x_0 * ... * x_i along
    `axis`; `exclusive` leaves x_i out (y_0 = 1), `reverse` multiplies from the end.

    >>> CumProd()(Tensor(np.array([1.0, 2.0, 3.0], np.float32)), 0).asnumpy()
    array([1., 2., 6.], dtype=float32)
    """

    _np_scan = staticmethod(np.cumprod)
    _identity = 1


class CumulativeLogsumexp(_Scan):
    """`CumulativeLogsumexp(exclusive=False, reverse=False)(x, axis)`: y_i = log(exp(x_0) +
    ... + exp(x_i)) along `axis`, accumulated pairwise by logaddexp (no overflow, no
    underflow of the early terms); `exclusive` leaves x_i out (y_0 = -inf), `reverse` runs
    from the end; floats.

    >>> CumulativeLogsumexp()(Tensor(np.array([0.0, 0.0, 3.0])), 0).asnumpy().round(4)
    array([0.    , 0.6931, 3.0949])
    """

    _np_scan = staticmethod(np.logaddexp.accumulate)
    _identity = -np.inf

    def infer_dtype(self, x_dtype: mstype.Type, axis: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.float_type, self.name)


@sharding_rule(_Scan)
def scan_spec(prim: _Scan, ins: list, outs: list, consts: dict) -> DimSpec:
    """Element-wise off the axis; the scanned axis stays whole."""
    return whole_along(ins, 1, prim._axis(ins[0], consts[1]), f"{prim.name} scans")


@bprop(CumSum, complex_values=True)
def cumsum_bprop(prim: CumSum, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each x_j reaches every y_i whose sum holds it, so dx is dout's running sum in the
    other direction (exclusive stays exclusive)."""
    return g.apply(CumSum(prim.exclusive, not prim.reverse), [dout, inputs[1]]), None


@bprop(CumulativeLogsumexp)
def cumulative_logsumexp_bprop(prim: CumulativeLogsumexp, inputs: list, out: Any, dout: Any,
                               g: Any) -> tuple:
    """dx_j = sum over the y_k holding x_j of dout_k exp(x_j - y_k): the positive and the
    negative parts of dout each as exp(x_j + a log-sum-exp scan, in the other direction, of
    log|dout_k| - y_k), so nothing overflows."""
    x, axis = inputs
    back = CumulativeLogsumexp(prim.exclusive, not prim.reverse)
    minus_inf = g.apply(Add(), [g.apply(ZerosLike(), [dout]), scalar(g, -np.inf, dout.dtype)])
    one = g.apply(Add(), [g.apply(ZerosLike(), [dout]), scalar(g, 1, dout.dtype)])
    # a y_k of -inf (every x before it -inf) takes no part: its term is -inf too
    finite = g.apply(Greater(), [out, scalar(g, -np.inf, out.dtype)])

    def part(mask: Any, magnitude: Any) -> Any:
        keep = g.apply(Select(), [mask, finite, mask])
        safe = g.apply(Select(), [keep, magnitude, one])
        term = g.apply(Sub(), [g.apply(Log(), [safe]), g.apply(Select(), [keep, out, one])])
        term = g.apply(Select(), [keep, term, minus_inf])
        return g.apply(Exp(), [g.apply(Add(), [g.apply(back, [term, axis]), x])])

    zero = scalar(g, 0, dout.dtype)
    positive = part(g.apply(Greater(), [dout, zero]), dout)
    negative = part(g.apply(Less(), [dout, zero]), g.apply(Neg(), [dout]))
    return g.apply(Sub(), [positive, negative]), None


class _RunningExtreme(PrimitiveWithInfer):
    """`Op(axis)(input)` -> (values, indices): the running extreme along `axis` and the
    int64 index where it was found (the latest among equals; a NaN, once met, is kept)."""

    fresh_outputs = True
    _better: Callable = None

    @prim_attr_register
    def __init__(self, axis: int) -> None:
        validator.check_int("axis", axis, self.name)

    def _axis(self, x_shape: Sequence[int]) -> int:
        check_rank(self.name, "input", x_shape, 1)
        return validator.check_axis_in_range(self.axis, len(x_shape), "axis", self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        self._axis(x_shape)
        return list(x_shape), list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        valid = mstype.int_type + mstype.uint_type + mstype.float_type
        return (validator.check_tensor_dtype_valid("input", x_dtype, valid, self.name),
                mstype.int64)

    def kernel(self, x: np.ndarray) -> tuple:
        axis = self._axis(x.shape)
        xs = np.moveaxis(x.astype(compute_dtype(x.dtype), copy=False), axis, 0)
        values, index = np.empty_like(xs), np.zeros(xs.shape, np.int64)
        better = type(self)._better
        for k in range(xs.shape[0]):
            if k == 0:
                values[0], index[0] = xs[0], 0
                continue
            with np.errstate(invalid="ignore"):
                take = (better(xs[k], values[k - 1]) | np.isnan(xs[k])) & \
                    ~(np.isnan(values[k - 1]) & ~np.isnan(xs[k]))
            values[k] = np.where(take, xs[k], values[k - 1])
            index[k] = np.where(take, k, index[k - 1])
        return (contiguous(np.moveaxis(values, 0, axis).astype(x.dtype)),
                contiguous(np.moveaxis(index, 0, axis)))


class Cummax(_RunningExtreme):
    """`Cummax(axis)(input)` -> (values, indices): y_i = max(x_0, ..., x_i) along `axis` and
    the int64 index of that maximum (the latest among equals).

    >>> v, i = Cummax(0)(Tensor(np.array([3, 1, 4, 4], np.int32)))
    >>> v.asnumpy(), i.asnumpy()
    (array([3, 3, 4, 4], dtype=int32), array([0, 0, 2, 3]))
    """

    _better = staticmethod(np.greater_equal)


class Cummin(_RunningExtreme):
    """`Cummin(axis)(input)` -> (values, indices): y_i = min(x_0, ..., x_i) along `axis` and
    the int64 index of that minimum (the latest among equals)."""

    _better = staticmethod(np.less_equal)


@sharding_rule(_RunningExtreme)
def running_extreme_spec(prim: _RunningExtreme, ins: list, outs: list, consts: dict
                         ) -> DimSpec:
    """Element-wise off the axis; the scanned axis stays whole."""
    return whole_along(ins, 2, prim._axis(ins[0]), f"{prim.name} scans")


@bprop(_RunningExtreme)
def running_extreme_bprop(prim: _RunningExtreme, inputs: list, out: Any, dout: list,
                          g: Any) -> tuple:
    """The values' gradient added at the positions the indices name."""
    x = inputs[0]
    return (g.apply(GatherDGrad(), [dout[0], g.add_const(prim._axis(x.shape)),
                                    g.getitem(out, 1), g.add_const(tuple(x.shape))]),)


class CumProdGrad(PrimitiveWithInfer):
    """`CumProdGrad(exclusive, reverse)(x, dout, axis)`: CumProd's backward, exact where x
    holds zeros (no division by x). In scan order, with P_k the product of the elements
    before x_k, dx_k = P_k * S_k, where S_k sums dout_j times the product of the elements
    after x_k up to (inclusive) or before (exclusive) x_j, over the y_j holding x_k: the
    recurrence S_k = dout_k + x_{k+1} S_{k+1} (exclusive: dout_{k+1} + x_{k+1} S_{k+1}),
    from the end. Internal; not exported."""

    const_inputs = (2,)

    @prim_attr_register
    def __init__(self, exclusive: bool = False, reverse: bool = False) -> None:
        pass

    def infer_shape(self, x_shape: list, dout_shape: list, axis: Any) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dout_dtype: mstype.Type,
                    axis: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.float_type +
                                                  mstype.complex_type, self.name)

    def kernel(self, x: np.ndarray, dout: np.ndarray, axis: int) -> np.ndarray:
        axis = axis % x.ndim
        ct = compute_dtype(x.dtype)
        xs = np.moveaxis(x.astype(ct), axis, -1)
        ds = np.moveaxis(dout.astype(ct), axis, -1)
        if self.reverse:
            xs, ds = xs[..., ::-1], ds[..., ::-1]
        n = xs.shape[-1]
        before = np.cumprod(np.concatenate([np.ones_like(xs[..., :1]), xs[..., :-1]], -1), -1)
        s = np.zeros_like(xs)
        if n:
            s[..., -1] = 0 if self.exclusive else ds[..., -1]
        for k in range(n - 2, -1, -1):
            s[..., k] = (ds[..., k + 1] if self.exclusive else ds[..., k]) + \
                xs[..., k + 1] * s[..., k + 1]
        grad = before * s
        if self.reverse:
            grad = grad[..., ::-1]
        return contiguous(np.moveaxis(grad, -1, axis).astype(x.dtype))


declare_without("sharding", CumProdGrad,
                reason="it is made only by autodiff, on the rank-local graph")
declare_without("bprop", CumProdGrad, reason="second derivatives of CumProd are not supported")


@bprop(CumProd, holomorphic=True)
def cumprod_bprop(prim: CumProd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """CumProdGrad (a product of x's elements, holomorphic: on conjugates for complex x)."""
    return g.apply(CumProdGrad(prim.exclusive, prim.reverse),
                   [inputs[0], dout, inputs[1]]), None


@batch_rule(_Scan)
def scan_batch(prim: _Scan, args: list, dims: list, size: int) -> tuple:
    """The scanned axis shifted past the batch axis (moved to 0) (vmap)."""
    x = to_front(args[0], dims[0])
    return prim(x, prim._axis(x.shape[1:], args[1]) + 1), 0
