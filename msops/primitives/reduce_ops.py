"""More reductions: ReduceMin, ReduceProd, ReduceAll, ReduceAny (math_ops' `_Reduce` family:
`op(keep_dims)(x, axis)`, a split reduced axis combined by AllReduce(min / prod / logical
and / logical or)), and ArgMax (MindSpore's
`Argmax`, also spelled `ArgMax`), Argmin, and ArgMaxWithValue / ArgMinWithValue (index and
value of the extreme; the value differentiates to the element it came from).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.elementwise_ops import no_gradient_bprop
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (Mul, NoAttrPrimitive, _Reduce, arith_types, kept_dims,
                                       reduce_axes, reduce_max_bprop, scalar)
from msops.primitives.nn_ops import OneHot
from msops.primitives.shape_ops import ExpandDims, Squeeze
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["ReduceMin", "ReduceProd", "ReduceAll", "ReduceAny", "Argmax", "ArgMax", "Argmin",
           "ArgMaxWithValue", "ArgMinWithValue"]


class ReduceMin(_Reduce):
    """Minimum over `axis`: `ReduceMin(keep_dims)(x, axis)`; real dtypes.

    >>> ReduceMin()(Tensor(np.array([[3, 1], [2, 5]], np.int32)), 1).asnumpy()
    array([1, 2], dtype=int32)
    """

    valid_types = mstype.int_type + mstype.uint_type + mstype.float_type
    partial_op = "min"
    _np_op = np.minimum
    _empty_undefined = "minimum"

    def _accumulate_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype                    # a minimum is exact in any dtype


class ReduceProd(_Reduce):
    """Product over `axis`: `ReduceProd(keep_dims)(x, axis)`; ints wrap in their own dtype."""

    valid_types = arith_types
    partial_op = "prod"
    _np_op = np.multiply


class _LogicalReduce(_Reduce):
    """A reduction of bools to bools (`_np_op`: np.logical_and or np.logical_or); a split
    reduced axis combines by the matching logical AllReduce (`partial_op`)."""

    valid_types = (mstype.bool_,)

    def _accumulate_dtype(self, dtype: np.dtype) -> np.dtype:
        return dtype


class ReduceAll(_LogicalReduce):
    """True where every element over `axis` is True: `ReduceAll(keep_dims)(x, axis)`; bool x
    (True over no elements).

    >>> ReduceAll()(Tensor(np.array([[True, False], [True, True]])), 1).asnumpy()
    array([False,  True])
    """

    partial_op = "land"
    _np_op = np.logical_and


class ReduceAny(_LogicalReduce):
    """True where some element over `axis` is True: `ReduceAny(keep_dims)(x, axis)`; bool x
    (False over no elements)."""

    partial_op = "lor"
    _np_op = np.logical_or


bprop(_LogicalReduce)(no_gradient_bprop)


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
        if x.size == 0:
            return np.zeros(x.shape, x.dtype)
        flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
        ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
        # products of the elements before and after each one, multiplied: all but itself
        before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
        after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
        others = (before * after).reshape(moved.shape)
        grad = np.transpose(others, np.argsort(kept + list(axes)))
        d = dout.reshape([1 if i in axes else n for i, n in enumerate(x.shape)])
        return contiguous(grad * d)


declare_without("sharding", ReduceProdGrad,
                reason="it is made only by autodiff, on the rank-local graph")
declare_without("bprop", ReduceProdGrad, reason="second derivatives of ReduceProd are not "
                                                "supported")


@bprop(ReduceProd, holomorphic=True)
def reduce_prod_bprop(prim: ReduceProd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """ReduceProdGrad: the product of the other elements (holomorphic: on conjugates for
    complex x)."""
    axes = inputs[1] if len(inputs) > 1 else g.add_const(())
    dx = g.apply(ReduceProdGrad(), [inputs[0], kept_dims(g, prim, inputs, dout), axes])
    return (dx,) + (None,) * (len(inputs) - 1)


def _searched_axis(name: str, x_shape: list, axis: int) -> int:
    """`axis` of x made non-negative, for an op that finds an element along it: x has rank
    >= 1 and that dim holds at least one element (there is no index of nothing)."""
    if not x_shape:
        raise ValueError(f"For '{name}', the rank of 'x' should be >= 1, but got shape [] of "
                         f"rank 0.")
    axis = validator.check_axis_in_range(axis, len(x_shape), "axis", name)
    if x_shape[axis] == 0:
        raise ValueError(f"For '{name}', x's dim {axis} (the 'axis' searched) should hold at "
                         f"least one element, but got shape {list(x_shape)}.")
    return axis


class _ArgIndex(PrimitiveWithInfer):
    """`Op(axis=-1, output_type=int32)(x)`: the index of the first extreme (`_np_op`:
    np.argmax or np.argmin) along `axis`, which the output drops; `output_type` int32 or
    int64."""

    _np_op: Callable = None

    @prim_attr_register
    def __init__(self, axis: int = -1, output_type: mstype.Type = mstype.int32) -> None:
        validator.check_int("axis", axis, self.name)
        validator.check_value_type("output_type", output_type, mstype.Type, self.name)
        validator.check_type_name("output_type", output_type, (mstype.int32, mstype.int64),
                                  self.name)

    def infer_shape(self, x_shape: list) -> list:
        check = _searched_axis(self.name, x_shape, self.axis)
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
        find = type(self)._np_op

        def arg_index(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, find(x, axis=axis), casting="unsafe")
            return out
        return arg_index


class Argmax(_ArgIndex):
    """`Argmax(axis=-1, output_type=int32)(x)`: the index of the first maximum along `axis`,
    which the output drops; `output_type` int32 or int64.

    >>> Argmax()(Tensor(np.array([[1.0, 3.0, 3.0], [4.0, 0.0, 1.0]], np.float32))).asnumpy()
    array([1, 0], dtype=int32)
    """

    _np_op = staticmethod(np.argmax)


class ArgMax(Argmax):
    """The same op as `Argmax`, under the spelling MindSpore's newer API uses."""


