"""The random colour transforms of `mindspore.dataset.vision`: each draws its parameter (or
whether to act, with probability `prob`) from the dataset seed (see
msops.dataset.transforms.base) and applies the colour kernel of msops.dataset.vision.color.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation
from msops.dataset.vision.color import (adjust, autocontrast, check_cutoff, check_ignore,
                                        equalize, factor, posterize, rgb_image, solarize,
                                        threshold_range, to_grayscale, uint8_or_float)
from msops.dataset.vision.resized_crop import _range
from msops.dataset.vision.transforms import _probability
from msops.dataset.vision.utils import check_image

__all__ = ["RandomColorAdjust", "RandomSharpness", "RandomAdjustSharpness", "RandomInvert",
           "RandomPosterize", "RandomSolarize", "RandomEqualize", "RandomAutoContrast",
           "RandomGrayscale"]


def _factor_range(value: Any, arg: str, op: str) -> tuple[float, float]:
    """A number f (the range [max(0, 1 - f), 1 + f]) or a (min, max) of factors >= 0."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        f = factor(value, arg, op)
        return max(0.0, 1.0 - f), 1.0 + f
    return _range(value, arg, op, positive=False)


def _hue_range(value: Any, op: str) -> tuple[float, float]:
    """A number h in [0, 0.5] (the range [-h, h]) or (min, max) within [-0.5, 0.5]."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = -float(value), float(value)
    elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"For '{op}', the 'hue' should be a number or a sequence of two numbers "
                        f"(min, max), but got {value!r}.")
    if not -0.5 <= lo <= hi <= 0.5:
        raise ValueError(f"For '{op}', the 'hue' should be a number in [0, 0.5] or (min, max) with "
                         f"-0.5 <= min <= max <= 0.5, but got {value!r}.")
    return lo, hi


class RandomColorAdjust(RandomOperation):
    """Adjust brightness, contrast, saturation and hue of an RGB image by factors drawn
    uniformly from their ranges, in a random order per image. Each of `brightness`,
    `contrast`, `saturation` is a number f (the range [max(0, 1 - f), 1 + f]) or (min, max);
    `hue` a number h in [0, 0.5] (the range [-h, h]) or (min, max) in [-0.5, 0.5]. An
    identity range ((1, 1), hue (0, 0)) is skipped."""

    def __init__(self, brightness: float | Sequence[float] = (1, 1),
                 contrast: float | Sequence[float] = (1, 1),
                 saturation: float | Sequence[float] = (1, 1),
                 hue: float | Sequence[float] = (0, 0)) -> None:
        op = "RandomColorAdjust"
        self.brightness = _factor_range(brightness, "brightness", op)
        self.contrast = _factor_range(contrast, "contrast", op)
        self.saturation = _factor_range(saturation, "saturation", op)
        self.hue = _hue_range(hue, op)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = rgb_image(array, "RandomColorAdjust")
        ranges = {"brightness": self.brightness, "contrast": self.contrast,
                  "saturation": self.saturation, "hue": self.hue}
        for k in self._rng.permutation(4):
            kind = ("brightness", "contrast", "saturation", "hue")[int(k)]
            lo, hi = ranges[kind]
            if (lo, hi) != ((0.0, 0.0) if kind == "hue" else (1.0, 1.0)):
                image = adjust(kind, image, float(self._rng.uniform(lo, hi)))
        return image


class RandomSharpness(RandomOperation):
    """Adjust sharpness (as AdjustSharpness) by a factor drawn uniformly from `degrees`
    (min, max), non-negative: 0 blurs, 1 keeps, 2 sharpens."""

    def __init__(self, degrees: Sequence[float] = (0.1, 1.9)) -> None:
        self.degrees = _range(degrees, "degrees", "RandomSharpness", positive=False)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "RandomSharpness"), "RandomSharpness")
        return adjust("sharpness", image, float(self._rng.uniform(*self.degrees)))


class _RandomApplyOne(RandomOperation):
    """With probability `prob`, apply `_act` to the image; otherwise pass it unchanged."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = self._check(array)
        return self._act(image) if self._rng.random() < self.prob else image

    def _check(self, array: np.ndarray) -> np.ndarray:
        op = type(self).__name__
        return uint8_or_float(check_image(array, op), op, False)

    def _act(self, image: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RandomAdjustSharpness(_RandomApplyOne):
    """With probability `prob`, AdjustSharpness(`degree`)."""

    def __init__(self, degree: float, prob: float = 0.5) -> None:
        self.degree = factor(degree, "degree", "RandomAdjustSharpness")
        self.prob = _probability(prob, "RandomAdjustSharpness")
        self._seed_rng()

    def _check(self, array: np.ndarray) -> np.ndarray:
        return uint8_or_float(check_image(array, "RandomAdjustSharpness"),
                              "RandomAdjustSharpness")

    def _act(self, image: np.ndarray) -> np.ndarray:
        return adjust("sharpness", image, self.degree)


class RandomInvert(_RandomApplyOne):
    """With probability `prob`, `255 - image`."""

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = _probability(prob, "RandomInvert")
        self._seed_rng()

    def _act(self, image: np.ndarray) -> np.ndarray:
        return 255 - image


class RandomEqualize(_RandomApplyOne):
    """With probability `prob`, Equalize."""

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = _probability(prob, "RandomEqualize")
        self._seed_rng()

    def _act(self, image: np.ndarray) -> np.ndarray:
        return equalize(image)


class RandomAutoContrast(_RandomApplyOne):
    """With probability `prob`, AutoContrast(`cutoff`, `ignore`)."""

    def __init__(self, cutoff: float = 0.0, ignore: int | Sequence[int] | None = None,
                 prob: float = 0.5) -> None:
        self.cutoff = check_cutoff(cutoff, "RandomAutoContrast")
        self.ignore = check_ignore(ignore, "RandomAutoContrast")
        self.prob = _probability(prob, "RandomAutoContrast")
        self._seed_rng()

    def _act(self, image: np.ndarray) -> np.ndarray:
        return autocontrast(image, self.cutoff, self.ignore)


class RandomGrayscale(_RandomApplyOne):
    """With probability `prob`, an RGB uint8 image as greyscale in its 3 channels (PIL's luma,
    as Grayscale(3)); an (H, W) or one-channel image is returned unchanged."""

    def __init__(self, prob: float = 0.1) -> None:
        self.prob = _probability(prob, "RandomGrayscale")
        self._seed_rng()

    def _check(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomGrayscale")
        if image.ndim == 2 or image.shape[2] == 1:
            return image
        return rgb_image(image, "RandomGrayscale", False)

    def _act(self, image: np.ndarray) -> np.ndarray:
        return image if image.ndim == 2 or image.shape[2] == 1 else to_grayscale(image, 3)


class RandomPosterize(RandomOperation):
    """Posterize a uint8 image to a number of bits drawn uniformly from `bits`: an int in
    [1, 8] (always that many) or (min, max) within [1, 8]."""

    def __init__(self, bits: int | Sequence[int] = (8, 8)) -> None:
        values = [bits] * 2 if isinstance(bits, int) and not isinstance(bits, bool) else bits
        if not isinstance(values, (list, tuple)) or len(values) != 2 or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise TypeError(f"For 'RandomPosterize', the 'bits' should be an int or a sequence of "
                            f"two ints (min, max), but got {bits!r}.")
        if not 1 <= values[0] <= values[1] <= 8:
            raise ValueError(f"For 'RandomPosterize', the 'bits' should satisfy 1 <= min <= max "
                             f"<= 8, but got {bits!r}.")
        self.bits = (int(values[0]), int(values[1]))
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "RandomPosterize"), "RandomPosterize", False)
        return posterize(image, int(self._rng.integers(self.bits[0], self.bits[1] + 1)))


class RandomSolarize(RandomOperation):
    """Solarize by a sub-range of `threshold` (min, max) drawn per image: two ints uniform in
    [min, max], sorted; values in that sub-range are inverted (equal ends: every value
    >= it)."""

    def __init__(self, threshold: Sequence[int] = (0, 255)) -> None:
        if not isinstance(threshold, (list, tuple)):
            raise TypeError(f"For 'RandomSolarize', the 'threshold' should be a tuple (min, max), "
                            f"but got {threshold!r}.")
        lo, hi = threshold_range(threshold, "RandomSolarize")
        if lo != int(lo) or hi != int(hi):
            raise TypeError(f"For 'RandomSolarize', the 'threshold' should be two ints, but got "
                            f"{threshold!r}.")
        self.threshold = (int(lo), int(hi))
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "RandomSolarize"), "RandomSolarize", False)
        a, b = sorted(int(v) for v in self._rng.integers(self.threshold[0],
                                                         self.threshold[1] + 1, size=2))
        return solarize(image, a, 255 if a == b else b)
