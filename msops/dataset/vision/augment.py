"""Automatic augmentation policies of `mindspore.dataset.vision` (MindSpore's ports of
torchvision's): AutoAugment (the learned ImageNet / CIFAR10 / SVHN policies of Cubuk et
al., 2019), RandAugment, TrivialAugmentWide, and the policy combinators UniformAugment
and RandomSelectSubpolicy. Every draw comes from the operation's seeded stream (see
msops.dataset.transforms.base); images are uint8 RGB (H, W, 3).

An augmentation is (name, magnitude): the shears are tan(angle) factors about the
top-left corner, translations pixels, Rotate degrees counter-clockwise, the colour ops
enhancement offsets (factor = 1 + magnitude), Posterize bits, Solarize the threshold
(values >= it inverted).
"""
from __future__ import annotations

import math
from enum import IntEnum
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.transforms.base import RandomOperation
from msops.dataset.transforms.transforms import _check_ops, _run
from msops.dataset.vision.color import (adjust, autocontrast, equalize, posterize, rgb_image,
                                        solarize)
from msops.dataset.vision.geometry import rotate
from msops.dataset.vision.transforms import _fill
from msops.dataset.vision.utils import Inter, check_warp_inter
from msops.dataset.vision.warp import affine_matrix, check_fill, warp_affine

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide",
           "UniformAugment", "RandomSelectSubpolicy"]


class AutoAugmentPolicy(IntEnum):
    """The learned AutoAugment policies (MindSpore's values)."""
    IMAGENET = 0
    CIFAR10 = 1
    SVHN = 2


# Sub-policies separated by ';' or line ends, each two (operation, probability, magnitude
# level 0..9, '-' none).
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: """
        Posterize .4 8, Rotate .6 9;  Solarize .6 5, AutoContrast .6 -
        Equalize .8 -, Equalize .6 -;  Posterize .6 7, Posterize .6 6
        Equalize .4 -, Solarize .2 4;  Equalize .4 -, Rotate .8 8
        Solarize .6 3, Equalize .6 -;  Posterize .8 5, Equalize 1 -
        Rotate .2 3, Solarize .6 8;  Equalize .6 -, Posterize .4 6
        Rotate .8 8, Color .4 0;  Rotate .4 9, Equalize .6 -
        Equalize 0 -, Equalize .8 -;  Invert .6 -, Equalize 1 -
        Color .6 4, Contrast 1 8;  Rotate .8 8, Color 1 2
        Color .8 8, Solarize .8 7;  Sharpness .4 7, Invert .6 -
        ShearX .6 5, Equalize 1 -;  Color .4 0, Equalize .6 -
        Equalize .4 -, Solarize .2 4;  Solarize .6 5, AutoContrast .6 -
        Invert .6 -, Equalize 1 -;  Color .6 4, Contrast 1 8
        Equalize .8 -, Equalize .6 -""",
    AutoAugmentPolicy.CIFAR10: """
        Invert .1 -, Contrast .2 6;  Rotate .7 2, TranslateX .3 9
        Sharpness .8 1, Sharpness .9 3;  ShearY .5 8, TranslateY .7 9
        AutoContrast .5 -, Equalize .9 -;  ShearY .2 7, Posterize .3 7
        Color .4 3, Brightness .6 7;  Sharpness .3 9, Brightness .7 9
        Equalize .6 -, Equalize .5 -;  Contrast .6 7, Sharpness .6 5
        Color .7 7, TranslateX .5 8;  Equalize .3 -, AutoContrast .4 -
        TranslateY .4 3, Sharpness .2 6;  Brightness .9 6, Color .2 8
        Solarize .5 2, Invert 0 -;  Equalize .2 -, AutoContrast .6 -
        Equalize .2 -, Equalize .6 -;  Color .9 9, Equalize .6 -
        AutoContrast .8 -, Solarize .2 8;  Brightness .1 3, Color .7 0
        Solarize .4 5, AutoContrast .9 -;  TranslateY .9 9, TranslateY .7 9
        AutoContrast .9 -, Solarize .8 3;  Equalize .8 -, Invert .1 -
        TranslateY .7 9, AutoContrast .9 -""",
    AutoAugmentPolicy.SVHN: """
        ShearX .9 4, Invert .2 -;  ShearY .9 8, Invert .7 -
        Equalize .6 -, Solarize .6 6;  Invert .9 -, Equalize .6 -
        Equalize .6 -, Rotate .9 3;  ShearX .9 4, AutoContrast .8 -
        ShearY .9 8, Invert .4 -;  ShearY .9 5, Solarize .2 6
        Invert .9 -, AutoContrast .8 -;  Equalize .6 -, Rotate .9 3
        ShearX .9 4, Solarize .3 3;  ShearY .8 8, Invert .7 -
        Equalize .9 -, TranslateY .6 6;  Invert .9 -, Equalize .6 -
        Contrast .3 3, Rotate .8 4;  Invert .8 -, TranslateY 0 2
        ShearY .7 6, Solarize .4 8;  Invert .6 -, Rotate .8 4
        ShearY .3 7, TranslateX .9 3;  ShearX .1 6, Invert .6 -
        Solarize .7 2, TranslateY .6 7;  ShearY .8 4, Invert .8 -
        ShearX .7 9, TranslateY .8 3;  ShearY .8 5, AutoContrast .7 -
        ShearX .7 2, Invert .1 -""",
}


