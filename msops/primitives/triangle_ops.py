"""Tril and Triu: a matrix's lower / upper triangle (from a diagonal), the rest zero, over the
last two dims of x (the dims before are a batch of matrices).

Sharded, every dim may split: a rank's block of the last two dims starts at global (r0, c0),
so its element (i, j) is the global (r0 + i, c0 + j), kept iff (c0 + j) - (r0 + i) is on the
right side of `diagonal`: the rank applies the same op with diagonal + r0 - c0 (expansion),
no communication.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import check_rank
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import leading_batch
from msops.primitives.rules import batch_rule, bprop, expansion_rule, sharding_rule
from msops.primitives.sharding import DimSpec, ShardedCall, dims

__all__ = ["Tril", "Triu"]


class _Triangle(PrimitiveWithInfer):
    """`(diagonal=0)(x)`: x (*, M, N) of any number or bool dtype, with the elements off its
    triangle zeroed; same shape and dtype. `lower`: the triangle's side."""

    lower_side = True

    @prim_attr_register
    def __init__(self, diagonal: int = 0) -> None:
        validator.check_int("diagonal", diagonal, self.name)

    def infer_shape(self, x_shape: list) -> list:
        check_rank(self.name, "x", x_shape, 2)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, mstype.all_types, self.name)

    def keep(self, rows: int, cols: int) -> np.ndarray:
        """(rows, cols) bools: True on the kept triangle (column - row <= diagonal for the
        lower one, >= diagonal for the upper one)."""
        if self.lower_side:
            return np.tri(rows, cols, self.diagonal, dtype=np.bool_)
        return ~np.tri(rows, cols, self.diagonal - 1, dtype=np.bool_)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        keep = self.keep(*shape[-2:])
        zero = np.zeros((), dtype)

        def triangle(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, zero)
            np.copyto(out, x, where=keep)
            return out
        return triangle


class Tril(_Triangle):
    """`Tril(diagonal=0)(x)`: the lower triangle of x's last two dims (column - row <=
    diagonal), the rest zero.

    >>> Tril()(Tensor(np.ones((2, 3), np.int32))).asnumpy()
    array([[1, 0, 0],
           [1, 1, 0]], dtype=int32)
    """

    lower_side = True


class Triu(_Triangle):
    """`Triu(diagonal=0)(x)`: the upper triangle of x's last two dims (column - row >=
    diagonal), the rest zero.

    >>> Triu(1)(Tensor(np.ones((2, 3), np.int32))).asnumpy()
    array([[0, 1, 1],
           [0, 0, 1]], dtype=int32)
    """

    lower_side = False


@sharding_rule(_Triangle)
def triangle_spec(prim: _Triangle, ins: list, outs: list, consts: dict) -> DimSpec:
    """Element-wise: every dim may split (a split matrix dim shifts the diagonal, expansion)."""
    letters = dims(len(ins[0]))
    return DimSpec((letters,), (letters,))


@expansion_rule(_Triangle)
def triangle_split_matrix(prim: _Triangle, call: ShardedCall) -> Any:
    """The matrix dims split: this rank's block starts at global (r0, c0), so it keeps its
    triangle from diagonal + r0 - c0."""
    ndim = len(call.in_shapes[0])
    if not (call.in_axes[0][ndim - 2] or call.in_axes[0][ndim - 1]):
        return None
    shift = call.start(0, ndim - 2) - call.start(0, ndim - 1)
    return call.apply(type(prim)(prim.diagonal + shift), call.args())


@bprop(_Triangle)
def triangle_bprop(prim: _Triangle, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Linear: the kept elements pass dout, the zeroed ones get none."""
    return (g.apply(type(prim)(prim.diagonal), [dout]),)


# the triangle is of the last two dims: the batch axis at 0 is one more leading dim (vmap)
batch_rule(_Triangle)(leading_batch)
