"""The arithmetic tensor scatters: TensorScatterAdd, Sub, Mul, Div, Max, Min (MindSpore's
primitives of those names, without attributes).

`Op()(input_x, indices, updates)` combines each update into the slice of input_x its index
(..., k) addresses, every update of a slice addressed twice included (numpy's unbuffered
`ufunc.at`). They are gather_ops' `_TensorScatter` family (TensorScatterUpdate's): the same
inference, kernel and sharding rule (the addressed dims and the indices whole, the trailing
dims split freely, no communication). Backward: Add and Sub exactly; Div exactly (d
updates_j = -dout * out / updates_j at its slice); Mul exactly, through the internal
TensorScatterMulGrad (the product of a slice's other updates, zeros included); Max and Min
route dout to the winners, shared between ties.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.primitives.elementwise_ops import _mask
from msops.common.tensor import contiguous
from msops.primitives.gather_ops import GatherNd, _nd_index, _TensorScatter
from msops.primitives.math_ops import Equal, Mul, Neg, NoAttrPrimitive, RealDiv
from msops.primitives.rules import bprop, declare_without

__all__ = ["TensorScatterAdd", "TensorScatterSub", "TensorScatterMul", "TensorScatterDiv",
           "TensorScatterMax", "TensorScatterMin"]

_numbers = mstype.int_type + mstype.uint_type + mstype.float_type + mstype.complex_type
_reals = mstype.int_type + mstype.uint_type + mstype.float_type


class TensorScatterAdd(_TensorScatter):
    """input_x with `updates` added at the `indices` (duplicates all added).

    >>> TensorScatterAdd()(Tensor(np.ones(4, np.float32)), Tensor(np.array([[1], [1]],
    ...                    np.int32)), Tensor(np.array([2.0, 3.0], np.float32))).asnumpy()
    array([1., 6., 1., 1.], dtype=float32)
    """

    valid_types = _numbers
    _np_at = np.add


class TensorScatterSub(_TensorScatter):
    """input_x with `updates` subtracted at the `indices`."""

    valid_types = _numbers
    _np_at = np.subtract


class TensorScatterMul(_TensorScatter):
    """input_x multiplied by `updates` at the `indices`."""

    valid_types = _numbers
    _np_at = np.multiply


class TensorScatterDiv(_TensorScatter):
    """input_x divided by `updates` at the `indices`; floats (x / 0 is inf or NaN, as
    MindSpore)."""

    valid_types = mstype.float_type + mstype.complex_type
    _np_at = np.true_divide


class TensorScatterMax(_TensorScatter):
    """The larger of input_x's slice and each update at the `indices`; real dtypes."""

    valid_types = _reals
    _np_at = np.maximum


class TensorScatterMin(_TensorScatter):
    """The smaller of input_x's slice and each update at the `indices`; real dtypes."""

    valid_types = _reals
    _np_at = np.minimum


def _at(g: Any, dout: Any, indices: Any) -> Any:
    return g.apply(GatherNd(), [dout, indices])


@bprop(TensorScatterAdd)
def tensor_scatter_add_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_x: dout; updates: dout at their slices."""
    return dout, None, _at(g, dout, inputs[1])


@bprop(TensorScatterSub)
def tensor_scatter_sub_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_x: dout; updates: -dout at their slices."""
    return dout, None, g.apply(Neg(), [_at(g, dout, inputs[1])])


class TensorScatterMulGrad(NoAttrPrimitive):
    """`TensorScatterMulGrad()(x, indices, updates, dout)`: TensorScatterMul's gradient of
    the updates, dout * x at each update's slice times the product of the *other* updates
    of that slice: exact with repeated indices and zeros (the nonzero updates' product and
    the zeros' count per slice, no division by a zero). Internal; not exported."""

    def infer_shape(self, x_shape: list, indices_shape: list, updates_shape: list,
                    dout_shape: list) -> list:
        return list(updates_shape)

    def infer_dtype(self, x_dtype: mstype.Type, indices_dtype: mstype.Type,
                    updates_dtype: mstype.Type, dout_dtype: mstype.Type) -> mstype.Type:
        return updates_dtype

    def kernel(self, x: np.ndarray, indices: np.ndarray, updates: np.ndarray,
               dout: np.ndarray) -> np.ndarray:
        where = _nd_index(self.name, x.shape, indices)
        zero = updates == 0
        nonzero_product = np.ones(x.shape, updates.dtype)
        np.multiply.at(nonzero_product, where, np.where(zero, 1, updates))
        zeros = np.zeros(x.shape, np.int64)
        np.add.at(zeros, where, zero.astype(np.int64))
        product, count = nonzero_product[where], zeros[where]
        with np.errstate(divide="ignore", invalid="ignore"):
            others = np.where(zero, np.where(count == 1, product, 0),
                              np.where(count == 0, product / np.where(zero, 1, updates), 0))
        return contiguous((others * (dout * x)[where]).astype(updates.dtype))


declare_without("sharding", TensorScatterMulGrad,
                reason="it is made only by autodiff, on the rank-local graph")
declare_without("bprop", TensorScatterMulGrad,
                reason="second derivatives of TensorScatterMul are not supported")


@bprop(TensorScatterMul)
def tensor_scatter_mul_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_x: dout times the updates multiplied into its slice; updates: dout * x at their
    slices times the slice's other updates (`TensorScatterMulGrad`)."""
    x, indices, updates = inputs
    dx = g.apply(TensorScatterMul(), [dout, indices, updates])
    return dx, None, g.apply(TensorScatterMulGrad(), [x, indices, updates, dout])


@bprop(TensorScatterDiv)
def tensor_scatter_div_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_x: dout divided by the updates at its slice; updates: -dout * out / update at
    their slices (exact with duplicates too: out is x over the product of them all)."""
    _, indices, updates = inputs
    dx = g.apply(TensorScatterDiv(), [dout, indices, updates])
    scaled = _at(g, g.apply(Mul(), [dout, out]), indices)
    return dx, None, g.apply(Neg(), [g.apply(RealDiv(), [scaled, updates])])


def _winner_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """TensorScatterMax's and Min's rule: dout goes to whichever of x and the updates of a
    slice equal its result, shared equally between ties (as ReduceMax's)."""
    x, indices, updates = inputs
    x_won = _mask(g, g.apply(Equal(), [x, out]), out.dtype)
    u_won = _mask(g, g.apply(Equal(), [updates, _at(g, out, indices)]), out.dtype)
    # how many values tie for each element's result (>= 1: x's own, or an update that won)
    count = g.apply(TensorScatterAdd(), [x_won, indices, u_won])
    share = g.apply(RealDiv(), [dout, count])
    dx = g.apply(Mul(), [share, x_won])
    return dx, None, g.apply(Mul(), [_at(g, share, indices), u_won])


bprop(TensorScatterMax, TensorScatterMin)(_winner_bprop)
