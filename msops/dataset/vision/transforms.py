"""`mindspore.dataset.vision` transforms on numpy images: value ops (Rescale, Normalize),
layout ops (HWC2CHW, ToTensor) and geometric ops (CenterCrop, RandomCrop, Pad, flips,
Resize). Inputs are (H, W) or (H, W, C) arrays (HWC, as MindSpore's readers give them);
random ops draw from the dataset seed (see msops.dataset.transforms.base)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation, TensorOperation
from msops.dataset.transforms.transforms import to_np_dtype
from msops.dataset.vision.utils import (Border, Inter, check_image, check_inter, image_size,
                                        pad_image, resize_image)

__all__ = ["Rescale", "Normalize", "HWC2CHW", "ToTensor", "CenterCrop", "RandomCrop", "Pad",
           "RandomHorizontalFlip", "RandomVerticalFlip", "Resize"]


def _number(value: Any, arg: str, op: str) -> float:
    validator.check_value_type(arg, value, (int, float), op)
    return float(value)


def _probability(prob: Any, op: str) -> float:
    prob = _number(prob, "prob", op)
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"For '{op}', the 'prob' should be in [0.0, 1.0], but got {prob}.")
    return prob


def _padding(padding: Any, op: str) -> tuple[int, int, int, int]:
    """MindSpore's `padding` -> (top, bottom, left, right): an int (every side), two ints
    (left/right, top/bottom) or four (left, top, right, bottom)."""
    values = [padding] if isinstance(padding, int) and not isinstance(padding, bool) else padding
    if not isinstance(values, (list, tuple)) or len(values) not in (1, 2, 4) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ValueError(f"For '{op}', the 'padding' should be a non-negative int or a sequence "
                         f"of 2 or 4 non-negative ints, but got {padding!r}.")
    if len(values) == 1:
        return values[0], values[0], values[0], values[0]
    if len(values) == 2:
        return values[1], values[1], values[0], values[0]
    left, top, right, bottom = values
    return top, bottom, left, right


def _fill(fill_value: Any, op: str) -> int | tuple:
    """A fill value: an int in [0, 255] or three of them (one per RGB channel)."""
    values = [fill_value] if isinstance(fill_value, int) and not isinstance(fill_value, bool) \
        else fill_value
    if not isinstance(values, (list, tuple)) or len(values) not in (1, 3) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in values):
        raise ValueError(f"For '{op}', the 'fill_value' should be an int in [0, 255] or a tuple "
                         f"of three, but got {fill_value!r}.")
    return fill_value if isinstance(fill_value, int) else tuple(fill_value)


def _border(mode: Any, op: str) -> Border:
    if not isinstance(mode, Border):
        raise TypeError(f"For '{op}', the 'padding_mode' should be a Border, but got {mode!r}.")
    return mode


def _pad(image: np.ndarray, pads: tuple, mode: Border, fill: Any, op: str) -> np.ndarray:
    if isinstance(fill, tuple) and mode is Border.CONSTANT and \
            (image.ndim != 3 or image.shape[2] != 3):
        raise ValueError(f"For '{op}', a 'fill_value' of three values needs a 3-channel image, "
                         f"but got shape {image.shape}.")
    return pad_image(image, *pads, mode, fill)


class Rescale(TensorOperation):
    """`image * rescale + shift`, as float32 (e.g. Rescale(1 / 255, 0) maps uint8 to [0, 1])."""

    def __init__(self, rescale: float, shift: float) -> None:
        self.rescale = _number(rescale, "rescale", "Rescale")
        self.shift = _number(shift, "shift", "Rescale")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        if array.dtype.kind not in "biuf":
            raise TypeError(f"For 'Rescale', the input should be numeric, but got dtype "
                            f"{array.dtype}.")
        return (array.astype(np.float32) * np.float32(self.rescale) +
                np.float32(self.shift)).astype(np.float32)


class Normalize(TensorOperation):
    """`(image - mean[c]) / std[c]` per channel c, as float32: channels last (`is_hwc`) or
    first; one mean/std value serves every channel (and an (H, W) image)."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_hwc: bool = True) -> None:
        op = type(self).__name__
        self.mean = self._values(mean, "mean", lambda v: 0.0 <= v <= 255.0, "[0.0, 255.0]", op)
        self.std = self._values(std, "std", lambda v: 0.0 < v <= 255.0, "(0.0, 255.0]", op)
        if len(self.mean) != len(self.std):
            raise ValueError(f"For '{op}', the 'mean' and 'std' should have the same length, "
                             f"but got {len(self.mean)} and {len(self.std)}.")
        self.is_hwc = validator.check_bool("is_hwc", is_hwc, op)

    @staticmethod
    def _values(values: Any, arg: str, ok: Any, bounds: str, op: str) -> list:
        if not isinstance(values, (list, tuple)) or not values:
            raise TypeError(f"For '{op}', the '{arg}' should be a non-empty list or tuple, "
                            f"but got {values!r}.")
        out = [_number(v, arg, op) for v in values]
        for v in out:
            if not ok(v):
                raise ValueError(f"For '{op}', every '{arg}' value should be in {bounds}, "
                                 f"but got {v}.")
        return out

    def _apply(self, array: np.ndarray) -> np.ndarray:
        op = type(self).__name__
        image = check_image(array, op)
        channels = 1 if image.ndim == 2 else image.shape[2 if self.is_hwc else 0]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"For '{op}', the 'mean' and 'std' should have 1 or {channels} "
                             f"values (the image's channels), but got {len(self.mean)}.")
        shape = (-1,) if self.is_hwc or image.ndim == 2 else (-1, 1, 1)
        mean = np.asarray(self.mean, np.float32).reshape(shape)
        std = np.asarray(self.std, np.float32).reshape(shape)
        return ((image.astype(np.float32) - mean) / std).astype(np.float32)


