"""3-D and transposed convolutions as `mindspore.ops` functions: conv3d (the Conv3D
primitive), conv3d_transpose (Conv3DTranspose) and conv_transpose2d (Conv2D's input
gradient, Conv2DBackpropInput, with explicit output size), thin compositions that trace,
shard and differentiate as their primitives do."""
from __future__ import annotations

from typing import Any

from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, check_like
from msops.primitives.conv_ops import (Conv2DBackpropInput, Conv3D, Conv3DTranspose, ntuple,
                                       output_paddings, transposed_length)
from msops.primitives.elementwise_ops import BiasAdd

__all__ = ["conv3d", "conv3d_transpose", "conv_transpose2d"]


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _check_weight(name: str, input: Any, weight: Any, nd: int, layout: str) -> None:
    check_float(name, "input", input)
    check_like(name, "weight", weight, input, "input")
    if len(input.shape) != nd + 2 or len(weight.shape) != nd + 2:
        raise ValueError(f"For '{name}', the 'input' and 'weight' should be {nd + 2}-D "
                         f"({layout}), but got shapes {list(input.shape)} and "
                         f"{list(weight.shape)}.")


def _with_bias(name: str, y: Any, bias: Any, input: Any) -> Any:
    if bias is None:
        return y
    check_like(name, "bias", bias, input, "input")
    return _prim(BiasAdd)(y, bias)


def _pads(name: str, padding: Any, nd: int) -> Any:
    """`padding` as the primitive's `pad`: an int, nd ints (each before and after) or 2 * nd
    ints (before, after per dim)."""
    if isinstance(padding, (tuple, list)) and len(padding) == nd:
        return tuple(p for v in padding for p in (v, v))
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * nd:
        return tuple(padding)
    if isinstance(padding, int) and not isinstance(padding, bool):
        return padding
    raise ValueError(f"For '{name}', the 'padding' should be an int or a tuple of {nd} or "
                     f"{2 * nd} ints, but got {padding!r}.")


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, pad_mode: str = "valid",
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Any:
    """3-D cross-correlation of input (N, C, D, H, W) with weight (C_out, C / groups, KD, KH,
    KW), plus bias (C_out,) when given, as `mindspore.ops.conv3d`: pad_mode 'valid', 'same'
    or 'pad' (`padding` an int, (d, h, w) or (head, tail, top, bottom, left, right))."""
    name = "conv3d"
    _check_weight(name, input, weight, 3, "(N, C, D, H, W) and (C_out, C / groups, KD, KH, KW)")
    conv = _prim(Conv3D, weight.shape[0], tuple(weight.shape[2:]), 1, pad_mode,
                 _pads(name, padding, 3), _hashable(stride), _hashable(dilation), groups)
    return _with_bias(name, conv(input, weight), bias, input)


def conv3d_transpose(inputs: Any, weight: Any, pad_mode: str = "valid", padding: Any = 0,
                     stride: Any = 1, dilation: Any = 1, group: int = 1,
                     output_padding: Any = 0) -> Any:
    """The transposed 3-D convolution of inputs (N, C_in, D, H, W) by weight (C_in, C_out /
    group, KD, KH, KW), as `mindspore.ops.conv3d_transpose` (the Conv3DTranspose primitive;
    `padding` an int or 6 ints)."""
    name = "conv3d_transpose"
    _check_weight(name, inputs, weight, 3, "(N, C_in, D, H, W) and (C_in, C_out / group, KD, "
                                           "KH, KW)")
    op = _prim(Conv3DTranspose, weight.shape[0], weight.shape[1] * group,
               tuple(weight.shape[2:]), 1, _hashable(stride), pad_mode, _hashable(padding),
               _hashable(dilation), group, _hashable(output_padding))
    return op(inputs, weight)


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """The transposed 2-D convolution of input (N, C_in, H, W) by weight (C_in, C_out /
    groups, KH, KW), plus bias (C_out,), as `mindspore.ops.conv_transpose2d`: H' = (H - 1)
    * stride - 2 * padding + dilation * (KH - 1) + output_padding + 1 (W' alike), the
    input gradient of the Conv2D with that padding on both sides."""
    name = "conv_transpose2d"
    _check_weight(name, input, weight, 2, "(N, C_in, H, W) and (C_in, C_out / groups, KH, KW)")
    stride = ntuple(name, "stride", _hashable(stride), 2, allow_nc=False)
    dilation = ntuple(name, "dilation", _hashable(dilation), 2, allow_nc=False)
    if isinstance(padding, int) and not isinstance(padding, bool):
        padding = (padding, padding)
    if not isinstance(padding, (tuple, list)) or len(padding) != 2 or \
            any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in padding):
        raise ValueError(f"For '{name}', the 'padding' should be a non-negative int or a tuple "
                         f"of 2, but got {padding!r}.")
    pads = (padding[0], padding[0], padding[1], padding[1])
    extra = output_paddings(name, _hashable(output_padding), 2, stride, "pad")
    shape = tuple(input.shape)
    if shape[1] != weight.shape[0] or weight.shape[1] * groups < 1:
        raise ValueError(f"For '{name}', the 'weight' dim 0 should equal the input channels "
                         f"{shape[1]}, but got weight shape {list(weight.shape)}.")
    sizes = tuple(transposed_length(shape[2 + k], weight.shape[2 + k], stride[k], dilation[k],
                                    "pad", pads[2 * k:2 * k + 2], extra[k]) for k in range(2))
    if min(sizes) < 1:
        raise ValueError(f"For '{name}', the output height and width should be >= 1, but got "
                         f"{list(sizes)} for input shape {list(shape)}.")
    out = (shape[0], weight.shape[1] * groups) + sizes
    op = _prim(Conv2DBackpropInput, shape[1], tuple(weight.shape[2:]), 1, "pad", pads, stride,
               dilation, groups)
    return _with_bias(name, op(input, weight, out), bias, input)
