"""1-D and adaptive pooling, as `mindspore.ops`: avg_pool1d, max_pool1d (the 2-D MaxPool /
AvgPool primitives over an (N, C, 1, L) view), adaptive_avg_pool1d/2d/3d and
adaptive_max_pool1d/2d/3d. Adaptive bin i of a dim of size L covers [floor(i L / out),
ceil((i + 1) L / out)); an average over bins is a product with a constant matrix of
1 / bin length (`resize_func.resample_dim`, shared with interpolate's 'area'), a max a Gather of each bin's indices (short bins
padded with an index of a -inf column) and a ReduceMax; 2-D and 3-D pool one dim after the
other (both are separable). So all trace, shard and differentiate as their primitives do."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float
from msops.ops.pad_func import pad_dims
from msops.ops.resize_func import adaptive_bins, area_weights, resample_dim
from msops.primitives.array_ops import Concat, Reshape
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import RealDiv, ReduceMax
from msops.primitives.pool_ops import AvgPool, MaxPool

__all__ = ["avg_pool1d", "max_pool1d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d"]


def one_int(name: str, arg: str, value: Any, low: int) -> int:
    """An int or a 1-tuple/list of one, >= low."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    validator.check_value_type(arg, value, int, name)
    if value < low:
        raise ValueError(f"For '{name}', the '{arg}' should be >= {low}, but got {value}.")
    return value


def input_of_rank(name: str, x: Any, ranks: tuple) -> tuple:
    check_float(name, "input", x)
    shape = tuple(x.shape)
    if len(shape) not in ranks:
        raise ValueError(f"For '{name}', the 'input' should be "
                         f"{' or '.join(map(str, ranks))}-D, but got shape {list(shape)}.")
    return shape


def pool1d(name: str, x: Any, kind: str, kernel_size: int, stride: int, pad_mode: str,
           padding: int, count_include_pad: bool = True) -> Any:
    """x (N, C, L) or (C, L) pooled along L by `kind` ("max" / "avg") windows: pad_mode
    "valid", "same" (the primitive's SAME: padding never wins a max nor counts in a mean) or
    "pad" (`padding` both sides: zeros counted in a mean when count_include_pad, -inf for a
    max)."""
    shape = tuple(x.shape)
    if pad_mode == "pad" and padding:
        if kind == "max":
            x = pad_dims(name, x, [(len(shape) - 1, padding, padding)], "constant", -np.inf)
        else:
            x = pad_dims(name, x, [(len(shape) - 1, padding, padding)], "constant", 0)
    lead = shape[:-1] if len(shape) == 3 else (1,) + shape[:-1]
    view = _prim(Reshape)(x, lead + (1, x.shape[-1]))
    prim = MaxPool if kind == "max" else AvgPool
    mode = "same" if pad_mode == "same" else "valid"
    y = _prim(prim, (1, kernel_size), (1, stride), mode, "NCHW")(view)
    if kind == "avg" and pad_mode == "pad" and padding and not count_include_pad:
        ones = pad_dims(name, Tensor(np.ones((1, 1, shape[-1]), x.dtype.np_dtype)),
                        [(2, padding, padding)], "constant", 0)
        count = _prim(prim, (1, kernel_size), (1, stride), "valid", "NCHW")(
            _prim(Reshape)(ones, (1, 1, 1, ones.shape[-1])))
        y = _prim(RealDiv)(y, count)
    return _prim(Reshape)(y, shape[:-1] + (y.shape[-1],))


def pool_args(name: str, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any) -> tuple:
    k = one_int(name, "kernel_size", kernel_size, 1)
    s = one_int(name, "stride", stride, 1)
    p = one_int(name, "padding", padding, 0)
    validator.check_bool("ceil_mode", ceil_mode, name)
    if ceil_mode:
        raise ValueError(f"For '{name}', the 'ceil_mode' should be False (msops pools with "
                         f"floor), but got True.")
    if p > k // 2:
        raise ValueError(f"For '{name}', the 'padding' should be at most half the "
                         f"kernel_size {k}, but got {p}.")
    return k, s, p