class HWC2CHW(TensorOperation):
    """(H, W, C) -> (C, H, W); an (H, W) image is returned unchanged."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "HWC2CHW")
        return image if image.ndim == 2 else np.ascontiguousarray(image.transpose(2, 0, 1))


class ToTensor(TensorOperation):
    """(H, W, C) in [0, 255] -> (C, H, W) in [0.0, 1.0] of `output_type` (an (H, W) image
    gives (1, H, W))."""

    def __init__(self, output_type: Any = np.float32) -> None:
        self.output_type = to_np_dtype(output_type, "ToTensor", "output_type")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "ToTensor")
        image = image[..., None] if image.ndim == 2 else image
        return (image.transpose(2, 0, 1).astype(np.float64) / 255.0).astype(self.output_type)


class CenterCrop(TensorOperation):
    """The central `size` ((height, width), or an int: a square) crop; an image smaller than
    that is first padded with zeros around it (as MindSpore)."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = image_size(size, "CenterCrop")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "CenterCrop")
        (ch, cw), (h, w) = self.size, image.shape[:2]
        ph, pw = max(ch - h, 0), max(cw - w, 0)
        # an odd shortfall puts the extra row / column at the top / left (as MindSpore)
        image = pad_image(image, ph - ph // 2, ph // 2, pw - pw // 2, pw // 2, Border.CONSTANT, 0)
        h, w = image.shape[:2]
        top, left = (h - ch) // 2, (w - cw) // 2
        return image[top:top + ch, left:left + cw].copy()


class Pad(TensorOperation):
    """Pad the image's borders: `padding` an int (every side), (left/right, top/bottom) or
    (left, top, right, bottom); `padding_mode` a Border (CONSTANT fills `fill_value`, an
    int or one per RGB channel)."""

    def __init__(self, padding: int | Sequence[int], fill_value: int | tuple = 0,
                 padding_mode: Border = Border.CONSTANT) -> None:
        self.padding = _padding(padding, "Pad")
        self.fill_value = _fill(fill_value, "Pad")
        self.padding_mode = _border(padding_mode, "Pad")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return _pad(check_image(array, "Pad"), self.padding, self.padding_mode, self.fill_value,
                    "Pad")


class RandomCrop(RandomOperation):
    """A `size` crop at a random position, after padding by `padding` (as `Pad`) and, with
    `pad_if_needed`, by the shortfall on both sides of a dim smaller than the crop."""

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill_value: int | tuple = 0,
                 padding_mode: Border = Border.CONSTANT) -> None:
        self.size = image_size(size, "RandomCrop")
        self.padding = (0, 0, 0, 0) if padding is None else _padding(padding, "RandomCrop")
        self.pad_if_needed = validator.check_bool("pad_if_needed", pad_if_needed, "RandomCrop")
        self.fill_value = _fill(fill_value, "RandomCrop")
        self.padding_mode = _border(padding_mode, "RandomCrop")
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomCrop")
        image = _pad(image, self.padding, self.padding_mode, self.fill_value, "RandomCrop")
        (ch, cw), (h, w) = self.size, image.shape[:2]
        if self.pad_if_needed and (h < ch or w < cw):
            dh, dw = max(ch - h, 0), max(cw - w, 0)
            image = _pad(image, (dh, dh, dw, dw), self.padding_mode, self.fill_value,
                         "RandomCrop")
            h, w = image.shape[:2]
        if h < ch or w < cw:
            raise ValueError(f"For 'RandomCrop', the crop 'size' {self.size} should fit in the "
                             f"(padded) image, but got image size {(h, w)}; pad it or set "
                             f"pad_if_needed=True.")
        top = int(self._rng.integers(h - ch + 1))
        left = int(self._rng.integers(w - cw + 1))
        return image[top:top + ch, left:left + cw].copy()


class RandomHorizontalFlip(RandomOperation):
    """Mirror the image left-right with probability `prob`."""
    axis = 1

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = _probability(prob, type(self).__name__)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, type(self).__name__)
        if self._rng.random() < self.prob:
            return np.flip(image, self.axis).copy()
        return image


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror the image top-bottom with probability `prob`."""
    axis = 0


class Resize(TensorOperation):
    """Resize to `size`: (height, width), or an int: the shorter side becomes `size` and the
    other keeps the aspect ratio (floor(long * size / short)). `interpolation`
    Inter.LINEAR (bilinear, pixel centres aligned as OpenCV) or Inter.NEAREST (OpenCV's
    floor(dst * scale)); integer images are rounded to nearest, keeping their dtype.
    CUBIC, AREA, PILCUBIC and ANTIALIAS are not implemented (NotImplementedError)."""

    def __init__(self, size: int | Sequence[int], interpolation: Inter = Inter.LINEAR) -> None:
        self.size = size if isinstance(size, int) and not isinstance(size, bool) else None
        if self.size is None:
            self.size = image_size(size, "Resize")
        elif size <= 0:
            raise ValueError(f"For 'Resize', the 'size' should be a positive int or a sequence "
                             f"of two positive ints (height, width), but got {size!r}.")
        self.interpolation = check_inter(interpolation, "Resize")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "Resize")
        h, w = image.shape[:2]
        if isinstance(self.size, int):
            # float32 arithmetic, as MindSpore computes the long side
            if h < w:
                out = (self.size, int(np.floor(np.float32(w) / np.float32(h) *
                                               np.float32(self.size))))
            else:
                out = (int(np.floor(np.float32(h) / np.float32(w) * np.float32(self.size))),
                       self.size)
        else:
            out = self.size
        if out == (h, w):
            return image
        return resize_image(image, out[0], out[1], self.interpolation)
