"""`mindspore.dataset.vision` colour transforms on numpy (H, W[, C]) images: brightness,
contrast, saturation, hue, gamma and sharpness adjustment, inversion, posterizing,
solarizing, histogram equalization, auto-contrast and greyscale conversion.

The adjustments are MindSpore's (OpenCV's) arithmetic on numpy images: a blend
`degenerate * (1 - factor) + image * factor` computed in floating point, then, for uint8
images, rounded to nearest and clipped to [0, 255] (float images are not clipped).
`AutoContrast`, `Posterize`, `Solarize`, `Invert` and `Grayscale` are PIL's ImageOps
operations, which MindSpore's define itself by.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import TensorOperation
from msops.dataset.vision.transforms import _number
from msops.dataset.vision.utils import cast_like, check_image

__all__ = ["AdjustBrightness", "AdjustContrast", "AdjustSaturation", "AdjustHue",
           "AdjustGamma", "AdjustSharpness", "Invert", "Posterize", "Solarize", "Equalize",
           "AutoContrast", "Grayscale", "adjust", "blend"]


def factor(value: Any, arg: str, op: str) -> float:
    """A non-negative enhancement factor."""
    value = _number(value, arg, op)
    if value < 0:
        raise ValueError(f"For '{op}', the '{arg}' should be non-negative, but got {value}.")
    return value


def rgb_image(array: np.ndarray, op: str, float_ok: bool = True) -> np.ndarray:
    """An (H, W, 3) RGB image, uint8 (or float when `float_ok`)."""
    image = check_image(array, op)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"For '{op}', the input should be an RGB image of shape <H, W, 3>, but "
                         f"got shape {image.shape}.")
    return uint8_or_float(image, op, float_ok)


def uint8_or_float(image: np.ndarray, op: str, float_ok: bool = True) -> np.ndarray:
    if image.dtype != np.uint8 and not (float_ok and image.dtype.kind == "f"):
        want = "uint8 or float" if float_ok else "uint8"
        raise TypeError(f"For '{op}', the input should be a {want} image, but got dtype "
                        f"{image.dtype}.")
    return image


def blend(degenerate: Any, image: np.ndarray, alpha: float) -> np.ndarray:
    """`degenerate * (1 - alpha) + image * alpha` in the image's dtype (`cast_like`)."""
    out = np.asarray(degenerate, np.float64) * (1.0 - alpha) + image.astype(np.float64) * alpha
    return cast_like(out, image.dtype)


def gray(image: np.ndarray) -> np.ndarray:
    """OpenCV's RGB -> grey (H, W): 0.299 R + 0.587 G + 0.114 B, for uint8 in OpenCV's
    14-bit fixed point with rounding."""
    if image.dtype == np.uint8:
        x = image.astype(np.int64)
        return ((x[..., 0] * 4899 + x[..., 1] * 9617 + x[..., 2] * 1868 + 8192) >> 14
                ).astype(np.uint8)
    return (image[..., 0] * 0.299 + image[..., 1] * 0.587 + image[..., 2] * 0.114
            ).astype(image.dtype)


def adjust(kind: str, image: np.ndarray, value: float) -> np.ndarray:
    """One colour adjustment by name (brightness / contrast / saturation / hue / sharpness):
    the shared kernel of the Adjust* and random colour transforms."""
    if kind == "brightness":
        return blend(0.0, image, value)
    if kind == "contrast":
        mean = float(np.mean(gray(image), dtype=np.float64))
        return blend(np.rint(mean) if image.dtype == np.uint8 else mean, image, value)
    if kind == "saturation":
        return blend(gray(image)[..., None], image, value)
    if kind == "hue":
        return _shift_hue(image, value)
    if kind == "sharpness":
        return blend(_smooth(image), image, value)
    raise ValueError(f"unknown colour adjustment {kind!r}")


