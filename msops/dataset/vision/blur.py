"""`mindspore.dataset.vision.GaussianBlur`: separable Gaussian smoothing of a numpy
(H, W[, C]) image, as OpenCV's GaussianBlur (borders reflected without repeating the edge
pixel, `Border.REFLECT`; uint8 results rounded)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.dataset.transforms.base import TensorOperation
from msops.dataset.vision.utils import cast_like, check_image

__all__ = ["GaussianBlur", "gaussian_kernel"]


def gaussian_kernel(size: int, sigma: float) -> np.ndarray:
    """The normalized 1-D Gaussian of `size` taps."""
    x = np.arange(size) - (size - 1) / 2.0
    k = np.exp(-x * x / (2.0 * sigma * sigma))
    return k / k.sum()


def _pair(value: Any, arg: str, kind: type, ok: Any, what: str) -> tuple:
    values = [value] * 2 if isinstance(value, kind) and not isinstance(value, bool) else value
    if not isinstance(values, (list, tuple)) or len(values) != 2 or not all(
            isinstance(v, kind) and not isinstance(v, bool) and ok(v) for v in values):
        raise ValueError(f"For 'GaussianBlur', the '{arg}' should be {what} or a sequence of two "
                         f"(x, y), but got {value!r}.")
    return values[0], values[1]


class GaussianBlur(TensorOperation):
    """Blur with a Gaussian kernel of `kernel_size` (odd, positive; an int or (x, y)) and
    standard deviation `sigma` (a positive number or (x, y); None: OpenCV's
    0.3 * ((size - 1) * 0.5 - 1) + 0.8 per axis)."""

    def __init__(self, kernel_size: int | Sequence[int],
                 sigma: float | Sequence[float] | None = None) -> None:
        self.kernel_size = _pair(kernel_size, "kernel_size", int, lambda v: v > 0 and v % 2,
                                 "a positive odd int")
        if sigma is None:
            self.sigma = tuple(0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in self.kernel_size)
        else:
            sigma = float(sigma) if isinstance(sigma, int) and not isinstance(sigma, bool) \
                else sigma
            pair = _pair(sigma, "sigma", (int, float), lambda v: v > 0, "a positive number")
            self.sigma = (float(pair[0]), float(pair[1]))

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "GaussianBlur")
        out = image.astype(np.float64)
        for axis, (size, sigma) in ((1, (self.kernel_size[0], self.sigma[0])),
                                    (0, (self.kernel_size[1], self.sigma[1]))):
            half = size // 2
            if half == 0:
                continue
            if out.shape[axis] == 1:
                continue                    # a single row / column: reflection is itself
            widths = [(0, 0)] * out.ndim
            widths[axis] = (half, half)
            padded = np.pad(out, widths, mode="reflect")
            k = gaussian_kernel(size, sigma)
            n = out.shape[axis]
            out = sum(k[t] * np.take(padded, np.arange(t, t + n), axis=axis)
                      for t in range(size))
        return cast_like(out, image.dtype)
