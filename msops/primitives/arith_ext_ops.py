"""More element-wise arithmetic primitives with MindSpore's names: TruncateDiv, TruncateMod,
LogicalXor, Inv, ApproximateEqual(tolerance), Addcdiv, Addcmul, AccumulateNV2 (AddN's
other name), the shifts LeftShift and RightShift, and Eps.

They join math_ops' element-wise family (numpy broadcasting, the `writes_output` kernel, the
element-wise sharding rule: every input aligned to the output from the right, so the
four-input Addcdiv / Addcmul shard as the binary ops do). Float16 and bfloat16 are computed
in float32 and rounded once.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.arith_ops import Mod
from msops.primitives.elementwise_ops import _Fill, computed, no_gradient_bprop, real_types
from msops.primitives.lowering import out_spec
from msops.primitives.math_ops import (AddN, Mul, Neg, RealDiv, _Binary, _Elementwise,
                                       broadcast_shape, check_same_dtype, sum_to)
from msops.primitives.piecewise_ops import _Logical
from msops.primitives.primitive import prim_attr_register
from msops.primitives.rules import bprop
from msops.primitives.unary_ops import Reciprocal

__all__ = ["TruncateDiv", "TruncateMod", "LogicalXor", "Inv", "ApproximateEqual", "Addcdiv",
           "Addcmul", "AccumulateNV2", "LeftShift", "RightShift", "Eps"]


def _truncate_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y rounded towards zero: floats trunc(x / y); integers the floored quotient moved
    up by one where the signs differ and a remainder is left (exact for every int64)."""
    if x.dtype.kind == "f":
        return np.trunc(x / y)
    quotient = np.floor_divide(x, y)
    return quotient + ((np.remainder(x, y) != 0) & ((x < 0) != (y < 0)))


class TruncateDiv(_Binary):
    """`TruncateDiv()(x, y)`: x / y rounded towards zero, broadcast, in the inputs' dtype;
    real dtypes. An integer division by 0 is a ValueError naming the op when run.

    >>> TruncateDiv()(Tensor(np.array([-7, 7], np.int32)), Tensor(np.array([2, -2], np.int32))
    ...               ).asnumpy()
    array([-3, -3], dtype=int32)
    """

    valid_types = real_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        compute = computed(_truncate_div, out_abstract)
        if out_abstract.dtype not in mstype.int_type + mstype.uint_type:
            return compute
        name = self.name

        def int_division(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
                         ) -> np.ndarray:
            if y.size and not y.all():
                raise ValueError(f"For '{name}', the 'y' of an integer division should not "
                                 f"hold 0.")
            return compute(x, y, out=out)
        return int_division


class TruncateMod(Mod):
    """`TruncateMod()(x, y)`: x - trunc(x / y) * y (the sign of x), broadcast: `Mod`'s
    remainder under MindSpore's other name."""


class LogicalXor(_Logical):
    """`LogicalXor()(x, y)`: x xor y element-wise, broadcast; bool inputs."""

    _np_op = np.logical_xor


class Inv(Reciprocal):
    """`Inv()(x)`: 1 / x element-wise, `Reciprocal` under MindSpore's other name."""


class AccumulateNV2(AddN):
    """`AccumulateNV2()(x)`: the sum of a tuple / list of tensors, `AddN` under MindSpore's
    other name."""


class ApproximateEqual(_Binary):
    """`ApproximateEqual(tolerance=1e-5)(x, y)`: |x - y| < tolerance element-wise (bool),
    broadcast; x and y of one float dtype."""

    valid_types = mstype.float_type

    @prim_attr_register
    def __init__(self, tolerance: float = 1e-5) -> None:
        validator.check_value_type("tolerance", tolerance, (float, int), self.name)

    def infer_dtype(self, x_dtype: mstype.Type, y_dtype: mstype.Type) -> mstype.Type:
        check_same_dtype(self.name, {"x": x_dtype, "y": y_dtype}, self.valid_types)
        return mstype.bool_

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, _ = out_spec(out_abstract)
        tolerance = float(self.tolerance)

        def approximately(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
                          ) -> np.ndarray:
            if out is None:
                out = np.empty(shape, np.bool_)
            with np.errstate(invalid="ignore"):
                np.less(np.abs(x.astype(np.float64) - y), tolerance, out=out)
            return out
        return approximately


class _ScaledUpdate(_Elementwise):
    """`Op()(input_data, x1, x2, value)`: input_data + value * (x1 op x2), the four
    broadcast together, of one dtype."""

    _np_op: Callable = None

    def infer_shape(self, input_shape: list, x1_shape: list, x2_shape: list,
                    value_shape: list) -> list:
        shape = broadcast_shape(self.name, input_shape, x1_shape, "input_data", "x1")
        shape = broadcast_shape(self.name, shape, x2_shape, "input_data and x1", "x2")
        return broadcast_shape(self.name, shape, value_shape, "the other inputs", "value")

    def infer_dtype(self, input_dtype: mstype.Type, x1_dtype: mstype.Type,
                    x2_dtype: mstype.Type, value_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"input_data": input_dtype, "x1": x1_dtype,
                                            "x2": x2_dtype, "value": value_dtype},
                                self.valid_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        op = type(self)._np_op
        return computed(lambda data, x1, x2, value: data + value * op(x1, x2), out_abstract)