def _shift_hue(image: np.ndarray, hue: float) -> np.ndarray:
    """Rotate the hue by `hue` turns (HSV in exact float arithmetic)."""
    scale = 255.0 if image.dtype == np.uint8 else 1.0
    rgb = image.astype(np.float64) / scale
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    maxc, minc = rgb.max(-1), rgb.min(-1)
    v, delta = maxc, maxc - minc
    s = np.where(maxc > 0, delta / np.where(maxc > 0, maxc, 1.0), 0.0)
    d = np.where(delta > 0, delta, 1.0)
    h = np.where(maxc == r, (g - b) / d, np.where(maxc == g, 2.0 + (b - r) / d, 4.0 + (r - g) / d))
    h = np.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    h = (h + hue) % 1.0
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices = [np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v),
                                         (v, p, q))]
    out = np.select([(i == k)[..., None] for k in range(6)], choices)
    return cast_like(out * scale, image.dtype)


def _smooth(image: np.ndarray) -> np.ndarray:
    """The 3x3 smoothing of sharpness adjustment, kernel [[1,1,1],[1,5,1],[1,1,1]] / 13 (PIL's
    SMOOTH, as MindSpore and torchvision); the border rows and columns keep their pixels."""
    x = image.astype(np.float64)
    out = x.copy()
    h, w = image.shape[:2]
    if h > 2 and w > 2:
        acc = 4.0 * x[1:-1, 1:-1]
        for dy in range(3):
            for dx in range(3):
                acc = acc + x[dy:dy + h - 2, dx:dx + w - 2]
        out[1:-1, 1:-1] = acc / 13.0
    return cast_like(out, image.dtype).astype(np.float64)


class AdjustBrightness(TensorOperation):
    """`image * brightness_factor` (0 gives black, 1 the image); uint8 rounded and clipped."""

    def __init__(self, brightness_factor: float) -> None:
        self.brightness_factor = factor(brightness_factor, "brightness_factor",
                                        "AdjustBrightness")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "AdjustBrightness"), "AdjustBrightness")
        return adjust("brightness", image, self.brightness_factor)


class AdjustContrast(TensorOperation):
    """Blend an RGB image with its mean grey level (0 gives flat grey, 1 the image)."""

    def __init__(self, contrast_factor: float) -> None:
        self.contrast_factor = factor(contrast_factor, "contrast_factor", "AdjustContrast")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return adjust("contrast", rgb_image(array, "AdjustContrast"), self.contrast_factor)


class AdjustSaturation(TensorOperation):
    """Blend an RGB image with its greyscale version (0 gives grey, 1 the image)."""

    def __init__(self, saturation_factor: float) -> None:
        self.saturation_factor = factor(saturation_factor, "saturation_factor",
                                        "AdjustSaturation")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return adjust("saturation", rgb_image(array, "AdjustSaturation"),
                      self.saturation_factor)


class AdjustHue(TensorOperation):
    """Rotate an RGB image's hue by `hue_factor` turns, in [-0.5, 0.5] (float images are
    taken in [0, 1])."""

    def __init__(self, hue_factor: float) -> None:
        self.hue_factor = _number(hue_factor, "hue_factor", "AdjustHue")
        if not -0.5 <= self.hue_factor <= 0.5:
            raise ValueError(f"For 'AdjustHue', the 'hue_factor' should be in [-0.5, 0.5], but "
                             f"got {self.hue_factor}.")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return adjust("hue", rgb_image(array, "AdjustHue"), self.hue_factor)


class AdjustGamma(TensorOperation):
    """Gamma correction: uint8 `255 * gain * (image / 255) ** gamma` (rounded, clipped),
    float `gain * image ** gamma`."""

    def __init__(self, gamma: float, gain: float = 1.0) -> None:
        self.gamma = factor(gamma, "gamma", "AdjustGamma")
        self.gain = _number(gain, "gain", "AdjustGamma")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "AdjustGamma"), "AdjustGamma")
        if image.dtype == np.uint8:
            lut = cast_like(255.0 * self.gain * (np.arange(256) / 255.0) ** self.gamma, np.uint8)
            return lut[image]
        return (self.gain * image.astype(np.float64) ** self.gamma).astype(image.dtype)


