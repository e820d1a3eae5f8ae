"""Stack and Unstack: tensors of one shape joined along a new dim, and a tensor taken apart
along one (every dtype); `Pack` and `Unpack` are MindSpore's older spellings. Each is the other's backward. Stack splits like its inputs (the
new dim is whole); Unstack keeps the dim it takes apart whole.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.array_ops import join_kernel
from msops.primitives.lowering import run_lowered
from msops.primitives.math_ops import check_rank, check_tensor_list, check_tensor_list_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import broadcast_front, to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["Stack", "Unstack", "Pack", "Unpack"]


class Stack(PrimitiveWithInfer):
    """`Stack(axis=0)((x1, x2, ...))`: N tensors of one shape and dtype joined along a new
    dim of size N at `axis` (in [-rank-1, rank]).

    >>> Stack(1)((Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((2, 3), np.float32)))).shape
    (2, 2, 3)
    """

    @prim_attr_register
    def __init__(self, axis: int = 0) -> None:
        validator.check_int("axis", axis, self.name)

    def _axis(self, ndim: int) -> int:
        return validator.check_axis_in_range(self.axis, ndim + 1, "axis", self.name)

    def infer_shape(self, x_shapes: list) -> list:
        shapes = [list(s) for s in check_tensor_list(self.name, "input_x", x_shapes)]
        for i, s in enumerate(shapes[1:], 1):
            if s != shapes[0]:
                raise ValueError(f"For '{self.name}', every tensor of 'input_x' should have the "
                                 f"shape of input_x[0] {shapes[0]}, but input_x[{i}] has {s}.")
        out = list(shapes[0])
        out.insert(self._axis(len(out)), len(shapes))
        return out

    def infer_dtype(self, x_dtypes: list) -> mstype.Type:
        return check_tensor_list_dtype(self.name, "input_x", x_dtypes, mstype.all_types)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return join_kernel(np.stack, self._axis(len(out_abstract.shape) - 1), out_abstract)


@sharding_rule(Stack)
def stack_spec(prim: Stack, ins: list, outs: list, consts: dict) -> DimSpec:
    """Every input has the same letters; the output has them with the new dim (whole)
    inserted: each rank stacks its own slices."""
    letters = dims(len(ins[0]))
    out = list(letters)
    out.insert(prim._axis(len(letters)), None)
    return DimSpec(tuple(letters for _ in ins), (tuple(out),))


class Unstack(PrimitiveWithInfer):
    """`Unstack(axis=0, num=None)(input_x)`: the x.shape[axis] slices of x along `axis`, each
    without that dim (`num`, if given, must be that count).

    >>> [t.shape for t in Unstack(1)(Tensor(np.ones((2, 3), np.float32)))]
    [(2,), (2,), (2,)]
    """

    fresh_outputs = True            # np.take copies each slice

    @prim_attr_register
    def __init__(self, axis: int = 0, num: int | None = None) -> None:
        validator.check_int("axis", axis, self.name)
        if num is not None:
            validator.check_positive_int(num, "num", self.name)

    def _axis(self, x_shape: Sequence[int]) -> int:
        check_rank(self.name, "input_x", x_shape, 1)
        axis = validator.check_axis_in_range(self.axis, len(x_shape), "axis", self.name)
        n = x_shape[axis]
        if n < 1 or (self.num is not None and n != self.num):
            want = f"== num: {self.num}" if self.num is not None else ">= 1"
            raise ValueError(f"For '{self.name}', the 'input_x shape[{axis}]' (the number of "
                             f"outputs) should be {want}, but got {n} (input_x shape "
                             f"{list(x_shape)}).")
        return axis

    def infer_shape(self, x_shape: list) -> tuple:
        axis = self._axis(x_shape)
        part = [d for i, d in enumerate(x_shape) if i != axis]
        return tuple(list(part) for _ in range(x_shape[axis]))

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        """The dtype of each output (`infer` repeats it once per output)."""
        return validator.check_tensor_dtype_valid("input_x", x_dtype, mstype.all_types,
                                                  self.name)

    def infer(self, shapes: Sequence[Any], dtypes: Sequence[Any]) -> tuple[Any, Any]:
        out = self.infer_shape(*shapes)
        return out, (self.infer_dtype(*dtypes),) * len(out)

    def kernel(self, x: np.ndarray) -> tuple:
        axis = self._axis(x.shape)
        return tuple(contiguous(np.take(x, i, axis=axis)) for i in range(x.shape[axis]))


@sharding_rule(Unstack)
def unstack_spec(prim: Unstack, ins: list, outs: list, consts: dict) -> DimSpec:
    """Each output has x's letters without the unstacked dim, which stays whole."""
    letters = dims(len(ins[0]))
    axis = prim._axis(ins[0])
    part = letters[:axis] + letters[axis + 1:]
    return DimSpec((letters,), tuple(part for _ in outs), unsplittable=(
        (letters[axis], f"Unstack takes x apart along axis {prim.axis}"),))


class Pack(Stack):
    """The same op as `Stack`, under the older spelling MindSpore keeps."""


class Unpack(Unstack):
    """The same op as `Unstack`, under the older spelling MindSpore keeps."""


@bprop(Stack, complex_values=True)
def stack_bprop(prim: Stack, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Each stacked tensor gets its slice of dout along the new dim."""
    parts = g.apply(Unstack(prim._axis(len(out.shape) - 1)), [dout])
    return ([g.getitem(parts, i) for i in range(len(inputs[0].shape))],)


@bprop(Unstack, complex_values=True)
def unstack_bprop(prim: Unstack, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """The slices' gradients stacked back along the axis."""
    return (g.apply(Stack(prim._axis(inputs[0].shape)), [g.make_tuple(dout)]),)


# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(Stack)
def stack_batch(prim: Stack, args: list, dims: list, size: int) -> tuple:
    """Every part batched at axis 0 (the unbatched ones repeated), stacked at the element
    axis shifted past it."""
    parts = tuple(broadcast_front(x, d, size) for x, d in zip(args[0], dims[0]))
    return with_attrs(prim, axis=prim._axis(len(parts[0].shape) - 1) + 1)(parts), 0


@batch_rule(Unstack)
def unstack_batch(prim: Unstack, args: list, dims: list, size: int) -> tuple:
    """The taken-apart axis shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    axis = prim._axis(x.shape[1:]) + 1
    out = with_attrs(prim, axis=axis)(x)
    return out, (0,) * len(out)
