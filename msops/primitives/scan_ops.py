"""CumSum: the running sum along an axis (inclusive or exclusive, forward or reversed).

Float16 and bfloat16 accumulate in float32 and are rounded once per element (as the
reductions in math_ops); ints wrap in their own dtype. The scanned axis stays whole in a
parallel graph (a rank's prefix would need the sums of the slices before it).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.array_ops import whole_along
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import arith_types, check_rank, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["CumSum"]


class CumSum(PrimitiveWithInfer):
    """`CumSum(exclusive=False, reverse=False)(input, axis)`: y_i = x_0 + ... + x_i along
    `axis`; `exclusive` leaves x_i out (y_0 = 0), `reverse` sums from the end.

    >>> CumSum(exclusive=True)(Tensor(np.array([1, 2, 3], np.int32)), 0).asnumpy()
    array([0, 1, 3], dtype=int32)
    """

    const_inputs = (1,)

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
        flip = (slice(None),) * axis + (slice(None, None, -1),)
        # exclusive: y[1:] = the inclusive sums of x[:-1], y[0] = 0 (in scan order)
        head = (slice(None),) * axis + (slice(0, 1),)
        body = (slice(None),) * axis + (slice(1, None),)
        last_out = (slice(None),) * axis + (slice(None, -1),)

        def cumsum(x: np.ndarray, axis_: Any = None, out: np.ndarray | None = None
                   ) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            src = x[flip] if reverse else x
            acc = np.cumsum(src, axis=axis, dtype=ct)
            dst = out[flip] if reverse else out          # a view: writes land in out
            if exclusive:
                dst[head] = 0
                np.copyto(dst[body], acc[last_out], casting="unsafe")
            else:
                np.copyto(dst, acc, casting="unsafe")
            return out
        return cumsum


@sharding_rule(CumSum)
def cumsum_spec(prim: CumSum, ins: list, outs: list, consts: dict) -> DimSpec:
    """Element-wise off the axis; the scanned axis stays whole."""
    return whole_along(ins, 1, prim._axis(ins[0], consts[1]), "CumSum scans")


@bprop(CumSum)
def cumsum_bprop(prim: CumSum, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each x_j reaches every y_i whose sum holds it, so dx is dout's running sum in the
    other direction (exclusive stays exclusive)."""
    return g.apply(CumSum(prim.exclusive, not prim.reverse), [dout, inputs[1]]), None
