"""Affine warping of numpy (H, W[, C]) images with PIL's geometry (the rotations and affine
transforms of `mindspore.dataset.vision` are PIL's `Image.rotate` / `Image.transform`).

Coordinates are continuous, pixel (i, j) covering [j, j + 1) x [i, i + 1); an output pixel
samples the input at the inverse-mapped position of its centre (j + 0.5, i + 0.5).
NEAREST takes the input pixel containing that point; BILINEAR interpolates between pixel
centres (clamped at the edges); BICUBIC is PIL's cubic convolution with a = -1 over 4 x 4
pixels (clamped at the edges). A point outside the input takes `fill_value`. Integer
images are truncated to their dtype, as PIL's resampling does.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.dataset.vision.utils import Inter, cast_like

__all__ = ["warp_affine", "rotation_matrix", "affine_matrix", "perspective_matrix",
           "check_fill"]


def check_fill(image: np.ndarray, fill_value: Any, op: str) -> np.ndarray:
    """`fill_value` (an int, or one per RGB channel) broadcastable to one pixel."""
    fill = np.asarray(fill_value, np.float64)
    if fill.ndim and (image.ndim != 3 or image.shape[2] != fill.size):
        raise ValueError(f"For '{op}', a 'fill_value' of {fill.size} values needs a "
                         f"{fill.size}-channel image, but got shape {image.shape}.")
    return fill


def warp_affine(image: np.ndarray, inverse: np.ndarray, out_h: int, out_w: int,
                interpolation: Inter, fill: np.ndarray) -> np.ndarray:
    """The (out_h, out_w[, C]) image whose pixel centre (x, y) samples `image` at
    `inverse @ (x, y, 1)`: a 2x3 affine matrix, or a 3x3 projective one (the result
    divided by its third coordinate); integer images are rounded (module docstring)."""
    h, w = image.shape[:2]
    ys, xs = np.meshgrid(np.arange(out_h) + 0.5, np.arange(out_w) + 0.5, indexing="ij")
    sx = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]
    sy = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]
    if inverse.shape[0] == 3:
        sz = inverse[2, 0] * xs + inverse[2, 1] * ys + inverse[2, 2]
        sz = np.where(sz == 0, np.finfo(np.float64).tiny, sz)
        sx, sy = sx / sz, sy / sz
    inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
    extra = (1,) * (image.ndim - 2)
    if interpolation == Inter.NEAREST:
        xi = np.clip(np.floor(sx), 0, w - 1).astype(np.int64)
        yi = np.clip(np.floor(sy), 0, h - 1).astype(np.int64)
        values = image[yi, xi].astype(np.float64)
    elif interpolation == Inter.BICUBIC:
        values = _bicubic(image.astype(np.float64), sx - 0.5, sy - 0.5, extra)
    else:
        fx, fy = sx - 0.5, sy - 0.5
        x0, y0 = np.floor(fx), np.floor(fy)
        dx, dy = (fx - x0).reshape(fx.shape + extra), (fy - y0).reshape(fy.shape + extra)
        cx0, cx1 = (np.clip(x0 + k, 0, w - 1).astype(np.int64) for k in (0, 1))
        cy0, cy1 = (np.clip(y0 + k, 0, h - 1).astype(np.int64) for k in (0, 1))
        x = image.astype(np.float64)
        top = x[cy0, cx0] * (1 - dx) + x[cy0, cx1] * dx
        bottom = x[cy1, cx0] * (1 - dx) + x[cy1, cx1] * dx
        values = top * (1 - dy) + bottom * dy
    values = np.where(inside.reshape(inside.shape + extra), values, fill)
    return cast_like(values, image.dtype, truncate=True)


def _cubic(t: np.ndarray) -> np.ndarray:
    """The cubic convolution kernel with a = -1 (PIL's transform BICUBIC)."""
    t = np.abs(t)
    return np.where(t <= 1, t ** 3 - 2 * t ** 2 + 1,
                    np.where(t < 2, -t ** 3 + 5 * t ** 2 - 8 * t + 4, 0.0))


def _bicubic(x: np.ndarray, fx: np.ndarray, fy: np.ndarray, extra: tuple) -> np.ndarray:
    """Bicubic samples of `x` at pixel-centre coordinates (fx, fy), edges clamped."""
    h, w = x.shape[:2]
    x0, y0 = np.floor(fx), np.floor(fy)
    dx, dy = fx - x0, fy - y0
    out = 0.0
    for i in range(-1, 3):
        wy = _cubic(dy - i).reshape(dy.shape + extra)
        rows = np.clip(y0 + i, 0, h - 1).astype(np.int64)
        for j in range(-1, 3):
            wx = _cubic(dx - j).reshape(dx.shape + extra)
            out = out + wy * wx * x[rows, np.clip(x0 + j, 0, w - 1).astype(np.int64)]
    return out


def rotation_matrix(degrees: float, center: tuple[float, float]) -> np.ndarray:
    """The 3x3 forward map rotating by `degrees` counter-clockwise (as seen) about
    `center` (x, y), in y-down image coordinates; cos and sin rounded to 15 decimals as
    PIL does, so quarter turns are exact."""
    a = math.radians(degrees % 360.0)
    cos, sin = round(math.cos(a), 15), round(math.sin(a), 15)
    cx, cy = center
    rot = np.array([[cos, sin, 0.0], [-sin, cos, 0.0], [0.0, 0.0, 1.0]])
    return _translate(cx, cy) @ rot @ _translate(-cx, -cy)


def affine_matrix(degrees: float, translate: tuple[float, float], scale: float,
                  shear: tuple[float, float], center: tuple[float, float]) -> np.ndarray:
    """The 3x3 forward map of MindSpore's (torchvision's) affine transform: about `center`,
    rotate clockwise (as seen) by `degrees`, scale, shear by `shear` (x, y) degrees, then
    translate by `translate` (x, y) pixels."""
    a = math.radians(degrees)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    rot = np.array([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0],
                    [0.0, 0.0, 1.0]])
    shear_x = np.array([[1.0, -math.tan(sx), 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    shear_y = np.array([[1.0, 0.0, 0.0], [-math.tan(sy), 1.0, 0.0], [0.0, 0.0, 1.0]])
    cx, cy = center
    rss = rot @ np.diag([scale, scale, 1.0]) @ shear_y @ shear_x
    return _translate(cx + translate[0], cy + translate[1]) @ rss @ _translate(-cx, -cy)


def perspective_matrix(start_points: np.ndarray, end_points: np.ndarray) -> np.ndarray:
    """The 3x3 homography mapping each of the four `start_points` (x, y) to the matching
    `end_points` point (the direct linear solution with h33 = 1)."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(start_points, end_points):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs += [u, v]
    coeffs = np.linalg.solve(np.asarray(rows, np.float64), np.asarray(rhs, np.float64))
    return np.append(coeffs, 1.0).reshape(3, 3)


def _translate(tx: float, ty: float) -> np.ndarray:
    return np.array([[1.0, 0.0, tx], [0.0, 1.0, ty], [0.0, 0.0, 1.0]])
