"""Layer functions as `mindspore.ops` has them: dropout, dense, conv1d, conv2d, layer_norm and
group_norm, thin compositions of the primitives (Dropout, MatMul, Conv2D, LayerNorm, ...), so
they trace, shard and differentiate as those do. nn.GroupNorm and nn.Conv1d share these
bodies."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, check_like, const
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.conv_ops import Conv2D
from msops.primitives.elementwise_ops import BiasAdd
from msops.primitives.math_ops import Add, Cast, MatMul, Mul, ReduceMean, Square, Sub
from msops.primitives.nn_ops import Dropout
from msops.primitives.norm_ops import LayerNorm
from msops.primitives.rms_norm_ops import RmsNorm
from msops.primitives.shape_ops import ExpandDims, Squeeze
from msops.primitives.unary_ops import Rsqrt

__all__ = ["dropout", "dense", "conv1d", "conv2d", "layer_norm", "group_norm", "rms_norm",
           "add_rms_norm", "add_layer_norm"]


def dropout(input: Any, p: float = 0.5, training: bool = True, seed: int | None = None) -> Any:
    """Zero each element with probability `p` and scale the rest by 1 / (1 - p) when
    `training` (the identity otherwise), as `mindspore.ops.dropout`. The mask is drawn from
    `seed` when given (a non-zero int), else from the global `set_seed` seed."""
    name = "dropout"
    validator.check_bool("training", training, name)
    validator.check_value_type("p", p, float, name)
    if not 0 <= p < 1:
        raise ValueError(f"For '{name}', the 'p' should be in [0, 1), but got {p}.")
    check_float(name, "input", input)
    if not training or p == 0:
        return input
    seed0, seed1 = 0, 0
    if seed is not None:
        validator.check_int("seed", seed, name)
        seed0, seed1 = (seed >> 32) & 0xFFFFFFFF, seed & 0xFFFFFFFF
    return _prim(Dropout, 1.0 - p, seed0, seed1)(input)[0]


def dense(input: Any, weight: Any, bias: Any = None) -> Any:
    """input @ weight.T + bias: input (*, in_channels), weight (out_channels, in_channels),
    bias (out_channels,), as `mindspore.ops.dense`; the output is (*, out_channels)."""
    name = "dense"
    check_float(name, "input", input)
    check_like(name, "weight", weight, input, "input")
    shape, w_shape = tuple(input.shape), tuple(weight.shape)
    if len(w_shape) != 2 or not shape or shape[-1] != w_shape[1]:
        raise ValueError(f"For '{name}', the 'weight' should be (out_channels, in_channels) "
                         f"with in_channels the last dim of 'input' shape {list(shape)}, but "
                         f"got {list(w_shape)}.")
    x = input if len(shape) == 2 else _prim(Reshape)(input, (math.prod(shape[:-1]), shape[-1]))
    y = _prim(MatMul, False, True)(x, weight)
    if bias is not None:
        check_like(name, "bias", bias, input, "input")
        y = _prim(BiasAdd)(y, bias)
    return y if len(shape) == 2 else _prim(Reshape)(y, shape[:-1] + (w_shape[0],))


def _conv_padding(name: str, padding: Any, dims: int) -> Any:
    """`padding` as Conv2D's `pad`: an int, or per spatial dim (before == after) a tuple of
    `dims` ints, or (conv2d) the explicit (top, bottom, left, right)."""
    if isinstance(padding, (tuple, list)) and len(padding) == dims and dims == 2:
        return (padding[0], padding[0], padding[1], padding[1])
    if isinstance(padding, (tuple, list)) and len(padding) == 4 and dims == 2:
        return tuple(padding)
    if isinstance(padding, int) and not isinstance(padding, bool):
        return padding if dims == 2 else (0, 0, padding, padding)
    forms = "an int, a tuple of 2 ints or of 4 ints" if dims == 2 else "an int"
    raise ValueError(f"For '{name}', the 'padding' should be {forms}, but got {padding!r}.")


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, pad_mode: str = "valid",
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Any:
    """2-D cross-correlation of input (N, C, H, W) with weight (C_out, C / groups, KH, KW),
    plus bias (C_out,) when given, as `mindspore.ops.conv2d`: pad_mode 'valid', 'same' or
    'pad' (`padding` an int, (h, w) or (top, bottom, left, right))."""
    name = "conv2d"
    check_float(name, "input", input)
    check_like(name, "weight", weight, input, "input")
    if len(weight.shape) != 4:
        raise ValueError(f"For '{name}', the 'weight' should be 4-D (C_out, C / groups, KH, "
                         f"KW), but got shape {list(weight.shape)}.")
    pad = _conv_padding(name, padding, 2)
    conv = _prim(Conv2D, weight.shape[0], tuple(weight.shape[2:]), 1, pad_mode, pad,
                 _hashable(stride), _hashable(dilation), groups)
    y = conv(input, weight)
    if bias is not None:
        check_like(name, "bias", bias, input, "input")
        y = _prim(BiasAdd)(y, bias)
    return y


def conv1d(input: Any, weight: Any, bias: Any = None, stride: int = 1, pad_mode: str = "valid",
           padding: int = 0, dilation: int = 1, groups: int = 1) -> Any:
    """1-D cross-correlation of input (N, C, L) with weight (C_out, C / groups, K), plus
    bias (C_out,), as `mindspore.ops.conv1d`: conv2d over an inserted height of 1."""
    name = "conv1d"
    check_float(name, "input", input)
    check_like(name, "weight", weight, input, "input")
    if len(input.shape) != 3 or len(weight.shape) != 3:
        raise ValueError(f"For '{name}', the 'input' and 'weight' should be 3-D ((N, C, L) and "
                         f"(C_out, C / groups, K)), but got shapes {list(input.shape)} and "
                         f"{list(weight.shape)}.")
    for arg, value in (("stride", stride), ("dilation", dilation)):
        validator.check_value_type(arg, value, int, name)
    pad = _conv_padding(name, padding, 1)
    conv = _prim(Conv2D, weight.shape[0], (1, weight.shape[2]), 1, pad_mode, pad,
                 (1, stride), (1, dilation), groups)
    y = conv(_prim(ExpandDims)(input, 2), _prim(ExpandDims)(weight, 2))
    y = _prim(Squeeze, 2)(y)
    if bias is not None:
        check_like(name, "bias", bias, input, "input")
        y = _prim(BiasAdd)(y, bias)
    return y


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def layer_norm(input: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """(x - mean) / sqrt(var + eps) * weight + bias over input's last
    len(normalized_shape) dims (weight ones and bias zeros when None), as
    `mindspore.ops.layer_norm` (the LayerNorm primitive)."""
    name = "layer_norm"
    check_float(name, "input", input)
    if isinstance(normalized_shape, int) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    validator.check_value_type("normalized_shape", normalized_shape, (tuple, list), name)
    validator.check_value_type("eps", eps, float, name)
    shape, norm = tuple(input.shape), tuple(normalized_shape)
    if not norm or len(norm) > len(shape) or shape[len(shape) - len(norm):] != norm:
        raise ValueError(f"For '{name}', the 'normalized_shape' should be the last dims of "
                         f"'input' shape {list(shape)}, but got {list(norm)}.")
    axis = len(shape) - len(norm)
    params = []
    for arg, value, fill in (("weight", weight, 1.0), ("bias", bias, 0.0)):
        if value is None:
            value = Tensor(np.full(norm, fill, mstype.dtype_to_nptype(input.dtype)))
        else:
            check_like(name, arg, value, input, "input")
            if tuple(value.shape) != norm:
                raise ValueError(f"For '{name}', the '{arg}' should have the "
                                 f"normalized_shape {list(norm)}, but got "
                                 f"{list(value.shape)}.")
        params.append(value)
    return _prim(LayerNorm, axis, axis, float(eps))(input, *params)[0]


def rms_norm(x: Any, gamma: Any, epsilon: float = 1e-6) -> Any:
    """(y, rstd) of the RmsNorm primitive, as `mindspore.ops.rms_norm`: x / sqrt(mean(x^2)
    + epsilon) * gamma over x's last gamma.ndim dims; rstd = 1 / sqrt(mean(x^2) + epsilon)
    in float32, for the backward."""
    check_float("rms_norm", "x", x)
    return _prim(RmsNorm, epsilon)(x, gamma)


def add_rms_norm(x1: Any, x2: Any, gamma: Any, epsilon: float = 1e-6) -> Any:
    """(y, rstd, x) with x = x1 + x2 and (y, rstd) = rms_norm(x, gamma, epsilon), as
    `mindspore.ops.add_rms_norm` (the residual add fused before the norm)."""
    name = "add_rms_norm"
    check_float(name, "x1", x1)
    check_like(name, "x2", x2, x1, "x1")
    x = _prim(Add)(x1, x2)
    y, rstd = _prim(RmsNorm, epsilon)(x, gamma)
    return y, rstd, x


def add_layer_norm(x1: Any, x2: Any, gamma: Any, beta: Any, epsilon: float = 1e-5,
                   additional_output: bool = False) -> Any:
    """(y, mean, rstd, x) with x = x1 + x2 layer-normalised over its last dim (gamma and
    beta 1-D, of that size), as `mindspore.ops.add_layer_norm`: mean and rstd = 1 /
    sqrt(var + epsilon) have x's shape with a last dim of 1, in float32. x is returned
    whatever `additional_output` (MindSpore's kernel only skips writing it)."""
    name = "add_layer_norm"
    check_float(name, "x1", x1)
    check_like(name, "x2", x2, x1, "x1")
    validator.check_value_type("epsilon", epsilon, float, name)
    validator.check_bool("additional_output", additional_output, name)
    for arg, value in (("gamma", gamma), ("beta", beta)):
        check_like(name, arg, value, x1, "x1")
        if tuple(value.shape) != tuple(x1.shape)[-1:]:
            raise ValueError(f"For '{name}', the '{arg}' shape should be x1's last dim "
                             f"{list(x1.shape)[-1:]}, but got {list(value.shape)}.")
    x = _prim(Add)(x1, x2)
    y, mean, var = _prim(LayerNorm, -1, -1, float(epsilon))(x, gamma, beta)
    rstd = _prim(Rsqrt)(_prim(Add)(var, const(epsilon, var.dtype)))
    if mean.dtype != mstype.float32:
        mean, rstd = (_prim(Cast)(t, mstype.float32) for t in (mean, rstd))
    return y, mean, rstd, x


def group_norm_of(name: str, x: Any, num_groups: int, weight: Any, bias: Any,
                  eps: float) -> Any:
    """x (N, C, *) normalised per sample over each of `num_groups` groups of C / num_groups
    channels (biased variance), then times weight and plus bias (C,) per channel."""
    check_float(name, "input", x)
    shape = tuple(x.shape)
    if len(shape) < 2 or shape[1] % num_groups:
        raise ValueError(f"For '{name}', the 'input' should be (N, C, *) with C divisible by "
                         f"'num_groups' {num_groups}, but got shape {list(shape)}.")
    n, c = shape[:2]
    if not math.prod(shape[1:]):
        raise ValueError(f"For '{name}', the 'input' should have values in each group to "
                         f"normalise, but got shape {list(shape)}.")
    grouped = _prim(Reshape)(x, (n, num_groups, math.prod(shape[1:]) // num_groups))
    mean = _prim(ReduceMean, True)(grouped, 2)
    centered = _prim(Sub)(grouped, mean)
    var = _prim(ReduceMean, True)(_prim(Square)(centered), 2)
    y = _prim(Reshape)(_prim(Mul)(centered, _prim(Rsqrt)(_prim(Add)(var, eps))), shape)
    for arg, value in (("weight", weight), ("bias", bias)):
        if value is None:
            continue
        check_like(name, arg, value, x, "input")
        if tuple(value.shape) != (c,):
            raise ValueError(f"For '{name}', the '{arg}' should have shape [C] = [{c}], but "
                             f"got {list(value.shape)}.")
    if weight is None and bias is None:
        return y
    # The per-channel affine broadcasts over the channels moved last (Transpose), so the
    # weight and bias are never an op's first input: the data-parallel default splits a
    # first input's dim 0, and would hold a Parameter as a slice.
    last = (0,) + tuple(range(2, len(shape))) + (1,)
    y = _prim(Transpose)(y, last) if len(shape) > 2 else y
    if weight is not None:
        y = _prim(Mul)(y, weight)
    if bias is not None:
        y = _prim(Add)(y, bias)
    back = (0, len(shape) - 1) + tuple(range(1, len(shape) - 1))
    return _prim(Transpose)(y, back) if len(shape) > 2 else y


def check_groups(name: str, num_groups: Any, eps: Any) -> None:
    """num_groups a positive int, eps a float."""
    validator.check_positive_int(num_groups, "num_groups", name)
    validator.check_value_type("eps", eps, float, name)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Any:
    """Group normalization of input (N, C, *): per sample and group of C / num_groups
    channels, (x - mean) / sqrt(var + eps) (biased variance), times weight (C,) and plus
    bias (C,) when given, as `mindspore.ops.group_norm`."""
    check_groups("group_norm", num_groups, eps)
    return group_norm_of("group_norm", input, num_groups, weight, bias, eps)
