"""Array primitives: Reshape, Flatten, Transpose, Concat, Split, StridedSlice.

They move elements without arithmetic, so every dtype is accepted. Shapes, perms,
slices and axes are compile-time values (`const_inputs` or attrs); kernels return
C-contiguous arrays. Transpose and Concat write theirs into a given `out`
(`writes_output`); for Identity, Reshape (and a Split/StridedSlice that happens to be
contiguous) they are views sharing the input's memory rather than copies (Flatten too).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (NoAttrPrimitive, check_rank, check_tensor_list,
                                       check_tensor_list_dtype, elementwise_spec)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import (broadcast_front, element_axis, same_dim_batch, to_front,
                                      with_attrs)
from msops.primitives.rules import (batch_rule, bprop, declare_without, expansion_rule,
                                   sharding_rule)
from msops.primitives.sharding import DimSpec, ShardedCall, dims

__all__ = ["Identity", "StopGradient", "Reshape", "Flatten", "Transpose", "Concat", "Split",
           "StridedSlice"]


def check_int_sequence(prim_name: str, arg: str, value: Any) -> list:
    """A tuple or list of ints (a const input such as a shape or perm) as a list."""
    validator.check_value_type(arg, value, (tuple, list), prim_name)
    for i, v in enumerate(value):
        validator.check_value_type(f"{arg}[{i}]", v, int, prim_name)
    return list(value)


class Identity(NoAttrPrimitive):
    """`Identity()(x)`: x itself. With a strategy it pins a layout: a sharded Cell lays its
    inputs out through it, and the parallel pass redistributes to that layout."""

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return x


sharding_rule(Identity)(elementwise_spec)


class StopGradient(Identity):
    """`StopGradient()(x)`: x itself, through which no gradient flows (`ops.stop_gradient`)."""


class Reshape(NoAttrPrimitive):
    """`Reshape()(x, shape)`: the same elements in `shape`; one -1 is inferred from the size.

    >>> Reshape()(Tensor(np.arange(6, dtype=np.float32)), (2, -1)).shape
    (2, 3)
    """

    const_inputs = (1,)

    def infer_shape(self, x_shape: list, shape: Any) -> list:
        out = check_int_sequence(self.name, "shape", shape)
        if any(v < -1 for v in out) or out.count(-1) > 1:
            raise ValueError(f"For '{self.name}', the 'shape' should hold non-negative ints and "
                             f"at most one -1, but got {tuple(shape)}.")
        size = math.prod(x_shape)
        known = math.prod(v for v in out if v != -1)
        if -1 in out and known and size % known == 0:
            out[out.index(-1)] = size // known
        elif -1 in out or known != size:
            raise ValueError(f"For '{self.name}', the 'shape' should have {size} elements, like "
                             f"x shape {list(x_shape)}, but got {tuple(shape)}.")
        return out

    def infer_dtype(self, x_dtype: mstype.Type, shape: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def kernel(self, x: np.ndarray, shape: Any) -> np.ndarray:
        return contiguous(x.reshape(tuple(shape)))


def _leading_pairs(x: Sequence[int], out: Sequence[int]) -> list[tuple[int, int]]:
    """(x dim, out dim) pairs that start the same block of the row-major order: between two
    common boundaries of the dims' running products, the first x dim and the first out dim
    split alike (k contiguous pieces of either are the same elements, k dividing both)."""
    pairs, i, j = [], 0, 0
    while i < len(x) and j < len(out):
        while i < len(x) and x[i] == 1:
            i += 1
        while j < len(out) and out[j] == 1:
            j += 1
        if i == len(x) or j == len(out):
            break
        if max(x[i], out[j]) % min(x[i], out[j]) == 0:     # else no split fits both
            pairs.append((i, j))
        px, py = x[i], out[j]
        i, j = i + 1, j + 1
        while px != py:
            if px < py:
                px, i = px * x[i], i + 1
            else:
                py, j = py * out[j], j + 1
    return pairs


@sharding_rule(Reshape)
def reshape_spec(prim: Reshape, ins: list, outs: list, consts: dict) -> DimSpec:
    """The leading dim of each block of merged or split dims keeps its split ((B*S, 3d) ->
    (B, S, H, 3dh) keeps a split of B*S on B and of 3d on H: the heads); the other dims
    stay whole. The local Reshape takes this rank's slice of the shape (`reshape_local`)."""
    x, out = ins[0], outs[0]
    x_letters, out_letters = list(dims(len(x), prefix="x")), list(dims(len(out), prefix="y"))
    shared = set()
    for k, (i, j) in enumerate(_leading_pairs(x, out)):
        x_letters[i] = out_letters[j] = f"s{k}"
        shared.add(f"s{k}")
    reason = (f"Reshape {x} -> {out} splits only the leading dim of each block of merged "
              f"or split dims")
    return DimSpec((tuple(x_letters),), (tuple(out_letters),),
                   unsplittable=tuple((l, reason) for l in x_letters
                                      if l not in shared))


