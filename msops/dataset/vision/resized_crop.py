"""`RandomResizedCrop` and `RandomCropDecodeResize`: the Inception-style random crop of
ImageNet training (MindSpore's, as torchvision's).

Up to `max_attempts` times, draw an area fraction s ~ U(scale) and an aspect ratio
r = exp(U(log ratio)); the crop is w = round(sqrt(s * H * W * r)) wide and
h = round(w / r) high (at least 1), and is taken, at a uniformly drawn position, as soon
as it fits in the image. When no draw fits, the fallback is the central crop of the
whole image, cut to the nearest allowed aspect ratio when the image's own lies outside
`ratio`. The crop is then resized to `size`.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation, as_array
from msops.dataset.vision.decode import decode_image
from msops.dataset.vision.utils import Inter, check_image, check_inter, image_size, resize_image

__all__ = ["RandomResizedCrop", "RandomCropDecodeResize", "random_crop_box"]


def _round(x: float) -> int:
    """Half away from zero, as C++ std::round (Python's round is half to even)."""
    return int(math.floor(x + 0.5))


def random_crop_box(height: int, width: int, scale: tuple, ratio: tuple, max_attempts: int,
                    rng: np.random.Generator) -> tuple[int, int, int, int]:
    """(top, left, crop height, crop width) of one random resized crop (module docstring)."""
    log_lo, log_hi = math.log(ratio[0]), math.log(ratio[1])
    for _ in range(max_attempts):
        area = height * width * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(log_lo, log_hi))
        crop_w = max(_round(math.sqrt(area * aspect)), 1)
        crop_h = max(_round(crop_w / aspect), 1)
        if crop_w <= width and crop_h <= height:
            top = int(rng.integers(height - crop_h + 1))
            left = int(rng.integers(width - crop_w + 1))
            return top, left, crop_h, crop_w
    aspect = width / height
    if aspect < ratio[0]:               # too tall: full width, the tallest allowed height
        crop_w, crop_h = width, _round(width / ratio[0])
    elif aspect > ratio[1]:             # too wide: full height, the widest allowed width
        crop_w, crop_h = _round(height * ratio[1]), height
    else:
        crop_w, crop_h = width, height
    return _round((height - crop_h) / 2), _round((width - crop_w) / 2), crop_h, crop_w


def _range(value: Any, arg: str, op: str, positive: bool) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"For '{op}', the '{arg}' should be a list or tuple of two numbers, but "
                        f"got {type(value).__name__}: {value!r}.")
    if len(value) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                  for v in value):
        raise TypeError(f"For '{op}', the '{arg}' should be two numbers (min, max), but got "
                        f"{value!r}.")
    lo, hi = float(value[0]), float(value[1])
    if lo < 0 or (positive and lo <= 0) or lo > hi:
        bound = "0 < min <= max" if positive else "0 <= min <= max"
        raise ValueError(f"For '{op}', the '{arg}' should be (min, max) with {bound}, but got "
                         f"{value!r}.")
    return lo, hi


class RandomResizedCrop(RandomOperation):
    """A random crop (area fraction in `scale`, aspect ratio in `ratio`; module docstring)
    resized to `size` ((height, width), or an int: a square) with `interpolation`
    (Inter.BILINEAR or Inter.NEAREST)."""

    def __init__(self, size: int | Sequence[int], scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: Inter = Inter.BILINEAR, max_attempts: int = 10) -> None:
        op = type(self).__name__
        self.size = image_size(size, op)
        self.scale = _range(scale, "scale", op, positive=False)
        self.ratio = _range(ratio, "ratio", op, positive=True)
        self.interpolation = check_inter(interpolation, op)
        self.max_attempts = validator.check_positive_int(max_attempts, "max_attempts", op)
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        """One image, or several of the same size (an image and its mask, ...) cut by the
        same crop."""
        op = type(self).__name__
        if not inputs:
            raise TypeError(f"For '{op}', the input should be one or more images, but got none.")
        images = [check_image(as_array(x, op), op) for x in inputs]
        sizes = sorted({im.shape[:2] for im in images})
        if len(sizes) > 1:
            raise ValueError(f"For '{op}', the input images should have the same size to be "
                             f"cropped alike, but got sizes {sizes}.")
        out = self._crop_all(images)
        return out[0] if len(out) == 1 else tuple(out)

    def _crop_all(self, images: list) -> list:
        h, w = images[0].shape[:2]
        top, left, ch, cw = random_crop_box(h, w, self.scale, self.ratio, self.max_attempts,
                                            self._rng)
        out = []
        for image in images:
            crop = image[top:top + ch, left:left + cw]
            out.append(crop.copy() if (ch, cw) == self.size else
                       resize_image(crop, self.size[0], self.size[1], self.interpolation))
        return out


class RandomCropDecodeResize(RandomResizedCrop):
    """`Decode` then `RandomResizedCrop` in one step: encoded image bytes (as
    `ImageFolderDataset` gives them) -> a random crop resized to `size`, (H, W, 3) uint8."""

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != 1:
            raise TypeError(f"For 'RandomCropDecodeResize', the input should be one encoded "
                            f"image, but got {len(inputs)}.")
        return self._crop_all([decode_image(inputs[0], "RandomCropDecodeResize")])[0]
