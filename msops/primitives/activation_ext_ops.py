"""The ELU family and other smooth activations: Elu (with `alpha`), SeLU, Softsign, Mish,
and the shrinkages SoftShrink and HShrink (with `lambd`) -- MindSpore's primitives of those
names and attributes.

They join math_ops' element-wise family (the `writes_output` kernel; the element-wise
sharding rule: a unary op keeps every split, no communication); float dtypes, float16 and
bfloat16 computed in float32 and rounded once. Softsign and Mish differentiate through
internal `<Op>Grad` ops (activation_ops' dy * f'(x) family); the others through existing
ops, from their output or a mask.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.activation_ops import _ActivationGrad
from msops.primitives.elementwise_ops import Greater, Select, ZerosLike, computed
from msops.primitives.math_ops import Add, Mul, UnaryElementwise, scalar
from msops.primitives.primitive import prim_attr_register
from msops.primitives.rules import bprop
from msops.primitives.unary_ops import Abs, _activation_bprop

__all__ = ["Elu", "SeLU", "Softsign", "Mish", "SoftShrink", "HShrink"]

#: SeLU's constants (Klambauer et al. 2017), as MindSpore's
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class _Smooth(UnaryElementwise):
    """f(x) element-wise for floats (`_f(self, x)` on the compute dtype)."""

    valid_types = mstype.float_type

    def _f(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return computed(self._f, out_abstract)


def _expm1_neg(x: np.ndarray) -> np.ndarray:
    """exp(x) - 1 where x <= 0, else 0 (no overflow for large x)."""
    return np.expm1(np.minimum(x, 0.0))


class Elu(_Smooth):
    """x where x > 0, else alpha * (exp(x) - 1); floats. `alpha` is a float (MindSpore
    supports only 1.0; msops any finite value).

    >>> Elu()(Tensor(np.array([-1.0, 4.0], np.float32))).asnumpy()
    array([-0.63212055,  4.        ], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, alpha: float = 1.0) -> None:
        validator.check_value_type("alpha", alpha, (float,), self.name)
        if not math.isfinite(alpha):
            raise ValueError(f"For '{self.name}', the 'alpha' should be a finite float, but "
                             f"got {alpha}.")

    def _f(self, x: np.ndarray) -> np.ndarray:
        return np.where(x > 0, x, self.alpha * _expm1_neg(x))


class SeLU(_Smooth):
    """scale * (x where x > 0, else alpha * (exp(x) - 1)), with the self-normalising
    constants scale = 1.0507..., alpha = 1.6732...; floats."""

    def _f(self, x: np.ndarray) -> np.ndarray:
        return SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * _expm1_neg(x))


def softsign_derivative(x: np.ndarray) -> np.ndarray:
    """1 / (1 + |x|)**2."""
    return 1.0 / np.square(1.0 + np.abs(x))


class Softsign(_Smooth):
    """x / (1 + |x|) element-wise; floats."""

    def _f(self, x: np.ndarray) -> np.ndarray:
        return np.where(np.isinf(x), np.sign(x), x / (1.0 + np.abs(x)))     # inf/inf: +-1


def mish_derivative(x: np.ndarray) -> np.ndarray:
    """t + x sigmoid(x) (1 - t**2), t = tanh(softplus(x))."""
    t = np.tanh(np.logaddexp(0.0, x))
    return t + x * (0.5 * (1.0 + np.tanh(0.5 * x))) * (1.0 - t * t)


class Mish(_Smooth):
    """x * tanh(softplus(x)) element-wise (softplus without overflow); floats."""

    def _f(self, x: np.ndarray) -> np.ndarray:
        return x * np.tanh(np.logaddexp(0.0, x))


class _Shrink(_Smooth):
    """A shrinkage of threshold `lambd` (a float >= 0)."""

    @prim_attr_register
    def __init__(self, lambd: float = 0.5) -> None:
        validator.check_value_type("lambd", lambd, (float,), self.name)
        if not lambd >= 0:
            raise ValueError(f"For '{self.name}', the 'lambd' should be >= 0, but got {lambd}.")


class SoftShrink(_Shrink):
    """x - lambd above lambd, x + lambd below -lambd, else 0; floats.

    >>> SoftShrink()(Tensor(np.array([-1.0, 0.2, 2.0], np.float32))).asnumpy()
    array([-0.5,  0. ,  1.5], dtype=float32)
    """

    def _f(self, x: np.ndarray) -> np.ndarray:
        return np.sign(x) * np.maximum(np.abs(x) - self.lambd, 0.0)


class HShrink(_Shrink):
    """x where |x| > lambd, else 0 (NaN stays NaN); floats."""

    def _f(self, x: np.ndarray) -> np.ndarray:
        return np.where(np.abs(x) <= self.lambd, 0.0, x)


class SoftsignGrad(_ActivationGrad):
    """dy * Softsign'(x): Softsign's backward. Internal; not exported."""

    _derivative = staticmethod(softsign_derivative)


class MishGrad(_ActivationGrad):
    """dy * Mish'(x): Mish's backward. Internal; not exported."""

    _derivative = staticmethod(mish_derivative)


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
def _exp_linear_bprop(slope: Callable[[Any], float], offset: Callable[[Any], float]
                      ) -> Callable:
    """Elu's and SeLU's rule: dout * slope for x > 0, else dout * (out + offset) (the
    derivative of c (exp(x) - 1) is out + c)."""
    def rule(prim: Any, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
        x = inputs[0]
        positive = g.apply(Greater(), [x, scalar(g, 0, x.dtype)])
        linear = g.apply(Mul(), [dout, scalar(g, slope(prim), x.dtype)])
        curved = g.apply(Mul(), [dout, g.apply(Add(), [out, scalar(g, offset(prim),
                                                                    x.dtype)])])
        return (g.apply(Select(), [positive, linear, curved]),)
    return rule


bprop(Elu)(_exp_linear_bprop(lambda p: 1.0, lambda p: p.alpha))
bprop(SeLU)(_exp_linear_bprop(lambda p: SELU_SCALE, lambda p: SELU_SCALE * SELU_ALPHA))


bprop(Softsign)(_activation_bprop(SoftsignGrad))
bprop(Mish)(_activation_bprop(MishGrad))


@bprop(_Shrink)
def shrink_bprop(prim: _Shrink, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout where |x| > lambd (slope 1 there for both shrinkages), else 0."""
    x = inputs[0]
    outside = g.apply(Greater(), [g.apply(Abs(), [x]), scalar(g, prim.lambd, x.dtype)])
    return (g.apply(Select(), [outside, dout, g.apply(ZerosLike(), [dout])]),)
