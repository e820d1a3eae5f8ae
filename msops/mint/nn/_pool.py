"""mint's 2-D pools (max_pool2d, avg_pool2d) with PyTorch's arguments: `padding` laid on
with ops.pad (-inf for a max, zeros for a mean), then the MaxPool / AvgPool primitive with
'valid' windows, so they trace, shard and differentiate as those do."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common.tensor import Tensor
from msops.mint._args import check_tensor


def _pair(name: str, arg: str, value: Any, low: int) -> tuple:
    pair = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= low
                                 for v in pair):
        raise ValueError(f"For 'mint.nn.functional.{name}', the '{arg}' should be an int >= "
                         f"{low} or a pair of them, but got {value!r}.")
    return pair


def _window(name: str, input: Any, kernel_size: Any, stride: Any, padding: Any,
            ceil_mode: bool) -> tuple:
    check_tensor(f"nn.functional.{name}", "input", input)
    if len(input.shape) not in (3, 4):
        raise ValueError(f"For 'mint.nn.functional.{name}', the 'input' should be 3-D or 4-D "
                         f"(N, C, H, W), but got shape {list(input.shape)}.")
    k = _pair(name, "kernel_size", kernel_size, 1)
    s = k if stride is None or stride == () else _pair(name, "stride", stride, 1)
    p = _pair(name, "padding", padding, 0)
    if p[0] > k[0] // 2 or p[1] > k[1] // 2:
        raise ValueError(f"For 'mint.nn.functional.{name}', the 'padding' should be at most "
                         f"half the kernel_size {k}, but got {p}.")
    if ceil_mode:
        raise ValueError(f"For 'mint.nn.functional.{name}', the 'ceil_mode' should be False "
                         f"(msops pools with floor), but got True.")
    return k, s, p


def _pooled(prim: type, input: Any, k: tuple, s: tuple, p: tuple, fill: float) -> Any:
    x = input if len(input.shape) == 4 else ops.unsqueeze(input, 0)
    if any(p):
        x = ops.pad(x, (p[1], p[1], p[0], p[0]), "constant", fill)
    y = prim(k, s, "valid", "NCHW")(x)
    return y if len(input.shape) == 4 else ops.squeeze(y, 0)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, *, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """The max of each kernel_size window of input (N, C, H, W) or (C, H, W), moved by
    `stride` (default: kernel_size), over `padding` -inf on each side."""
    name = "max_pool2d"
    k, s, p = _window(name, input, kernel_size, stride, padding, ceil_mode)
    if _pair(name, "dilation", dilation, 1) != (1, 1) or return_indices:
        raise ValueError(f"For 'mint.nn.functional.{name}', 'dilation' should be 1 and "
                         f"'return_indices' False (not supported by msops), but got "
                         f"{dilation!r} and {return_indices!r}.")
    return _pooled(ops.MaxPool, input, k, s, p, -np.inf)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Any:
    """The mean of each kernel_size window of input (N, C, H, W) or (C, H, W) over `padding`
    zeros on each side, counted in the mean when count_include_pad; `divisor_override`
    divides each window's sum instead."""
    name = "avg_pool2d"
    k, s, p = _window(name, input, kernel_size, stride, padding, ceil_mode)
    y = _pooled(ops.AvgPool, input, k, s, p, 0.0)
    if divisor_override is not None:
        if not isinstance(divisor_override, int) or divisor_override <= 0:
            raise ValueError(f"For 'mint.nn.functional.{name}', the 'divisor_override' should "
                             f"be a positive int, but got {divisor_override!r}.")
        return ops.mul(y, k[0] * k[1] / divisor_override)
    if count_include_pad or not any(p):
        return y
    # the share of each window inside the input: its mean over the padded ones
    h, w = input.shape[-2:]
    ones = Tensor(np.ones((1, 1, h, w), input.dtype.np_dtype))
    share = _pooled(ops.AvgPool, ones, k, s, p, 0.0)
    return ops.div(y, share if len(input.shape) == 4 else ops.squeeze(share, 0))
