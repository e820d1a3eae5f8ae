"""Gather primitives: Gather (embedding lookup), GatherD and GatherNd, with their backward ops.

Indices are int32/int64 tensors. `Gather` follows MindSpore's CPU kernel: an index
outside [0, rows) gives a row of zeros (and no gradient), which is also what makes a
row-split table cheap: each rank looks up its own rows at indices shifted by its slice's
start, the rows it lacks come out zero, and one AllReduce(sum) assembles the lookup (as
MindSpore's GatherInfo). With the `manual_split` attribute (MindSpore's field slice, set
by nn.EmbeddingLookup) the table's row blocks and the indices' field dim split together:
each rank's lookup is then whole, no sum. GatherD and GatherNd reject out-of-range indices
at run time.
The backward of each is a scatter-add (`GatherGrad`, `GatherDGrad`, `GatherNdGrad`:
internal, made only by autodiff, linear, so their own gradient is the gather again).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import NoAttrPrimitive, Sub, check_rank
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import per_element, to_front
from msops.primitives.rules import (batch_rule, bprop, declare_without, expansion_rule,
                                   sharding_rule)
from msops.primitives.sharding import DimSpec, ShardedCall, dims

__all__ = ["Gather", "GatherD", "GatherNd", "ScatterNd", "TensorScatterUpdate"]

index_types = (mstype.int32, mstype.int64)


def _check_indices(prim_name: str, arg: str, dtype: mstype.Type) -> None:
    validator.check_tensor_dtype_valid(arg, dtype, index_types, prim_name)


def _in_range(prim_name: str, arg: str, index: np.ndarray, size: int, what: str) -> None:
    """ValueError unless every value of `index` is in [0, size) (a run-time check)."""
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index.min() if index.min() < 0 else index.max()
        raise ValueError(f"For '{prim_name}', every value of '{arg}' should be in [0, {size}) "
                         f"({what}), but got {int(bad)}.")


# -- Gather --------------------------------------------------------------------------------
class Gather(PrimitiveWithInfer):
    """`Gather()(input_params, input_indices, axis)`: slices of params along `axis` picked by
    indices: out shape = params.shape[:axis] + indices.shape + params.shape[axis + 1:].

    An index outside [0, params.shape[axis]) gives zeros (MindSpore's CPU kernel).
    `batch_dims` other than 0 is not supported.

    >>> Gather()(Tensor(np.arange(6, dtype=np.float32).reshape(3, 2)),
    ...          Tensor(np.array([2, 0, 7], np.int32)), 0).asnumpy()
    array([[4., 5.],
           [0., 1.],
           [0., 0.]], dtype=float32)
    """

    const_inputs = (2,)

    @prim_attr_register
    def __init__(self, batch_dims: int = 0) -> None:
        validator.check_int("batch_dims", batch_dims, self.name)
        if batch_dims != 0:
            raise ValueError(f"For '{self.name}', the 'batch_dims' should be 0 (the only value "
                             f"msops supports), but got {batch_dims}.")

    def _axis(self, params_shape: Sequence[int], axis: Any) -> int:
        check_rank(self.name, "input_params", params_shape, 1)
        return validator.check_axis_in_range(axis, len(params_shape), "axis", self.name)

    def infer_shape(self, params_shape: list, indices_shape: list, axis: Any) -> list:
        ax = self._axis(params_shape, axis)
        return list(params_shape[:ax]) + list(indices_shape) + list(params_shape[ax + 1:])

    def infer_dtype(self, params_dtype: mstype.Type, indices_dtype: mstype.Type,
                    axis: Any) -> mstype.Type:
        validator.check_tensor_dtype_valid("input_params", params_dtype, mstype.all_types,
                                           self.name)
        _check_indices(self.name, "input_indices", indices_dtype)
        return params_dtype

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        params, indices = in_abstracts[0], in_abstracts[1]
        ax = self._axis(params.shape, in_abstracts[2].value)
        rows = params.shape[ax]
        # the indices' mask broadcast against the output: 1s around the indices' dims
        mask_shape = (1,) * ax + tuple(indices.shape) + (1,) * (len(params.shape) - ax - 1)

        def gather(params: np.ndarray, indices: np.ndarray, axis: Any = None,
                   out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            valid = (indices >= 0) & (indices < rows)
            if rows == 0:
                out.fill(0)
                return out
            if valid.all():
                return np.take(params, indices, axis=ax, out=out)
            np.take(params, np.where(valid, indices, 0), axis=ax, out=out)
            np.copyto(out, 0, casting="unsafe", where=~valid.reshape(mask_shape))
            return out
        return gather


def _field_spec(prim: Gather, params: Sequence[int], indices: Sequence[int], ax: int
                ) -> DimSpec:
    """The `manual_split` attribute (MindSpore's field slice): the table's rows are split
    into blocks and the ids' second dim (fields) alike, field block k holding only ids of
    row block k, so both share a letter "f" and each rank's lookup is whole: no sum."""
    if ax != 0 or len(params) != 2 or len(indices) != 2:
        raise ValueError(f"For '{prim.name}', a 'manual_split' lookup should be of a 2-D table "
                         f"along axis 0 by 2-D indices (batch, fields), but got table "
                         f"{list(params)}, indices {list(indices)} and axis {ax}.")
    split = tuple(prim.attrs["manual_split"])
    if sum(split) != params[0]:
        raise ValueError(f"For '{prim.name}', the 'manual_split' should sum to the table's "
                         f"rows {params[0]}, but got {split}.")
    return DimSpec((("f", "p1"), ("i0", "f")), (("i0", "f", "p1"),), batch_letter="i0")


@sharding_rule(Gather)
def gather_spec(prim: Gather, ins: list, outs: list, consts: dict) -> DimSpec:
    """params' dims around `axis` and the indices' dims carry to the output; the gathered
    dim "v" leaves it, so a row-split table gives partial lookups, summed (expansion).
    With the `manual_split` attribute the rows and the ids' fields split together
    (`_field_spec`)."""
    params, indices = ins
    ax = prim._axis(params, consts[2])
    if "manual_split" in prim.attrs:
        return _field_spec(prim, params, indices, ax)
    p = dims(len(params), prefix="p")
    p = p[:ax] + ("v",) + p[ax + 1:]
    i = dims(len(indices), prefix="i")
    # data parallel splits the ids' batch (a lookup along dim 0), not the table's rows
    batch = i[0] if ax == 0 and i else None
    return DimSpec((p, i), (p[:ax] + i + p[ax + 1:],), reduction_name="gathered dim",
                   batch_letter=batch)


@expansion_rule(Gather)
def gather_split_rows(prim: Gather, call: ShardedCall) -> Any:
    """A table split along `axis`: this rank looks its rows up at the indices shifted by its
    slice's start; the indices it lacks give zeros, and the pass sums the partial lookups
    over the split (one AllReduce)."""
    params_shape = call.in_shapes[0]
    ax = prim._axis(params_shape, call.consts[2])
    if not call.in_axes[0][ax]:
        return None
    params, indices, axis = call.args()
    start = call.start(0, ax)
    if "manual_split" in prim.attrs:
        _check_manual_blocks(prim, params_shape[ax], params.shape[ax])
    shifted = call.apply(Sub(), [indices, call.const(np.asarray(start, indices.dtype.np_dtype))])
    return call.apply(Gather(), [params, shifted, axis])


def _check_manual_blocks(prim: Gather, rows: int, local: int) -> None:
    """The table's even split into blocks of `local` rows is the `manual_split` asked for
    (msops splits a dim evenly)."""
    split = tuple(prim.attrs["manual_split"])
    if split != (local,) * (rows // local):
        raise ValueError(f"For '{prim.name}', the 'manual_split' should be the table's even "
                         f"split into {rows // local} blocks: {(local,) * (rows // local)} "
                         f"(msops splits a dim evenly), but got {split}.")


class GatherGrad(NoAttrPrimitive):
    """`GatherGrad()(dout, indices, axis, params_shape)`: zeros of params_shape with each
    slice of dout added at its index along `axis` (out-of-range indices add nothing):
    Gather's backward. Internal (made by its backward rule); not exported."""

    const_inputs = (2, 3)

    def infer_shape(self, dout_shape: list, indices_shape: list, axis: Any,
                    params_shape: Any) -> list:
        ax = Gather()._axis(params_shape, axis)
        want = list(params_shape[:ax]) + list(indices_shape) + list(params_shape[ax + 1:])
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be == the lookup's "
                             f"shape: {want}, but got {list(dout_shape)}.")
        return list(params_shape)

    def infer_dtype(self, dout_dtype: mstype.Type, indices_dtype: mstype.Type, axis: Any,
                    params_shape: Any) -> mstype.Type:
        _check_indices(self.name, "indices", indices_dtype)
        return validator.check_tensor_dtype_valid("dout", dout_dtype, mstype.number_type,
                                                  self.name)

    def kernel(self, dout: np.ndarray, indices: np.ndarray, axis: Any,
               params_shape: Any) -> np.ndarray:
        shape = tuple(params_shape)
        ax = axis % len(shape)
        dx = np.zeros(shape, dout.dtype)
        lead, rest = shape[:ax], shape[ax + 1:]
        flat = indices.reshape(-1)
        d = np.moveaxis(dout.reshape(lead + (flat.size,) + rest), ax, 0)
        valid = (flat >= 0) & (flat < shape[ax])
        np.add.at(np.moveaxis(dx, ax, 0), flat[valid], d[valid])
        return dx


declare_without("sharding", GatherGrad,
                reason="it is made only by autodiff, on the rank-local graph")


@bprop(Gather, complex_values=True)
def gather_bprop(prim: Gather, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """params: dout scatter-added at the indices; the indices: none."""
    params, indices, axis = inputs
    dx = g.apply(GatherGrad(), [dout, indices, axis, g.add_const(tuple(params.shape))])
    return dx, None, None


@bprop(GatherGrad, complex_values=True)
def gather_grad_bprop(prim: GatherGrad, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Linear in dout: the gather of dout."""
    _, indices, axis, _ = inputs
    return g.apply(Gather(), [dout, indices, axis]), None, None, None


# -- GatherD -------------------------------------------------------------------------------
def _gather_d_shapes(prim_name: str, x_shape: Sequence[int], dim: Any,
                     index_shape: Sequence[int]) -> int:
    """Check GatherD's shapes: same rank, index no larger than x off `dim`; returns dim."""
    check_rank(prim_name, "x", x_shape, 1)
    d = validator.check_axis_in_range(dim, len(x_shape), "dim", prim_name)
    if len(index_shape) != len(x_shape) or \
            any(i > x for j, (i, x) in enumerate(zip(index_shape, x_shape)) if j != d):
        raise ValueError(f"For '{prim_name}', the 'index shape' should have the rank of 'x' "
                         f"{list(x_shape)} and no dim larger than x's (except dim {d}), but "
                         f"got {list(index_shape)}.")
    return d


def _along(index: np.ndarray, d: int) -> tuple:
    """Full index arrays addressing x at `index` along dim d and at each position elsewhere."""
    grid = list(np.ogrid[tuple(slice(0, n) for n in index.shape)])
    grid[d] = index
    return tuple(grid)


class GatherD(NoAttrPrimitive):
    """`GatherD()(x, dim, index)`: out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (and so
    on); out has index's shape, which matches x's rank and is no larger off `dim`.

    >>> GatherD()(Tensor(np.array([[1, 2], [3, 4]], np.int32)), 1,
    ...           Tensor(np.array([[0, 0], [1, 0]], np.int32))).asnumpy()
    array([[1, 1],
           [4, 3]], dtype=int32)
    """

    const_inputs = (1,)

    def infer_shape(self, x_shape: list, dim: Any, index_shape: list) -> list:
        _gather_d_shapes(self.name, x_shape, dim, index_shape)
        return list(index_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dim: Any, index_dtype: mstype.Type
                    ) -> mstype.Type:
        _check_indices(self.name, "index", index_dtype)
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def kernel(self, x: np.ndarray, dim: Any, index: np.ndarray) -> np.ndarray:
        d = dim % x.ndim
        _in_range(self.name, "index", index, x.shape[d], f"the size of x's dim {d}")
        return contiguous(x[_along(index, d)])


@sharding_rule(GatherD)
def gather_d_spec(prim: GatherD, ins: list, outs: list, consts: dict) -> DimSpec:
    """index's dims are the output's; off `dim`, x shares a letter with index where their
    sizes agree (else both stay whole); x's `dim` is whole (any row may be read)."""
    x, index = ins
    d = _gather_d_shapes(prim.name, x, consts[1], index)
    out = dims(len(index), prefix="o")
    xl, bad = list(out), [("g", f"GatherD reads any position along dim {d}")]
    xl[d] = "g"
    for j in range(len(x)):
        if j != d and x[j] != index[j]:
            xl[j] = f"x{j}"
            reason = f"x and index differ in size along dim {j}"
            bad += [(f"x{j}", reason), (out[j], reason)]
    return DimSpec((tuple(xl), out), (out,), unsplittable=tuple(bad))


class GatherDGrad(NoAttrPrimitive):
    """`GatherDGrad()(dout, dim, index, x_shape)`: zeros of x_shape with dout added where
    GatherD read: its backward. Internal; not exported."""

    const_inputs = (1, 3)

    def infer_shape(self, dout_shape: list, dim: Any, index_shape: list, x_shape: Any) -> list:
        _gather_d_shapes(self.name, x_shape, dim, index_shape)
        if list(dout_shape) != list(index_shape):
            raise ValueError(f"For '{self.name}', the 'dout shape' should be == the index "
                             f"shape: {list(index_shape)}, but got {list(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, dout_dtype: mstype.Type, dim: Any, index_dtype: mstype.Type,
                    x_shape: Any) -> mstype.Type:
        _check_indices(self.name, "index", index_dtype)
        return validator.check_tensor_dtype_valid("dout", dout_dtype, mstype.number_type,
                                                  self.name)

    def kernel(self, dout: np.ndarray, dim: Any, index: np.ndarray,
               x_shape: Any) -> np.ndarray:
        dx = np.zeros(tuple(x_shape), dout.dtype)
        d = dim % dx.ndim
        _in_range(self.name, "index", index, dx.shape[d], f"the size of x's dim {d}")
        np.add.at(dx, _along(index, d), dout)
        return dx


declare_without("sharding", GatherDGrad,
                reason="it is made only by autodiff, on the rank-local graph")


@bprop(GatherD, complex_values=True)
def gather_d_bprop(prim: GatherD, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x, dim, index = inputs
    return g.apply(GatherDGrad(), [dout, dim, index, g.add_const(tuple(x.shape))]), None, None


@bprop(GatherDGrad, complex_values=True)
def gather_d_grad_bprop(prim: GatherDGrad, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    _, dim, index, _ = inputs
    return g.apply(GatherD(), [dout, dim, index]), None, None, None


# -- GatherNd ------------------------------------------------------------------------------
def _gather_nd_shape(prim_name: str, x_shape: Sequence[int], indices_shape: Sequence[int]
                     ) -> list:
    check_rank(prim_name, "indices", indices_shape, 1)
    k = indices_shape[-1]
    if not 1 <= k <= len(x_shape):
        raise ValueError(f"For '{prim_name}', the last dim of 'indices' should be in [1, rank of "
                         f"'input_x': {len(x_shape)}], but got {k} (indices shape "
                         f"{list(indices_shape)}).")
    return list(indices_shape[:-1]) + list(x_shape[k:])


class GatherNd(NoAttrPrimitive):
    """`GatherNd()(input_x, indices)`: indices (..., k) address x's first k dims: out shape =
    indices.shape[:-1] + x.shape[k:].

    >>> GatherNd()(Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)),
    ...            Tensor(np.array([[1, 2], [0, 0]], np.int32))).asnumpy()
    array([5., 0.], dtype=float32)
    """

    def infer_shape(self, x_shape: list, indices_shape: list) -> list:
        return _gather_nd_shape(self.name, x_shape, indices_shape)

    def infer_dtype(self, x_dtype: mstype.Type, indices_dtype: mstype.Type) -> mstype.Type:
        _check_indices(self.name, "indices", indices_dtype)
        return validator.check_tensor_dtype_valid("input_x", x_dtype, mstype.all_types,
                                                  self.name)

    def kernel(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        return contiguous(x[_nd_index(self.name, x.shape, indices)])


def _nd_index(prim_name: str, x_shape: Sequence[int], indices: np.ndarray) -> tuple:
    """GatherNd's indices as a numpy index tuple, each column checked against its dim."""
    cols = np.moveaxis(indices, -1, 0)
    for j, col in enumerate(cols):
        _in_range(prim_name, "indices", col, x_shape[j], f"the size of x's dim {j}")
    return tuple(cols)


@sharding_rule(GatherNd)
def gather_nd_spec(prim: GatherNd, ins: list, outs: list, consts: dict) -> DimSpec:
    """The indices' leading dims and x's dims after the k addressed ones carry over; the
    addressed dims and the indices' last dim stay whole."""
    x, indices = ins
    _gather_nd_shape(prim.name, x, indices)
    k = indices[-1]
    xl = dims(len(x), prefix="x")
    il = dims(len(indices) - 1, prefix="i") + ("k",)
    reason = "GatherNd addresses them by index"
    bad = tuple((l, reason) for l in xl[:k] + ("k",))
    return DimSpec((xl, il), (il[:-1] + xl[k:],), unsplittable=bad,
                   batch_letter=il[0] if len(il) > 1 else None)


def _check_updates(prim_name: str, shape: Sequence[int], indices_shape: Sequence[int],
                   updates_shape: Sequence[int], of: str) -> None:
    """A scatter's updates: one slice of `shape` per index (GatherNd's output shape)."""
    want = _gather_nd_shape(prim_name, shape, indices_shape)
    if list(updates_shape) != want:
        raise ValueError(f"For '{prim_name}', the 'updates shape' should be "
                         f"indices.shape[:-1] + {of}[k:]: {want}, but got "
                         f"{list(updates_shape)}.")


class ScatterNd(NoAttrPrimitive):
    """`ScatterNd()(indices, updates, shape)`: zeros of `shape` with `updates` added at the
    `indices` (..., k) (duplicates summed), updates of shape indices.shape[:-1] +
    shape[k:]: GatherNd's transpose (and its backward).

    >>> ScatterNd()(Tensor(np.array([[1], [3]], np.int32)),
    ...             Tensor(np.array([9.0, 10.0], np.float32)), (5,)).asnumpy()
    array([ 0.,  9.,  0., 10.,  0.], dtype=float32)
    """

    const_inputs = (2,)
    writes_output = True

    def infer_shape(self, indices_shape: list, updates_shape: list, shape: Any) -> list:
        validator.check_value_type("shape", shape, (list, tuple), self.name)
        for d in shape:
            validator.check_non_negative_int(d, "shape element", self.name)
        _check_updates(self.name, shape, indices_shape, updates_shape, "shape")
        return list(shape)

    def infer_dtype(self, indices_dtype: mstype.Type, updates_dtype: mstype.Type,
                    shape: Any) -> mstype.Type:
        _check_indices(self.name, "indices", indices_dtype)
        return validator.check_tensor_dtype_valid("updates", updates_dtype, mstype.number_type,
                                                  self.name)

    def kernel(self, indices: np.ndarray, updates: np.ndarray, shape: Any,
               out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.zeros(tuple(shape), updates.dtype)
        else:
            out.fill(0)
        np.add.at(out, _nd_index(self.name, out.shape, indices), updates)
        return out


class _TensorScatter(NoAttrPrimitive):
    """`Op()(input_x, indices, updates)`: input_x with `updates` (shape indices.shape[:-1] +
    input_x.shape[k:]) combined into the slices the `indices` (..., k) address by `_np_at`
    (a ufunc applied unbuffered, so a slice addressed twice takes every update), or
    replaced by them (`_np_at` None). The family of TensorScatterUpdate and the arithmetic
    scatters (scatter_ops.py)."""

    writes_output = True
    valid_types: tuple = mstype.all_types
    _np_at: np.ufunc | None = None

    def infer_shape(self, x_shape: list, indices_shape: list, updates_shape: list) -> list:
        _check_updates(self.name, x_shape, indices_shape, updates_shape, "input_x.shape")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, indices_dtype: mstype.Type,
                    updates_dtype: mstype.Type) -> mstype.Type:
        _check_indices(self.name, "indices", indices_dtype)
        validator.check_tensor_dtype_valid("input_x", x_dtype, self.valid_types, self.name)
        if updates_dtype != x_dtype:
            raise TypeError(f"For '{self.name}', the 'updates' should have the dtype of "
                            f"'input_x': {x_dtype}, but got {updates_dtype}.")
        return x_dtype

    def kernel(self, x: np.ndarray, indices: np.ndarray, updates: np.ndarray,
               out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = x.copy()
        else:
            np.copyto(out, x)
        where = _nd_index(self.name, out.shape, indices)
        if self._np_at is None:
            out[where] = updates
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                self._np_at.at(out, where, updates)
        return out


class TensorScatterUpdate(_TensorScatter):
    """`TensorScatterUpdate()(input_x, indices, updates)`: input_x with the slices the
    `indices` (..., k) address replaced by `updates` (shape indices.shape[:-1] +
    input_x.shape[k:]); a slice addressed twice takes one of its updates (unspecified
    which, as MindSpore).

    >>> TensorScatterUpdate()(Tensor(np.zeros((2, 2), np.float32)),
    ...                       Tensor(np.array([[1, 0]], np.int32)),
    ...                       Tensor(np.array([5.0], np.float32))).asnumpy()
    array([[0., 0.],
           [5., 0.]], dtype=float32)
    """


def _scatter_spec(name: str, x: Sequence[int], indices: Sequence[int]) -> tuple:
    """The letters of a scatter into x's shape: (x's, indices', updates') and the
    unsplittable ones (the addressed dims and the indices: a slice may land anywhere)."""
    k = indices[-1]
    xl = dims(len(x), prefix="x")
    il = dims(len(indices) - 1, prefix="i") + ("k",)
    ul = il[:-1] + xl[k:]
    reason = f"{name} writes the slices its indices address"
    return xl, il, ul, tuple((l, reason) for l in xl[:k] + il)


@sharding_rule(ScatterNd)
def scatter_nd_spec(prim: ScatterNd, ins: list, outs: list, consts: dict) -> DimSpec:
    """The dims after the k addressed ones carry from the updates to the output; the
    addressed dims and the indices stay whole."""
    indices, _ = ins
    xl, il, ul, bad = _scatter_spec(prim.name, outs[0], indices)
    return DimSpec((il, ul), (xl,), unsplittable=bad)


@sharding_rule(_TensorScatter)
def tensor_scatter_spec(prim: _TensorScatter, ins: list, outs: list, consts: dict) -> DimSpec:
    """As ScatterNd's, input_x's dims being the output's."""
    x, indices, _ = ins
    xl, il, ul, bad = _scatter_spec(prim.name, x, indices)
    return DimSpec((xl, il, ul), (xl,), unsplittable=bad)


@bprop(GatherNd, complex_values=True)
def gather_nd_bprop(prim: GatherNd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    x, indices = inputs
    return g.apply(ScatterNd(), [indices, dout, g.add_const(tuple(x.shape))]), None


@bprop(ScatterNd, complex_values=True)
def scatter_nd_bprop(prim: ScatterNd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    indices, _, _ = inputs
    return None, g.apply(GatherNd(), [dout, indices]), None


@bprop(TensorScatterUpdate, complex_values=True)
def tensor_scatter_update_bprop(prim: TensorScatterUpdate, inputs: list, out: Any, dout: Any,
                                g: Any) -> tuple:
    """input_x: dout with the overwritten slices zeroed; updates: dout at the indices."""
    _, indices, updates = inputs
    zeros = g.add_const(np.zeros(tuple(updates.shape), updates.dtype.np_dtype))
    return (g.apply(TensorScatterUpdate(), [dout, indices, zeros]), None,
            g.apply(GatherNd(), [dout, indices]))


# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(Gather)
def gather_batch(prim: Gather, args: list, dims: list, size: int) -> tuple:
    """Batched params only: gather along the axis shifted past the batch axis (moved to 0).
    Batched indices only: params' leading dims come first in the output, so the batch axis
    lands at the gathered axis. Both batched: per element (Gather has no batch_dims here)."""
    params, indices, axis = args
    if dims[1] is None:
        x = to_front(params, dims[0])
        return prim(x, indices, prim._axis(x.shape[1:], axis) + 1), 0
    if dims[0] is None:
        ax = prim._axis(params.shape, axis)
        return prim(params, to_front(indices, dims[1]), ax), ax
    return per_element(prim, args, dims, size)
