"""More element-wise unary primitives: Abs, Sign, Rsqrt, Reciprocal, Sin, Cos, and the
piecewise activations ReLU6, HSigmoid, HSwish and Softplus (MindSpore's primitives of
those names, without attributes).

They join math_ops' element-wise family (the `writes_output` kernel; the element-wise
sharding rule: a unary op keeps every split, no communication). The activations
differentiate through internal `<Op>Grad` ops (activation_ops' dy * f'(x) family); the
others through existing ops. Transcendental functions of float16 and bfloat16 are computed
in float32 and rounded once into the output.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import _OPERATORS
from msops.primitives.activation_ops import _ActivationGrad
from msops.primitives.elementwise_ops import (OnesLike, Select, computed, no_gradient_bprop,
                                              real_types)
from msops.primitives.fft_ops import _real_of
from msops.primitives.math_ops import (Cast, Equal, Mul, Neg, RealDiv, Square,
                                       UnaryElementwise, real_div_types, scalar,
                                       tensor_operator)
from msops.primitives.rules import bprop

__all__ = ["Abs", "Sign", "Rsqrt", "Reciprocal", "Sin", "Cos", "ReLU6", "HSigmoid", "HSwish",
           "Softplus"]


class Abs(UnaryElementwise):
    """|x| element-wise; real dtypes (same dtype out) and complex ones (the modulus: float32
    of complex64, float64 of complex128, as MindSpore).

    >>> Abs()(Tensor(np.array([-2.0, 0.0, 1.5], np.float32))).asnumpy()
    array([2. , 0. , 1.5], dtype=float32)
    """

    valid_types = real_types + mstype.complex_type
    _np_op = np.abs

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        dtype = super().infer_dtype(x_dtype)
        return _real_of(dtype) if dtype.kind == "complex" else dtype


class Sign(UnaryElementwise):
    """-1, 0 or 1 as x is negative, zero or positive, element-wise; real dtypes."""

    valid_types = real_types
    _np_op = np.sign


class Rsqrt(UnaryElementwise):
    """1 / sqrt(x) element-wise; float dtypes (x = 0 gives inf, x < 0 NaN, as MindSpore)."""

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_rsqrt, out_abstract)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(x)


class Reciprocal(UnaryElementwise):
    """1 / x element-wise; float and complex dtypes (1 / 0 = inf, as MindSpore)."""

    valid_types = real_div_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(_reciprocal, out_abstract)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.reciprocal(x)


class Sin(UnaryElementwise):
    """sin(x) element-wise; float and complex dtypes."""

    valid_types = real_div_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(np.sin, out_abstract)


class Cos(UnaryElementwise):
    """cos(x) element-wise; float and complex dtypes."""

    valid_types = real_div_types

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(np.cos, out_abstract)


# -- piecewise activations: f and f' ------------------------------------------------------
def relu6(x: np.ndarray) -> np.ndarray:
    """min(max(x, 0), 6)."""
    return np.clip(x, 0.0, 6.0)


def relu6_derivative(x: np.ndarray) -> np.ndarray:
    """1 inside (0, 6), else 0 (0 at the kinks, as MindSpore's ReLU6Grad)."""
    return ((x > 0) & (x < 6)).astype(x.dtype)


def hsigmoid(x: np.ndarray) -> np.ndarray:
    """relu6(x + 3) / 6."""
    return np.clip(x / 6.0 + 0.5, 0.0, 1.0)


def hsigmoid_derivative(x: np.ndarray) -> np.ndarray:
    """1/6 inside (-3, 3), else 0."""
    return ((x > -3) & (x < 3)).astype(x.dtype) / 6.0


def hswish(x: np.ndarray) -> np.ndarray:
    """x relu6(x + 3) / 6."""
    return x * hsigmoid(x)


def hswish_derivative(x: np.ndarray) -> np.ndarray:
    """0 below -3, 1 above 3, (2x + 3) / 6 between."""
    return np.where(x <= -3, 0.0, np.where(x >= 3, 1.0, (2.0 * x + 3.0) / 6.0)).astype(x.dtype)


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), without overflow."""
    return np.logaddexp(0.0, x)


def softplus_derivative(x: np.ndarray) -> np.ndarray:
    """sigmoid(x)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class _Activation(UnaryElementwise):
    """f(x) element-wise for floats; `_f`: f on the compute dtype."""

    valid_types = mstype.float_type
    _f: Callable = None

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(type(self)._f, out_abstract)