def policy_table(policy: AutoAugmentPolicy) -> list:
    """The sub-policies of `policy`: [((name, prob, level or None), (...)), ...]."""
    out = []
    for sub in _POLICIES[policy].replace("\n", ";").split(";"):
        if sub.strip():
            ops = []
            for part in sub.split(","):
                name, prob, level = part.split()
                ops.append((name, float(prob), None if level == "-" else int(level)))
            out.append(tuple(ops))
    return out


def magnitudes(space: str, bins: int, height: int, width: int) -> dict:
    """name -> (magnitudes over `bins` levels, or None for an op without one; signed).
    `space` 'auto' (AutoAugment / RandAugment ranges, with Invert for AutoAugment) or
    'wide' (TrivialAugmentWide's wider ranges)."""
    wide = space == "wide"

    def lin(hi: float) -> np.ndarray:
        return np.linspace(0.0, hi, bins)

    bits = np.rint(8 - np.arange(bins) / ((bins - 1) / (6 if wide else 4))).astype(int) \
        if bins > 1 else np.array([8])
    table = {
        "ShearX": (lin(0.99 if wide else 0.3), True),
        "ShearY": (lin(0.99 if wide else 0.3), True),
        "TranslateX": (lin(32.0 if wide else 150.0 / 331.0 * width), True),
        "TranslateY": (lin(32.0 if wide else 150.0 / 331.0 * height), True),
        "Rotate": (lin(135.0 if wide else 30.0), True),
        "Brightness": (lin(0.99 if wide else 0.9), True),
        "Color": (lin(0.99 if wide else 0.9), True),
        "Contrast": (lin(0.99 if wide else 0.9), True),
        "Sharpness": (lin(0.99 if wide else 0.9), True),
        "Posterize": (bits, False),
        "Solarize": (np.linspace(255.0, 0.0, bins), False),
        "AutoContrast": (None, False),
        "Equalize": (None, False),
    }
    return table


_ENHANCE = {"Brightness": "brightness", "Color": "saturation", "Contrast": "contrast",
            "Sharpness": "sharpness"}


