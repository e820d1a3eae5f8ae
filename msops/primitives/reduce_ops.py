"""More reductions: ReduceMin, ReduceProd (math_ops' `_Reduce` family: `op(keep_dims)(x,
axis)`, a split reduced axis combined by AllReduce(min / prod)), and ArgMax (MindSpore's
`Argmax`, also spelled `ArgMax`).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (NoAttrPrimitive, _Reduce, arith_types, kept_dims,
                                       reduce_axes, reduce_max_bprop)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["ReduceMin", "ReduceProd", "Argmax", "ArgMax"]


class ReduceMin(_Reduce):
    """Minimum over `axis`: `ReduceMin(keep_dims)(x, axis)`; real dtypes.

    >>> ReduceMin()(Tensor(np.array([[3, 1], [2, 5]], np.int32)), 1).asnumpy()
    array([1, 2], dtype=int32)
    """

    valid_types = mstype.int_type + mstype.uint_type + mstype.float_type
    partial_op = "min"
    _np_op = np.minimum

    def _accumulate_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype                    # a minimum is exact in any dtype


class ReduceProd(_Reduce):
    """Product over `axis`: `ReduceProd(keep_dims)(x, axis)`; ints wrap in their own dtype."""

    valid_types = arith_types
    partial_op = "prod"
    _np_op = np.multiply


# ReduceMin's gradient goes to the minima, shared between ties, as ReduceMax's to the maxima
bprop(ReduceMin)(reduce_max_bprop)


class ReduceProdGrad(NoAttrPrimitive):
    """`ReduceProdGrad()(x, dout, axis)`: for each element, dout times the product of the
    other elements it was reduced with (exact with zeros, unlike out / x): ReduceProd's
    backward. Internal; not exported."""

    const_inputs = (2,)

    def infer_shape(self, x_shape: list, dout_shape: list, axis: Any) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dout_dtype: mstype.Type,
                    axis: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.float_type +
                                                  mstype.complex_type, self.name)

    def kernel(self, x: np.ndarray, dout: np.ndarray, axis: Any) -> np.ndarray:
        axes = reduce_axes(self.name, x.ndim, axis)
        kept = [d for d in range(x.ndim) if d not in axes]
        moved = np.transpose(x, kept + list(axes))
        flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
        ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
        # products of the elements before and after each one, multiplied: all but itself
        before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
        after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
        others = (before * after).reshape(moved.shape)
        grad = np.transpose(others, np.argsort(kept + list(axes)))
        d = dout.reshape([1 if i in axes else n for i, n in enumerate(x.shape)])
        return np.ascontiguousarray(grad * d)


declare_without("sharding", ReduceProdGrad,
                reason="it is made only by autodiff, on the rank-local graph")
declare_without("bprop", ReduceProdGrad, reason="second derivatives of ReduceProd are not "
                                                "supported")


@bprop(ReduceProd)
def reduce_prod_bprop(prim: ReduceProd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    axes = inputs[1] if len(inputs) > 1 else g.add_const(())
    dx = g.apply(ReduceProdGrad(), [inputs[0], kept_dims(g, prim, inputs, dout), axes])
    return (dx,) + (None,) * (len(inputs) - 1)


class Argmax(PrimitiveWithInfer):
    """`Argmax(axis=-1, output_type=int32)(x)`: the index of the first maximum along `axis`,
    which the output drops; `output_type` int32 or int64.

    >>> Argmax()(Tensor(np.array([[1.0, 3.0, 3.0], [4.0, 0.0, 1.0]], np.float32))).asnumpy()
    array([1, 0], dtype=int32)
    """

    @prim_attr_register
    def __init__(self, axis: int = -1, output_type: mstype.Type = mstype.int32) -> None:
        validator.check_int("axis", axis, self.name)
        validator.check_value_type("output_type", output_type, mstype.Type, self.name)
        validator.check_type_name("output_type", output_type, (mstype.int32, mstype.int64),
                                  self.name)

    def infer_shape(self, x_shape: list) -> list:
        check = validator.check_axis_in_range(self.axis, len(x_shape), "axis", self.name)
        if not x_shape:
            raise ValueError(f"For '{self.name}', the rank of 'x' should be >= 1, but got "
                             f"shape [] of rank 0.")
        return [d for i, d in enumerate(x_shape) if i != check]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("x", x_dtype, mstype.int_type + mstype.uint_type +
                                           mstype.float_type, self.name)
        return self.output_type

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        axis = self.axis % len(in_abstracts[0].shape)

        def argmax(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, np.argmax(x, axis=axis), casting="unsafe")
            return out
        return argmax


class ArgMax(Argmax):
    """The same op as `Argmax`, under the spelling MindSpore's newer API uses."""


@sharding_rule(Argmax)
def argmax_spec(prim: Argmax, ins: list, outs: list, consts: dict) -> DimSpec:
    """The other dims carry over; the searched axis stays whole (the index of a maximum
    is not a partial result that a collective could combine)."""
    letters = dims(len(ins[0]))
    axis = prim.axis % len(letters)
    return DimSpec((letters,), (letters[:axis] + letters[axis + 1:],), unsplittable=(
        (letters[axis], f"{prim.name} searches along axis {prim.axis}"),))


@bprop(Argmax)
def argmax_bprop(prim: Argmax, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """An index is piecewise constant: no gradient."""
    return (None,)

