"""2-D layer functions with `mindspore.ops`' arguments: conv_transpose2d (Conv2D's input
gradient, Conv2DBackpropInput), max_pool2d and avg_pool2d (the MaxPool / AvgPool primitives
over an explicitly padded input). ceil_mode pads the far ends further so the last partial
window exists; a max reads -inf there, a mean never counts it. max_pool2d with dilation or
return_indices gathers each window (a constant index table) and takes ArgMaxWithValue, so
the indices come with the values. All trace, shard and differentiate as their primitives."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_like
from msops.ops.pad_func import pad_dims
from msops.primitives.array_ops import Reshape
from msops.primitives.conv_ops import Conv2DBackpropInput
from msops.primitives.elementwise_ops import BiasAdd
from msops.primitives.gather_ops import Gather, GatherD
from msops.primitives.math_ops import Mul, RealDiv
from msops.primitives.pool_ops import AvgPool, MaxPool
from msops.primitives.reduce_ops import ArgMaxWithValue
from msops.primitives.shape_ops import ExpandDims, Squeeze

__all__ = ["conv_transpose2d", "max_pool2d", "avg_pool2d"]


def _pair(name: str, arg: str, value: Any, low: int) -> tuple:
    """An int or a tuple/list of 1 or 2 ints, each >= low, as (h, w)."""
    pair = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    pair = pair * 2 if len(pair) == 1 else pair
    if len(pair) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                 and v >= low for v in pair):
        raise ValueError(f"For '{name}', the '{arg}' should be an int >= {low} or a tuple of "
                         f"two of them, but got {value!r}.")
    return tuple(int(v) for v in pair)


def _batched(name: str, arg: str, x: Any, types: tuple = mstype.float_type) -> tuple:
    """(x as 4-D, whether it was 3-D (C, H, W)); x of a dtype in `types`."""
    check_tensor(name, arg, x)
    validator.check_tensor_dtype_valid(arg, x.dtype, types, name)
    if len(x.shape) not in (3, 4):
        raise ValueError(f"For '{name}', the '{arg}' should be 4-D (N, C, H, W) or 3-D "
                         f"(C, H, W), but got shape {list(x.shape)}.")
    if len(x.shape) == 3:
        return _prim(ExpandDims)(x, 0), True
    return x, False


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Any:
    """The transposed 2-D convolution of input (N, C_in, H, W) or (C_in, H, W) with weight
    (C_in, C_out / groups, kH, kW), plus bias (C_out,): the gradient of conv2d with respect
    to an input of (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
    rows (likewise columns), as `mindspore.ops.conv_transpose2d`."""
    name = "conv_transpose2d"
    x, unbatched = _batched(name, "input", input)
    check_like(name, "weight", weight, input, "input")
    validator.check_positive_int(groups, "groups", name)
    w_shape = tuple(weight.shape)
    n, c_in, h, w = x.shape
    if len(w_shape) != 4 or w_shape[0] != c_in or c_in % groups:
        raise ValueError(f"For '{name}', the 'weight' should be 4-D (C_in, C_out / groups, kH, "
                         f"kW) with C_in = {c_in} divisible by groups {groups}, but got shape "
                         f"{list(w_shape)}.")
    s, p = _pair(name, "stride", stride, 1), _pair(name, "padding", padding, 0)
    d, op = _pair(name, "dilation", dilation, 1), _pair(name, "output_padding", output_padding, 0)
    if op[0] >= s[0] or op[1] >= s[1]:
        raise ValueError(f"For '{name}', the 'output_padding' should be smaller than the "
                         f"stride {s}, but got {op}.")
    k = w_shape[2:]
    out_hw = tuple((size - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
                   for i, size in enumerate((h, w)))
    if min(out_hw) < 1:
        raise ValueError(f"For '{name}', the output size should be positive, but got "
                         f"{list(out_hw)} for input {list(x.shape)}.")
    c_out = w_shape[1] * groups
    prim = _prim(Conv2DBackpropInput, c_in, tuple(k), 1, "pad", (p[0], p[0], p[1], p[1]), s, d,
                 groups)
    y = prim(x, weight, (n, c_out) + out_hw)
    if bias is not None:
        check_like(name, "bias", bias, input, "input")
        if tuple(bias.shape) != (c_out,):
            raise ValueError(f"For '{name}', the 'bias' should have shape [C_out] = [{c_out}], "
                             f"but got {list(bias.shape)}.")
        y = _prim(BiasAdd)(y, bias)
    return _prim(Squeeze, 0)(y) if unbatched else y


def _ceil_extra(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> tuple:
    """(output length, rows padded after the `p` ones so the last window fits) of one dim:
    floor, or ceil_mode's ceil less a last window starting in the end padding."""
    span = d * (k - 1) + 1
    if ceil_mode:
        out = -(-(size + 2 * p - span) // s) + 1
        if (out - 1) * s >= size + p:
            out -= 1
    else:
        out = (size + 2 * p - span) // s + 1
    return out, max((out - 1) * s + span - (size + 2 * p), 0)


def _window_args(name: str, x: Any, kernel_size: Any, stride: Any, padding: Any,
                 dilation: Any, ceil_mode: Any) -> tuple:
    validator.check_bool("ceil_mode", ceil_mode, name)
    k = _pair(name, "kernel_size", kernel_size, 1)
    s = k if stride is None or stride == () else _pair(name, "stride", stride, 1)
    p = _pair(name, "padding", padding, 0)
    d = _pair(name, "dilation", dilation, 1)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise ValueError(f"For '{name}', the 'padding' should be at most half the kernel_size "
                         f"{k}, but got {p}.")
    geo = [_ceil_extra(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(2)]
    if min(g[0] for g in geo) < 1:
        raise ValueError(f"For '{name}', the padded input {list(x.shape[2:])} should hold a "
                         f"window of kernel_size {k} (dilation {d}), but got padding {p}.")
    return k, s, p, d, geo


def _padded(name: str, x: Any, p: tuple, geo: list, fill: float) -> Any:
    return pad_dims(name, x, [(2, p[0], p[0] + geo[0][1]), (3, p[1], p[1] + geo[1][1])],
                    "constant", fill)


def _lowest(dtype: mstype.Type) -> float:
    """The padding a max never picks: -inf, or an int dtype's least value."""
    return -np.inf if dtype in mstype.float_type else int(np.iinfo(dtype.np_dtype).min)


def _windows_with_indices(x: Any, k: tuple, s: tuple, p: tuple, d: tuple, geo: list,
                          name: str) -> tuple:
    """(max, int64 argmax into each H * W plane) of every window, gathering the windows."""
    n, c, h, w = x.shape
    (oh, eh), (ow, ew) = geo
    hp, wp = h + 2 * p[0] + eh, w + 2 * p[1] + ew
    # table[p, q]: the padded plane's flat index of window p's element q
    rows = np.add.outer(np.arange(oh) * s[0], np.arange(k[0]) * d[0])       # (OH, KH)
    cols = np.add.outer(np.arange(ow) * s[1], np.arange(k[1]) * d[1])       # (OW, KW)
    table = (rows[:, None, :, None] * wp + cols[None, :, None, :]).reshape(oh * ow, k[0] * k[1])
    flat = _prim(Reshape)(_padded(name, x, p, geo, _lowest(x.dtype)), (n, c, hp * wp))
    cols_ = _prim(Gather)(flat, Tensor(table.astype(np.int32)), 2)       # (N, C, P, K)
    where, value = _prim(ArgMaxWithValue, 3)(cols_)
    r, q = np.divmod(table, wp)
    source = np.where((r >= p[0]) & (r < p[0] + h) & (q >= p[1]) & (q < p[1] + w),
                      (r - p[0]) * w + (q - p[1]), -1)
    index = _prim(GatherD)(Tensor(np.broadcast_to(source, (n, c) + source.shape).copy()), 3,
                           _prim(ExpandDims)(where, 3))
    return (_prim(Reshape)(value, (n, c, oh, ow)), _prim(Reshape)(index, (n, c, oh, ow)))


def max_pool2d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, return_indices: bool = False, ceil_mode: bool = False) -> Any:
    """The max of each kernel_size window (dilated by `dilation`) of x (N, C, H, W) or
    (C, H, W) (a float or int dtype), moved by `stride` (None: kernel_size), over `padding`
    -inf (an int dtype's least value) rows and columns at each side, as
    `mindspore.ops.max_pool2d`; with return_indices also each max's int64 index in its input
    plane (h * W + w), the first among equals."""
    name = "max_pool2d"
    validator.check_bool("return_indices", return_indices, name)
    x4, unbatched = _batched(name, "x", x, mstype.float_type + mstype.int_type)
    k, s, p, d, geo = _window_args(name, x4, kernel_size, stride, padding, dilation, ceil_mode)
    if return_indices or d != (1, 1) or x4.dtype in mstype.int_type:
        outs = _windows_with_indices(x4, k, s, p, d, geo, name)
    else:
        outs = (_prim(MaxPool, k, s, "valid", "NCHW")(_padded(name, x4, p, geo, -np.inf)),)
    if unbatched:
        outs = tuple(_prim(Squeeze, 0)(o) for o in outs)
    return outs if return_indices else outs[0]


def avg_pool2d(input_x: Any, kernel_size: Any = 1, stride: Any = 1, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int = 0) -> Any:
    """The mean of each kernel_size window of input_x (N, C, H, W) or (C, H, W) over `padding`
    zeros at each side (counted in the mean when count_include_pad; ceil_mode's extra ones
    never), or its sum over `divisor_override` when that is not 0, as
    `mindspore.ops.avg_pool2d`."""
    name = "avg_pool2d"
    validator.check_bool("count_include_pad", count_include_pad, name)
    validator.check_int("divisor_override", divisor_override, name)
    if divisor_override < 0:
        raise ValueError(f"For '{name}', the 'divisor_override' should be >= 0, but got "
                         f"{divisor_override}.")
    x4, unbatched = _batched(name, "input_x", input_x)
    k, s, p, _, geo = _window_args(name, x4, kernel_size, stride, padding, 1, ceil_mode)
    pool = _prim(AvgPool, k, s, "valid", "NCHW")
    y = pool(_padded(name, x4, p, geo, 0.0))
    if divisor_override:
        y = _prim(Mul)(y, float(math.prod(k)) / divisor_override)
    elif ceil_mode or (any(p) and not count_include_pad):
        # each window's share of counted elements: ones where counted, zeros elsewhere
        h, w = x4.shape[2:]
        inner = np.ones((1, 1, h, w), x4.dtype.np_dtype)
        if count_include_pad:
            inner = np.pad(inner, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=1)
            counted = np.pad(inner, ((0, 0), (0, 0), (0, geo[0][1]), (0, geo[1][1])))
        else:
            counted = np.pad(inner, ((0, 0), (0, 0), (p[0], p[0] + geo[0][1]),
                                     (p[1], p[1] + geo[1][1])))
        y = _prim(RealDiv)(y, pool(Tensor(counted)))
    return _prim(Squeeze, 0)(y) if unbatched else y
