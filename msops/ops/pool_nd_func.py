"""3-D, Lp and unpooling functions as `mindspore.ops`: avg_pool3d and max_pool3d (the
AvgPool3D / MaxPool3D primitives; MaxPool3DWithArgmax for a dilation or the indices),
lp_pool1d/2d ((the window mean of x ** p times the window size) ** (1 / p), as MindSpore
defines it, through AvgPool3D) and max_unpool1d/2d/3d (MaxUnpool2D / MaxUnpool3D; 1-D over
an inserted height of 1). Unbatched inputs (no N) are pooled as a batch of one."""
from __future__ import annotations

from typing import Any, Callable

from msops.common import validator
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import Pow
from msops.primitives.math_ops import Mul
from msops.primitives.pool_ops import AvgPool3D, MaxPool3D, MaxPool3DWithArgmax
from msops.primitives.unpool_ops import MaxUnpool2D, MaxUnpool3D

__all__ = ["avg_pool3d", "max_pool3d", "lp_pool1d", "lp_pool2d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d"]


def ints(name: str, arg: str, value: Any, n: int, low: int) -> tuple:
    """An int or n ints (a list too), each >= low, as a tuple of n."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * n
    if not isinstance(value, (tuple, list)) or len(value) != n or \
            any(not isinstance(v, int) or isinstance(v, bool) for v in value):
        raise TypeError(f"For '{name}', the '{arg}' should be an int or a tuple of {n} ints, "
                        f"but got {value!r}.")
    if min(value) < low:
        raise ValueError(f"For '{name}', every value of '{arg}' should be >= {low}, but got "
                         f"{value!r}.")
    return tuple(value)


def batched(name: str, arg: str, x: Any, nd: int) -> tuple[Any, Callable]:
    """(x with a batch dim, the function giving a result back its rank): x has nd spatial
    dims after (N, C) or, unbatched, after C."""
    check_float(name, arg, x)
    shape = tuple(x.shape)
    if len(shape) == nd + 2:
        return x, lambda y: y
    if len(shape) == nd + 1:
        return _prim(Reshape)(x, (1,) + shape), \
            lambda y: _prim(Reshape)(y, tuple(y.shape[1:]))
    raise ValueError(f"For '{name}', the '{arg}' should be {nd + 1}-D or {nd + 2}-D, but got "
                     f"shape {list(shape)}.")


def avg_pool3d(input_x: Any, kernel_size: Any = 1, stride: Any = 1, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int = 0) -> Any:
    """The mean of each window of input_x (N, C, D, H, W), as `mindspore.ops.avg_pool3d`:
    `padding` an int, 3 or 6 ints of zeros (counted when count_include_pad), stride None
    the kernel (MindSpore's default 1), divisor_override > 0 the divisor of every window."""
    name = "avg_pool3d"
    k = ints(name, "kernel_size", kernel_size, 3, 1)
    s = k if stride is None else ints(name, "stride", stride, 3, 1)
    if isinstance(padding, (tuple, list)) and len(padding) == 6:
        pads = ints(name, "padding", padding, 6, 0)
    else:
        pads = tuple(p for v in ints(name, "padding", padding, 3, 0) for p in (v, v))
    x, back = batched(name, "input_x", input_x, 3)
    op = _prim(AvgPool3D, k, s, "pad" if any(pads) else "valid", pads, ceil_mode,
               count_include_pad, divisor_override or 0)
    return back(op(x))


def max_pool3d(x: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The max of each window of x (N, C, D, H, W) or (C, D, H, W), as
    `mindspore.ops.max_pool3d`: `padding` (an int or 3) on both sides, `dilation`,
    stride None the kernel; with return_indices also each maximum's flat index in its
    (n, c) plane (int64)."""
    name = "max_pool3d"
    k = ints(name, "kernel_size", kernel_size, 3, 1)
    s = k if stride is None else ints(name, "stride", stride, 3, 1)
    p = ints(name, "padding", padding, 3, 0)
    d = ints(name, "dilation", dilation, 3, 1)
    validator.check_bool("ceil_mode", ceil_mode, name)
    validator.check_bool("return_indices", return_indices, name)
    x5, back = batched(name, "x", x, 3)
    if d == (1, 1, 1) and not return_indices:
        pads = tuple(v for q in p for v in (q, q))
        return back(_prim(MaxPool3D, k, s, "pad" if any(p) else "valid", pads,
                          ceil_mode)(x5))
    values, index = _prim(MaxPool3DWithArgmax, k, s, p, d, ceil_mode)(x5)
    return (back(values), back(index)) if return_indices else back(values)


def lp_pool(name: str, x: Any, norm_type: Any, kernel_size: Any, stride: Any,
            ceil_mode: bool, nd: int) -> Any:
    """(mean over each window of x ** norm_type * the window's size) ** (1 / norm_type),
    along the last nd (1 or 2) dims of x (N, C, *) or (C, *), by AvgPool3D over a view
    with the missing leading spatial dims of size 1."""
    validator.check_value_type("norm_type", norm_type, (int, float), name)
    if isinstance(norm_type, bool) or norm_type <= 0:
        raise ValueError(f"For '{name}', the 'norm_type' should be > 0, but got {norm_type}.")
    k = ints(name, "kernel_size", kernel_size, nd, 1)
    s = k if stride is None else ints(name, "stride", stride, nd, 1)
    validator.check_bool("ceil_mode", ceil_mode, name)
    x4, back = batched(name, "x", x, nd)
    shape = tuple(x4.shape)
    view = _prim(Reshape)(x4, shape[:2] + (1,) * (3 - nd) + shape[2:])
    one = (1,) * (3 - nd)
    mean = _prim(AvgPool3D, one + k, one + s, "valid", 0, ceil_mode)(
        _prim(Pow)(view, float(norm_type)))
    size = 1
    for v in k:
        size *= v
    y = _prim(Pow)(_prim(Mul)(mean, float(size)), 1.0 / norm_type)
    return back(_prim(Reshape)(y, shape[:2] + tuple(y.shape[2 + 3 - nd:])))


def lp_pool1d(x: Any, norm_type: Any, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    """The power-average (Lp) pool of x (N, C, L) or (C, L) along L, as
    `mindspore.ops.lp_pool1d`: (sum of x ** p over each window) ** (1 / p), a partial
    window (ceil_mode) scaled to the full kernel as MindSpore's."""
    return lp_pool("lp_pool1d", x, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(x: Any, norm_type: Any, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    """The power-average (Lp) pool of x (N, C, H, W) or (C, H, W), as
    `mindspore.ops.lp_pool2d` (kernel_size and stride an int or (h, w))."""
    return lp_pool("lp_pool2d", x, norm_type, kernel_size, stride, ceil_mode, 2)


def max_unpool(name: str, x: Any, indices: Any, kernel_size: Any, stride: Any, padding: Any,
               output_size: Any, nd: int) -> Any:
    """x's values written at `indices` (flat positions in each (n, c) output plane) of a
    zero output; 1-D unpools over an inserted height of 1."""
    k = ints(name, "kernel_size", kernel_size, nd, 1)
    s = k if stride is None else ints(name, "stride", stride, nd, 1)
    p = ints(name, "padding", padding, nd, 0)
    xb, back = batched(name, "x", x, nd)
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"For '{name}', the 'indices' should have x's shape "
                         f"{list(x.shape)}, but got {list(indices.shape)}.")
    ib = _prim(Reshape)(indices, tuple(xb.shape)) if xb is not x else indices
    sizes = ()
    if output_size is not None:
        validator.check_value_type("output_size", output_size, (tuple, list), name)
        sizes = tuple(output_size)[-nd:]
        if len(output_size) not in (nd, nd + 1, nd + 2):
            raise ValueError(f"For '{name}', the 'output_size' should hold the {nd} output "
                             f"sizes (optionally after N and C), but got {output_size!r}.")
    if nd == 1:
        lift = tuple(xb.shape[:2]) + (1, xb.shape[2])
        op = _prim(MaxUnpool2D, (1,) + k, (1,) + s, (0,) + p, ((1,) + sizes) if sizes else ())
        y = op(_prim(Reshape)(xb, lift), _prim(Reshape)(ib, lift))
        return back(_prim(Reshape)(y, tuple(y.shape[:2]) + (y.shape[3],)))
    prim = MaxUnpool2D if nd == 2 else MaxUnpool3D
    return back(_prim(prim, k, s, p, sizes)(xb, ib))


def max_unpool1d(x: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The partial inverse of max_pool1d, as `mindspore.ops.max_unpool1d`: x (N, C, L) or
    (C, L) to length (L - 1) * stride - 2 * padding + kernel_size (or output_size), each
    value at its index, zeros elsewhere."""
    return max_unpool("max_unpool1d", x, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(x: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The partial inverse of a 2-D max pool, as `mindspore.ops.max_unpool2d` (x (N, C, H,
    W) or (C, H, W); indices flat in each H' * W' plane)."""
    return max_unpool("max_unpool2d", x, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(x: Any, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Any:
    """The partial inverse of max_pool3d, as `mindspore.ops.max_unpool3d`."""
    return max_unpool("max_unpool3d", x, indices, kernel_size, stride, padding, output_size, 3)
