"""Functional spellings of the activations `mindspore.ops` has beyond the primitives': celu,
glu, softmin, threshold, rrelu and lrn, with MindSpore's arguments and defaults. Each is a
thin composition of primitives (`_prim`), so it traces, shards and differentiates as they
do; nn.CELU, nn.GLU, nn.Softmin, nn.Threshold, nn.RReLU and nn.LRN call these bodies."""
from __future__ import annotations

import math
from typing import Any

from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, const
from msops.ops.pad_func import pad
from msops.primitives.activation_ext_ops import Elu
from msops.primitives.array_ops import StridedSlice
from msops.primitives.elementwise_ops import (Greater, GreaterEqual, Maximum, Minimum, Pow,
                                              Select, Sigmoid)
from msops.primitives.math_ops import Add, AddN, Cast, Mul, Neg, RealDiv, Square
from msops.primitives.nn_ops import Softmax
from msops.primitives.random_ops import UniformReal
from msops.primitives.transcendental_ops import Expm1

__all__ = ["celu", "glu", "swiglu", "softmin", "threshold", "rrelu", "lrn"]


def _number(name: str, arg: str, value: Any) -> float:
    """A finite int or float argument, as a float."""
    validator.check_value_type(arg, value, (int, float), name)
    if not math.isfinite(value):
        raise ValueError(f"For '{name}', the '{arg}' should be a finite number, but got "
                         f"{value}.")
    return float(value)


def celu(x: Any, alpha: float = 1.0) -> Any:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), as `mindspore.ops.celu`: the ELU of
    x / alpha scaled by alpha (alpha != 0)."""
    name = "celu"
    alpha = _number(name, "alpha", alpha)
    if alpha == 0:
        raise ValueError(f"For '{name}', the 'alpha' should not be 0, but got {alpha}.")
    check_float(name, "x", x)
    if alpha == 1.0:
        return _prim(Elu, 1.0)(x)
    scaled = _prim(Mul)(x, const(1.0 / alpha, x.dtype))
    if alpha > 0:                       # alpha * elu(x / alpha): Elu's stable form
        return _prim(Mul)(_prim(Elu, 1.0)(scaled), const(alpha, x.dtype))
    # alpha < 0: the formula itself (the exponential's branch is x's positive side)
    zero = const(0.0, x.dtype)
    curve = _prim(Mul)(_prim(Expm1)(scaled), const(alpha, x.dtype))
    return _prim(Add)(_prim(Maximum)(x, zero), _prim(Minimum)(curve, zero))


def _half_slices(x: Any, axis: int) -> tuple:
    """x's two halves along `axis` (StridedSlice each)."""
    shape = tuple(x.shape)
    half = shape[axis] // 2
    begin, end = [0] * len(shape), list(shape)
    end[axis] = half
    first = _prim(StridedSlice)(x, tuple(begin), tuple(end), (1,) * len(shape))
    begin[axis], end[axis] = half, shape[axis]
    second = _prim(StridedSlice)(x, tuple(begin), tuple(end), (1,) * len(shape))
    return first, second


def _gate_halves(name: str, x: Any, arg: str, axis: int, x_name: str = "x") -> tuple:
    """x's two halves along `axis` (checked: an int axis in range, an even size there)."""
    check_float(name, x_name, x)
    shape = tuple(x.shape)
    validator.check_int(arg, axis, name)
    ax = validator.check_axis_in_range(axis, len(shape), arg, name)
    if shape[ax] % 2:
        raise ValueError(f"For '{name}', the size of '{x_name}' along '{arg}' {axis} should "
                         f"be even, but got shape {list(shape)}.")
    return _half_slices(x, ax)


def glu(x: Any, axis: int = -1) -> Any:
    """The gated linear unit, as `mindspore.ops.glu`: x split in halves a, b along `axis`
    (its size even), a * sigmoid(b)."""
    a, b = _gate_halves("glu", x, "axis", axis)
    return _prim(Mul)(a, _prim(Sigmoid)(b))


def swiglu(input: Any, dim: int = -1) -> Any:  # noqa: A002 (MindSpore's name)
    """The Swish-gated linear unit, as `mindspore.ops.swiglu`: input split in halves a, b
    along `dim` (its size even), swish(a) * b = a * sigmoid(a) * b."""
    a, b = _gate_halves("swiglu", input, "dim", dim, "input")
    return _prim(Mul)(_prim(Mul)(a, _prim(Sigmoid)(a)), b)


