"""TopK and Sort: values and int32 indices of the elements in order along an axis;
SearchSorted: where values go in sorted rows; UniqueWithPad: a vector's distinct values in
the order they first occur.

Both order stably: equal elements keep their index order (TopK and a descending Sort put
the lower index first, as an ascending Sort does); NaN orders above every number. The
ordered axis stays whole in a parallel graph. The values' gradient goes back to the
elements they came from (GatherD's backward scatter); the indices have none.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.array_ops import whole_along
from msops.primitives.gather_ops import GatherDGrad
from msops.primitives.math_ops import check_rank, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.elementwise_ops import no_gradient_bprop
from msops.primitives.batching import leading_batch, to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["TopK", "Sort", "SearchSorted", "UniqueWithPad"]

#: real numbers: an order exists (complex numbers have none)
ordered_types = mstype.int_type + mstype.uint_type + mstype.float_type


def order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort of x along `axis`: ties keep their index order either way. Float16
    and bfloat16 are compared in float32 (exact; numpy's bfloat16 sort misplaces NaN)."""
    x = x.astype(compute_dtype(x.dtype), copy=False)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # ascending over the reversed axis, read backwards: descending, ties lower index first
    flip = (slice(None),) * axis + (slice(None, None, -1),)
    rev = np.argsort(x[flip], axis=axis, kind="stable")[flip]
    return x.shape[axis] - 1 - rev


class TopK(PrimitiveWithInfer):
    """`TopK(sorted=True)(input_x, k)` -> (values, indices): the k largest elements along the
    last axis, largest first, and their int32 indices; the lower index first among equals.
    (`sorted=False` allows any order of the k; msops gives them sorted.)

    >>> v, i = TopK()(Tensor(np.array([1, 3, 2, 3], np.float32)), 2)
    >>> v.asnumpy(), i.asnumpy()
    (array([3., 3.], dtype=float32), array([1, 3], dtype=int32))
    """

    const_inputs = (1,)
    fresh_outputs = True            # gathered copies, never views of x

    @prim_attr_register
    def __init__(self, sorted: bool = True) -> None:  # noqa: A002
        validator.check_bool("sorted", sorted, self.name)

    def _k(self, x_shape: Sequence[int], k: Any) -> int:
        check_rank(self.name, "input_x", x_shape, 1)
        validator.check_value_type("k", k, int, self.name)
        if not 0 <= k <= x_shape[-1]:
            raise ValueError(f"For '{self.name}', the 'k' should be in [0, {x_shape[-1]}] (the "
                             f"last dim of input_x {list(x_shape)}), but got {k}.")
        return k

    def infer_shape(self, x_shape: list, k: Any) -> tuple:
        out = list(x_shape[:-1]) + [self._k(x_shape, k)]
        return out, list(out)

    def infer_dtype(self, x_dtype: mstype.Type, k: Any) -> tuple:
        return validator.check_tensor_dtype_valid("input_x", x_dtype, ordered_types,
                                                  self.name), mstype.int32

    def kernel(self, x: np.ndarray, k: Any) -> tuple:
        index = order(x, x.ndim - 1, descending=True)[..., :self._k(x.shape, k)]
        return (contiguous(np.take_along_axis(x, index, -1)),
                contiguous(index.astype(np.int32)))


@sharding_rule(TopK)
def topk_spec(prim: TopK, ins: list, outs: list, consts: dict) -> DimSpec:
    """The leading dims carry over; the last axis is searched whole (its k results are a
    new, whole dim)."""
    letters = dims(len(ins[0]))
    out = letters[:-1] + (None,)
    return DimSpec((letters,), (out, out), unsplittable=(
        (letters[-1], "TopK searches along the last axis"),))