@expansion_rule(Reshape)
def reshape_local(prim: Reshape, call: ShardedCall) -> Any:
    """The local Reshape: to this rank's slice of the output shape."""
    return call.apply(prim, call.args({1: tuple(call.out_shapes[0])}))


class Flatten(NoAttrPrimitive):
    """`Flatten()(x)`: x (N, ...) as (N, the product of the other dims), as
    `mindspore.ops.Flatten`; a 1-D x (N,) gives (N, 1).

    >>> Flatten()(Tensor(np.ones((2, 3, 4), np.float32))).shape
    (2, 12)
    """

    def infer_shape(self, x_shape: list) -> list:
        check_rank(self.name, "x", x_shape, 1, None)
        return [x_shape[0], math.prod(x_shape[1:])]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return contiguous(x.reshape(x.shape[0], math.prod(x.shape[1:])))


@sharding_rule(Flatten)
def flatten_spec(prim: Flatten, ins: list, outs: list, consts: dict) -> DimSpec:
    """Dim 0 may split (each rank flattens its own rows); the flattened dims stay whole."""
    x_letters = ("b",) + dims(len(ins[0]) - 1, offset=1, prefix="x")
    reason = f"Flatten {ins[0]} splits only dim 0"
    return DimSpec((x_letters,), (("b", "y"),),
                   unsplittable=tuple((l, reason) for l in x_letters[1:] + ("y",)))


class Transpose(NoAttrPrimitive):
    """`Transpose()(x, perm)`: out.shape[i] = x.shape[perm[i]]; perm a permutation of the dims.

    >>> Transpose()(Tensor(np.ones((2, 3, 4), np.float32)), (2, 0, 1)).shape
    (4, 2, 3)
    """

    const_inputs = (1,)

    def _perm(self, ndim: int, perm: Any) -> list:
        values = check_int_sequence(self.name, "perm", perm)
        if len(values) != ndim or \
                sorted(p % ndim for p in values if -ndim <= p < ndim) != list(range(ndim)):
            raise ValueError(f"For '{self.name}', the 'perm' should be a permutation of the "
                             f"{ndim} dims of x, but got {tuple(perm)}.")
        return [p % ndim for p in values]

    def infer_shape(self, x_shape: list, perm: Any) -> list:
        return [x_shape[p] for p in self._perm(len(x_shape), perm)]

    def infer_dtype(self, x_dtype: mstype.Type, perm: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        axes = self._perm(len(shape), in_abstracts[1].value)

        def transpose(x: np.ndarray, perm: Any = None, out: np.ndarray | None = None
                      ) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, x.transpose(axes))
            return out
        return transpose


@sharding_rule(Transpose)
def transpose_spec(prim: Transpose, ins: list, outs: list, consts: dict) -> DimSpec:
    """The output's letters are the input's, permuted."""
    letters = dims(len(ins[0]))
    return DimSpec((letters,), (tuple(letters[p] for p in consts[1]),))


