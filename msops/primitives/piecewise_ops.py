"""Piecewise-constant element-wise primitives: Floor, Ceil, Round, Trunc, the logical ops
LogicalAnd, LogicalOr, LogicalNot, the bitwise ops BitwiseAnd, BitwiseOr, BitwiseXor,
Invert, PopulationCount, and the float predicates IsNan, IsInf, IsFinite (MindSpore's primitives of those
names, without attributes).

They join math_ops' element-wise family (the `writes_output` kernel, numpy broadcasting,
the element-wise sharding rule: no communication). Their values are flat almost
everywhere, so none has a gradient (`no_gradient_bprop`, as the comparisons). Float16 and
bfloat16 round in float32: exact, and numpy's bfloat16 lacks the ufuncs.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import _OPERATORS
from msops.common import validator
from msops.primitives.elementwise_ops import computed, no_gradient_bprop
from msops.primitives.lowering import ufunc_kernel
from msops.primitives.math_ops import UnaryElementwise, _Binary, tensor_operator
from msops.primitives.rules import bprop

__all__ = ["Floor", "Ceil", "Round", "Trunc", "LogicalAnd", "LogicalOr", "LogicalNot", "BitwiseAnd",
           "BitwiseOr", "BitwiseXor", "Invert", "PopulationCount", "IsNan",
           "IsInf", "IsFinite", "SignBit"]


class _Rounding(UnaryElementwise):
    """`_np_op` of x on the compute dtype, rounded once into x's dtype; floats."""

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(type(self)._np_op, out_abstract)


class Floor(_Rounding):
    """The largest integer <= x, element-wise, in x's float dtype.

    >>> Floor()(Tensor(np.array([1.1, -1.1, 2.0], np.float32))).asnumpy()
    array([ 1., -2.,  2.], dtype=float32)
    """

    _np_op = np.floor


class Ceil(_Rounding):
    """The smallest integer >= x, element-wise, in x's float dtype."""

    _np_op = np.ceil


class Round(_Rounding):
    """`Round()(input, decimals=0)`: input rounded to `decimals` digits after the point
    (before it when negative), halves to the even one (as MindSpore's: 2.5 -> 2, -4.5 ->
    -4); floats, and ints (returned unchanged; their decimals must be 0).

    >>> Round()(Tensor(np.array([0.8, 1.5, 2.5, -4.5], np.float32))).asnumpy()
    array([ 1.,  2.,  2., -4.], dtype=float32)
    >>> Round()(Tensor(np.array([0.81, 2.35, -4.57], np.float32)), 1).asnumpy()
    array([ 0.8,  2.4, -4.6], dtype=float32)
    """

    valid_types = mstype.float_type + mstype.int_type
    const_inputs = (1,)

    def infer_shape(self, x_shape: list, decimals: int = 0) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, decimals: int = 0) -> mstype.Type:
        dtype = validator.check_tensor_dtype_valid("input", x_dtype, self.valid_types,
                                                   self.name)
        validator.check_value_type("decimals", decimals, (int,), self.name)
        if decimals and dtype in mstype.int_type:
            raise ValueError(f"For '{self.name}', the 'decimals' should be 0 for an input of "
                             f"dtype {dtype}, but got {decimals}.")
        return dtype

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        decimals = in_abstracts[1].value if len(in_abstracts) > 1 else 0
        rounded = computed(np.rint if decimals == 0 else lambda x: np.round(x, decimals),
                           out_abstract)

        def round_kernel(x: np.ndarray, decimals: int = 0, out: np.ndarray | None = None
                         ) -> np.ndarray:
            return rounded(x, out=out)
        return round_kernel


class Trunc(_Rounding):
    """x rounded towards zero, element-wise; floats, and ints (returned unchanged).

    >>> Trunc()(Tensor(np.array([1.7, -1.7, 2.0], np.float32))).asnumpy()
    array([ 1., -1.,  2.], dtype=float32)
    """

    valid_types = mstype.float_type + mstype.int_type + mstype.uint_type
    _np_op = np.trunc


# -- logical ops: bool in, bool out ---------------------------------------------------------
class _Logical(_Binary):
    """x (op) y element-wise, broadcast; bool inputs, a bool output."""

    valid_types = (mstype.bool_,)


class LogicalAnd(_Logical):
    """x and y element-wise (bool), broadcast.

    >>> LogicalAnd()(Tensor(np.array([True, True, False])),
    ...              Tensor(np.array([True, False, False]))).asnumpy()
    array([ True, False, False])
    """

    _np_op = np.logical_and


class LogicalOr(_Logical):
    """x or y element-wise (bool), broadcast."""

    _np_op = np.logical_or


class LogicalNot(UnaryElementwise):
    """not x element-wise (bool)."""

    valid_types = (mstype.bool_,)
    _np_op = np.logical_not


