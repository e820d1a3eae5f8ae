"""Geometric `mindspore.dataset.vision` transforms on numpy (H, W[, C]) images: rotation
(Rotate, RandomRotation), the random affine transform (RandomAffine), fixed crops (Crop,
ResizedCrop, FiveCrop, TenCrop), padding to a size (PadToSize) and the flips
(HorizontalFlip, VerticalFlip). Rotations and affine maps use PIL's geometry
(msops.dataset.vision.warp)."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation, TensorOperation
from msops.dataset.vision.transforms import _border, _fill, _pad, _probability
from msops.dataset.vision.utils import (Border, Inter, check_image, check_inter,
                                        check_warp_inter, image_size, resize_image)
from msops.dataset.vision.warp import (affine_matrix, check_fill, perspective_matrix,
                                       rotation_matrix, warp_affine)

__all__ = ["Rotate", "RandomRotation", "RandomAffine", "Perspective", "RandomPerspective",
           "Crop", "ResizedCrop", "FiveCrop", "TenCrop", "PadToSize", "HorizontalFlip",
           "VerticalFlip"]


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _pair_range(value: Any, arg: str, op: str, symmetric: bool, what: str) -> tuple:
    """A number v >= 0 (the range (-v, v) when `symmetric`) or a (min, max) sequence."""
    if _real(value) and symmetric:
        if value < 0:
            raise ValueError(f"For '{op}', the '{arg}' should be non-negative when a single "
                             f"number, but got {value}.")
        return -float(value), float(value)
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_real(v) for v in value):
        if value[0] > value[1]:
            raise ValueError(f"For '{op}', the '{arg}' should be (min, max) with min <= max, but "
                             f"got {value!r}.")
        return float(value[0]), float(value[1])
    raise TypeError(f"For '{op}', the '{arg}' should be {what}, but got {value!r}.")


def _center(center: Any, op: str) -> tuple[float, float] | None:
    if center is None:
        return None
    if not isinstance(center, (list, tuple)) or len(center) != 2 or \
            not all(_real(v) for v in center):
        raise TypeError(f"For '{op}', the 'center' should be None or a sequence (x, y) of two "
                        f"numbers, but got {center!r}.")
    return float(center[0]), float(center[1])


def rotate(image: np.ndarray, degrees: float, resample: Inter, expand: bool,
           center: tuple | None, fill: np.ndarray) -> np.ndarray:
    """PIL's Image.rotate of a numpy image: counter-clockwise by `degrees` about `center`
    (default the image centre (W / 2, H / 2)); `expand` grows the output to hold the whole
    rotated image, centred."""
    h, w = image.shape[:2]
    turn = degrees % 360.0
    if center is None and (turn in (0.0, 180.0) or
                           (turn in (90.0, 270.0) and (expand or h == w))):
        # exact quarter turns are transpositions (as PIL), not resampled
        return np.rot90(image, int(turn // 90)).copy()
    center = (w / 2.0, h / 2.0) if center is None else center
    forward = rotation_matrix(degrees, center)
    out_h, out_w = h, w
    if expand:
        corners = forward @ np.array([[0, w, w, 0], [0, 0, h, h], [1, 1, 1, 1]], np.float64)
        # rounded first so that float noise does not grow an exact edge by a pixel
        xs, ys = np.round(corners[0], 9), np.round(corners[1], 9)
        out_w = int(math.ceil(xs.max()) - math.floor(xs.min()))
        out_h = int(math.ceil(ys.max()) - math.floor(ys.min()))
        # keep the rotation centred in the larger canvas
        shift = np.array([[1.0, 0.0, (out_w - w) / 2.0], [0.0, 1.0, (out_h - h) / 2.0],
                          [0.0, 0.0, 1.0]])
        forward = shift @ forward
    # the inverse of a rotation is the opposite rotation: built directly, exact for quarter turns
    inverse = rotation_matrix(-degrees, center)
    if expand:
        inverse = inverse @ np.linalg.inv(shift)
    return warp_affine(image, inverse[:2], out_h, out_w, resample, fill)


class Rotate(TensorOperation):
    """Rotate by `degrees` counter-clockwise about `center` ((x, y); default the image centre),
    sampling with `resample` (Inter.NEAREST or BILINEAR); `expand` enlarges the output to
    hold the whole rotated image; uncovered pixels take `fill_value` (an int or RGB)."""

    def __init__(self, degrees: float, resample: Inter = Inter.NEAREST, expand: bool = False,
                 center: Sequence[float] | None = None, fill_value: int | tuple = 0) -> None:
        validator.check_value_type("degrees", degrees, (int, float), "Rotate")
        self.degrees = float(degrees)
        self.resample = check_warp_inter(resample, "Rotate")
        self.expand = validator.check_bool("expand", expand, "Rotate")
        self.center = _center(center, "Rotate")
        self.fill_value = _fill(fill_value, "Rotate")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "Rotate")
        return rotate(image, self.degrees, self.resample, self.expand, self.center,
                      check_fill(image, self.fill_value, "Rotate"))


class RandomRotation(RandomOperation):
    """Rotate (as Rotate) by an angle drawn uniformly from `degrees`: a number d >= 0 (the
    range (-d, d)) or (min, max)."""

    def __init__(self, degrees: float | Sequence[float], resample: Inter = Inter.NEAREST,
                 expand: bool = False, center: Sequence[float] | None = None,
                 fill_value: int | tuple = 0) -> None:
        op = "RandomRotation"
        self.degrees = _pair_range(degrees, "degrees", op, True,
                                   "a non-negative number or a sequence (min, max)")
        self.resample = check_warp_inter(resample, op)
        self.expand = validator.check_bool("expand", expand, op)
        self.center = _center(center, op)
        self.fill_value = _fill(fill_value, op)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomRotation")
        angle = float(self._rng.uniform(*self.degrees))
        return rotate(image, angle, self.resample, self.expand, self.center,
                      check_fill(image, self.fill_value, "RandomRotation"))


class RandomAffine(RandomOperation):
    """A random affine transform about the image centre: rotation (clockwise) drawn from
    `degrees` (d: (-d, d), or (min, max)); translation `translate` (tx_min, tx_max[, ty_min,
    ty_max]) fractions in [-1, 1] of the width / height; scale from `scale` (min, max),
    non-negative; shear from `shear` (s: x in (-s, s); (min, max): x; four: x then y, in
    degrees). Sampled with `resample`, uncovered pixels take `fill_value`."""

    def __init__(self, degrees: float | Sequence[float], translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None, shear: Any = None,
                 resample: Inter = Inter.NEAREST, fill_value: int | tuple = 0) -> None:
        op = "RandomAffine"
        self.degrees = _pair_range(degrees, "degrees", op, True,
                                   "a non-negative number or a sequence (min, max)")
        self.translate = self._translate(translate)
        self.scale = (1.0, 1.0) if scale is None else _pair_range(
            scale, "scale", op, False, "a sequence (min, max)")
        if self.scale[0] < 0:
            raise ValueError(f"For 'RandomAffine', the 'scale' should be non-negative, but got "
                             f"{scale!r}.")
        self.shear = self._shear(shear)
        self.resample = check_warp_inter(resample, op)
        self.fill_value = _fill(fill_value, op)
        self._seed_rng()

    @staticmethod
    def _translate(translate: Any) -> tuple:
        if translate is None:
            return (0.0, 0.0, 0.0, 0.0)
        if not isinstance(translate, (list, tuple)) or len(translate) not in (2, 4) or \
                not all(_real(v) for v in translate):
            raise TypeError(f"For 'RandomAffine', the 'translate' should be a sequence of 2 or 4 "
                            f"numbers, but got {translate!r}.")
        values = [float(v) for v in translate] + [0.0, 0.0] * (len(translate) == 2)
        if not all(-1.0 <= v <= 1.0 for v in values) or values[0] > values[1] or \
                values[2] > values[3]:
            raise ValueError(f"For 'RandomAffine', the 'translate' should be (min, max) pairs "
                             f"within [-1.0, 1.0], but got {translate!r}.")
        return tuple(values)

    @staticmethod
    def _shear(shear: Any) -> tuple:
        if shear is None:
            return (0.0, 0.0, 0.0, 0.0)
        if _real(shear):
            if shear < 0:
                raise ValueError(f"For 'RandomAffine', the 'shear' should be non-negative when a "
                                 f"single number, but got {shear}.")
            return (-float(shear), float(shear), 0.0, 0.0)
        if not isinstance(shear, (list, tuple)) or len(shear) not in (2, 4) or \
                not all(_real(v) for v in shear):
            raise TypeError(f"For 'RandomAffine', the 'shear' should be a number or a sequence of "
                            f"2 or 4 numbers, but got {shear!r}.")
        values = [float(v) for v in shear] + [0.0, 0.0] * (len(shear) == 2)
        if values[0] > values[1] or values[2] > values[3]:
            raise ValueError(f"For 'RandomAffine', the 'shear' should be (min, max) pairs with "
                             f"min <= max, but got {shear!r}.")
        return tuple(values)

    def draw(self, height: int, width: int) -> tuple:
        """One draw: (degrees, (tx, ty) pixels, scale, (shear x, shear y))."""
        angle = float(self._rng.uniform(*self.degrees))
        tx = float(np.round(self._rng.uniform(self.translate[0], self.translate[1]) * width))
        ty = float(np.round(self._rng.uniform(self.translate[2], self.translate[3]) * height))
        scale = float(self._rng.uniform(*self.scale))
        shear = (float(self._rng.uniform(self.shear[0], self.shear[1])),
                 float(self._rng.uniform(self.shear[2], self.shear[3])))
        return angle, (tx, ty), scale, shear

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomAffine")
        h, w = image.shape[:2]
        angle, translate, scale, shear = self.draw(h, w)
        forward = affine_matrix(angle, translate, scale, shear, (w / 2.0, h / 2.0))
        if abs(np.linalg.det(forward)) < 1e-12:     # scale 0: everything maps to one point
            return np.broadcast_to(check_fill(image, self.fill_value, "RandomAffine"),
                                   image.shape).astype(image.dtype)
        return warp_affine(image, np.linalg.inv(forward)[:2], h, w, self.resample,
                           check_fill(image, self.fill_value, "RandomAffine"))


def _points(points: Any, arg: str) -> np.ndarray:
    ok = isinstance(points, (list, tuple)) and len(points) == 4 and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in p) for p in points)
    if not ok:
        raise TypeError(f"For 'Perspective', the '{arg}' should be four [x, y] points of ints "
                        f"(top-left, top-right, bottom-right, bottom-left), but got {points!r}.")
    return np.asarray(points, np.float64)


class Perspective(TensorOperation):
    """The perspective transform taking the four `start_points` ([x, y]: top-left,
    top-right, bottom-right, bottom-left) to `end_points`, sampled with `interpolation`
    (PIL's Image.transform PERSPECTIVE, as torchvision's perspective); uncovered pixels 0."""

    def __init__(self, start_points: Sequence[Sequence[int]],
                 end_points: Sequence[Sequence[int]],
                 interpolation: Inter = Inter.BILINEAR) -> None:
        self.start_points = _points(start_points, "start_points").astype(int).tolist()
        self.end_points = _points(end_points, "end_points").astype(int).tolist()
        self.interpolation = check_warp_inter(interpolation, "Perspective")
        try:
            # the output samples the input: map end points back to start points
            self._inverse = perspective_matrix(np.asarray(self.end_points, np.float64),
                                               np.asarray(self.start_points, np.float64))
        except np.linalg.LinAlgError as exc:
            raise ValueError(f"For 'Perspective', the 'start_points' and 'end_points' should "
                             f"each be four points in general position (no three on a line), "
                             f"but got {self.start_points} and {self.end_points}.") from exc

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "Perspective")
        h, w = image.shape[:2]
        return warp_affine(image, self._inverse, h, w, self.interpolation, np.float64(0.0))


class RandomPerspective(RandomOperation):
    """With probability `prob`, a random perspective warp: the image corners move inwards by
    up to `distortion_scale` (in [0, 1]) of half the width / height, each corner's offsets
    drawn uniformly (torchvision's draw), sampled with `interpolation`."""

    def __init__(self, distortion_scale: float = 0.5, prob: float = 0.5,
                 interpolation: Inter = Inter.BICUBIC) -> None:
        validator.check_value_type("distortion_scale", distortion_scale, (int, float),
                                   "RandomPerspective")
        if not 0.0 <= distortion_scale <= 1.0:
            raise ValueError(f"For 'RandomPerspective', the 'distortion_scale' should be in "
                             f"[0.0, 1.0], but got {distortion_scale}.")
        self.distortion_scale = float(distortion_scale)
        self.prob = _probability(prob, "RandomPerspective")
        self.interpolation = check_warp_inter(interpolation, "RandomPerspective")
        self._seed_rng()

    def draw(self, height: int, width: int) -> tuple[list, list]:
        """(start_points, end_points): the corners, and where they move."""
        dx = int(self.distortion_scale * (width // 2))
        dy = int(self.distortion_scale * (height // 2))
        def near(d: int) -> int:
            return int(self._rng.integers(0, d + 1))

        def far(n: int, d: int) -> int:
            return int(self._rng.integers(n - d - 1, n))

        end = [[near(dx), near(dy)], [far(width, dx), near(dy)],
               [far(width, dx), far(height, dy)], [near(dx), far(height, dy)]]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, end

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "RandomPerspective")
        if self._rng.random() >= self.prob:
            return image
        h, w = image.shape[:2]
        start, end = self.draw(h, w)
        inverse = perspective_matrix(np.asarray(end, np.float64), np.asarray(start, np.float64))
        return warp_affine(image, inverse, h, w, self.interpolation, np.float64(0.0))


def _crop(image: np.ndarray, top: int, left: int, height: int, width: int, op: str) -> np.ndarray:
    h, w = image.shape[:2]
    if top + height > h or left + width > w:
        raise ValueError(f"For '{op}', the crop (top {top}, left {left}, height {height}, width "
                         f"{width}) should lie within the image, but got image size {(h, w)}.")
    return image[top:top + height, left:left + width].copy()


def _non_negative(value: Any, arg: str, op: str) -> int:
    return validator.check_non_negative_int(value, arg, op)


class Crop(TensorOperation):
    """The `size` ((height, width) or an int: a square) crop whose top-left corner is
    `coordinates` (top, left)."""

    def __init__(self, coordinates: Sequence[int], size: int | Sequence[int]) -> None:
        if not isinstance(coordinates, (list, tuple)) or len(coordinates) != 2:
            raise TypeError(f"For 'Crop', the 'coordinates' should be a sequence (top, left) of "
                            f"two ints, but got {coordinates!r}.")
        self.coordinates = tuple(_non_negative(v, "coordinates", "Crop") for v in coordinates)
        self.size = image_size(size, "Crop")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return _crop(check_image(array, "Crop"), *self.coordinates, *self.size, "Crop")


class ResizedCrop(TensorOperation):
    """Crop (top, left, height, width), then resize it to `size` with `interpolation`."""

    def __init__(self, top: int, left: int, height: int, width: int, size: int | Sequence[int],
                 interpolation: Inter = Inter.BILINEAR) -> None:
        self.top = _non_negative(top, "top", "ResizedCrop")
        self.left = _non_negative(left, "left", "ResizedCrop")
        self.height = validator.check_positive_int(height, "height", "ResizedCrop")
        self.width = validator.check_positive_int(width, "width", "ResizedCrop")
        self.size = image_size(size, "ResizedCrop")
        self.interpolation = check_inter(interpolation, "ResizedCrop")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        crop = _crop(check_image(array, "ResizedCrop"), self.top, self.left, self.height,
                     self.width, "ResizedCrop")
        if crop.shape[:2] == self.size:
            return crop
        return resize_image(crop, self.size[0], self.size[1], self.interpolation)


def five_crops(image: np.ndarray, size: tuple[int, int], op: str) -> tuple:
    """The four corner crops and the central crop of `size`: (top-left, top-right,
    bottom-left, bottom-right, centre), as PIL / torchvision's five_crop."""
    (ch, cw), (h, w) = size, image.shape[:2]
    if ch > h or cw > w:
        raise ValueError(f"For '{op}', the crop 'size' {size} should fit in the image, but got "
                         f"image size {(h, w)}.")
    top, left = int(round((h - ch) / 2.0)), int(round((w - cw) / 2.0))
    corners = [(0, 0), (0, w - cw), (h - ch, 0), (h - ch, w - cw), (top, left)]
    return tuple(image[i:i + ch, j:j + cw].copy() for i, j in corners)


class FiveCrop(TensorOperation):
    """Five `size` crops of the image: its four corners and its centre (top-left, top-right,
    bottom-left, bottom-right, centre), a tuple of five images."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = image_size(size, "FiveCrop")

    def _apply(self, array: np.ndarray) -> tuple:
        return five_crops(check_image(array, "FiveCrop"), self.size, "FiveCrop")


class TenCrop(TensorOperation):
    """FiveCrop of the image, then FiveCrop of its flip (left-right, or top-bottom with
    `use_vertical_flip`): a tuple of ten images."""

    def __init__(self, size: int | Sequence[int], use_vertical_flip: bool = False) -> None:
        self.size = image_size(size, "TenCrop")
        self.use_vertical_flip = validator.check_bool("use_vertical_flip", use_vertical_flip,
                                                      "TenCrop")

    def _apply(self, array: np.ndarray) -> tuple:
        image = check_image(array, "TenCrop")
        flipped = np.flip(image, 0 if self.use_vertical_flip else 1)
        return five_crops(image, self.size, "TenCrop") + five_crops(flipped, self.size, "TenCrop")


class PadToSize(TensorOperation):
    """Pad the image to `size` ((height, width) or an int), placing it at `offset` (top, left)
    (an int: both; None: centred, the odd pixel at the bottom / right), padding as `Pad`."""

    def __init__(self, size: int | Sequence[int], offset: int | Sequence[int] | None = None,
                 fill_value: int | tuple = 0, padding_mode: Border = Border.CONSTANT) -> None:
        self.size = image_size(size, "PadToSize")
        if offset is None:
            self.offset = None
        else:
            values = [offset] * 2 if isinstance(offset, int) and not isinstance(offset, bool) \
                else offset
            if not isinstance(values, (list, tuple)) or len(values) != 2:
                raise TypeError(f"For 'PadToSize', the 'offset' should be None, an int or a "
                                f"sequence (top, left), but got {offset!r}.")
            self.offset = tuple(_non_negative(v, "offset", "PadToSize") for v in values)
        self.fill_value = _fill(fill_value, "PadToSize")
        self.padding_mode = _border(padding_mode, "PadToSize")

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image = check_image(array, "PadToSize")
        (th, tw), (h, w) = self.size, image.shape[:2]
        top, left = ((th - h) // 2, (tw - w) // 2) if self.offset is None else self.offset
        bottom, right = th - h - top, tw - w - left
        if min(top, left, bottom, right) < 0:
            raise ValueError(f"For 'PadToSize', the 'size' {self.size} should hold the image "
                             f"{(h, w)} at offset {(top, left)}, but it does not.")
        return _pad(image, (top, bottom, left, right), self.padding_mode, self.fill_value,
                    "PadToSize")


class HorizontalFlip(TensorOperation):
    """Mirror the image left-right."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return np.flip(check_image(array, "HorizontalFlip"), 1).copy()


class VerticalFlip(TensorOperation):
    """Mirror the image top-bottom."""

    def _apply(self, array: np.ndarray) -> np.ndarray:
        return np.flip(check_image(array, "VerticalFlip"), 0).copy()