class ReLU6(_Activation):
    """min(max(x, 0), 6) element-wise; floats.

    >>> ReLU6()(Tensor(np.array([-1.0, 3.0, 7.0], np.float32))).asnumpy()
    array([0., 3., 6.], dtype=float32)
    """

    _f = staticmethod(relu6)


class HSigmoid(_Activation):
    """Hard sigmoid relu6(x + 3) / 6 element-wise; floats."""

    _f = staticmethod(hsigmoid)


class HSwish(_Activation):
    """Hard swish x relu6(x + 3) / 6 element-wise; floats.

    >>> HSwish()(Tensor(np.array([-4.0, -1.0, 0.5, 4.0], np.float32))).asnumpy().round(4)
    array([-0.    , -0.3333,  0.2917,  4.    ], dtype=float32)
    """

    _f = staticmethod(hswish)


class Softplus(_Activation):
    """log(1 + exp(x)) element-wise, stable for large |x|; floats."""

    _f = staticmethod(softplus)


class ReLU6Grad(_ActivationGrad):
    """dy * ReLU6'(x): ReLU6's backward. Internal; not exported."""

    _derivative = staticmethod(relu6_derivative)


class HSigmoidGrad(_ActivationGrad):
    """dy * HSigmoid'(x): HSigmoid's backward. Internal; not exported."""

    _derivative = staticmethod(hsigmoid_derivative)


class HSwishGrad(_ActivationGrad):
    """dy * HSwish'(x): HSwish's backward. Internal; not exported."""

    _derivative = staticmethod(hswish_derivative)


class SoftplusGrad(_ActivationGrad):
    """dy * sigmoid(x): Softplus's backward. Internal; not exported."""

    _derivative = staticmethod(softplus_derivative)


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
def _activation_bprop(grad_cls: type) -> Callable:
    def rule(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
        return (g.apply(grad_cls(), [dout, inputs[0]]),)
    rule.__doc__ = f"dout * f'(x), by {grad_cls.__name__}."
    return rule


bprop(ReLU6)(_activation_bprop(ReLU6Grad))
bprop(HSigmoid)(_activation_bprop(HSigmoidGrad))
bprop(HSwish)(_activation_bprop(HSwishGrad))
bprop(Softplus)(_activation_bprop(SoftplusGrad))
bprop(Sign)(no_gradient_bprop)


@bprop(Abs, complex_values=True)
def abs_bprop(prim: Abs, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * sign(x) (0 at x = 0, as MindSpore); for complex x, dout * x / |x| (dL/dRe +
    i dL/dIm of the real |x|; 0 at x = 0)."""
    x = inputs[0]
    if x.dtype.kind != "complex":
        return (g.apply(Mul(), [dout, g.apply(Sign(), [x])]),)
    at_zero = g.apply(Equal(), [out, scalar(g, 0, out.dtype)])
    safe = g.apply(Select(), [at_zero, g.apply(OnesLike(), [out]), out])
    scale = g.apply(Cast(), [g.apply(RealDiv(), [dout, safe]), g.add_const(x.dtype)])
    return (g.apply(Mul(), [scale, x]),)


@bprop(Rsqrt)
def rsqrt_bprop(prim: Rsqrt, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * -out**3 / 2."""
    cube = g.apply(Mul(), [out, g.apply(Square(), [out])])
    return (g.apply(Mul(), [dout, g.apply(Mul(), [cube, scalar(g, -0.5, out.dtype)])]),)


@bprop(Reciprocal, holomorphic=True)
def reciprocal_bprop(prim: Reciprocal, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * -out**2."""
    return (g.apply(Neg(), [g.apply(Mul(), [dout, g.apply(Square(), [out])])]),)


@bprop(Sin, holomorphic=True)
def sin_bprop(prim: Sin, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * cos(x)."""
    return (g.apply(Mul(), [dout, g.apply(Cos(), [inputs[0]])]),)


@bprop(Cos, holomorphic=True)
def cos_bprop(prim: Cos, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout * -sin(x)."""
    return (g.apply(Mul(), [dout, g.apply(Neg(), [g.apply(Sin(), [inputs[0]])])]),)


_OPERATORS["__abs__"] = tensor_operator(Abs)
