"""`ops.grid_sample`: input (N, C, H, W) or (N, C, D, H, W) sampled at the normalised
points of a grid (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), as MindSpore (and
PyTorch) define it. A composition of element-wise primitives and GatherD: each point's
source coordinates (unnormalised, clamped or reflected by padding_mode), then for
'bilinear' the 2**d corners around it weighted by their distances (trilinear for 5-D), for
'nearest' the nearest pixel (halves to even); a corner outside the input reads 0. So it
traces, shards and differentiates as those primitives do: the gradient reaches the input
(GatherD's scatter-add) and, for 'bilinear', the grid (through the weights)."""
from __future__ import annotations

import itertools
import math
from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, check_like
from msops.primitives import (Abs, BroadcastTo, Cast, Floor, GatherD, GreaterEqual, LessEqual,
                              LogicalAnd, Maximum, Minimum, Reshape, Round, Select, Split,
                              Squeeze)

__all__ = ["grid_sample"]


def clamp_range(c: Any, low: float, high: float) -> Any:
    """c clamped into [low, high] (Maximum, Minimum: the gradient passes inside only)."""
    return _prim(Minimum)(_prim(Maximum)(c, low), high)


def _reflect(c: Any, twice_low: int, twice_high: int) -> Any:
    """c reflected by the borders low and high (given doubled, so halves stay ints) until it
    lies between them."""
    if twice_low == twice_high:
        return c * 0.0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = _prim(Abs)(c - low)
    flips = _prim(Floor)(c / span)
    extra = c - flips * span
    odd = _prim(GreaterEqual)(flips - _prim(Floor)(flips / 2.0) * 2.0, 0.5)
    return _prim(Select)(odd, (span + low) - extra, extra + low)


def _source(c: Any, size: int, padding_mode: str, align_corners: bool) -> Any:
    """Grid values in [-1, 1] as pixel coordinates of a dim of `size` (-1 and 1 the
    centres of the end pixels when align_corners, else their outer edges)."""
    c = (c + 1.0) * ((size - 1) / 2) if align_corners else ((c + 1.0) * size - 1.0) / 2
    if padding_mode == "border":
        return clamp_range(c, 0.0, size - 1.0)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        return clamp_range(c, 0.0, size - 1.0)
    return c


def _read(flat: Any, corner: list, sizes: tuple) -> tuple:
    """(values of `flat` (N, C, prod(sizes)) at the integer-valued coordinates `corner`
    (one float Tensor (N, P) per dim, out of range allowed), the float mask of the in-range
    ones, (N, 1, P))."""
    n, c, _ = flat.shape
    valid, index = None, None
    stride = 1
    for coord, size in reversed(list(zip(corner, sizes))):
        inside = _prim(LogicalAnd)(_prim(GreaterEqual)(coord, 0.0),
                                   _prim(LessEqual)(coord, size - 1.0))
        valid = inside if valid is None else _prim(LogicalAnd)(valid, inside)
        part = clamp_range(coord, 0.0, size - 1.0) * float(stride)
        index = part if index is None else index + part
        stride *= size
    p = index.shape[-1]
    index = _prim(Cast)(_prim(Reshape)(index, (n, 1, p)), mstype.int32)
    values = _prim(GatherD)(flat, 2, _prim(BroadcastTo, (n, c, p))(index))
    mask = _prim(Cast)(_prim(Reshape)(valid, (n, 1, p)), flat.dtype)
    return values, mask


def _check(name: str, input: Any, grid: Any, mode: Any, padding_mode: Any,
           align_corners: Any) -> int:
    check_float(name, "input", input)
    check_like(name, "grid", grid, input, "input")
    validator.check_string("mode", mode, ("bilinear", "nearest"), name)
    validator.check_string("padding_mode", padding_mode, ("zeros", "border", "reflection"),
                           name)
    validator.check_bool("align_corners", align_corners, name)
    shape, gshape = tuple(input.shape), tuple(grid.shape)
    if len(shape) not in (4, 5):
        raise ValueError(f"For '{name}', the 'input' should be 4-D (N, C, H, W) or 5-D "
                         f"(N, C, D, H, W), but got shape {list(shape)}.")
    d = len(shape) - 2
    if len(gshape) != len(shape) or gshape[0] != shape[0] or gshape[-1] != d:
        raise ValueError(f"For '{name}', the 'grid' should be {len(shape)}-D (N, *out, {d}) "
                         f"with N = {shape[0]} as the input's, but got shape {list(gshape)}.")
    if 0 in shape or 0 in gshape:
        raise ValueError(f"For '{name}', the 'input' and 'grid' should be non-empty, but got "
                         f"shapes {list(shape)} and {list(gshape)}.")
    return d


def grid_sample(input: Any, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool = False) -> Any:
    """input (N, C, *in) sampled at grid (N, *out, d) of normalised (x, y[, z]) points in
    [-1, 1] (x along the last dim), giving (N, C, *out), as `mindspore.ops.grid_sample`:
    mode 'bilinear' (trilinear when 5-D) or 'nearest'; padding_mode 'zeros' (outside reads
    0), 'border' (clamped to the edge) or 'reflection' (mirrored at the borders)."""
    name = "grid_sample"
    d = _check(name, input, grid, mode, padding_mode, align_corners)
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])
    out = tuple(grid.shape[1:-1])
    p = math.prod(out)
    flat = _prim(Reshape)(input, (n, c, math.prod(sizes)))
    parts = _prim(Split, -1, d)(_prim(Reshape)(grid, (n, p, d)))
    # grid's last entry k is the coordinate of spatial dim d - 1 - k (x is the width)
    coords = [_source(_prim(Squeeze, -1)(parts[d - 1 - k]), size, padding_mode, align_corners)
              for k, size in enumerate(sizes)]
    if mode == "nearest":
        values, mask = _read(flat, [_prim(Round)(x) for x in coords], sizes)
        y = values * mask
    else:
        low = [_prim(Floor)(x) for x in coords]
        high_w = [x - lo for x, lo in zip(coords, low)]
        y = None
        for corner in itertools.product((0, 1), repeat=d):
            at = [lo + 1.0 if bit else lo for lo, bit in zip(low, corner)]
            weight = None
            for w, bit in zip(high_w, corner):
                part = w if bit else 1.0 - w
                weight = part if weight is None else weight * part
            values, mask = _read(flat, at, sizes)
            term = values * (_prim(Reshape)(weight, (n, 1, p)) * mask)
            y = term if y is None else y + term
    return _prim(Reshape)(y, (n, c) + out)
