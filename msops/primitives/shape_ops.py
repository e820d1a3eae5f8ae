"""Shape primitives: Tile, BroadcastTo, ExpandDims, Squeeze (every dtype; shapes, multiples
and axes are compile-time values). ExpandDims and Squeeze return views of the input, as
Reshape does.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.array_ops import Reshape, check_int_sequence
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import NoAttrPrimitive, ReduceSum, sum_to
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import pad_to_rank, to_front
from msops.primitives.rules import batch_rule, bprop, expansion_rule, sharding_rule
from msops.primitives.sharding import DimSpec, ShardedCall, broadcast_letters, dims

__all__ = ["Tile", "BroadcastTo", "ExpandDims", "Squeeze"]


def _any_dtype(prim_name: str, x_dtype: mstype.Type) -> mstype.Type:
    return validator.check_tensor_dtype_valid("input_x", x_dtype, mstype.all_types, prim_name)


def _copied(out_abstract: Any, make: Callable[[np.ndarray], np.ndarray]) -> Callable:
    """A lowered kernel writing `make(x)` (a view or a new array) into `out`, or into a new
    array when out is None; the op's const inputs are already in `make`."""
    shape, dtype = out_spec(out_abstract)

    def copy(x: np.ndarray, *consts: Any, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(shape, dtype)
        np.copyto(out, make(x))
        return out
    return copy


class Tile(NoAttrPrimitive):
    """`Tile()(input_x, multiples)`: x repeated multiples[i] times along dim i; multiples
    has at least x's rank (x is first given leading dims of 1, as MindSpore does).

    >>> Tile()(Tensor(np.array([[1, 2]], np.int32)), (2, 2)).asnumpy()
    array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
    """

    const_inputs = (1,)

    def _multiples(self, x_shape: Sequence[int], multiples: Any) -> list:
        m = check_int_sequence(self.name, "multiples", multiples)
        if len(m) < len(x_shape) or any(v < 1 for v in m):
            raise ValueError(f"For '{self.name}', the 'multiples' should be positive ints, at "
                             f"least as many as the rank of input_x {list(x_shape)}, but got "
                             f"{tuple(multiples)}.")
        return m

    def infer_shape(self, x_shape: list, multiples: Any) -> list:
        m = self._multiples(x_shape, multiples)
        padded = [1] * (len(m) - len(x_shape)) + list(x_shape)
        return [a * b for a, b in zip(m, padded)]

    def infer_dtype(self, x_dtype: mstype.Type, multiples: Any) -> mstype.Type:
        return _any_dtype(self.name, x_dtype)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        reps = tuple(self._multiples(in_abstracts[0].shape, in_abstracts[1].value))
        return _copied(out_abstract, lambda x: np.tile(x, reps))


@sharding_rule(Tile)
def tile_spec(prim: Tile, ins: list, outs: list, consts: dict) -> DimSpec:
    """A dim repeated once keeps its letter (and split); a repeated dim stays whole (a
    rank's block of the output would hold pieces of every copy); new leading dims too."""
    x = ins[0]
    m = prim._multiples(x, consts[1])
    lead = len(m) - len(x)
    letters = dims(len(x))
    bad = tuple((letters[j], f"Tile repeats dim {j} {m[lead + j]} times")
                for j in range(len(x)) if m[lead + j] > 1)
    return DimSpec((letters,), ((None,) * lead + letters,), unsplittable=bad)


@bprop(Tile, complex_values=True)
def tile_bprop(prim: Tile, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The copies' gradients summed: dout as (m0, s0, m1, s1, ...), summed over the m's."""
    x = inputs[0]
    m = prim._multiples(x.shape, inputs[1].value)
    padded = (1,) * (len(m) - len(x.shape)) + tuple(x.shape)
    split = tuple(v for pair in zip(m, padded) for v in pair)
    parts = g.apply(Reshape(), [dout, g.add_const(split)])
    summed = g.apply(ReduceSum(), [parts, g.add_const(tuple(range(0, len(split), 2)))])
    return g.apply(Reshape(), [summed, g.add_const(tuple(x.shape))]), None


class BroadcastTo(PrimitiveWithInfer):
    """`BroadcastTo(shape)(input_x)`: x broadcast to `shape` by numpy's rules (x aligned to the
    right; a dim of 1 repeats), where a -1 in `shape` keeps x's dim there.

    >>> BroadcastTo((2, -1))(Tensor(np.array([1, 2, 3], np.int32))).asnumpy()
    array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    """

    @prim_attr_register
    def __init__(self, shape: tuple) -> None:
        values = check_int_sequence(self.name, "shape", shape)
        if any(v < -1 for v in values):
            raise ValueError(f"For '{self.name}', the 'shape' should hold ints >= 0 or -1 (keep "
                             f"the input's dim), but got {tuple(shape)}.")
        self.add_prim_attr("shape", tuple(values))

    def target(self, x_shape: Sequence[int]) -> list:
        """The output shape for an input of `x_shape` (-1 resolved)."""
        lead = len(self.shape) - len(x_shape)
        if lead < 0:
            raise ValueError(f"For '{self.name}', the 'shape' should have at least the rank of "
                             f"input_x {list(x_shape)}, but got {self.shape}.")
        out = list(self.shape)
        for d, v in enumerate(self.shape):
            x = x_shape[d - lead] if d >= lead else None
            if v == -1:
                if x is None:
                    raise ValueError(f"For '{self.name}', a -1 in 'shape' keeps a dim of input_x "
                                     f"and should not be in a new leading dim, but got -1 at dim "
                                     f"{d} of {self.shape} for input_x {list(x_shape)}.")
                out[d] = x
            elif x is not None and x != v and x != 1:
                raise ValueError(f"For '{self.name}', input_x {list(x_shape)} should broadcast "
                                 f"to 'shape' {self.shape} (each dim equal or 1), but dim "
                                 f"{d - lead} is {x} against {v}.")
        return out

    def infer_shape(self, x_shape: list) -> list:
        return self.target(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _any_dtype(self.name, x_dtype)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape = tuple(out_abstract.shape)
        return _copied(out_abstract, lambda x: np.broadcast_to(x, shape))


@sharding_rule(BroadcastTo)
def broadcast_to_spec(prim: BroadcastTo, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's dims keep their letters (and splits) where they are not broadcast; a broadcast
    or new dim exists only in the output, so it stays whole there."""
    out = outs[0]
    return DimSpec((broadcast_letters(ins[0], out),), (dims(len(out)),))


@expansion_rule(BroadcastTo)
def broadcast_to_local(prim: BroadcastTo, call: ShardedCall) -> Any:
    """The local BroadcastTo: to this rank's slice of the output shape (a split dim of x is
    smaller here than `shape` says)."""
    local = tuple(call.out_shapes[0])
    if local == tuple(prim.target(call.in_shapes[0])):
        return None
    return call.apply(BroadcastTo(local), call.args())


@bprop(BroadcastTo, complex_values=True)
def broadcast_to_bprop(prim: BroadcastTo, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout summed over the dims the broadcast added or repeated."""
    return (sum_to(g, dout, inputs[0].shape),)


class ExpandDims(NoAttrPrimitive):
    """`ExpandDims()(input_x, axis)`: x with a dim of 1 inserted at `axis` (in [-rank-1, rank]).

    >>> ExpandDims()(Tensor(np.ones((2, 3), np.float32)), -1).shape
    (2, 3, 1)
    """

    const_inputs = (1,)

    def _axis(self, ndim: int, axis: Any) -> int:
        return validator.check_axis_in_range(axis, ndim + 1, "axis", self.name)

    def infer_shape(self, x_shape: list, axis: Any) -> list:
        out = list(x_shape)
        out.insert(self._axis(len(x_shape), axis), 1)
        return out

    def infer_dtype(self, x_dtype: mstype.Type, axis: Any) -> mstype.Type:
        return _any_dtype(self.name, x_dtype)

    def kernel(self, x: np.ndarray, axis: Any) -> np.ndarray:
        return np.expand_dims(x, self._axis(x.ndim, axis))


@sharding_rule(ExpandDims)
def expand_dims_spec(prim: ExpandDims, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's letters with an unsplit dim inserted."""
    letters = list(dims(len(ins[0])))
    letters.insert(prim._axis(len(letters), consts[1]), None)
    return DimSpec((dims(len(ins[0])),), (tuple(letters),))


class Squeeze(PrimitiveWithInfer):
    """`Squeeze(axis=())(input_x)`: x without the dims of size 1 named by `axis` (an int or
    a tuple; () = every dim of size 1).

    >>> Squeeze(1)(Tensor(np.ones((2, 1, 3, 1), np.float32))).shape
    (2, 3, 1)
    """

    @prim_attr_register
    def __init__(self, axis: int | tuple = ()) -> None:
        validator.check_value_type("axis", axis, (int, tuple, list), self.name)
        for a in (axis,) if isinstance(axis, int) else axis:
            validator.check_value_type("axis", a, int, self.name)

    def _axes(self, x_shape: Sequence[int]) -> tuple:
        axis = (self.axis,) if isinstance(self.axis, int) else tuple(self.axis)
        if not axis:
            return tuple(d for d, n in enumerate(x_shape) if n == 1)
        axes = tuple(sorted({validator.check_axis_in_range(a, len(x_shape), "axis", self.name)
                             for a in axis}))
        for a in axes:
            if x_shape[a] != 1:
                raise ValueError(f"For '{self.name}', the dims named by 'axis' should have size "
                                 f"1, but x shape {list(x_shape)} has {x_shape[a]} at dim {a}.")
        return axes

    def infer_shape(self, x_shape: list) -> list:
        axes = self._axes(x_shape)
        return [n for d, n in enumerate(x_shape) if d not in axes]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _any_dtype(self.name, x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return np.squeeze(x, self._axes(x.shape))


@sharding_rule(Squeeze)
def squeeze_spec(prim: Squeeze, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's letters without the squeezed dims (size 1: never split)."""
    letters = dims(len(ins[0]))
    axes = prim._axes(ins[0])
    return DimSpec((letters,), (tuple(l for d, l in enumerate(letters) if d not in axes),),
                   unsplittable=tuple((letters[a], "Squeeze removes it") for a in axes))


@expansion_rule(Squeeze)
def squeeze_named(prim: Squeeze, call: ShardedCall) -> Any:
    """The local Squeeze names the dims of size 1 of the global x: a split dim whose slice
    has one row is not one of them (`axis=()` would squeeze it on this rank)."""
    if prim.axis not in ((), []):
        return None
    return call.apply(Squeeze(prim._axes(call.in_shapes[0])), call.args())


@bprop(ExpandDims, Squeeze, complex_values=True)
def reshape_back_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout reshaped to x's shape."""
    dx = g.apply(Reshape(), [dout, g.add_const(tuple(inputs[0].shape))])
    return (dx,) + (None,) * (len(inputs) - 1)



# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(Tile)
def tile_batch(prim: Tile, args: list, dims: list, size: int) -> tuple:
    """The element padded to the multiples' rank (Tile's leading 1s), batch axis at 0 kept
    once."""
    x = to_front(args[0], dims[0])
    multiples = tuple(prim._multiples(x.shape[1:], args[1]))
    return prim(pad_to_rank(x, len(multiples)), (1,) + multiples), 0


@batch_rule(BroadcastTo)
def broadcast_to_batch(prim: BroadcastTo, args: list, dims: list, size: int) -> tuple:
    """The element padded to the target rank, broadcast to (size,) + the target."""
    x = to_front(args[0], dims[0])
    target = prim.target(x.shape[1:])
    return BroadcastTo((size,) + tuple(target))(pad_to_rank(x, len(target))), 0


@batch_rule(ExpandDims)
def expand_dims_batch(prim: ExpandDims, args: list, dims: list, size: int) -> tuple:
    """The new axis shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    return prim(x, prim._axis(len(x.shape) - 1, args[1]) + 1), 0


@batch_rule(Squeeze)
def squeeze_batch(prim: Squeeze, args: list, dims: list, size: int) -> tuple:
    """The element's squeezed axes, named explicitly and shifted past the batch axis (a
    batch of one is not squeezed)."""
    x = to_front(args[0], dims[0])
    axes = prim._axes(x.shape[1:])
    if not axes:
        return x, 0
    return Squeeze(tuple(a + 1 for a in axes))(x), 0