class Concat(PrimitiveWithInfer):
    """`Concat(axis)((x1, x2, ...))`: join along `axis`; the other dims must agree.

    >>> Concat(1)((Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((2, 5), np.float32)))).shape
    (2, 8)
    """

    @prim_attr_register
    def __init__(self, axis: int = 0) -> None:
        validator.check_int("axis", axis, self.name)

    def infer_shape(self, x_shapes: list) -> list:
        shapes = [list(s) for s in check_tensor_list(self.name, "x", x_shapes)]
        check_rank(self.name, "x[0]", shapes[0], 1)
        axis = validator.check_axis_in_range(self.axis, len(shapes[0]), "axis", self.name)
        for i, s in enumerate(shapes[1:], 1):
            if len(s) != len(shapes[0]) or \
                    any(a != b for d, (a, b) in enumerate(zip(s, shapes[0])) if d != axis):
                raise ValueError(f"For '{self.name}', the shape of 'x[{i}]' should match 'x[0]' "
                                 f"{shapes[0]} except at axis {axis}, but got {s}.")
        out = list(shapes[0])
        out[axis] = sum(s[axis] for s in shapes)
        return out

    def infer_dtype(self, x_dtypes: list) -> mstype.Type:
        return check_tensor_list_dtype(self.name, "x", x_dtypes, mstype.all_types)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return join_kernel(np.concatenate, self.axis, out_abstract)


