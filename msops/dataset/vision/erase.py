"""Erasing transforms of `mindspore.dataset.vision`: Erase (a given rectangle), CutOut
(random square patches, HWC or CHW) and RandomErasing (a random rectangle of a CHW image,
after ToTensor, as the Random Erasing paper and MindSpore / torchvision)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation, TensorOperation
from msops.dataset.vision.resized_crop import _range
from msops.dataset.vision.transforms import _probability
from msops.dataset.vision.utils import check_image

__all__ = ["Erase", "CutOut", "RandomErasing"]


def _erase_value(value: Any, op: str, allow_random: bool) -> Any:
    """An int / float (every channel), three of them (R, G, B), or 'random'."""
    if allow_random and value == "random":
        return "random"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        values = [value]
    else:
        values = value
    if not isinstance(values, (list, tuple)) or len(values) not in (1, 3) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 255
            for v in values):
        extra = ", or 'random'" if allow_random else ""
        raise ValueError(f"For '{op}', the 'value' should be a number in [0, 255] or a sequence "
                         f"of three{extra}, but got {value!r}.")
    return float(values[0]) if len(values) == 1 else tuple(float(v) for v in values)


def _paint(image: np.ndarray, top: int, left: int, h: int, w: int, value: Any,
           channel_axis: int | None, op: str) -> None:
    """Set the (top, left, h, w) rectangle of `image` (in place) to `value`."""
    if isinstance(value, tuple):
        channels = None if channel_axis is None else image.shape[channel_axis]
        if channels != 3:
            raise ValueError(f"For '{op}', a 'value' of three numbers needs a 3-channel image, "
                             f"but got shape {image.shape}.")
        value = np.asarray(value).reshape((3, 1, 1) if channel_axis == 0 else (3,))
    if channel_axis == 0:
        image[:, top:top + h, left:left + w] = value
    else:
        image[top:top + h, left:left + w] = value


class Erase(TensorOperation):
    """Set the rectangle (top, left, height, width) of an (H, W[, C]) image to `value` (a
    number, or one per RGB channel); `inplace` writes into the input array."""

    def __init__(self, top: int, left: int, height: int, width: int,
                 value: float | Sequence[float] = 0, inplace: bool = False) -> None:
        self.top = validator.check_non_negative_int(top, "top", "Erase")
        self.left = validator.check_non_negative_int(left, "left", "Erase")
        self.height = validator.check_positive_int(height, "height", "Erase")
        self.width = validator.check_positive_int(width, "width", "Erase")
        self.value = _erase_value(value, "Erase", allow_random=False)
        self.inplace = validator.check_bool("inplace", inplace, "Erase")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "Erase")
        h, w = image.shape[:2]
        if self.top >= h or self.left >= w:
            raise ValueError(f"For 'Erase', the 'top' and 'left' should lie within the image "
                             f"{(h, w)}, but got {(self.top, self.left)}.")
        out = image if self.inplace else image.copy()
        _paint(out, self.top, self.left, self.height, self.width, self.value,
               None if image.ndim == 2 else 2, "Erase")
        return out


class CutOut(RandomOperation):
    """Zero `num_patches` random `length` x `length` squares of the image (each wholly
    inside it; clipped to a smaller image), HWC or CHW (`is_hwc=False`)."""

    def __init__(self, length: int, num_patches: int = 1, is_hwc: bool = True) -> None:
        self.length = validator.check_positive_int(length, "length", "CutOut")
        self.num_patches = validator.check_positive_int(num_patches, "num_patches", "CutOut")
        self.is_hwc = validator.check_bool("is_hwc", is_hwc, "CutOut")
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "CutOut")
        if not self.is_hwc and image.ndim != 3:
            raise ValueError(f"For 'CutOut', a CHW input (is_hwc=False) should have shape "
                             f"<C, H, W>, but got {image.shape}.")
        h, w = image.shape[:2] if self.is_hwc else image.shape[1:]
        ph, pw = min(self.length, h), min(self.length, w)
        out = image.copy()
        for _ in range(self.num_patches):
            top = int(self._rng.integers(h - ph + 1))
            left = int(self._rng.integers(w - pw + 1))
            _paint(out, top, left, ph, pw, 0.0, None if self.is_hwc else 0, "CutOut")
        return out


class RandomErasing(RandomOperation):
    """With probability `prob`, erase a random rectangle of a <C, H, W> image (as after
    ToTensor): up to `max_attempts` draws of an area fraction in `scale` and an aspect
    ratio in `ratio` (w = round(sqrt(area * ratio)), h = round(w / ratio)) until it fits
    strictly inside; it is filled with `value` (a number, one per channel, or 'random':
    standard normal noise). No fitting draw leaves the image unchanged."""

    def __init__(self, prob: float = 0.5, scale: Sequence[float] = (0.02, 0.33),
                 ratio: Sequence[float] = (0.3, 3.3), value: Any = 0, inplace: bool = False,
                 max_attempts: int = 10) -> None:
        op = "RandomErasing"
        self.prob = _probability(prob, op)
        self.scale = _range(scale, "scale", op, positive=False)
        self.ratio = _range(ratio, "ratio", op, positive=True)
        self.value = _erase_value(value, op, allow_random=True)
        self.inplace = validator.check_bool("inplace", inplace, op)
        self.max_attempts = validator.check_positive_int(max_attempts, "max_attempts", op)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomErasing")
        if image.ndim != 3:
            raise ValueError(f"For 'RandomErasing', the input should be an image of shape "
                             f"<C, H, W>, but got {image.shape}.")
        if self._rng.random() >= self.prob:
            return image
        channels, h, w = image.shape
        for _ in range(self.max_attempts):
            area = self._rng.uniform(*self.scale) * h * w
            aspect = self._rng.uniform(*self.ratio)
            ew = int(round(math.sqrt(area * aspect)))
            eh = int(round(ew / aspect))
            if ew < w and eh < h:
                top = int(self._rng.integers(h - eh + 1))
                left = int(self._rng.integers(w - ew + 1))
                out = image if self.inplace else image.copy()
                value = self._rng.standard_normal((channels, eh, ew)) \
                    if self.value == "random" else self.value
                if isinstance(value, np.ndarray):
                    out[:, top:top + eh, left:left + ew] = value
                else:
                    _paint(out, top, left, eh, ew, value, 0, "RandomErasing")
                return out
        return image