def softmin(x: Any, axis: Any = -1, *, dtype: Any = None) -> Any:
    """softmax(-x) along `axis` (an int or a tuple of ints), as `mindspore.ops.softmin`;
    `dtype` casts x first when given."""
    name = "softmin"
    check_float(name, "x", x)
    if dtype is not None:
        x = x.astype(dtype)
    validator.check_value_type("axis", axis, (int, tuple), name)
    return _prim(Softmax, axis)(_prim(Neg)(x))


def threshold(input: Any, thr: float, value: float) -> Any:  # noqa: A002 (MindSpore's name)
    """input where input > thr, else `value`, as `mindspore.ops.threshold`."""
    name = "threshold"
    thr, value = _number(name, "thr", thr), _number(name, "value", value)
    check_float(name, "input", input)
    above = _prim(Greater)(input, const(thr, input.dtype))
    return _prim(Select)(above, input, const(value, input.dtype))


def check_rrelu_bounds(name: str, lower: Any, upper: Any) -> tuple:
    """RReLU's slope bounds: finite numbers, lower <= upper."""
    lower, upper = _number(name, "lower", lower), _number(name, "upper", upper)
    if lower > upper:
        raise ValueError(f"For '{name}', the 'lower' should be <= 'upper' {upper}, but got "
                         f"{lower}.")
    return lower, upper


def leaky(x: Any, slope: Any) -> Any:
    """x where x >= 0, else slope * x (slope: a Tensor broadcasting with x, or a number)."""
    if not isinstance(slope, Tensor) and not hasattr(slope, "shape"):
        slope = const(slope, x.dtype)
    below = _prim(Mul)(x, slope)
    return _prim(Select)(_prim(GreaterEqual)(x, const(0.0, x.dtype)), x, below)


def rrelu(input: Any, lower: float = 1.0 / 8, upper: float = 1.0 / 3) -> Any:  # noqa: A002
    """Randomized leaky ReLU, as `mindspore.ops.rrelu`: input where input >= 0, else
    a * input with a slope `a` drawn per element uniform in [lower, upper) (UniformReal:
    keyed by the global seed, alike eager and compiled)."""
    name = "rrelu"
    lower, upper = check_rrelu_bounds(name, lower, upper)
    check_float(name, "input", input)
    unit = _prim(UniformReal, 0, 0)(tuple(input.shape))
    if unit.dtype != input.dtype:
        unit = _prim(Cast)(unit, input.dtype)
    slope = _prim(Add)(_prim(Mul)(unit, const(upper - lower, input.dtype)),
                       const(lower, input.dtype))
    return leaky(input, slope)


def check_lrn_args(name: str, depth_radius: Any, bias: Any, alpha: Any, beta: Any,
                   norm_region: Any) -> tuple:
    """LRN's arguments as MindSpore checks them."""
    validator.check_non_negative_int(depth_radius, "depth_radius", name)
    for arg, v in (("bias", bias), ("alpha", alpha), ("beta", beta)):
        validator.check_value_type(arg, v, (float,), name)
    if norm_region != "ACROSS_CHANNELS":
        raise ValueError(f"For '{name}', the 'norm_region' should be 'ACROSS_CHANNELS', but "
                         f"got {norm_region!r}.")
    return depth_radius, bias, alpha, beta


def lrn(x: Any, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
        beta: float = 0.5, norm_region: str = "ACROSS_CHANNELS") -> Any:
    """Local response normalization across channels, as `mindspore.ops.lrn`: x (N, C, H, W)
    divided by (bias + alpha * s) ** beta, s[c] the sum of x[c'] ** 2 over the channels
    c' in [c - depth_radius, c + depth_radius] (zero outside)."""
    name = "lrn"
    r, bias, alpha, beta = check_lrn_args(name, depth_radius, bias, alpha, beta, norm_region)
    check_float(name, "x", x)
    shape = tuple(x.shape)
    if len(shape) != 4:
        raise ValueError(f"For '{name}', the 'x' should be 4-D (N, C, H, W), but got shape "
                         f"{list(shape)}.")
    sq = _prim(Square)(x)
    padded = pad(sq, (0, 0, 0, 0, r, r)) if r else sq
    n, c, h, w = shape
    windows = [_prim(StridedSlice)(padded, (0, k, 0, 0), (n, k + c, h, w), (1, 1, 1, 1))
               for k in range(2 * r + 1)]
    s = windows[0] if len(windows) == 1 else _prim(AddN)(windows)
    scale = _prim(Add)(_prim(Mul)(s, const(alpha, x.dtype)), const(bias, x.dtype))
    return _prim(RealDiv)(x, _prim(Pow)(scale, const(beta, x.dtype)))