class Sort(PrimitiveWithInfer):
    """`Sort(axis=-1, descending=False)(x)` -> (values, indices): x sorted along `axis`
    (stable: equal elements keep their index order) and the int32 indices they came from.

    >>> v, i = Sort(descending=True)(Tensor(np.array([[2, 9, 2]], np.int32)))
    >>> v.asnumpy(), i.asnumpy()
    (array([[9, 2, 2]], dtype=int32), array([[1, 0, 2]], dtype=int32))
    """

    fresh_outputs = True            # gathered copies, never views of x

    @prim_attr_register
    def __init__(self, axis: int = -1, descending: bool = False) -> None:
        validator.check_int("axis", axis, self.name)
        validator.check_bool("descending", descending, self.name)

    def _axis(self, x_shape: Sequence[int]) -> int:
        check_rank(self.name, "x", x_shape, 1)
        return validator.check_axis_in_range(self.axis, len(x_shape), "axis", self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        self._axis(x_shape)
        return list(x_shape), list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        return validator.check_tensor_dtype_valid("x", x_dtype, ordered_types,
                                                  self.name), mstype.int32

    def kernel(self, x: np.ndarray) -> tuple:
        axis = self._axis(x.shape)
        index = order(x, axis, self.descending)
        return (contiguous(np.take_along_axis(x, index, axis)),
                contiguous(index.astype(np.int32)))


@sharding_rule(Sort)
def sort_spec(prim: Sort, ins: list, outs: list, consts: dict) -> DimSpec:
    """Element-wise off the axis; the sorted axis stays whole."""
    return whole_along(ins, 2, prim._axis(ins[0]), "Sort orders")


@bprop(TopK, Sort)
def ordered_values_bprop(prim: Any, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """The values' gradient scattered back to the positions the indices name (along the
    last axis for TopK); the indices and k have none."""
    x = inputs[0]
    axis = prim._axis(x.shape) if isinstance(prim, Sort) else len(x.shape) - 1
    dx = g.apply(GatherDGrad(), [dout[0], g.add_const(axis), g.getitem(out, 1),
                                 g.add_const(tuple(x.shape))])
    return (dx,) + (None,) * (len(inputs) - 1)


class SearchSorted(PrimitiveWithInfer):
    """`SearchSorted(dtype=mstype.int64, right=False)(sorted_sequence, values)`: for each
    value, the index in its row of `sorted_sequence` (ascending along the last dim) where
    it would be inserted keeping the order (the first such index; the last with `right`).
    sorted_sequence (n,) serves every value; (..., n) pairs row-wise with values (..., m).

    >>> SearchSorted()(Tensor(np.array([1.0, 3.0, 5.0])), Tensor(np.array([3.0, 6.0]))).asnumpy()
    array([1, 3])
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, dtype: mstype.Type = mstype.int64, right: bool = False) -> None:
        validator.check_bool("right", right, self.name)
        if dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"For '{self.name}', the 'dtype' should be mstype.int32 or "
                            f"mstype.int64, but got {dtype}.")

    def infer_shape(self, seq_shape: list, values_shape: list) -> list:
        if not seq_shape:
            raise ValueError(f"For '{self.name}', the 'sorted_sequence' should not be a "
                             f"scalar, but got shape [].")
        if len(seq_shape) > 1 and list(seq_shape[:-1]) != list(values_shape[:-1]):
            raise ValueError(f"For '{self.name}', the 'sorted_sequence' and 'values' should "
                             f"have the same dims but the last when 'sorted_sequence' is not "
                             f"1-D, but got shapes {list(seq_shape)} and {list(values_shape)}.")
        return list(values_shape)

    def infer_dtype(self, seq_dtype: mstype.Type, values_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("sorted_sequence", seq_dtype, ordered_types,
                                           self.name)
        validator.check_tensor_dtype_valid("values", values_dtype, ordered_types, self.name)
        if seq_dtype != values_dtype:
            raise TypeError(f"For '{self.name}', the 'values' should have the dtype of "
                            f"'sorted_sequence': {seq_dtype}, but got {values_dtype}.")
        return self.dtype

    def kernel(self, seq: np.ndarray, values: np.ndarray,
               out: np.ndarray | None = None) -> np.ndarray:
        side = "right" if self.right else "left"
        if out is None:
            out = np.empty(values.shape, mstype.dtype_to_nptype(self.dtype))
        cdt = compute_dtype(seq.dtype)
        seq, values = seq.astype(cdt, copy=False), values.astype(cdt, copy=False)
        if seq.ndim == 1:
            out[...] = np.searchsorted(seq, values, side=side)
            return out
        rows, vals = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        flat = out.reshape(vals.shape)
        for r in range(rows.shape[0]):
            flat[r] = np.searchsorted(rows[r], vals[r], side=side)
        return out


@sharding_rule(SearchSorted)
def search_sorted_spec(prim: SearchSorted, ins: list, outs: list, consts: dict) -> DimSpec:
    """Every value is searched on its own: values' dims split freely; a sorted row is
    searched whole (rows of a (..., n) sequence split with their values)."""
    seq, values = ins
    v = dims(len(values), prefix="v")
    s = ("n",) if len(seq) == 1 else v[:-1] + ("n",)
    return DimSpec((s, v), (v,), unsplittable=(("n", "SearchSorted searches a whole row"),))


bprop(SearchSorted)(no_gradient_bprop)


class UniqueWithPad(PrimitiveWithInfer):
    """`UniqueWithPad()(x, pad_num)` -> (y, idx): the distinct values of the 1-D int32 /
    int64 x in the order they first occur, padded with pad_num to x's length, and for each
    element of x the position of its value in y (x's dtype). Shapes do not depend on the
    values, so it runs in a compiled graph; x is deduplicated whole.

    >>> y, idx = UniqueWithPad()(Tensor(np.array([1, 5, 5, 4, 1], np.int32)), 0)
    >>> y.asnumpy(), idx.asnumpy()
    (array([1, 5, 4, 0, 0], dtype=int32), array([0, 1, 1, 2, 0], dtype=int32))
    """

    const_inputs = (1,)
    fresh_outputs = True

    def infer_shape(self, x_shape: list, pad_num: Any) -> tuple:
        if len(x_shape) != 1:
            raise ValueError(f"For '{self.name}', the 'x' should be 1-D, but got shape "
                             f"{list(x_shape)}.")
        if isinstance(pad_num, bool) or not isinstance(pad_num, (int, np.integer)):
            raise TypeError(f"For '{self.name}', the 'pad_num' should be an int, but got "
                            f"{type(pad_num).__name__}.")
        return list(x_shape), list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, pad_num: Any) -> tuple:
        validator.check_tensor_dtype_valid("x", x_dtype, (mstype.int32, mstype.int64),
                                           self.name)
        return x_dtype, x_dtype

    def kernel(self, x: np.ndarray, pad_num: Any) -> tuple:
        values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        by_first = np.argsort(first, kind="stable")        # sorted values -> first-seen order
        position = np.empty_like(by_first)
        position[by_first] = np.arange(by_first.size)
        y = np.full(x.shape, pad_num, x.dtype)
        y[:values.size] = values[by_first]
        return y, position[inverse.reshape(-1)].astype(x.dtype)


@sharding_rule(UniqueWithPad)
def unique_with_pad_spec(prim: UniqueWithPad, ins: list, outs: list, consts: dict) -> DimSpec:
    """The vector is deduplicated whole: no dim may split."""
    return DimSpec((("n",),), (("n",), ("n",)),
                   unsplittable=(("n", "UniqueWithPad deduplicates the whole vector"),))


bprop(UniqueWithPad)(no_gradient_bprop)


# -- batch rules (vmap) ------------------------------------------------------------------
batch_rule(TopK)(leading_batch)                 # along the last axis: the batch axis leads


@batch_rule(Sort)
def sort_batch(prim: Sort, args: list, dims: list, size: int) -> tuple:
    """The sorted axis shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    return with_attrs(prim, axis=prim._axis(x.shape[1:]) + 1)(x), (0, 0)