class Argmin(_ArgIndex):
    """`Argmin(axis=-1, output_type=int32)(x)`: the index of the first minimum along `axis`,
    which the output drops; `output_type` int32 or int64.

    >>> Argmin()(Tensor(np.array([[1.0, 5.0, 3.0], [7.0, 0.0, 0.0]], np.float32))).asnumpy()
    array([0, 1], dtype=int32)
    """

    _np_op = staticmethod(np.argmin)


@sharding_rule(_ArgIndex)
def argmax_spec(prim: _ArgIndex, ins: list, outs: list, consts: dict) -> DimSpec:
    """The other dims carry over; the searched axis stays whole (the index of an extreme
    is not a partial result that a collective could combine)."""
    letters = dims(len(ins[0]))
    axis = prim.axis % len(letters)
    return DimSpec((letters,), (letters[:axis] + letters[axis + 1:],), unsplittable=(
        (letters[axis], f"{prim.name} searches along axis {prim.axis}"),))


@bprop(_ArgIndex)
def argmax_bprop(prim: _ArgIndex, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """An index is piecewise constant: no gradient."""
    return (None,)


# -- ArgMaxWithValue, ArgMinWithValue ------------------------------------------------------
class _ArgWithValue(PrimitiveWithInfer):
    """`Op(axis=0, keep_dims=False)(x)` -> (index, value): the first extreme (`_np_op`:
    np.argmax or np.argmin) along `axis` and its index (int64, as MindSpore 2.x); the axis
    is dropped, or kept as 1 with `keep_dims`."""

    _np_op: Callable = None

    @prim_attr_register
    def __init__(self, axis: int = 0, keep_dims: bool = False) -> None:
        validator.check_int("axis", axis, self.name)
        validator.check_bool("keep_dims", keep_dims, self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        axis = _searched_axis(self.name, x_shape, self.axis)
        out = [1 if i == axis else d for i, d in enumerate(x_shape)
               if i != axis or self.keep_dims]
        return out, list(out)

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("x", x_dtype, mstype.int_type + mstype.uint_type +
                                           mstype.float_type, self.name)
        return mstype.int64, x_dtype

    def kernel(self, x: np.ndarray) -> tuple:
        axis = self.axis % x.ndim
        index = np.expand_dims(type(self)._np_op(x, axis=axis), axis)
        value = np.take_along_axis(x, index, axis)
        if not self.keep_dims:
            index, value = np.squeeze(index, axis), np.squeeze(value, axis)
        return contiguous(index.astype(np.int64, copy=False)), contiguous(value)


class ArgMaxWithValue(_ArgWithValue):
    """`ArgMaxWithValue(axis=0, keep_dims=False)(x)` -> (index, maximum) along `axis`.

    >>> i, v = ArgMaxWithValue()(Tensor(np.array([[1.0, 5.0, 3.0], [7.0, 0.0, 7.0]],
    ...                                          np.float32)))
    >>> i.asnumpy(), v.asnumpy()
    (array([1, 0, 1]), array([7., 5., 7.], dtype=float32))
    """

    _np_op = staticmethod(np.argmax)


class ArgMinWithValue(_ArgWithValue):
    """`ArgMinWithValue(axis=0, keep_dims=False)(x)` -> (index, minimum) along `axis`."""

    _np_op = staticmethod(np.argmin)


@sharding_rule(_ArgWithValue)
def arg_with_value_spec(prim: _ArgWithValue, ins: list, outs: list, consts: dict) -> DimSpec:
    """As Argmax's: the other dims carry over to both outputs, the searched axis stays
    whole (kept as an unsplit 1 with keep_dims)."""
    letters = dims(len(ins[0]))
    axis = prim.axis % len(letters)
    # the kept axis is a dim of size 1, never split (None)
    out = letters[:axis] + ((None,) if prim.keep_dims else ()) + letters[axis + 1:]
    return DimSpec((letters,), (out, out), unsplittable=(
        (letters[axis], f"{prim.name} searches along axis {prim.axis}"),))


@bprop(_ArgWithValue)
def arg_with_value_bprop(prim: _ArgWithValue, inputs: list, out: Any, dout: list,
                         g: Any) -> tuple:
    """The value's gradient to the element it came from (one per reduced row, as MindSpore:
    ties do not share it); the index has none."""
    x = inputs[0]
    ndim = len(x.shape)
    axis = prim.axis % ndim
    index, dvalue = g.getitem(out, 0), dout[1]
    if prim.keep_dims:
        index = g.apply(Squeeze(axis), [index])
    else:
        dvalue = g.apply(ExpandDims(), [dvalue, g.add_const(axis)])
    picked = g.apply(OneHot(axis), [index, g.add_const(x.shape[axis]),
                                    scalar(g, 1, x.dtype), scalar(g, 0, x.dtype)])
    return (g.apply(Mul(), [picked, dvalue]),)


# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(_ArgIndex, _ArgWithValue)
def arg_extreme_batch(prim: PrimitiveWithInfer, args: list, dims: list, size: int) -> tuple:
    """The searched axis shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    out = with_attrs(prim, axis=_searched_axis(prim.name, list(x.shape[1:]), prim.axis) + 1)(x)
    return out, (0,) * len(out) if isinstance(out, tuple) else 0
