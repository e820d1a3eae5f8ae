"""Image layers, as `mindspore.nn`: CentralCrop, ImageGradients, PSNR, SSIM and MSSSIM
(MindSpore's arguments and defaults). SSIM's local statistics are a 'valid' Conv2D of each
channel with a normalised Gaussian window (MindSpore's `_create_window`); MSSSIM repeats
them over 2x2 average-pooled scales. Compositions of primitives, so they differentiate."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["CentralCrop", "ImageGradients", "PSNR", "SSIM", "MSSSIM"]


def _check_image(name: str, arg: str, x: Any, valid: Sequence[mstype.Type],
                 ranks: tuple = (4,)) -> tuple:
    """x is a Tensor of one of `valid` dtypes and one of `ranks`; returns its shape."""
    if not isinstance(x, Tensor) and not hasattr(x, "shape"):
        raise TypeError(f"For '{name}', the '{arg}' should be a Tensor, but got "
                        f"{type(x).__name__}.")
    validator.check_tensor_dtype_valid(arg, x.dtype, tuple(valid), name)
    shape = tuple(x.shape)
    if len(shape) not in ranks:
        forms = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"For '{name}', the '{arg}' should be {forms} (N, C, H, W), but got "
                         f"shape {list(shape)}.")
    return shape


def _check_pair(name: str, img1: Any, img2: Any, valid: Sequence[mstype.Type]) -> tuple:
    """img1 and img2: 4-D Tensors of one valid dtype and one shape."""
    shape = _check_image(name, "img1", img1, valid)
    _check_image(name, "img2", img2, valid)
    if img2.dtype != img1.dtype or tuple(img2.shape) != shape:
        raise TypeError(f"For '{name}', the 'img2' should have the dtype and shape of 'img1' "
                        f"({img1.dtype}, {list(shape)}), but got ({img2.dtype}, "
                        f"{list(img2.shape)}).")
    return shape


def _max_val(name: str, max_val: Any) -> float:
    validator.check_value_type("max_val", max_val, (int, float), name)
    if not max_val > 0 or not math.isfinite(max_val):
        raise ValueError(f"For '{name}', the 'max_val' should be a finite number > 0, but got "
                         f"{max_val}.")
    return float(max_val)


def _dtype_max(dtype: mstype.Type) -> float:
    """The largest value of an integer dtype (images scaled to [0, 1] by it); 1 for floats."""
    np_type = mstype.dtype_to_nptype(dtype)
    return float(np.iinfo(np_type).max) if np.issubdtype(np_type, np.integer) else 1.0


class CentralCrop(Cell):
    """`CentralCrop(central_fraction)`: the central region of image (C, H, W) or
    (N, C, H, W), a fraction in (0, 1] of its height and width (start
    int((size - size * fraction) / 2) on each side, as MindSpore's)."""

    def __init__(self, central_fraction: float) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("central_fraction", central_fraction, (float,), name)
        if not 0.0 < central_fraction <= 1.0:
            raise ValueError(f"For '{name}', the 'central_fraction' should be in (0.0, 1.0], "
                             f"but got {central_fraction}.")
        self.central_fraction = central_fraction
        self.slice = ops.StridedSlice()

    def construct(self, image: Any) -> Any:
        shape = _check_image(self.cls_name, "image", image, mstype.number_type, (3, 4))
        if self.central_fraction == 1.0:
            return image
        h, w = shape[-2:]
        top = int((float(h) - float(h * self.central_fraction)) / 2)
        left = int((float(w) - float(w * self.central_fraction)) / 2)
        lead = (0,) * (len(shape) - 2)
        return self.slice(image, lead + (top, left), shape[:-2] + (h - top, w - left),
                          (1,) * len(shape))

    def extend_repr(self) -> str:
        return f"central_fraction={self.central_fraction}"


class ImageGradients(Cell):
    """`ImageGradients()(images)`: (dy, dx) of images (N, C, H, W): the differences to the
    next row / column, zero in the last row / column (MindSpore's)."""

    def __init__(self) -> None:
        super().__init__()
        self.slice, self.sub, self.zeros = ops.StridedSlice(), ops.Sub(), ops.ZerosLike()
        self.concat = {2: ops.Concat(2), 3: ops.Concat(3)}

    def _diff(self, x: Any, shape: tuple, axis: int) -> Any:
        n, c, h, w = shape
        end = [n, c, h, w]
        if end[axis] == 1:
            return self.zeros(x)
        nxt_begin = [0, 0, 0, 0]
        nxt_begin[axis] = 1
        end[axis] -= 1
        head = self.slice(x, (0, 0, 0, 0), tuple(end), (1, 1, 1, 1))
        nxt = self.slice(x, tuple(nxt_begin), shape, (1, 1, 1, 1))
        last = [0, 0, 0, 0]
        last[axis] = shape[axis] - 1
        pad = self.zeros(self.slice(x, tuple(last), shape, (1, 1, 1, 1)))
        return self.concat[axis]((self.sub(nxt, head), pad))

    def construct(self, images: Any) -> Any:
        shape = _check_image(self.cls_name, "images", images, mstype.number_type)
        return self._diff(images, shape, 2), self._diff(images, shape, 3)


class PSNR(Cell):
    """`PSNR(max_val=1.0)(img1, img2)`: the peak signal-to-noise ratio of each image pair
    (N, C, H, W) -> (N,) float32: 10 * log10(max_val ** 2 / mse), computed in float32
    (inputs of any number dtype; identical images give inf)."""

    def __init__(self, max_val: float = 1.0) -> None:
        super().__init__()
        self.max_val = _max_val(self.cls_name, max_val)
        self.cast, self.sub, self.square = ops.Cast(), ops.Sub(), ops.Square()
        self.mean, self.log, self.mul = ops.ReduceMean(), ops.Log(), ops.Mul()
        self.div = ops.RealDiv()

    def construct(self, img1: Any, img2: Any) -> Any:
        _check_pair(self.cls_name, img1, img2, mstype.number_type)
        max_val = self.max_val
        a, b = self.cast(img1, mstype.float32), self.cast(img2, mstype.float32)
        mse = self.mean(self.square(self.sub(a, b)), (-3, -2, -1))
        ratio = self.div(Tensor(np.float32(max_val * max_val)), mse)
        return self.mul(self.log(ratio), 10.0 / math.log(10.0))

    def extend_repr(self) -> str:
        return f"max_val={self.max_val}"


def gaussian_window(size: int, sigma: float) -> np.ndarray:
    """MindSpore's SSIM window (1, 1, size, size): exp(-(x^2 + y^2) / (2 sigma^2)) over
    offsets -size//2 + 1 .. size//2 (Python floor division), normalised to sum 1."""
    y, x = np.mgrid[-size // 2 + 1:size // 2 + 1, -size // 2 + 1:size // 2 + 1]
    g = np.exp(-(x.astype(np.float64) ** 2 + y ** 2) / (2 * sigma ** 2))
    return (g / g.sum()).reshape(1, 1, size, size)


class _Similarity(Cell):
    """SSIM's arguments and its per-channel statistics (`_ssim_cs`)."""

    valid: tuple = ()

    def __init__(self, max_val: float, filter_size: int, filter_sigma: float, k1: float,
                 k2: float) -> None:
        super().__init__()
        name = self.cls_name
        self.max_val = _max_val(name, max_val)
        self.filter_size = validator.check_positive_int(filter_size, "filter_size", name)
        validator.check_value_type("filter_sigma", filter_sigma, (float,), name)
        if not filter_sigma > 0:
            raise ValueError(f"For '{name}', the 'filter_sigma' should be > 0, but got "
                             f"{filter_sigma}.")
        self.filter_sigma = filter_sigma
        self.k1 = validator.check_value_type("k1", k1, (float,), name)
        self.k2 = validator.check_value_type("k2", k2, (float,), name)
        self.window = gaussian_window(filter_size, filter_sigma)
        self.mean, self.conv, self.reshape = ops.ReduceMean(), ops.Conv2D(1, filter_size), \
            ops.Reshape()
        self.cast = ops.Cast()

    def _images(self, img1: Any, img2: Any) -> tuple:
        """The pair in float (float32 unless float64), scaled to [0, 1] for uint8, with the
        constants (c1, c2) of the scaled max_val."""
        _check_pair(self.cls_name, img1, img2, self.valid)
        scale = _dtype_max(img1.dtype)
        dtype = mstype.float64 if img1.dtype == mstype.float64 else mstype.float32
        a, b = self.cast(img1, dtype), self.cast(img2, dtype)
        if scale != 1.0:
            a, b = a * (1.0 / scale), b * (1.0 / scale)
        max_val = self.max_val / scale if scale != 1.0 else self.max_val
        return a, b, (self.k1 * max_val) ** 2, (self.k2 * max_val) ** 2

    def _ssim_cs(self, a: Any, b: Any, c1: float, c2: float) -> tuple:
        """(ssim, cs) per image and channel (N, C): the means of the SSIM and
        contrast-structure maps of a 'valid' Gaussian filter."""
        n, c, h, w = a.shape
        if h < self.filter_size or w < self.filter_size:
            raise ValueError(f"For '{self.cls_name}', the height and width of the images "
                             f"should be >= filter_size {self.filter_size} at every scale, "
                             f"but got {h} x {w}.")
        window = Tensor(self.window.astype(a.dtype.np_dtype))
        reshape = self.reshape

        def blur(x: Any) -> Any:
            return self.conv(reshape(x, (n * c, 1, h, w)), window)

        mu1, mu2 = blur(a), blur(b)
        mu1_sq, mu2_sq, mu12 = mu1 * mu1, mu2 * mu2, mu1 * mu2
        sigma1 = blur(a * a) - mu1_sq
        sigma2 = blur(b * b) - mu2_sq
        sigma12 = blur(a * b) - mu12
        v1 = sigma12 * 2.0 + c2
        v2 = sigma1 + sigma2 + c2
        ssim = ((mu12 * 2.0 + c1) * v1) / ((mu1_sq + mu2_sq + c1) * v2)
        cs = v1 / v2
        shape = (n, c, -1)
        return self.mean(reshape(ssim, shape), -1), self.mean(reshape(cs, shape), -1)

    def extend_repr(self) -> str:
        return (f"max_val={self.max_val}, filter_size={self.filter_size}, "
                f"filter_sigma={self.filter_sigma}, k1={self.k1}, k2={self.k2}")


class SSIM(_Similarity):
    """`SSIM(max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03)(img1, img2)`:
    the structural similarity of each image pair (N, C, H, W) (float16 or float32) -> (N,)
    float32: the mean over channels and 'valid' positions of
    ((2 mu1 mu2 + c1)(2 sigma12 + c2)) / ((mu1^2 + mu2^2 + c1)(sigma1^2 + sigma2^2 + c2)),
    c1 = (k1 max_val)^2, c2 = (k2 max_val)^2, the statistics under a Gaussian window."""

    valid = (mstype.float16, mstype.float32)

    def __init__(self, max_val: float = 1.0, filter_size: int = 11, filter_sigma: float = 1.5,
                 k1: float = 0.01, k2: float = 0.03) -> None:
        super().__init__(max_val, filter_size, filter_sigma, k1, k2)

    def construct(self, img1: Any, img2: Any) -> Any:
        a, b, c1, c2 = self._images(img1, img2)
        ssim, _ = self._ssim_cs(a, b, c1, c2)
        return self.mean(ssim, -1)


class MSSSIM(_Similarity):
    """`MSSSIM(max_val=1.0, power_factors=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333),
    filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03)(img1, img2)`: multi-scale SSIM of
    each pair (N, C, H, W) (float64, float32, float16 or uint8) -> (N,): over one scale per
    power factor (each 2x2 average-pooled from the last), the product of relu(cs) of the
    scales but the last and relu(ssim) of the last, each to its power factor, averaged
    over channels. The smallest scale must still hold the filter."""

    valid = (mstype.float64, mstype.float32, mstype.float16, mstype.uint8)

    def __init__(self, max_val: float = 1.0,
                 power_factors: Sequence[float] = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333),
                 filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                 k2: float = 0.03) -> None:
        super().__init__(max_val, filter_size, filter_sigma, k1, k2)
        name = self.cls_name
        validator.check_value_type("power_factors", power_factors, (tuple, list), name)
        if not power_factors or not all(isinstance(p, (int, float)) and
                                        not isinstance(p, bool) for p in power_factors):
            raise ValueError(f"For '{name}', the 'power_factors' should be a non-empty tuple "
                             f"or list of numbers, but got {power_factors!r}.")
        self.power_factors = tuple(float(p) for p in power_factors)
        self.pool, self.relu = ops.AvgPool(2, 2, "valid"), ops.ReLU()
        self.pow, self.prod = ops.Pow(), ops.ReduceProd()

    def construct(self, img1: Any, img2: Any) -> Any:
        a, b, c1, c2 = self._images(img1, img2)
        levels = []
        for i, _ in enumerate(self.power_factors):
            ssim, cs = self._ssim_cs(a, b, c1, c2)
            last = i == len(self.power_factors) - 1
            levels.append(self.relu(ssim if last else cs))
            if not last:
                a, b = self.pool(a), self.pool(b)
        stacked = ops.Stack(0)(tuple(levels))                # (levels, N, C)
        factors = np.asarray(self.power_factors).reshape(-1, 1, 1)
        weighted = self.pow(stacked, Tensor(factors.astype(stacked.dtype.np_dtype)))
        return self.mean(self.prod(weighted, 0), -1)

    def extend_repr(self) -> str:
        return super().extend_repr() + f", power_factors={self.power_factors}"
