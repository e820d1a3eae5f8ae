"""More element-wise primitives: Sqrt, Pow, Maximum, Minimum, FloorDiv, Sigmoid, Tanh, Erf,
the comparisons (Greater, GreaterEqual, Less, LessEqual, NotEqual), Select, ZerosLike,
OnesLike, BiasAdd and MindSpore's deprecated alias TensorAdd.

They share math_ops' element-wise family (numpy broadcasting, the `writes_output` kernel,
the element-wise sharding rule: every input aligned to the output from the right), except
BiasAdd, whose bias aligns to the channel dim. Transcendental functions of float16 and
bfloat16 are computed in float32 and rounded once into the output.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import _OPERATORS
from msops.common import validator
from msops.primitives.lowering import out_spec, run_lowered, ufunc_kernel
from msops.primitives.math_ops import (Add, Cast, Exp, Log, Mul, Neg, RealDiv,
                                       ReduceSum, Square, Sub, UnaryElementwise, _Binary,
                                       _Elementwise, arith_types, broadcast_shape, check_rank,
                                       check_same_dtype, compute_dtype, real_div_types, scalar,
                                       sum_to, tensor_operator)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import fold_batch
from msops.primitives.rules import batch_rule, bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["Sqrt", "Pow", "Maximum", "Minimum", "FloorDiv", "Sigmoid", "Tanh", "Erf",
           "Greater", "GreaterEqual", "Less", "LessEqual", "NotEqual", "Select", "ZerosLike",
           "OnesLike", "BiasAdd", "TensorAdd"]

#: real dtypes (no bool, no complex): the ordered ones
real_types = mstype.int_type + mstype.uint_type + mstype.float_type


def computed(fn: Callable[..., np.ndarray], out_abstract: Any) -> Callable:
    """A lowered element-wise kernel computing `fn` of its inputs in the compute dtype
    (float32 for float16 and bfloat16), rounded once into `out`. `fn` returns a new array,
    so out may be an input. numpy's floating-point warnings are silenced: a NaN outside an
    op's domain or an inf at a pole is the op's answer there, as in MindSpore."""
    shape, dtype = out_spec(out_abstract)
    ct = compute_dtype(dtype)

    def kernel(*xs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(shape, dtype)
        with np.errstate(all="ignore"):
            np.copyto(out, fn(*(x.astype(ct, copy=False) for x in xs)), casting="unsafe")
        return out
    return kernel


class Sqrt(UnaryElementwise):
    """Square root element-wise; float and complex dtypes."""

    valid_types = real_div_types
    _np_op = np.sqrt


class Sigmoid(UnaryElementwise):
    """1 / (1 + exp(-x)) element-wise (as (1 + tanh(x / 2)) / 2: no overflow); floats."""

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(lambda x: 0.5 * (1.0 + np.tanh(0.5 * x)), out_abstract)


class Tanh(UnaryElementwise):
    """Hyperbolic tangent element-wise; float and complex dtypes."""

    valid_types = real_div_types
    _np_op = np.tanh


_erf = np.frompyfunc(math.erf, 1, 1)


class Erf(UnaryElementwise):
    """The Gauss error function element-wise (float dtypes); the exact GELU uses it.

    Computed by the C library's erf for each element (numpy has no erf ufunc): exact, but
    at Python-call speed, about 0.1 µs an element."""

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(lambda x: np.asarray(_erf(x.astype(np.float64)), np.float64),
                        out_abstract)


class Pow(_Binary):
    """x ** y element-wise, broadcast; an integer x needs exponents >= 0 (checked when run)."""

    valid_types = mstype.int_type + mstype.uint_type + real_div_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        power = ufunc_kernel(np.power, out_abstract, 2)
        if out_abstract.dtype not in mstype.int_type:
            return power
        name = self.name

        def int_power(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None
                      ) -> np.ndarray:
            if y.size and y.min() < 0:
                raise ValueError(f"For '{name}', the 'y' of an integer x should be >= 0, "
                                 f"but got {int(y.min())}.")
            return power(x, y, out)
        return int_power


class Maximum(_Binary):
    """The larger of x and y element-wise, broadcast; real dtypes."""

    valid_types = real_types
    _np_op = np.maximum


class Minimum(_Binary):
    """The smaller of x and y element-wise, broadcast; real dtypes."""

    valid_types = real_types
    _np_op = np.minimum


class FloorDiv(_Binary):
    """floor(x / y) element-wise, broadcast, in x's dtype; real dtypes."""

    valid_types = real_types
    _np_op = np.floor_divide


class TensorAdd(Add):
    """MindSpore's deprecated name of `Add` (its tests still use it): x + y, broadcast."""


