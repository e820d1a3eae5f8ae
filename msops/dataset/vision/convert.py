"""Format conversions of `mindspore.dataset.vision`: colour-space conversion (ConvertColor
with ConvertMode, OpenCV's channel orders and grey weights), dtype casts (ToType), PIL
images (ToPIL), normalize-and-pad to four channels (NormalizePad) and cutting an image into
a grid of patches (SlicePatches with SliceMode)."""
from __future__ import annotations

from enum import IntEnum
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import TensorOperation
from msops.dataset.transforms.transforms import TypeCast
from msops.dataset.vision.color import gray
from msops.dataset.vision.decode import load_pil
from msops.dataset.vision.transforms import Normalize, _fill
from msops.dataset.vision.utils import Border, check_image, pad_image

__all__ = ["ConvertMode", "ConvertColor", "ToType", "ToPIL", "NormalizePad", "SliceMode",
           "SlicePatches"]


class ConvertMode(IntEnum):
    """The colour conversions of ConvertColor (OpenCV's names: source 2 target)."""
    COLOR_BGR2BGRA = 0
    COLOR_RGB2RGBA = 1
    COLOR_BGRA2BGR = 2
    COLOR_RGBA2RGB = 3
    COLOR_BGR2RGBA = 4
    COLOR_RGB2BGRA = 5
    COLOR_RGBA2BGR = 6
    COLOR_BGRA2RGB = 7
    COLOR_BGR2RGB = 8
    COLOR_RGB2BGR = 9
    COLOR_BGRA2RGBA = 10
    COLOR_RGBA2BGRA = 11
    COLOR_BGR2GRAY = 12
    COLOR_RGB2GRAY = 13
    COLOR_GRAY2BGR = 14
    COLOR_GRAY2RGB = 15
    COLOR_GRAY2BGRA = 16
    COLOR_GRAY2RGBA = 17
    COLOR_BGRA2GRAY = 18
    COLOR_RGBA2GRAY = 19


_CHANNELS = {"GRAY": 1, "BGR": 3, "RGB": 3, "BGRA": 4, "RGBA": 4}


class ConvertColor(TensorOperation):
    """Convert between the colour formats named by `convert_mode` (a ConvertMode):
    reordering channels, adding an opaque alpha (255, or 1.0 for float images), dropping
    it, or to grey (OpenCV's 0.299 R + 0.587 G + 0.114 B, an (H, W) image) and back."""

    def __init__(self, convert_mode: ConvertMode) -> None:
        if not isinstance(convert_mode, ConvertMode):
            raise TypeError(f"For 'ConvertColor', the 'convert_mode' should be a ConvertMode, but "
                            f"got {convert_mode!r}.")
        self.convert_mode = convert_mode

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "ConvertColor")
        src, dst = self.convert_mode.name[len("COLOR_"):].split("2")
        channels = 1 if image.ndim == 2 else image.shape[2]
        if channels != _CHANNELS[src]:
            raise ValueError(f"For 'ConvertColor', a {src} input of {self.convert_mode.name} "
                             f"should have {_CHANNELS[src]} channel(s), but got shape "
                             f"{image.shape}.")
        if src == "GRAY":
            plane = image if image.ndim == 2 else image[..., 0]
            rgb, alpha = np.repeat(plane[..., None], 3, axis=2), None
        else:
            rgb = image[..., :3] if src.startswith("RGB") else image[..., 2::-1]
            alpha = image[..., 3:] if src.endswith("A") else None
        if dst == "GRAY":
            return gray(np.ascontiguousarray(rgb))
        out = rgb if dst.startswith("RGB") else rgb[..., ::-1]
        if dst.endswith("A"):
            if alpha is None:
                opaque = 255 if image.dtype.kind in "iu" else 1.0
                alpha = np.full(image.shape[:2] + (1,), opaque, image.dtype)
            out = np.concatenate([out, alpha], axis=2)
        return np.ascontiguousarray(out)


class ToType(TypeCast):
    """Cast the image to `data_type` (an msops dtype or a numpy dtype), as TypeCast."""