class AdjustSharpness(TensorOperation):
    """Blend with a 3x3 smoothed image: 0 blurs, 1 gives the image, 2 sharpens."""

    def __init__(self, sharpness_factor: float) -> None:
        self.sharpness_factor = factor(sharpness_factor, "sharpness_factor", "AdjustSharpness")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "AdjustSharpness"), "AdjustSharpness")
        return adjust("sharpness", image, self.sharpness_factor)


class Invert(TensorOperation):
    """`255 - image` (every channel)."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "Invert"), "Invert")
        return (255 - image).astype(image.dtype)


def posterize(image: np.ndarray, bits: int) -> np.ndarray:
    """Keep the `bits` high bits of each uint8 value."""
    return image & np.uint8((0xFF << (8 - bits)) & 0xFF)


class Posterize(TensorOperation):
    """Keep the `bits` (0..8) most significant bits of every uint8 value."""

    def __init__(self, bits: int) -> None:
        self.bits = validator.check_int_range(bits, 0, 8, validator.Rel.INC_BOTH, "bits",
                                              "Posterize")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return posterize(uint8_or_float(check_image(array, "Posterize"), "Posterize", False),
                         self.bits)


def threshold_range(threshold: Any, op: str) -> tuple[float, float]:
    """`threshold` a number t (the range [t, 255]) or (min, max), within [0, 255]."""
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        values = (float(threshold), 255.0)
    elif isinstance(threshold, (list, tuple)) and len(threshold) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in threshold):
        values = (float(threshold[0]), float(threshold[1]))
    else:
        raise TypeError(f"For '{op}', the 'threshold' should be a number or a sequence of two "
                        f"numbers (min, max), but got {threshold!r}.")
    if not 0 <= values[0] <= values[1] <= 255:
        raise ValueError(f"For '{op}', the 'threshold' should satisfy 0 <= min <= max <= 255, but "
                         f"got {threshold!r}.")
    return values


def solarize(image: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Invert (255 - v) the values in [lo, hi]."""
    return np.where((image >= lo) & (image <= hi), 255 - image, image).astype(image.dtype)


class Solarize(TensorOperation):
    """Invert the pixels whose value is in the `threshold` range: a number t means [t, 255],
    (min, max) the closed range (min == max: every value >= min)."""

    def __init__(self, threshold: float | Sequence[float]) -> None:
        self.threshold = threshold_range(threshold, "Solarize")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "Solarize"), "Solarize")
        lo, hi = self.threshold
        return solarize(image, lo, 255.0 if lo == hi else hi)


def equalize(image: np.ndarray) -> np.ndarray:
    """OpenCV's equalizeHist on each channel of a uint8 image: the lookup table maps value j
    to round(255 * (cdf(j) - h[first]) / (N - h[first])), first the lowest present value."""
    channels = image[..., None] if image.ndim == 2 else image
    out = np.empty_like(channels)
    for c in range(channels.shape[2]):
        values = channels[..., c]
        hist = np.bincount(values.ravel(), minlength=256)
        first = int(np.flatnonzero(hist)[0])
        if hist[first] == values.size:          # one value: unchanged (OpenCV sets it back)
            out[..., c] = values
            continue
        cdf = np.cumsum(hist) - hist[first]
        lut = np.clip(np.rint(cdf * (255.0 / (values.size - hist[first]))), 0, 255)
        lut[:first + 1] = 0
        out[..., c] = lut.astype(np.uint8)[values]
    return out.reshape(image.shape)