def apply_op(image: np.ndarray, name: str, magnitude: float, interpolation: Inter,
             fill: np.ndarray) -> np.ndarray:
    """One named augmentation of a uint8 RGB image (module docstring)."""
    h, w = image.shape[:2]
    if name in ("ShearX", "ShearY", "TranslateX", "TranslateY"):
        shear = math.degrees(math.atan(magnitude))
        if name == "ShearX":
            forward = affine_matrix(0.0, (0.0, 0.0), 1.0, (shear, 0.0), (0.0, 0.0))
        elif name == "ShearY":
            forward = affine_matrix(0.0, (0.0, 0.0), 1.0, (0.0, shear), (0.0, 0.0))
        else:
            shift = (float(int(magnitude)), 0.0) if name == "TranslateX" else \
                (0.0, float(int(magnitude)))
            forward = affine_matrix(0.0, shift, 1.0, (0.0, 0.0), (w / 2.0, h / 2.0))
        return warp_affine(image, np.linalg.inv(forward)[:2], h, w, interpolation, fill)
    if name == "Rotate":
        return rotate(image, magnitude, interpolation, False, None, fill)
    if name in _ENHANCE:
        return adjust(_ENHANCE[name], image, 1.0 + magnitude)
    if name == "Posterize":
        return posterize(image, int(magnitude))
    if name == "Solarize":
        return solarize(image, magnitude, 255)
    if name == "AutoContrast":
        return autocontrast(image, 0.0, None)
    if name == "Equalize":
        return equalize(image)
    if name == "Invert":
        return 255 - image
    return image                                      # Identity


class _Augment(RandomOperation):
    """Shared argument checks and the image / fill preparation of the policy augmenters."""

    def _init_common(self, interpolation: Inter, fill_value: Any) -> None:
        op = type(self).__name__
        self.interpolation = check_warp_inter(interpolation, op)
        self.fill_value = _fill(fill_value, op)

    def _prepare(self, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        op = type(self).__name__
        image = rgb_image(array, op, float_ok=False)
        return image, check_fill(image, self.fill_value, op)

    def _random_op(self, image: np.ndarray, fill: np.ndarray, space: str,
                   level: int | None) -> np.ndarray:
        """One operation drawn uniformly from Identity and the `space` operations, at
        `level` (None: a level drawn uniformly), with a random sign where signed."""
        table = {"Identity": (None, False)}
        table.update(magnitudes(space, self.num_magnitude_bins, *image.shape[:2]))
        names = list(table)
        name = names[int(self._rng.integers(len(names)))]
        values, signed = table[name]
        magnitude = 0.0
        if values is not None:
            k = int(self._rng.integers(len(values))) if level is None else level
            magnitude = float(values[k])
        if signed and self._rng.integers(2):
            magnitude = -magnitude
        return apply_op(image, name, magnitude, self.interpolation, fill)


class AutoAugment(_Augment):
    """AutoAugment with a learned `policy` (AutoAugmentPolicy.IMAGENET, CIFAR10 or SVHN):
    per image, one sub-policy drawn uniformly; each of its two operations applied with its
    probability at its magnitude level (of 10), with a random sign where signed."""

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: Inter = Inter.NEAREST, fill_value: int | tuple = 0) -> None:
        if not isinstance(policy, AutoAugmentPolicy):
            raise TypeError(f"For 'AutoAugment', the 'policy' should be an AutoAugmentPolicy, but "
                            f"got {policy!r}.")
        self.policy = policy
        self._init_common(interpolation, fill_value)
        self._table = policy_table(policy)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image, fill = self._prepare(array)
        space = magnitudes("auto", 10, *image.shape[:2])
        space["Invert"] = (None, False)
        sub = self._table[int(self._rng.integers(len(self._table)))]
        probs, signs = self._rng.random(2), self._rng.integers(2, size=2)
        for (name, prob, level), p, sign in zip(sub, probs, signs):
            if p <= prob:
                values, signed = space[name]
                magnitude = 0.0 if level is None else float(values[level])
                if signed and sign == 0:
                    magnitude = -magnitude
                image = apply_op(image, name, magnitude, self.interpolation, fill)
        return image


def _bins(value: Any, op: str) -> int:
    bins = validator.check_int("num_magnitude_bins", value, op)
    if bins < 2:
        raise ValueError(f"For '{op}', the 'num_magnitude_bins' should be at least 2, but got "
                         f"{bins}.")
    return bins