class ToPIL(TensorOperation):
    """A uint8 (H, W[, 1 | 3 | 4]) numpy image as a PIL image (L, RGB or RGBA); a PIL image
    passes unchanged."""

    def __call__(self, *inputs: Any) -> Any:
        image_module = load_pil()
        if len(inputs) == 1 and isinstance(inputs[0], image_module.Image):
            return inputs[0]
        return super().__call__(*inputs)

    def _apply(self, array: np.ndarray) -> Any:
        image = check_image(array, "ToPIL")
        if image.dtype != np.uint8 or (image.ndim == 3 and image.shape[2] not in (1, 3, 4)):
            raise TypeError(f"For 'ToPIL', the input should be a uint8 image with 1, 3 or 4 "
                            f"channels, but got shape {image.shape} and dtype {image.dtype}.")
        if image.ndim == 3 and image.shape[2] == 1:
            image = image[..., 0]
        return load_pil().fromarray(np.ascontiguousarray(image))


class NormalizePad(Normalize):
    """Normalize (as Normalize) a 3-channel image and append a fourth, zero channel, as
    `dtype` ("float32" or "float16")."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], dtype: str = "float32",
                 is_hwc: bool = True) -> None:
        super().__init__(mean, std, is_hwc)
        validator.check_string("dtype", dtype, ("float32", "float16"), "NormalizePad")
        self.dtype = dtype

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "NormalizePad")
        axis = 2 if self.is_hwc else 0
        if image.ndim != 3 or image.shape[axis] != 3:
            layout = "<H, W, 3>" if self.is_hwc else "<3, H, W>"
            raise ValueError(f"For 'NormalizePad', the input should have shape {layout}, but got "
                             f"{image.shape}.")
        out = super()._apply(image)
        pad = [(0, 0)] * 3
        pad[axis] = (0, 1)
        return np.pad(out, pad).astype(self.dtype)


class SliceMode(IntEnum):
    """How SlicePatches treats a size not divisible by the grid: PAD the bottom / right up
    to whole patches, or DROP the remainder."""
    PAD = 0
    DROP = 1


class SlicePatches(TensorOperation):
    """Cut the image into a `num_height` x `num_width` grid of equal patches, returned as a
    tuple in row-major order; `slice_mode` PAD fills the bottom / right remainder with
    `fill_value`, DROP discards it."""

    def __init__(self, num_height: int = 1, num_width: int = 1,
                 slice_mode: SliceMode = SliceMode.PAD, fill_value: int = 0) -> None:
        self.num_height = validator.check_positive_int(num_height, "num_height", "SlicePatches")
        self.num_width = validator.check_positive_int(num_width, "num_width", "SlicePatches")
        if not isinstance(slice_mode, SliceMode):
            raise TypeError(f"For 'SlicePatches', the 'slice_mode' should be a SliceMode, but got "
                            f"{slice_mode!r}.")
        self.slice_mode = slice_mode
        self.fill_value = _fill(fill_value, "SlicePatches")
        if not isinstance(self.fill_value, int):
            raise ValueError(f"For 'SlicePatches', the 'fill_value' should be an int in [0, 255], "
                             f"but got {fill_value!r}.")

    def _apply(self, array: np.ndarray) -> tuple:
        image = check_image(array, "SlicePatches")
        h, w = image.shape[:2]
        nh, nw = self.num_height, self.num_width
        if nh > h or nw > w:
            raise ValueError(f"For 'SlicePatches', the grid ({nh}, {nw}) should be no larger than "
                             f"the image {(h, w)}, but it is.")
        if self.slice_mode is SliceMode.PAD:
            ph, pw = -(-h // nh), -(-w // nw)
            image = pad_image(image, 0, ph * nh - h, 0, pw * nw - w, Border.CONSTANT,
                              self.fill_value)
        else:
            ph, pw = h // nh, w // nw
        return tuple(image[i * ph:(i + 1) * ph, j * pw:(j + 1) * pw].copy()
                     for i in range(nh) for j in range(nw))