def avg_pool1d(input_x: Any, kernel_size: Any = 1, stride: Any = 1, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    """The mean of each window of input_x (N, C, L) along L, as `mindspore.ops.avg_pool1d`:
    `padding` zeros on both sides, counted in the mean when count_include_pad."""
    name = "avg_pool1d"
    k, s, p = pool_args(name, kernel_size, stride, padding, ceil_mode)
    validator.check_bool("count_include_pad", count_include_pad, name)
    input_of_rank(name, input_x, (3,))
    return pool1d(name, input_x, "avg", k, s, "pad", p, count_include_pad)


def max_pool1d(input: Any, kernel_size: Any = 1, stride: Any = 1, padding: Any = 0,
               ceil_mode: bool = False) -> Any:
    """The max of each window of input (N, C, L) or (C, L) along L (`padding` -inf on both
    sides)."""
    name = "max_pool1d"
    k, s, p = pool_args(name, kernel_size, stride, padding, ceil_mode)
    input_of_rank(name, input, (2, 3))
    return pool1d(name, input, "max", k, s, "pad", p)


def adaptive_along(name: str, x: Any, axis: int, out: int, kind: str) -> Any:
    """x pooled adaptively along dim `axis` (-1 or -2) to `out` bins."""
    shape = tuple(x.shape)
    size = shape[axis]
    if size == 0:
        raise ValueError(f"For '{name}', the 'input' should be non-empty along the pooled "
                         f"dims, but got shape {list(shape)}.")
    if kind == "avg":
        return resample_dim(x, len(shape) + axis, area_weights(out, size))
    bins = adaptive_bins(size, out)
    longest = max(b - a for a, b in bins)
    index = np.array([list(range(a, b)) + [size] * (longest - (b - a)) for a, b in bins],
                     np.int32)
    if (index == size).any():                       # short bins read a -inf column
        edge = list(shape)
        edge[axis] = 1
        x = _prim(Concat, axis)((x, Tensor(np.full(edge, -np.inf, x.dtype.np_dtype))))
    ax = len(shape) + axis
    gathered = _prim(Gather)(x, Tensor(index), ax)
    return _prim(ReduceMax, False)(gathered, ax + 1)


def _sizes(name: str, output_size: Any, shape: Sequence[int], n: int) -> tuple:
    """output_size as n ints (None keeps the input's size; an int is every dim's)."""
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        output_size = (output_size,) * n
    if not isinstance(output_size, (tuple, list)) or len(output_size) != n:
        raise TypeError(f"For '{name}', the 'output_size' should be an int or a tuple of {n} "
                        f"(ints or None), but got {output_size!r}.")
    sizes = []
    for v, dim in zip(output_size, shape[-n:]):
        if v is None:
            v = dim
        validator.check_value_type("output_size", v, int, name)
        if v < 1:
            raise ValueError(f"For '{name}', the 'output_size' should be >= 1, but got "
                             f"{output_size}.")
        sizes.append(v)
    return tuple(sizes)


def adaptive_pool(name: str, input: Any, output_size: Any, kind: str, n: int,
                  ranks: tuple) -> Any:
    """input (*, spatial n dims) of a rank in `ranks` pooled adaptively to `output_size`."""
    shape = input_of_rank(name, input, ranks)
    sizes = _sizes(name, output_size, shape, n)
    y = input
    for k, out in enumerate(sizes):
        y = adaptive_along(name, y, k - n, out, kind)
    return y


def no_indices(name: str, return_indices: Any) -> None:
    """return_indices must be False (the adaptive max pools return no argmax)."""
    validator.check_bool("return_indices", return_indices, name)
    if return_indices:
        raise ValueError(f"For '{name}', the 'return_indices' should be False (msops does not "
                         f"return the argmax indices), but got True.")


def adaptive_avg_pool1d(input: Any, output_size: int) -> Any:
    """input (N, C, L) to (N, C, output_size): each bin's mean, as
    `mindspore.ops.adaptive_avg_pool1d`."""
    validator.check_value_type("output_size", output_size, int, "adaptive_avg_pool1d")
    return adaptive_pool("adaptive_avg_pool1d", input, output_size, "avg", 1, (3,))


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:
    """input (N, C, H, W) or (C, H, W) to (..., OH, OW) (`output_size` an int or (OH, OW),
    None keeping a dim): each bin's mean, as `mindspore.ops.adaptive_avg_pool2d`."""
    return adaptive_pool("adaptive_avg_pool2d", input, output_size, "avg", 2, (3, 4))


def adaptive_max_pool1d(input: Any, output_size: int) -> Any:
    """input (N, C, L) to (N, C, output_size): each bin's max, as
    `mindspore.ops.adaptive_max_pool1d`."""
    validator.check_value_type("output_size", output_size, int, "adaptive_max_pool1d")
    return adaptive_pool("adaptive_max_pool1d", input, output_size, "max", 1, (3,))


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """input (N, C, H, W) or (C, H, W) to (..., OH, OW): each bin's max, as
    `mindspore.ops.adaptive_max_pool2d` (return_indices=True is not supported)."""
    name = "adaptive_max_pool2d"
    no_indices(name, return_indices)
    return adaptive_pool(name, input, output_size, "max", 2, (3, 4))


def adaptive_avg_pool3d(input: Any, output_size: Any) -> Any:
    """input (N, C, D, H, W) or (C, D, H, W) to (..., OD, OH, OW) (`output_size` an int or
    3, None keeping a dim): each bin's mean, as `mindspore.ops.adaptive_avg_pool3d`."""
    return adaptive_pool("adaptive_avg_pool3d", input, output_size, "avg", 3, (4, 5))


def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """input (N, C, D, H, W) or (C, D, H, W) to (..., OD, OH, OW): each bin's max, as
    `mindspore.ops.adaptive_max_pool3d` (return_indices=True is not supported)."""
    name = "adaptive_max_pool3d"
    no_indices(name, return_indices)
    return adaptive_pool(name, input, output_size, "max", 3, (4, 5))