class RandAugment(_Augment):
    """RandAugment: `num_ops` operations drawn uniformly (with replacement) from Identity,
    ShearX/Y, TranslateX/Y, Rotate, Brightness, Color, Contrast, Sharpness, Posterize,
    Solarize, AutoContrast and Equalize, each at level `magnitude` of `num_magnitude_bins`
    with a random sign where signed."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: Inter = Inter.NEAREST, fill_value: int | tuple = 0) -> None:
        self.num_ops = validator.check_non_negative_int(num_ops, "num_ops", "RandAugment")
        self.num_magnitude_bins = _bins(num_magnitude_bins, "RandAugment")
        validator.check_int("magnitude", magnitude, "RandAugment")
        if not 0 <= magnitude < self.num_magnitude_bins:
            raise ValueError(f"For 'RandAugment', the 'magnitude' should be in [0, "
                             f"{self.num_magnitude_bins}), but got {magnitude}.")
        self.magnitude = magnitude
        self._init_common(interpolation, fill_value)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image, fill = self._prepare(array)
        for _ in range(self.num_ops):
            image = self._random_op(image, fill, "auto", self.magnitude)
        return image


class TrivialAugmentWide(_Augment):
    """TrivialAugment (wide ranges): one operation drawn uniformly (RandAugment's set), at a
    level drawn uniformly from `num_magnitude_bins`, with a random sign where signed."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation: Inter = Inter.NEAREST,
                 fill_value: int | tuple = 0) -> None:
        self.num_magnitude_bins = _bins(num_magnitude_bins, "TrivialAugmentWide")
        self._init_common(interpolation, fill_value)
        self._seed_rng()

    def _apply(self, array: np.ndarray) -> np.ndarray:
        image, fill = self._prepare(array)
        return self._random_op(image, fill, "wide", None)


class UniformAugment(RandomOperation):
    """Draw `num_ops` distinct transforms from `transforms` (kept in list order) and apply
    each with probability 0.5."""

    def __init__(self, transforms: Sequence[Callable], num_ops: int = 2) -> None:
        self.transforms = _check_ops(transforms, "UniformAugment")
        self.num_ops = validator.check_positive_int(num_ops, "num_ops", "UniformAugment")
        if self.num_ops > len(self.transforms):
            raise ValueError(f"For 'UniformAugment', the 'num_ops' should be at most the number of "
                             f"transforms ({len(self.transforms)}), but got {num_ops}.")
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        chosen = np.sort(self._rng.choice(len(self.transforms), self.num_ops, replace=False))
        ops = [self.transforms[int(k)] for k in chosen if self._rng.random() < 0.5]
        return _run(ops, inputs) if ops else (inputs[0] if len(inputs) == 1 else inputs)


class RandomSelectSubpolicy(RandomOperation):
    """`policy` a list of sub-policies, each a list of (transform, prob) pairs: per image one
    sub-policy drawn uniformly, its transforms applied in order, each with its prob."""

    def __init__(self, policy: Sequence[Sequence[tuple]]) -> None:
        ok = isinstance(policy, (list, tuple)) and policy and all(
            isinstance(sub, (list, tuple)) and sub and all(
                isinstance(pair, (list, tuple)) and len(pair) == 2 and callable(pair[0]) and
                isinstance(pair[1], (int, float)) and not isinstance(pair[1], bool) and
                0 <= pair[1] <= 1 for pair in sub) for sub in policy)
        if not ok:
            raise TypeError(f"For 'RandomSelectSubpolicy', the 'policy' should be a non-empty "
                            f"list of non-empty lists of (transform, prob) pairs, prob in "
                            f"[0, 1], but got {policy!r}.")
        self.policy = [[(t, float(p)) for t, p in sub] for sub in policy]
        self._seed_rng()

    def __call__(self, *inputs: Any) -> Any:
        sub = self.policy[int(self._rng.integers(len(self.policy)))]
        ops = [t for t, p in sub if self._rng.random() < p]
        return _run(ops, inputs) if ops else (inputs[0] if len(inputs) == 1 else inputs)
