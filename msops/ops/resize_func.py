"""`interpolate` (and its alias `upsample`), as `mindspore.ops.interpolate`: a Tensor
(N, C, [D], [H], W) resized over its spatial dims.

Every mode is linear in the input and separable over the spatial dims, so a resize is, dim
by dim, a product with a constant (new_length, old_length) matrix built here in numpy: a
one-hot row for the nearest modes, two weights for linear, four for bicubic, the covered
fraction of each old cell for area. One mechanism for all modes, made of Transpose,
Reshape and MatMul: it traces, differentiates (the gradient is the transposed matrix) and
shards as they do. The coordinate maps are MindSpore's (PyTorch's): see `_source`."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.math_ops import MatMul

__all__ = ["interpolate", "upsample"]

#: mode -> the input ranks it takes (None: any of 3, 4, 5)
_MODES = {"nearest": None, "nearest-exact": (3, 4), "linear": (3,), "bilinear": (4,),
          "bicubic": (4,), "trilinear": (5,), "area": None}
_ALIGNABLE = ("linear", "bilinear", "bicubic", "trilinear")
_CUBIC_A = -0.75


def _per_dim(api: str, arg: str, value: Any, n: int, kind: type) -> list:
    """`value` (one number or one per spatial dim) as a list of n numbers of `kind`."""
    ok = (int,) if kind is int else (int, float)
    items = list(value) if isinstance(value, (tuple, list)) else [value] * n
    if len(items) != n or not all(isinstance(v, ok) and not isinstance(v, bool) for v in items):
        what = "an int" if kind is int else "a float"
        raise TypeError(f"For '{api}', the '{arg}' should be {what} or a tuple/list of "
                        f"{n} (one per spatial dim), but got {value!r}.")
    if any(v <= 0 for v in items):
        raise ValueError(f"For '{api}', the '{arg}' should be positive, but got {value!r}.")
    return [kind(v) for v in items]


def _source(mode: str, new: int, old: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """The (fractional) old coordinate each new index samples. `scale` is old / new unless
    a scale_factor is used directly (then 1 / scale_factor)."""
    i = np.arange(new, dtype=np.float64)
    if align_corners:
        return i * ((old - 1) / (new - 1)) if new > 1 else np.zeros(new)
    s = old / new if scale is None else scale
    if mode == "nearest":
        return np.floor(i * s)
    if mode == "nearest-exact":
        return np.floor((i + 0.5) * s)
    src = (i + 0.5) * s - 0.5
    return src if mode == "bicubic" else np.maximum(src, 0.0)


def _cubic(t: np.ndarray) -> np.ndarray:
    """The cubic convolution kernel (a = -0.75) at distances t."""
    t = np.abs(t)
    a = _CUBIC_A
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def adaptive_bins(size: int, out: int) -> list:
    """The [start, stop) windows of adaptive pooling: bin i of `out` over a dim of `size`
    covers [floor(i size / out), ceil((i + 1) size / out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def area_weights(new: int, old: int) -> np.ndarray:
    """The (new, old) matrix averaging each adaptive bin ('area' mode, adaptive avg pooling)."""
    w = np.zeros((new, old))
    for r, (lo, hi) in enumerate(adaptive_bins(old, new)):
        w[r, lo:hi] = 1.0 / (hi - lo)
    return w


def _matrix(mode: str, new: int, old: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """The (new, old) matrix that resizes one dim of length old to new."""
    w = np.zeros((new, old))
    rows = np.arange(new)
    if mode == "area":
        return area_weights(new, old)
    src = _source(mode, new, old, scale, align_corners)
    if mode in ("nearest", "nearest-exact"):
        w[rows, np.minimum(src.astype(np.int64), old - 1)] = 1.0
        return w
    base = np.floor(src)
    frac = src - base
    taps = (-1, 0, 1, 2) if mode == "bicubic" else (0, 1)
    for k in taps:
        weight = _cubic(frac - k) if mode == "bicubic" else (1 - frac if k == 0 else frac)
        np.add.at(w, (rows, np.clip(base.astype(np.int64) + k, 0, old - 1)), weight)
    return w


def resample_dim(x: Any, dim: int, w: np.ndarray) -> Any:
    """x with its dim `dim` replaced by w @ (that dim): moved last, one 2-D MatMul, moved back."""
    shape = tuple(x.shape)
    rank = len(shape)
    perm = tuple(d for d in range(rank) if d != dim) + (dim,)
    moved = x if dim == rank - 1 else _prim(Transpose)(x, perm)
    lead = tuple(shape[d] for d in perm[:-1])
    wt = Tensor(np.ascontiguousarray(w.T).astype(x.dtype.np_dtype))
    flat = _prim(MatMul)(_prim(Reshape)(moved, (-1, shape[dim])), wt)
    out = _prim(Reshape)(flat, lead + (w.shape[0],))
    if dim == rank - 1:
        return out
    back = tuple(int(np.argsort(perm)[d]) for d in range(rank))
    return _prim(Transpose)(out, back)


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None) -> Tensor:
    """input (N, C, [D], [H], W) resized to `size`, or by `scale_factor` (exactly one of the
    two), with `mode` one of 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' (4-D),
    'bicubic' (4-D), 'trilinear' (5-D), 'area'. `align_corners` maps corner to corner
    (linear modes only). With a scale_factor the output length is floor(length * factor)
    and, unless `recompute_scale_factor`, the coordinates scale by 1 / factor."""
    api = "interpolate"
    check_tensor(api, "input", input)
    rank = len(input.shape)
    if mode not in _MODES:
        raise ValueError(f"For '{api}', the 'mode' should be one of {list(_MODES)}, but got "
                         f"{mode!r}.")
    ranks = _MODES[mode] or (3, 4, 5)
    if rank not in ranks:
        raise ValueError(f"For '{api}', the 'input' should be {' or '.join(map(str, ranks))}-D "
                         f"for mode {mode!r}, but got shape {list(input.shape)}.")
    if input.dtype.kind != "float":
        raise TypeError(f"For '{api}', the 'input' should have a float dtype, but got "
                        f"{input.dtype}.")
    if align_corners is not None and not isinstance(align_corners, bool):
        raise TypeError(f"For '{api}', the 'align_corners' should be a bool, but got "
                        f"{align_corners!r}.")
    if align_corners and mode not in _ALIGNABLE:
        raise ValueError(f"For '{api}', the 'align_corners' can only be set with mode "
                         f"{' / '.join(_ALIGNABLE)}, but got mode {mode!r}.")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"For '{api}', exactly one of 'size' and 'scale_factor' should be "
                         f"given, but got size={size!r}, scale_factor={scale_factor!r}.")
    if recompute_scale_factor is not None and size is not None:
        raise ValueError(f"For '{api}', the 'recompute_scale_factor' can only be set with "
                         f"'scale_factor', but got size={size!r}.")
    spatial = tuple(input.shape[2:])
    if any(n == 0 for n in spatial):
        raise ValueError(f"For '{api}', the spatial dims of 'input' should be non-empty, but "
                         f"got shape {list(input.shape)}.")
    if size is not None:
        sizes = _per_dim(api, "size", size, len(spatial), int)
        scales = [None] * len(spatial)
    else:
        factors = _per_dim(api, "scale_factor", scale_factor, len(spatial), float)
        sizes = [int(math.floor(n * f)) for n, f in zip(spatial, factors)]
        if any(s == 0 for s in sizes):
            raise ValueError(f"For '{api}', the 'scale_factor' {scale_factor!r} leaves an "
                             f"empty output for input shape {list(input.shape)}.")
        scales = [None if recompute_scale_factor else 1.0 / f for f in factors]
    out = input
    for k in reversed(range(len(spatial))):   # the last dim first: it needs no transpose
        if sizes[k] == spatial[k] and scales[k] in (None, 1.0):
            continue
        w = _matrix(mode, sizes[k], spatial[k], scales[k], bool(align_corners))
        out = resample_dim(out, 2 + k, w)
    return out


def upsample(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None,
             recompute_scale_factor: bool | None = None) -> Tensor:
    """`interpolate` under its other name (`mindspore.ops.upsample`)."""
    return interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)
