"""CumSum and CumProd: the running sum / product along an axis (inclusive or exclusive,
forward or reversed), one `_Scan` family.

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
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import arith_types, check_rank, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["CumSum", "CumProd"]


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


@sharding_rule(_Scan)
def scan_spec(prim: _Scan, ins: list, outs: list, consts: dict) -> DimSpec:
    """Element-wise off the axis; the scanned axis stays whole."""
    return whole_along(ins, 1, prim._axis(ins[0], consts[1]), f"{prim.name} scans")


@bprop(CumSum, complex_values=True)
def cumsum_bprop(prim: CumSum, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each x_j reaches every y_i whose sum holds it, so dx is dout's running sum in the
    other direction (exclusive stays exclusive)."""
    return g.apply(CumSum(prim.exclusive, not prim.reverse), [dout, inputs[1]]), None


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