def join_kernel(join: Callable, axis: int, out_abstract: Any) -> Callable:
    """The lowered kernel of an op joining its tuple input along `axis` (`join`:
    np.concatenate, np.stack) into `out`, or into a new array when out is None."""
    shape, dtype = out_spec(out_abstract)

    def joined(xs: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        return join(xs, axis=axis, out=np.empty(shape, dtype) if out is None else out)
    return joined


def whole_along(ins: list, n_out: int, axis: int, what: str) -> DimSpec:
    """Inputs and outputs alike, dim by dim, with `axis` unsplittable."""
    letters = dims(len(ins[0]))
    return DimSpec(tuple(letters for _ in ins), tuple(letters for _ in range(n_out)),
                   unsplittable=((letters[axis % len(letters)], f"{what} along axis {axis}"),))


@sharding_rule(Concat)
def concat_spec(prim: Concat, ins: list, outs: list, consts: dict) -> DimSpec:
    """The inputs' letters are the output's; the joined axis stays whole."""
    return whole_along(ins, 1, prim.axis, "Concat joins")


class Split(PrimitiveWithInfer):
    """`Split(axis, output_num)(x)`: a tuple of `output_num` equal parts along `axis`.

    >>> [t.shape for t in Split(1, 2)(Tensor(np.ones((2, 6), np.float32)))]
    [(2, 3), (2, 3)]
    """

    @prim_attr_register
    def __init__(self, axis: int = 0, output_num: int = 1) -> None:
        validator.check_int("axis", axis, self.name)
        validator.check_positive_int(output_num, "output_num", self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        check_rank(self.name, "x", x_shape, 1)
        axis = validator.check_axis_in_range(self.axis, len(x_shape), "axis", self.name)
        if x_shape[axis] % self.output_num:
            raise ValueError(f"For '{self.name}', the 'x shape[{axis}]' should be divisible by "
                             f"output_num: {self.output_num}, but got {x_shape[axis]} "
                             f"(x shape {list(x_shape)}).")
        part = list(x_shape)
        part[axis] //= self.output_num
        return tuple(list(part) for _ in range(self.output_num))

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)
        return (x_dtype,) * self.output_num

    def kernel(self, x: np.ndarray) -> tuple:
        return tuple(contiguous(p) for p in np.split(x, self.output_num, axis=self.axis))


@sharding_rule(Split)
def split_spec(prim: Split, ins: list, outs: list, consts: dict) -> DimSpec:
    """Every output has the input's letters; the cut axis stays whole."""
    return whole_along(ins, len(outs), prim.axis, "Split cuts")


def _bit(mask: int, i: int) -> bool:
    return bool((mask >> i) & 1)


class StridedSlice(PrimitiveWithInfer):
    """`StridedSlice(masks)(x, begin, end, strides)`: x[begin:end:strides] spec by spec.

    Spec i applies to the next dim of x, like a numpy slice, unless a mask bit i says:
    begin_mask/end_mask ignore begin[i]/end[i] (slice from/to the edge), ellipsis_mask
    makes spec i a `...` (at most one), new_axis_mask inserts a dim of 1, shrink_axis_mask
    takes the single index begin[i] and drops the dim. Dims after the specs are kept whole.

    >>> StridedSlice(shrink_axis_mask=1)(Tensor(np.ones((3, 4, 5), np.float32)),
    ...                                  (1, -1), (2, 0), (1, -2)).shape
    (2, 5)
    """

    const_inputs = (1, 2, 3)

    @prim_attr_register
    def __init__(self, begin_mask: int = 0, end_mask: int = 0, ellipsis_mask: int = 0,
                 new_axis_mask: int = 0, shrink_axis_mask: int = 0) -> None:
        for name in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                     "shrink_axis_mask"):
            validator.check_non_negative_int(getattr(self, name), name, self.name)
        if bin(ellipsis_mask).count("1") > 1:
            raise ValueError(f"For '{self.name}', the 'ellipsis_mask' should have at most one bit "
                             f"set, but got {ellipsis_mask} ({bin(ellipsis_mask)}).")

    def index(self, x_shape: Sequence[int], begin: Any, end: Any, strides: Any) -> tuple:
        """(numpy index tuple, output shape) of this slice on a tensor of `x_shape`."""
        begin, end, strides = (check_int_sequence(self.name, n, v) for n, v in
                               (("begin", begin), ("end", end), ("strides", strides)))
        if not len(begin) == len(end) == len(strides):
            raise ValueError(f"For '{self.name}', the 'begin', 'end' and 'strides' should have "
                             f"the same length, but got {len(begin)}, {len(end)} and "
                             f"{len(strides)}.")
        n, ndim = len(begin), len(x_shape)
        is_ellipsis = [_bit(self.ellipsis_mask, i) for i in range(n)]
        is_new = [not is_ellipsis[i] and _bit(self.new_axis_mask, i) for i in range(n)]
        consumed = n - sum(is_ellipsis) - sum(is_new)
        if consumed > ndim:
            raise ValueError(f"For '{self.name}', the number of specs slicing a dim of x should "
                             f"be <= the rank of x: {ndim}, but got {consumed} (begin={begin}).")
        index, out, dim = [], [], 0
        for i in range(n):
            if is_ellipsis[i]:
                k = ndim - consumed
                index += [slice(None)] * k
                out += list(x_shape[dim:dim + k])
                dim += k
            elif is_new[i]:
                index.append(None)
                out.append(1)
            elif _bit(self.shrink_axis_mask, i):
                size = x_shape[dim]
                if not -size <= begin[i] < size:
                    raise ValueError(f"For '{self.name}', the 'begin[{i}]' of a shrunk axis "
                                     f"should be in [{-size}, {size}), but got {begin[i]}.")
                index.append(begin[i])
                dim += 1
            else:
                if strides[i] == 0:
                    raise ValueError(f"For '{self.name}', the 'strides[{i}]' should be non-zero, "
                                     f"but got 0.")
                s = slice(None if _bit(self.begin_mask, i) else begin[i],
                          None if _bit(self.end_mask, i) else end[i], strides[i])
                index.append(s)
                out.append(len(range(*s.indices(x_shape[dim]))))
                dim += 1
        return tuple(index), out + list(x_shape[dim:])

    def infer_shape(self, x_shape: list, begin: Any, end: Any, strides: Any) -> list:
        return self.index(x_shape, begin, end, strides)[1]

    def infer_dtype(self, x_dtype: mstype.Type, begin: Any, end: Any, strides: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def kernel(self, x: np.ndarray, begin: Any, end: Any, strides: Any) -> np.ndarray:
        return contiguous(x[self.index(x.shape, begin, end, strides)[0]])


@sharding_rule(StridedSlice)
def strided_slice_spec(prim: StridedSlice, ins: list, outs: list, consts: dict) -> DimSpec:
    """Only dims taken whole may stay split; a cut or shrunk dim must be whole on every rank.
    (A whole dim's global bounds clamp to the whole local block, so consts stay as they are.)"""
    x = ins[0]
    letters = dims(len(x))
    index, _ = prim.index(x, consts[1], consts[2], consts[3])
    bad, out, dim = [], [], 0
    for entry in index:
        if entry is None:                         # a new axis
            out.append(None)
            continue
        letter = letters[dim]
        if isinstance(entry, slice):
            out.append(letter)
            if entry.indices(x[dim]) != (0, x[dim], 1):
                bad.append((letter, f"StridedSlice cuts dim {dim}"))
        else:
            bad.append((letter, f"StridedSlice shrinks dim {dim}"))
        dim += 1
    return DimSpec((letters,), (tuple(out) + letters[dim:],), unsplittable=tuple(bad))


class StridedSliceGrad(PrimitiveWithInfer):
    """`StridedSliceGrad(masks)(dy, x_shape, begin, end, strides)`: zeros of `x_shape` with dy
    written where StridedSlice(masks)(x, begin, end, strides) read: that op's backward.
    Internal (made by its backward rule); not exported."""

    const_inputs = (1, 2, 3, 4)

    @prim_attr_register
    def __init__(self, begin_mask: int = 0, end_mask: int = 0, ellipsis_mask: int = 0,
                 new_axis_mask: int = 0, shrink_axis_mask: int = 0) -> None:
        self._slice = StridedSlice(begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                                   shrink_axis_mask)

    def infer_shape(self, dy_shape: list, x_shape: Any, begin: Any, end: Any,
                    strides: Any) -> list:
        want = self._slice.index(list(x_shape), begin, end, strides)[1]
        if list(dy_shape) != list(want):
            raise ValueError(f"For '{self.name}', the 'dy shape' should be == the slice's shape: "
                             f"{want}, but got {list(dy_shape)}.")
        return list(x_shape)

    def infer_dtype(self, dy_dtype: mstype.Type, *consts: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("dy", dy_dtype, mstype.all_types, self.name)

    def kernel(self, dy: np.ndarray, x_shape: Any, begin: Any, end: Any,
               strides: Any) -> np.ndarray:
        dx = np.zeros(tuple(x_shape), dy.dtype)
        dx[self._slice.index(list(x_shape), begin, end, strides)[0]] = dy
        return dx


declare_without("sharding", StridedSliceGrad,
                reason="it is made only by autodiff, and the parallel backward is not built yet")


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(Identity, complex_values=True)
def identity_bprop(prim: Identity, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (dout,)


@bprop(StopGradient, complex_values=True)
def stop_gradient_bprop(prim: StopGradient, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (None,)


@bprop(Reshape, complex_values=True)
def reshape_bprop(prim: Reshape, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return g.apply(Reshape(), [dout, g.add_const(tuple(inputs[0].shape))]), None


@bprop(Flatten, complex_values=True)
def flatten_bprop(prim: Flatten, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout reshaped back to x's shape."""
    return (g.apply(Reshape(), [dout, g.add_const(tuple(inputs[0].shape))]),)


@bprop(Transpose, complex_values=True)
def transpose_bprop(prim: Transpose, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Transposed back by the inverse permutation."""
    perm = prim._perm(len(inputs[0].shape), inputs[1].value)
    inverse = tuple(int(i) for i in np.argsort(perm))
    return g.apply(Transpose(), [dout, g.add_const(inverse)]), None


@bprop(Concat, complex_values=True)
def concat_bprop(prim: Concat, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each joined tensor gets its own slice of dout along the axis."""
    shapes = inputs[0].shape
    axis = prim.axis % len(shapes[0])
    grads, start = [], 0
    for shape in shapes:
        begin = [0] * len(shape)
        end = list(out.shape)
        begin[axis], end[axis] = start, start + shape[axis]
        start += shape[axis]
        grads.append(g.apply(StridedSlice(), [dout, g.add_const(tuple(begin)),
                                              g.add_const(tuple(end)),
                                              g.add_const((1,) * len(shape))]))
    return (grads,)


@bprop(Split, complex_values=True)
def split_bprop(prim: Split, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """The parts' gradients joined along the axis."""
    return (g.apply(Concat(prim.axis), [g.make_tuple(dout)]),)


def _slice_masks(prim: Any) -> dict:
    return {k: getattr(prim, k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                          "new_axis_mask", "shrink_axis_mask")}


@bprop(StridedSlice, complex_values=True)
def strided_slice_bprop(prim: StridedSlice, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout written into zeros of x's shape where the slice read."""
    x, begin, end, strides = inputs
    dx = g.apply(StridedSliceGrad(**_slice_masks(prim)),
                 [dout, g.add_const(tuple(x.shape)), begin, end, strides])
    return dx, None, None, None


@bprop(StridedSliceGrad, complex_values=True)
def strided_slice_grad_bprop(prim: StridedSliceGrad, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """Linear in dy: the slice of dout."""
    _, _, begin, end, strides = inputs
    return (g.apply(StridedSlice(**_slice_masks(prim)), [dout, begin, end, strides]),
            None, None, None, None)


# -- batch rules (vmap) ------------------------------------------------------------------
batch_rule(Identity)(same_dim_batch)


@batch_rule(Reshape)
def reshape_batch(prim: Reshape, args: list, dims: list, size: int) -> tuple:
    """Each element reshaped: the batch axis first, kept whole."""
    return prim(to_front(args[0], dims[0]), (size,) + tuple(args[1])), 0


@batch_rule(Flatten)
def flatten_batch(prim: Flatten, args: list, dims: list, size: int) -> tuple:
    """Flatten keeps axis 0 and joins the rest: an element's (n, ...) -> (n, prod)."""
    x = to_front(args[0], dims[0])
    check_rank(prim.name, "x", x.shape[1:], 1, None)
    return Reshape()(x, tuple(x.shape[:2]) + (-1,)), 0


@batch_rule(Transpose)
def transpose_batch(prim: Transpose, args: list, dims: list, size: int) -> tuple:
    """The element perm shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    ndim = len(x.shape) - 1
    perm = prim._perm(ndim, args[1])
    return prim(x, (0,) + tuple(p + 1 for p in perm)), 0


@batch_rule(Concat)
def concat_batch(prim: Concat, args: list, dims: list, size: int) -> tuple:
    """Every part batched at axis 0 (the unbatched ones repeated), joined at the element
    axis shifted past it."""
    parts = tuple(broadcast_front(x, d, size) for x, d in zip(args[0], dims[0]))
    axis = element_axis(prim, prim.axis, len(parts[0].shape) - 1)
    return with_attrs(prim, axis=axis)(parts), 0


@batch_rule(Split)
def split_batch(prim: Split, args: list, dims: list, size: int) -> tuple:
    """The cut axis shifted past the batch axis (moved to 0); every part batched at 0."""
    x = to_front(args[0], dims[0])
    axis = element_axis(prim, prim.axis, len(x.shape) - 1)
    return with_attrs(prim, axis=axis)(x), (0,) * prim.output_num


@batch_rule(StridedSlice)
def strided_slice_batch(prim: StridedSlice, args: list, dims: list, size: int) -> tuple:
    """A whole-range spec for the batch axis (moved to 0) before the element's specs: every
    mask shifted one bit, the new spec's begin and end masks set."""
    x = to_front(args[0], dims[0])
    begin, end, strides = (tuple(v) for v in args[1:4])
    masks = {n: getattr(prim, n) << 1 for n in ("begin_mask", "end_mask", "ellipsis_mask",
                                                 "new_axis_mask", "shrink_axis_mask")}
    masks["begin_mask"] |= 1
    masks["end_mask"] |= 1
    return type(prim)(**masks)(x, (0,) + begin, (size,) + end, (1,) + strides), 0