class Addcdiv(_ScaledUpdate):
    """`Addcdiv()(input_data, x1, x2, value)`: input_data + value * x1 / x2, broadcast;
    float dtypes.

    >>> Addcdiv()(*(Tensor(np.array(v, np.float32)) for v in ([1.0], [4.0], [2.0], [0.5]))
    ...           ).asnumpy()
    array([2.], dtype=float32)
    """

    valid_types = mstype.float_type
    _np_op = staticmethod(np.true_divide)


class Addcmul(_ScaledUpdate):
    """`Addcmul()(input_data, x1, x2, value)`: input_data + value * x1 * x2, broadcast;
    float and int dtypes."""

    valid_types = mstype.float_type + mstype.int_type + mstype.uint_type
    _np_op = staticmethod(np.multiply)


class _Shift(_Binary):
    """x shifted by y bits element-wise, broadcast; ints and uints of one dtype. A shift of
    the type's width or more gives 0 (left) or the sign fill (right), as torch's; a negative
    shift is a ValueError naming the op when run."""

    valid_types = mstype.int_type + mstype.uint_type
    _np_op: Callable = None

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        bits = np.dtype(dtype).itemsize * 8
        shift, name, left = type(self)._np_op, self.name, type(self) is LeftShift

        def shifted(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
                    ) -> np.ndarray:
            if y.size and (y < 0).any():
                raise ValueError(f"For '{name}', the 'y' should be >= 0, but got "
                                 f"{int(y.min())}.")
            if out is None:
                out = np.empty(shape, dtype)
            moved = shift(x, np.minimum(y, bits - 1).astype(y.dtype))
            np.copyto(out, np.where(y >= bits, 0, moved) if left else moved)
            return out
        return shifted


class LeftShift(_Shift):
    """`LeftShift()(x1, x2)`: x1 << x2 element-wise (bits shifted out are lost).

    >>> LeftShift()(Tensor(np.array([1, -3], np.int8)), Tensor(np.array([3, 1], np.int8))
    ...             ).asnumpy()
    array([ 8, -6], dtype=int8)
    """

    _np_op = staticmethod(np.left_shift)


class RightShift(_Shift):
    """`RightShift()(x1, x2)`: x1 >> x2 element-wise (arithmetic: the sign fills in)."""

    _np_op = staticmethod(np.right_shift)


class Eps(_Fill):
    """`Eps()(x)`: x's shape filled with its dtype's machine epsilon (the gap from 1 to the
    next float); float16 / float32 / float64.

    >>> Eps()(Tensor(np.array([4.0, 1.0], np.float32))).asnumpy()
    array([1.1920929e-07, 1.1920929e-07], dtype=float32)
    """

    valid_types = (mstype.float16, mstype.float32, mstype.float64)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        eps = np.finfo(dtype).eps

        def fill(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            out.fill(eps)
            return out
        return fill


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
bprop(TruncateDiv, LogicalXor, ApproximateEqual, _Shift, Eps)(no_gradient_bprop)


@bprop(Addcdiv)
def addcdiv_bprop(prim: Addcdiv, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_data: dout; x1: dout * value / x2; x2: -dout * value * x1 / x2**2; value:
    dout * x1 / x2."""
    data, x1, x2, value = inputs
    quotient = g.apply(RealDiv(), [x1, x2])
    scaled = g.apply(Mul(), [dout, value])
    dx1 = g.apply(RealDiv(), [scaled, x2])
    dx2 = g.apply(Neg(), [g.apply(Mul(), [dx1, quotient])])
    dvalue = g.apply(Mul(), [dout, quotient])
    return (sum_to(g, dout, data.shape), sum_to(g, dx1, x1.shape), sum_to(g, dx2, x2.shape),
            sum_to(g, dvalue, value.shape))


@bprop(Addcmul)
def addcmul_bprop(prim: Addcmul, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """input_data: dout; x1: dout * value * x2; x2: dout * value * x1; value: dout * x1 *
    x2."""
    data, x1, x2, value = inputs
    scaled = g.apply(Mul(), [dout, value])
    dx1 = g.apply(Mul(), [scaled, x2])
    dx2 = g.apply(Mul(), [scaled, x1])
    dvalue = g.apply(Mul(), [dout, g.apply(Mul(), [x1, x2])])
    return (sum_to(g, dout, data.shape), sum_to(g, dx1, x1.shape), sum_to(g, dx2, x2.shape),
            sum_to(g, dvalue, value.shape))