# -- bitwise ops: integers (and bools), the dtype kept ----------------------------------------
class _Bitwise(_Binary):
    """x (op) y bit by bit, broadcast; ints, uints or bools of one dtype, which the output
    keeps."""

    valid_types = (mstype.bool_,) + mstype.int_type + mstype.uint_type


class BitwiseAnd(_Bitwise):
    """x & y bit by bit.

    >>> BitwiseAnd()(Tensor(np.array([12, 10], np.int32)), Tensor(np.array([10, 6], np.int32))
    ...              ).asnumpy()
    array([8, 2], dtype=int32)
    """

    _np_op = np.bitwise_and


class BitwiseOr(_Bitwise):
    """x | y bit by bit."""

    _np_op = np.bitwise_or


class BitwiseXor(_Bitwise):
    """x ^ y bit by bit."""

    _np_op = np.bitwise_xor


class Invert(UnaryElementwise):
    """~x bit by bit (ints and uints: two's complement, -x - 1 for signed ints)."""

    valid_types = mstype.int_type + mstype.uint_type
    _np_op = np.invert


class PopulationCount(UnaryElementwise):
    """The number of 1 bits of each element, as uint8 (a negative int counts the bits of its
    two's complement: -1 of int16 has 16); ints and uints.

    >>> PopulationCount()(Tensor(np.array([0, 7, -1, 256], np.int16))).asnumpy()
    array([ 0,  3, 16,  1], dtype=uint8)
    """

    valid_types = mstype.int_type + mstype.uint_type

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("x", x_dtype, self.valid_types, self.name)
        return mstype.uint8

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        # numpy counts the bits of a signed int's absolute value; the same bits read as
        # unsigned give the two's complement count
        kernel = ufunc_kernel(np.bitwise_count, out_abstract, 1)
        unsigned = np.dtype(f"u{in_abstracts[0].dtype.np_dtype.itemsize}")

        def counted(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            return kernel(x.view(unsigned), out)
        return counted


# -- predicates: a bool of x's shape --------------------------------------------------------
class _Predicate(UnaryElementwise):
    """`_np_op(x)` element-wise: a bool output; floats, and ints and bools (never NaN or
    infinite)."""

    valid_types = (mstype.bool_,) + mstype.int_type + mstype.uint_type + mstype.float_type

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("x", x_dtype, self.valid_types, self.name)
        return mstype.bool_

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        kernel = ufunc_kernel(type(self)._np_op, out_abstract, 1)
        if in_abstracts[0].dtype == mstype.bfloat16:    # numpy has no bfloat16 isnan
            def widened(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
                return kernel(x.astype(np.float32), out)
            return widened
        return kernel


class IsNan(_Predicate):
    """True where x is NaN.

    >>> IsNan()(Tensor(np.array([np.nan, 1.0, np.inf], np.float32))).asnumpy()
    array([ True, False, False])
    """

    _np_op = np.isnan


class IsInf(_Predicate):
    """True where x is +inf or -inf."""

    _np_op = np.isinf


class IsFinite(_Predicate):
    """True where x is neither NaN nor infinite."""

    _np_op = np.isfinite


class SignBit(_Predicate):
    """True where x's sign bit is set: negative numbers, -0.0, -inf and a negative NaN
    (torch's signbit; MindSpore's ops.signbit)."""

    _np_op = np.signbit


bprop(_Rounding, _Logical, LogicalNot, _Bitwise, Invert, PopulationCount,
      _Predicate)(no_gradient_bprop)


def _logical_or_bitwise(name: str, logical: Callable, bitwise: Callable) -> Callable:
    """A Tensor operator: logical on bool Tensors, bitwise on integers (as MindSpore);
    floats are a TypeError naming it."""
    def call(*args: Any) -> Any:
        dtypes = [a.dtype for a in args if hasattr(a, "dtype")]
        kinds = {d.kind for d in dtypes}
        if kinds - {"bool", "int", "uint"}:
            raise TypeError(f"For 'Tensor.{name}', the operands should be bool or integer "
                            f"Tensors, but got {[str(d) for d in dtypes]}.")
        return (logical if kinds == {"bool"} else bitwise)(*args)
    return call


# `&`, `|`, `^`, `~`: logical on bools, bitwise on integers
_OPERATORS.update({
    "__and__": _logical_or_bitwise("__and__", tensor_operator(LogicalAnd),
                                   tensor_operator(BitwiseAnd)),
    "__or__": _logical_or_bitwise("__or__", tensor_operator(LogicalOr),
                                  tensor_operator(BitwiseOr)),
    "__xor__": _logical_or_bitwise("__xor__", tensor_operator(BitwiseXor),
                                   tensor_operator(BitwiseXor)),
    "__invert__": _logical_or_bitwise("__invert__", tensor_operator(LogicalNot),
                                      tensor_operator(Invert)),
})