# -- comparisons ---------------------------------------------------------------------------
class _Comparison(_Binary):
    """x (op) y element-wise, broadcast; both inputs of one dtype; a bool output."""

    valid_types = (mstype.bool_,) + real_types

    def infer_dtype(self, x_dtype: mstype.Type, y_dtype: mstype.Type) -> mstype.Type:
        check_same_dtype(self.name, {"x": x_dtype, "y": y_dtype}, self.valid_types)
        return mstype.bool_


class Greater(_Comparison):
    """x > y element-wise (bool)."""

    _np_op = np.greater


class GreaterEqual(_Comparison):
    """x >= y element-wise (bool)."""

    _np_op = np.greater_equal


class Less(_Comparison):
    """x < y element-wise (bool)."""

    _np_op = np.less


class LessEqual(_Comparison):
    """x <= y element-wise (bool)."""

    _np_op = np.less_equal


class NotEqual(_Comparison):
    """x != y element-wise (bool); every dtype."""

    valid_types = mstype.all_types
    _np_op = np.not_equal


# -- Select, ZerosLike, OnesLike -------------------------------------------------------------
class Select(_Elementwise):
    """`Select()(cond, x, y)`: x where cond else y, the three broadcast together; cond bool,
    x and y of one dtype, which the output keeps.

    >>> Select()(Tensor(np.array([True, False])), Tensor(np.array([1, 2], np.int32)),
    ...          Tensor(np.array([8, 9], np.int32))).asnumpy()
    array([1, 9], dtype=int32)
    """

    #: np.where builds its result before the copy, so writing over x or y would be safe; but
    #: the bool cond can share the output's shape, not its dtype: kept simple, never in place
    out_may_be_input = False

    def infer_shape(self, cond_shape: list, x_shape: list, y_shape: list) -> list:
        xy = broadcast_shape(self.name, x_shape, y_shape)
        return broadcast_shape(self.name, cond_shape, xy, "cond", "x and y")

    def infer_dtype(self, cond_dtype: mstype.Type, x_dtype: mstype.Type,
                    y_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("cond", cond_dtype, (mstype.bool_,), self.name)
        return check_same_dtype(self.name, {"x": x_dtype, "y": y_dtype}, mstype.all_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)

        def select(cond: np.ndarray, x: np.ndarray, y: np.ndarray,
                   out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, np.where(cond, x, y))
            return out
        return select


class _Fill(UnaryElementwise):
    """A tensor of x's shape and dtype filled with `_value`."""

    valid_types = mstype.all_types
    _value = 0

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        value = self._value

        def fill(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            out.fill(value)
            return out
        return fill


class ZerosLike(_Fill):
    """Zeros of x's shape and dtype."""


class OnesLike(_Fill):
    """Ones of x's shape and dtype."""

    _value = 1


# -- BiasAdd -------------------------------------------------------------------------------
class BiasAdd(PrimitiveWithInfer):
    """`BiasAdd(data_format)(input_x, bias)`: bias (C,) added along the channel dim of x —
    dim 1 for "NCHW" (any rank >= 2), the last dim for "NHWC"; x's shape and dtype.

    >>> BiasAdd()(Tensor(np.zeros((2, 3, 4), np.float32)),
    ...           Tensor(np.arange(3, dtype=np.float32))).asnumpy()[:, :, 0]
    array([[0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, data_format: str = "NCHW") -> None:
        validator.check_string("data_format", data_format, ("NCHW", "NHWC", "NCDHW"),
                               self.name)

    def channel_axis(self, ndim: int) -> int:
        return ndim - 1 if self.data_format == "NHWC" else 1

    def infer_shape(self, x_shape: list, bias_shape: list) -> list:
        check_rank(self.name, "input_x", x_shape, 2)
        c = x_shape[self.channel_axis(len(x_shape))]
        if list(bias_shape) != [c]:
            raise ValueError(f"For '{self.name}', the 'bias shape' should be == [C] for the "
                             f"{c} channels of input_x shape {list(x_shape)} "
                             f"({self.data_format}): [{c}], but got {list(bias_shape)}.")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, bias_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"input_x": x_dtype, "bias": bias_dtype},
                                arith_types)

    writes_output = True
    out_may_be_input = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        c_axis = self.channel_axis(len(shape))
        bshape = tuple(-1 if d == c_axis else 1 for d in range(len(shape)))

        def bias_add(x: np.ndarray, bias: np.ndarray, out: np.ndarray | None = None
                     ) -> np.ndarray:
            return np.add(x, bias.reshape(bshape),
                          out=np.empty(shape, dtype) if out is None else out)
        return bias_add


@sharding_rule(BiasAdd)
def bias_add_spec(prim: BiasAdd, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's letters in and out; the bias shares the channel dim's letter."""
    letters = dims(len(ins[0]))
    return DimSpec((letters, (letters[prim.channel_axis(len(letters))],)), (letters,))


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
def _mask(g: Any, cond: Any, dtype: mstype.Type) -> Any:
    """A bool node as 1s and 0s of `dtype`."""
    return g.apply(Cast(), [cond, g.add_const(dtype)])


@bprop(Sqrt, holomorphic=True)
def sqrt_bprop(prim: Sqrt, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout / (2 sqrt(x))."""
    return (g.apply(RealDiv(), [dout, g.apply(Mul(), [out, scalar(g, 2, out.dtype)])]),)


@bprop(Sigmoid)
def sigmoid_bprop(prim: Sigmoid, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * out * (1 - out)."""
    one_minus = g.apply(Sub(), [scalar(g, 1, out.dtype), out])
    return (g.apply(Mul(), [dout, g.apply(Mul(), [out, one_minus])]),)


@bprop(Tanh, holomorphic=True)
def tanh_bprop(prim: Tanh, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * (1 - out**2)."""
    return (g.apply(Mul(), [dout, g.apply(Sub(), [scalar(g, 1, out.dtype),
                                                  g.apply(Square(), [out])])]),)


@bprop(Erf)
def erf_bprop(prim: Erf, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * 2 / sqrt(pi) * exp(-x**2)."""
    x = inputs[0]
    gauss = g.apply(Exp(), [g.apply(Neg(), [g.apply(Square(), [x])])])
    return (g.apply(Mul(), [dout, g.apply(Mul(), [gauss, scalar(g, 2 / math.sqrt(math.pi),
                                                               x.dtype)])]),)


@bprop(Pow, holomorphic=True)
def pow_bprop(prim: Pow, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: dout * y * x**(y - 1); y: dout * out * log(x) where the log is taken: x > 0 for a
    float x (MindSpore's gives NaN elsewhere; the exponent's gradient is then 0), x != 0 for
    a complex one (the principal log; holomorphic: run on the conjugates)."""
    x, y = inputs
    power = g.apply(Pow(), [x, g.apply(Sub(), [y, scalar(g, 1, y.dtype)])])
    dx = g.apply(Mul(), [dout, g.apply(Mul(), [y, power])])
    zero = scalar(g, 0, x.dtype)
    has_log = g.apply(NotEqual() if x.dtype.kind == "complex" else Greater(), [x, zero])
    safe_x = g.apply(Select(), [has_log, x, g.apply(OnesLike(), [x])])
    log_x = g.apply(Select(), [has_log, g.apply(Log(), [safe_x]), g.apply(ZerosLike(), [x])])
    dy = g.apply(Mul(), [dout, g.apply(Mul(), [out, log_x])])
    return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


def _pick_bprop(compare: type) -> Callable:
    """Maximum's / Minimum's rule: dout to x where `compare(x, y)` holds, else to y."""
    def rule(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
        x, y = inputs
        to_x = _mask(g, g.apply(compare(), [x, y]), dout.dtype)
        dx = g.apply(Mul(), [dout, to_x])
        dy = g.apply(Sub(), [dout, dx])
        return sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)
    return rule


bprop(Maximum)(_pick_bprop(GreaterEqual))
bprop(Minimum)(_pick_bprop(LessEqual))


@bprop(FloorDiv, _Comparison, ZerosLike, OnesLike)
def no_gradient_bprop(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Piecewise constant (or constant) in every input: no gradient."""
    return (None,) * len(inputs)


@bprop(Select)
def select_bprop(prim: Select, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout to x where cond holds, to y elsewhere; cond gets none."""
    cond, x, y = inputs
    zeros = g.apply(ZerosLike(), [dout])
    dx = g.apply(Select(), [cond, dout, zeros])
    dy = g.apply(Select(), [cond, zeros, dout])
    return None, sum_to(g, dx, x.shape), sum_to(g, dy, y.shape)


@bprop(BiasAdd)
def bias_add_bprop(prim: BiasAdd, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x: dout; bias: dout summed over every dim but the channel."""
    ndim = len(out.shape)
    c_axis = prim.channel_axis(ndim)
    others = tuple(d for d in range(ndim) if d != c_axis)
    return dout, g.apply(ReduceSum(keep_dims=False), [dout, g.add_const(others)])


# Tensor operators (`x ** y`, `x // y`, comparisons): these primitives, as MindSpore's
_OPERATORS.update({
    "__pow__": tensor_operator(Pow), "__floordiv__": tensor_operator(FloorDiv),
    "__gt__": tensor_operator(Greater), "__ge__": tensor_operator(GreaterEqual),
    "__lt__": tensor_operator(Less), "__le__": tensor_operator(LessEqual),
    "__ne__": tensor_operator(NotEqual),
})


# vmap: the channel dim is 1 (or last) of each element, so the batch folds into N
batch_rule(BiasAdd)(fold_batch(0))
