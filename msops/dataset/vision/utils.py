"""`mindspore.dataset.vision.utils`: the interpolation and border modes of the vision
transforms, and the numpy image helpers they share (layout checks, padding, resizing).

Images are numpy arrays laid out (H, W) or (H, W, C), as MindSpore's vision transforms
take them (HWC; `HWC2CHW` / `ToTensor` change the layout for the network).
"""
from __future__ import annotations

from enum import Enum, IntEnum
from typing import Any

import numpy as np

__all__ = ["Inter", "Border", "check_image", "check_inter", "pad_image", "resize_image",
           "image_size", "cast_like", "check_warp_inter"]


class Inter(IntEnum):
    """Interpolation modes (MindSpore's values). msops implements NEAREST and LINEAR
    (= BILINEAR); the others raise NotImplementedError in `Resize`."""
    NEAREST = 0
    ANTIALIAS = 1
    LINEAR = 2
    BILINEAR = 2
    CUBIC = 3
    BICUBIC = 3
    AREA = 4
    PILCUBIC = 5


class Border(str, Enum):
    """Padding modes: CONSTANT (the fill value), EDGE (repeat the edge pixel), REFLECT
    (mirror without repeating the edge: 3 2 | 1 2 3 | 2 1) and SYMMETRIC (mirror repeating
    it: 2 1 | 1 2 3 | 3 2)."""
    CONSTANT = "constant"
    EDGE = "edge"
    REFLECT = "reflect"
    SYMMETRIC = "symmetric"


def check_image(image: np.ndarray, op: str) -> np.ndarray:
    """An (H, W) or (H, W, C) numeric image."""
    if image.ndim not in (2, 3) or image.dtype.kind not in "biuf":
        raise ValueError(f"For '{op}', the input should be a numeric image of shape <H, W> or "
                         f"<H, W, C>, but got shape {image.shape} and dtype {image.dtype}.")
    return image


def check_inter(interpolation: Any, op: str) -> Inter:
    """An `interpolation` msops resizes with: Inter.LINEAR (= BILINEAR) or Inter.NEAREST
    (TypeError for a non-Inter, NotImplementedError for the other modes)."""
    if not isinstance(interpolation, Inter):
        raise TypeError(f"For '{op}', the 'interpolation' should be an Inter, but got "
                        f"{interpolation!r}.")
    if interpolation not in (Inter.LINEAR, Inter.NEAREST):
        raise NotImplementedError(f"For '{op}', msops implements the 'interpolation' modes "
                                  f"Inter.LINEAR and Inter.NEAREST, but got "
                                  f"Inter.{interpolation.name}.")
    return interpolation


def check_warp_inter(interpolation: Any, op: str) -> Inter:
    """An `interpolation` the geometric warps sample with: Inter.NEAREST, LINEAR (=
    BILINEAR) or CUBIC (= BICUBIC, PIL's); NotImplementedError for AREA, PILCUBIC and
    ANTIALIAS."""
    if not isinstance(interpolation, Inter):
        raise TypeError(f"For '{op}', the 'interpolation' should be an Inter, but got "
                        f"{interpolation!r}.")
    if interpolation not in (Inter.LINEAR, Inter.NEAREST, Inter.CUBIC):
        raise NotImplementedError(f"For '{op}', msops implements the 'interpolation' modes "
                                  f"Inter.NEAREST, Inter.BILINEAR and Inter.BICUBIC, but got "
                                  f"Inter.{interpolation.name}.")
    return interpolation


def image_size(size: Any, op: str, arg: str = "size") -> tuple[int, int]:
    """MindSpore's `size` argument: an int (a square) or a (height, width) sequence."""
    values = (size, size) if isinstance(size, int) and not isinstance(size, bool) else size
    if not isinstance(values, (list, tuple)) or len(values) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise ValueError(f"For '{op}', the '{arg}' should be a positive int or a sequence of two "
                         f"positive ints (height, width), but got {size!r}.")
    return int(values[0]), int(values[1])


def pad_image(image: np.ndarray, top: int, bottom: int, left: int, right: int,
              mode: Border, fill_value: Any) -> np.ndarray:
    """Pad an (H, W[, C]) image's H and W; CONSTANT fills with `fill_value` (one value, or
    one per channel), the other modes as numpy.pad's 'edge', 'reflect', 'symmetric'."""
    if not (top or bottom or left or right):
        return image
    h, w = image.shape[:2]
    if mode is not Border.CONSTANT:
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (image.ndim - 2)
        return np.pad(image, widths, mode=mode.value)
    out = np.empty((h + top + bottom, w + left + right) + image.shape[2:], image.dtype)
    out[...] = np.asarray(fill_value).astype(image.dtype)
    out[top:top + h, left:left + w] = image
    return out


def _linear_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices i0, i1 and weight of i1 for each output position: pixel centres
    aligned (src = (dst + 0.5) * n_in / n_out - 0.5), clamped at the borders (OpenCV's
    INTER_LINEAR)."""
    src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    src = np.maximum(src, 0.0)
    i0 = np.floor(src).astype(np.int64)
    frac = src - i0
    i0 = np.minimum(i0, n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, frac


def resize_image(image: np.ndarray, height: int, width: int, interpolation: Inter) -> np.ndarray:
    """Resize an (H, W[, C]) image to (height, width[, C]), keeping its dtype (integer
    images are rounded to nearest and clipped to their range)."""
    h, w = image.shape[:2]
    if interpolation == Inter.NEAREST:
        # OpenCV's INTER_NEAREST: src = floor(dst * n_in / n_out)
        rows = np.minimum(np.floor(np.arange(height) * (h / height)).astype(np.int64), h - 1)
        cols = np.minimum(np.floor(np.arange(width) * (w / width)).astype(np.int64), w - 1)
        return image[rows][:, cols]
    r0, r1, fr = _linear_taps(h, height)
    c0, c1, fc = _linear_taps(w, width)
    x = image.astype(np.float64)
    shape = (-1,) + (1,) * (image.ndim - 1)
    fr = fr.reshape(shape)
    rows = x[r0] * (1 - fr) + x[r1] * fr
    fc = fc.reshape((1, -1) + (1,) * (image.ndim - 2))
    out = rows[:, c0] * (1 - fc) + rows[:, c1] * fc
    return cast_like(out, image.dtype)


def cast_like(values: np.ndarray, dtype: np.dtype, truncate: bool = False) -> np.ndarray:
    """Float results in an image dtype: integers rounded to nearest (half to even, as
    OpenCV's saturate_cast; toward zero when `truncate`, as PIL's resampling) and clipped
    to the dtype's range; floats cast."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        values = np.trunc(values) if truncate else np.rint(values)
        if dtype.kind != "b":
            info = np.iinfo(dtype)
            values = np.clip(values, info.min, info.max)
    return values.astype(dtype)