class Equalize(TensorOperation):
    """Histogram equalization of each channel of a uint8 image (OpenCV's equalizeHist)."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return equalize(uint8_or_float(check_image(array, "Equalize"), "Equalize", False))


def check_cutoff(cutoff: Any, op: str) -> float:
    cutoff = _number(cutoff, "cutoff", op)
    if not 0.0 <= cutoff < 50.0:
        raise ValueError(f"For '{op}', the 'cutoff' should be in [0.0, 50.0), but got {cutoff}.")
    return cutoff


def check_ignore(ignore: Any, op: str) -> list | None:
    if ignore is None:
        return None
    values = [ignore] if isinstance(ignore, int) and not isinstance(ignore, bool) else ignore
    if not isinstance(values, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in values):
        raise ValueError(f"For '{op}', the 'ignore' should be None, an int in [0, 255] or a "
                         f"sequence of them, but got {ignore!r}.")
    return list(values)


def autocontrast(image: np.ndarray, cutoff: float, ignore: list | None) -> np.ndarray:
    """PIL's ImageOps.autocontrast on each channel: drop `cutoff` percent of the pixels at
    each end of the histogram (values in `ignore` not counted), then stretch the lowest
    to highest value left to [0, 255] (lut = int(v * scale + offset))."""
    channels = image[..., None] if image.ndim == 2 else image
    out = np.empty_like(channels)
    for c in range(channels.shape[2]):
        values = channels[..., c]
        h = np.bincount(values.ravel(), minlength=256).astype(np.int64)
        if ignore:
            h[ignore] = 0
        n = int(h.sum())
        h = _cut(h, int(n * cutoff // 100))
        h = _cut(h[::-1], int(n * cutoff // 100))[::-1]
        present = np.flatnonzero(h)
        if present.size == 0 or present[-1] <= present[0]:
            out[..., c] = values
            continue
        lo, hi = int(present[0]), int(present[-1])
        scale = 255.0 / (hi - lo)
        lut = np.clip(np.trunc(np.arange(256) * scale - lo * scale), 0, 255).astype(np.uint8)
        out[..., c] = lut[values]
    return out.reshape(image.shape)


def _cut(hist: np.ndarray, cut: int) -> np.ndarray:
    """Remove `cut` counts from the low end of a histogram."""
    if cut <= 0:
        return hist
    below = np.cumsum(hist)
    hist = hist.copy()
    keep = int(np.searchsorted(below, cut, side="right"))     # first bin with cdf > cut
    hist[:keep] = 0
    if keep < hist.size:
        hist[keep] = below[keep] - cut
    return hist


class AutoContrast(TensorOperation):
    """Stretch each channel so its lowest value becomes 0 and its highest 255, after cutting
    `cutoff` percent (in [0, 50)) of the pixels at both ends; `ignore` values (an int or a
    sequence) are left out of the histogram (PIL's ImageOps.autocontrast)."""

    def __init__(self, cutoff: float = 0.0, ignore: int | Sequence[int] | None = None) -> None:
        self.cutoff = check_cutoff(cutoff, "AutoContrast")
        self.ignore = check_ignore(ignore, "AutoContrast")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = uint8_or_float(check_image(array, "AutoContrast"), "AutoContrast", False)
        return autocontrast(image, self.cutoff, self.ignore)


def pil_gray(image: np.ndarray) -> np.ndarray:
    """PIL's "L" conversion of a uint8 RGB image, (R * 299 + G * 587 + B * 114) / 1000 in
    PIL's 16-bit fixed point with rounding, (H, W)."""
    x = image.astype(np.int64)
    return ((x[..., 0] * 19595 + x[..., 1] * 38470 + x[..., 2] * 7471 + 0x8000) >> 16
            ).astype(np.uint8)


def to_grayscale(image: np.ndarray, channels: int) -> np.ndarray:
    g = pil_gray(image)
    return g[..., None] if channels == 1 else np.repeat(g[..., None], 3, axis=2)


class Grayscale(TensorOperation):
    """A uint8 RGB image as greyscale (PIL's "L" luma), with `num_output_channels` 1
    ((H, W, 1)) or 3 (the grey value in every channel)."""

    def __init__(self, num_output_channels: int = 1) -> None:
        validator.check_int("num_output_channels", num_output_channels, "Grayscale")
        if num_output_channels not in (1, 3):
            raise ValueError(f"For 'Grayscale', the 'num_output_channels' should be 1 or 3, but "
                             f"got {num_output_channels}.")
        self.num_output_channels = num_output_channels

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return to_grayscale(rgb_image(array, "Grayscale", False), self.num_output_channels)
