"""More binary arithmetic primitives: the remainders Mod (truncated, C's fmod) and FloorMod
(floored, Python's %), SquaredDifference and DivNoNan (MindSpore's primitives of those
names, without attributes).

They join math_ops' element-wise family: numpy broadcasting, both inputs of one dtype,
which the output keeps; the `writes_output` kernel; the element-wise sharding rule (no
communication). Float16 and bfloat16 are computed in float32 and rounded once. An integer
remainder by zero has no value: it is refused by name when the kernel runs (a float one is
NaN, as IEEE and MindSpore give).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import _OPERATORS
from msops.primitives.elementwise_ops import computed, real_types
from msops.primitives.lowering import out_spec
from msops.primitives.math_ops import (Mul, Neg, RealDiv, Sub, _Binary, broadcast_shape,
                                       check_same_dtype, scalar, sum_to, tensor_operator)
from msops.primitives.rules import bprop

__all__ = ["Mod", "FloorMod", "SquaredDifference", "DivNoNan", "Gcd", "Lcm", "NextAfter"]


class _Remainder(_Binary):
    """x - q * y for a rounded quotient q (`_np_op` computes it); real dtypes."""

    valid_types = real_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        remainder = type(self)._np_op
        if out_abstract.dtype in mstype.float_type:
            return computed(remainder, out_abstract)
        shape, dtype = out_spec(out_abstract)
        name = self.name

        def int_remainder(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
                          ) -> np.ndarray:
            if y.size and not np.all(y):
                raise ValueError(f"For '{name}', the 'y' of integers should not contain 0 "
                                 f"(an integer remainder by zero has no value), but got "
                                 f"{int(np.count_nonzero(y == 0))} zero(s).")
            return remainder(x, y, out=np.empty(shape, dtype) if out is None else out)
        return int_remainder


class Mod(_Remainder):
    """The remainder of x / y truncated towards zero (C's fmod): its sign is x's,
    broadcast; real dtypes.

    >>> Mod()(Tensor(np.array([-4, 5, 6], np.int32)), Tensor(np.array([3, 2, -4], np.int32))
    ...       ).asnumpy()
    array([-1,  1,  2], dtype=int32)
    """

    _np_op = np.fmod


class FloorMod(_Remainder):
    """The remainder of x / y floored (Python's %): its sign is y's, broadcast; real dtypes.

    >>> FloorMod()(Tensor(np.array([2, 4, -1], np.int32)), Tensor(np.array([3, 3, 3],
    ...            np.int32))).asnumpy()
    array([2, 1, 2], dtype=int32)
    """

    _np_op = np.mod


class SquaredDifference(_Binary):
    """(x - y) ** 2 element-wise, broadcast; real dtypes (ints wrap in their own dtype)."""

    valid_types = real_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(lambda x, y: np.square(x - y), out_abstract)


def _div_no_nan(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    zero = y == 0
    return np.where(zero, 0, np.true_divide(x, np.where(zero, 1, y)))


class DivNoNan(_Binary):
    """`DivNoNan()(x1, x2)`: x1 / x2 element-wise, broadcast, and 0 where x2 is 0 (even
    for x1 0 or inf); float dtypes.

    >>> DivNoNan()(Tensor(np.array([-1.0, 0.0, 5.0], np.float32)),
    ...            Tensor(np.array([0.0, 0.0, 2.0], np.float32))).asnumpy()
    array([0. , 0. , 2.5], dtype=float32)
    """

    valid_types = mstype.float_type

    def infer_shape(self, x1_shape: list, x2_shape: list) -> list:
        return broadcast_shape(self.name, x1_shape, x2_shape, "x1", "x2")

    def infer_dtype(self, x1_dtype: mstype.Type, x2_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x1": x1_dtype, "x2": x2_dtype}, self.valid_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_div_no_nan, out_abstract)


class Gcd(_Binary):
    """`Gcd()(x1, x2)`: the greatest common divisor of |x1| and |x2| element-wise (gcd(0, 0)
    = 0), broadcast; int32 or int64 of one dtype.

    >>> Gcd()(Tensor(np.array([12, -18, 0], np.int32)), Tensor(np.array([8, 12, 5], np.int32))
    ...       ).asnumpy()
    array([4, 6, 5], dtype=int32)
    """

    valid_types = (mstype.int32, mstype.int64)
    _np_op = np.gcd

    def infer_dtype(self, x1_dtype: mstype.Type, x2_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x1": x1_dtype, "x2": x2_dtype}, self.valid_types)


class Lcm(Gcd):
    """`Lcm()(x1, x2)`: the least common multiple of |x1| and |x2| element-wise (0 when
    either is 0), broadcast; int32 or int64 of one dtype."""

    _np_op = np.lcm


class NextAfter(_Binary):
    """`NextAfter()(x1, x2)`: the float next to x1 in the direction of x2 element-wise,
    broadcast; float32 or float64 of one dtype (the step is that dtype's)."""

    valid_types = (mstype.float32, mstype.float64)
    _np_op = np.nextafter

    def infer_dtype(self, x1_dtype: mstype.Type, x2_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x1": x1_dtype, "x2": x2_dtype}, self.valid_types)


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(_Remainder)
def remainder_bprop(prim: _Remainder, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """out = x - q * y with q piecewise constant: x gets dout, y gets -dout * q, where
    q = (x - out) / y (the truncated or floored quotient)."""
    x, y = inputs
    quotient = g.apply(RealDiv(), [g.apply(Sub(), [x, out]), y])
    dy = g.apply(Neg(), [g.apply(Mul(), [dout, quotient])])
    return sum_to(g, dout, x.shape), sum_to(g, dy, y.shape)


@bprop(SquaredDifference)
def squared_difference_bprop(prim: SquaredDifference, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """x: 2 dout (x - y); y: the negation."""
    x, y = inputs
    dx = g.apply(Mul(), [dout, g.apply(Mul(), [g.apply(Sub(), [x, y]),
                                               scalar(g, 2, x.dtype)])])
    return sum_to(g, dx, x.shape), sum_to(g, g.apply(Neg(), [dx]), y.shape)


@bprop(DivNoNan)
def div_no_nan_bprop(prim: DivNoNan, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: dout / y, y: -dout * out / y; both 0 where y is 0 (the output is flat there)."""
    x, y = inputs
    dx = g.apply(DivNoNan(), [dout, y])
    dy = g.apply(Neg(), [g.apply(DivNoNan(), [g.apply(Mul(), [dout, out]), y])])
    return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


@bprop(Gcd, Lcm)
def integer_bprop(prim: Gcd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Integer-valued: no gradient."""
    return None, None


@bprop(NextAfter)
def next_after_bprop(prim: NextAfter, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x1: dout (the step is constant almost everywhere, as MindSpore's); x2: none."""
    x1, x2 = inputs
    return sum_to(g, dout, x1.shape), None


# `x % y` is Python's remainder: the sign of y (FloorMod), as MindSpore's Tensor
_OPERATORS["__mod__"] = tensor_operator(FloorMod)
