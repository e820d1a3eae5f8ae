"""`ops.fractional_max_pool2d`: max pooling over windows of a fixed size whose starts step
pseudo-randomly (Graham's fractional max-pooling, PyTorch's and MindSpore's interval rule):
for an output of n along a dim of size L and kernel k, window i starts at
floor((i + u) a) - floor(u a), a = (L - k) / (n - 1), and the last at L - k, with u one draw
in [0, 1) per (sample, channel) and dim (`_random_samples` (N, C, 2), its [..., 0] for the
width, [..., 1] for the height; drawn from the global seed's stream when None). The windows
are gathered (GatherD) and ArgMaxWithValue picks each one's first maximum, so the values
differentiate back to the input and the indices (h * W + w) come with them."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.conv_pool2d_func import _pair
from msops.primitives.array_ops import Concat, Reshape, Split
from msops.primitives.gather_ops import GatherD
from msops.primitives.math_ops import Cast
from msops.primitives.piecewise_ops import Floor
from msops.primitives.random_ops import UniformRealOf
from msops.primitives.reduce_ops import ArgMaxWithValue
from msops.primitives.shape_ops import ExpandDims, Squeeze

__all__ = ["fractional_max_pool2d"]

_TYPES = (mstype.float16, mstype.float32, mstype.float64, mstype.int32, mstype.int64)


def _out_sizes(name: str, shape: tuple, k: tuple, output_size: Any, output_ratio: Any) -> tuple:
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"For '{name}', exactly one of 'output_size' and 'output_ratio' should "
                         f"be given, but got {output_size!r} and {output_ratio!r}.")
    if output_size is not None:
        out = _pair(name, "output_size", output_size, 1)
    else:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else \
            (output_ratio, output_ratio)
        if len(ratio) != 2 or not all(isinstance(r, (float, int)) and not isinstance(r, bool)
                                      and 0 < r < 1 for r in ratio):
            raise ValueError(f"For '{name}', the 'output_ratio' should be a float or two floats "
                             f"in (0, 1), but got {output_ratio!r}.")
        out = tuple(int(size * r) for size, r in zip(shape, ratio))
    for o, kk, size in zip(out, k, shape):
        if o < 1 or o + kk - 1 > size:
            raise ValueError(f"For '{name}', each output size plus kernel_size - 1 should be at "
                             f"most the input's {list(shape)}, and the output at least 1, but "
                             f"got output {list(out)} and kernel_size {list(k)}.")
    return out


def _starts(u: Any, size: int, kernel: int, out: int) -> Any:
    """(N, C, out) float64 window starts along a dim for the draws u (N, C, 1)."""
    n, c, _ = u.shape
    last = Tensor(np.full((n, c, 1), float(size - kernel)))
    if out == 1:
        return last
    alpha = (size - kernel) / (out - 1)
    steps = Tensor(np.arange(out - 1, dtype=np.float64)[None, None, :])
    starts = _prim(Floor)((steps + u) * alpha) - _prim(Floor)(u * alpha)
    return _prim(Concat, 2)((starts, last))


def fractional_max_pool2d(input: Any, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """Fractional max pooling of input (N, C, H, W) or (C, H, W) by kernel_size windows to
    output_size (or int(input size * output_ratio)), as `mindspore.ops.fractional_max_pool2d`;
    with return_indices also each maximum's int64 index h * W + w in its plane."""
    name = "fractional_max_pool2d"
    check_tensor(name, "input", input)
    validator.check_tensor_dtype_valid("input", input.dtype, _TYPES, name)
    validator.check_bool("return_indices", return_indices, name)
    if len(input.shape) not in (3, 4):
        raise ValueError(f"For '{name}', the 'input' should be 4-D (N, C, H, W) or 3-D "
                         f"(C, H, W), but got shape {list(input.shape)}.")
    x = input if len(input.shape) == 4 else _prim(ExpandDims)(input, 0)
    n, c, h, w = x.shape
    k = _pair(name, "kernel_size", kernel_size, 1)
    oh, ow = _out_sizes(name, (h, w), k, output_size, output_ratio)
    if _random_samples is None:
        samples = _prim(UniformRealOf, 0, 0, mstype.float64)((n, c, 2))
    else:
        check_tensor(name, "_random_samples", _random_samples)
        validator.check_tensor_dtype_valid("_random_samples", _random_samples.dtype,
                                           mstype.float_type, name)
        if tuple(_random_samples.shape) != (n, c, 2):
            raise ValueError(f"For '{name}', the '_random_samples' should have shape "
                             f"{[n, c, 2]}, but got {list(_random_samples.shape)}.")
        samples = _prim(Cast)(_random_samples, mstype.float64)
    u_w, u_h = _prim(Split, 2, 2)(samples)
    rows = _starts(u_h, h, k[0], oh)                             # (N, C, OH)
    cols = _starts(u_w, w, k[1], ow)                             # (N, C, OW)
    dr = Tensor(np.arange(k[0], dtype=np.float64)[:, None] * w)  # (KH, 1)
    dc = Tensor(np.arange(k[1], dtype=np.float64)[None, :])      # (1, KW)
    at = _prim(Reshape)(rows * float(w), (n, c, oh, 1, 1, 1)) + \
        _prim(Reshape)(cols, (n, c, 1, ow, 1, 1)) + dr + dc       # (N, C, OH, OW, KH, KW)
    count = oh * ow * k[0] * k[1]
    index = _prim(Cast)(_prim(Reshape)(at, (n, c, count)), mstype.int32)
    windows = _prim(GatherD)(_prim(Reshape)(x, (n, c, h * w)), 2, index)
    windows = _prim(Reshape)(windows, (n, c, oh * ow, k[0] * k[1]))
    where, value = _prim(ArgMaxWithValue, 3)(windows)
    outs = [_prim(Reshape)(value, (n, c, oh, ow))]
    if return_indices:
        table = _prim(Reshape)(_prim(Cast)(at, mstype.int64), (n, c, oh * ow, k[0] * k[1]))
        chosen = _prim(GatherD)(table, 3, _prim(ExpandDims)(where, 3))
        outs.append(_prim(Reshape)(chosen, (n, c, oh, ow)))
    if len(input.shape) == 3:
        outs = [_prim(Squeeze, 0)(o) for o in outs]
    return tuple(outs) if return_indices else outs[0]
