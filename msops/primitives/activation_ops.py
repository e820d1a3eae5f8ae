"""Transformer activations: GeLU, FastGeLU and LogSoftmax.

GeLU is MindSpore's: the tanh approximation
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x**3)))
(the exact, erf-based form is `nn.GELU(approximate=False)`, built from `Erf`); FastGeLU
is x / (1 + exp(-1.702 |x|)) exp(0.851 (x - |x|)) = x sigmoid(1.702 x). Their backward
ops (`GeLUGrad`, `FastGeLUGrad`, as MindSpore's) are internal, made only by autodiff.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.elementwise_ops import computed
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (Exp, Mul, NoAttrPrimitive, ReduceSum, Sub,
                                       UnaryElementwise, check_rank, check_same_dtype,
                                       compute_dtype, elementwise_spec)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import element_axis, leading_batch, to_front, with_attrs
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["GeLU", "FastGeLU", "LogSoftmax"]

_C = math.sqrt(2.0 / math.pi)
_K = 0.044715


def gelu(x: np.ndarray) -> np.ndarray:
    """GeLU's tanh approximation."""
    return 0.5 * x * (1.0 + np.tanh(_C * (x + _K * x ** 3)))


def gelu_derivative(x: np.ndarray) -> np.ndarray:
    """d gelu / dx = 0.5 (1 + t) + 0.5 x (1 - t**2) c (1 + 3k x**2), t = tanh(c (x + k x**3))."""
    t = np.tanh(_C * (x + _K * x ** 3))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _C * (1.0 + 3.0 * _K * x * x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fast_gelu(x: np.ndarray) -> np.ndarray:
    """x sigmoid(1.702 x): MindSpore's x / (1 + exp(-1.702|x|)) exp(0.851 (x - |x|))."""
    return x * _sigmoid(1.702 * x)


def fast_gelu_derivative(x: np.ndarray) -> np.ndarray:
    s = _sigmoid(1.702 * x)
    return s + 1.702 * x * s * (1.0 - s)


class GeLU(UnaryElementwise):
    """Gaussian error linear unit, tanh approximation (as `mindspore.ops.GeLU`); floats.

    >>> GeLU()(Tensor(np.array([0.0, 1.0], np.float32))).asnumpy()
    array([0.      , 0.841192], dtype=float32)
    """

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(gelu, out_abstract)


class FastGeLU(UnaryElementwise):
    """x sigmoid(1.702 x) element-wise (as `mindspore.ops.FastGeLU`); floats."""

    valid_types = mstype.float_type

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(fast_gelu, out_abstract)


class _ActivationGrad(NoAttrPrimitive):
    """`Grad()(dy, x)`: dy * f'(x), same shape and dtype (`_derivative`: f')."""

    _derivative: Callable = None

    def infer_shape(self, dy_shape: list, x_shape: list) -> list:
        if list(dy_shape) != list(x_shape):
            raise ValueError(f"For '{self.name}', the 'dy shape' should be == the 'x shape': "
                             f"{list(x_shape)}, but got {list(dy_shape)}.")
        return list(x_shape)

    def infer_dtype(self, dy_dtype: mstype.Type, x_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"dy": dy_dtype, "x": x_dtype},
                                mstype.float_type)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        derivative = type(self)._derivative

        def grad(dy: np.ndarray, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, dy.astype(ct, copy=False) * derivative(x.astype(ct, copy=False)),
                      casting="unsafe")
            return out
        return grad


class GeLUGrad(_ActivationGrad):
    """dy * GeLU'(x): GeLU's backward. Internal; not exported."""

    _derivative = staticmethod(gelu_derivative)


class FastGeLUGrad(_ActivationGrad):
    """dy * FastGeLU'(x): FastGeLU's backward. Internal; not exported."""

    _derivative = staticmethod(fast_gelu_derivative)


sharding_rule(_ActivationGrad)(elementwise_spec)
declare_without("bprop", _ActivationGrad,
                reason="second derivatives of the activations are not supported")


class LogSoftmax(PrimitiveWithInfer):
    """log(softmax(x)) along `axis` (an int), computed stably: x - max - log(sum(exp(x - max))).

    >>> LogSoftmax()(Tensor(np.array([0.0, np.log(3.0)], np.float32))).asnumpy().round(4)
    array([-1.3863, -0.2877], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, axis: int = -1) -> None:
        validator.check_int("axis", axis, self.name)

    def infer_shape(self, logits_shape: list) -> list:
        check_rank(self.name, "logits", logits_shape, 1)
        validator.check_axis_in_range(self.axis, len(logits_shape), "axis", self.name)
        return list(logits_shape)

    def infer_dtype(self, logits_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("logits", logits_dtype, mstype.float_type,
                                                  self.name)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        axis = self.axis % len(shape)

        def log_softmax(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            if not x.size:                        # nothing to normalise (max has no identity)
                return out
            xc = x.astype(ct, copy=False)
            shifted = xc - xc.max(axis=axis, keepdims=True)
            np.copyto(out, shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True)),
                      casting="unsafe")
            return out
        return log_softmax


@sharding_rule(LogSoftmax)
def log_softmax_spec(prim: LogSoftmax, ins: list, outs: list, consts: dict) -> DimSpec:
    """The same letters in and out; the normalised axis cannot be split (nor in MindSpore)."""
    letters = dims(len(ins[0]))
    return DimSpec((letters,), (letters,), unsplittable=(
        (letters[prim.axis % len(letters)], f"LogSoftmax normalises along axis {prim.axis}"),))


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(GeLU)
def gelu_bprop(prim: GeLU, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (g.apply(GeLUGrad(), [dout, inputs[0]]),)


@bprop(FastGeLU)
def fast_gelu_bprop(prim: FastGeLU, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return (g.apply(FastGeLUGrad(), [dout, inputs[0]]),)


@bprop(LogSoftmax)
def log_softmax_bprop(prim: LogSoftmax, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout - softmax * sum(dout) along the axis."""
    axis = g.add_const((prim.axis % len(out.shape),))
    total = g.apply(ReduceSum(keep_dims=True), [dout, axis])
    return (g.apply(Sub(), [dout, g.apply(Mul(), [g.apply(Exp(), [out]), total])]),)


# -- batch rules (vmap) ------------------------------------------------------------------
@batch_rule(LogSoftmax)
def log_softmax_batch(prim: LogSoftmax, args: list, dims: list, size: int) -> tuple:
    """The normalised axis shifted past the batch axis (moved to 0)."""
    x = to_front(args[0], dims[0])
    return with_attrs(prim, axis=element_axis(prim, prim.axis, len(x.shape) - 1))(x), 0


batch_rule(_ActivationGrad)(leading_batch)
