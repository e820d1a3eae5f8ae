"""Batch mixing of `mindspore.dataset.vision`: MixUpBatch and CutMixBatch, mapped over the
(image, label) columns after `batch`, labels one-hot (see transforms.OneHot)."""
from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from msops.dataset.transforms.base import RandomOperation, as_array
from msops.dataset.vision.transforms import _number, _probability
from msops.dataset.vision.utils import cast_like

__all__ = ["ImageBatchFormat", "MixUpBatch", "CutMixBatch"]


class ImageBatchFormat(IntEnum):
    """The layout of a batch of images (MindSpore's values)."""
    NHWC = 0
    NCHW = 1


def _alpha(alpha: Any, op: str) -> float:
    alpha = _number(alpha, "alpha", op)
    if alpha <= 0:
        raise ValueError(f"For '{op}', the 'alpha' should be greater than 0, but got {alpha}.")
    return alpha


def _batch(inputs: tuple, op: str, image_rank_msg: str) -> tuple[np.ndarray, np.ndarray]:
    """The (images, one-hot labels) of one batch, checked."""
    if len(inputs) != 2:
        raise TypeError(f"For '{op}', the input should be two columns (images, labels), but got "
                        f"{len(inputs)}.")
    images, labels = as_array(inputs[0], op), as_array(inputs[1], op)
    if images.ndim != 4 or images.dtype.kind not in "uif":
        raise ValueError(f"For '{op}', the images should be a numeric batch of shape "
                         f"{image_rank_msg}, but got shape {images.shape} and dtype "
                         f"{images.dtype}.")
    if labels.ndim not in (2, 3) or labels.shape[0] != images.shape[0] or \
            labels.dtype.kind not in "biuf":
        raise ValueError(f"For '{op}', the labels should be one-hot, of shape <N, num_classes> "
                         f"or <N, num_labels, num_classes> with N = {images.shape[0]} (map OneHot "
                         f"before batch), but got shape {labels.shape}.")
    return images, labels


class MixUpBatch(RandomOperation):
    """MixUp on a batch: lam ~ Beta(alpha, alpha) once per batch, a random permutation p of
    the batch, images `lam * x + (1 - lam) * x[p]` (in their dtype, integers rounded) and
    labels likewise (float32)."""

    def __init__(self, alpha: float = 1.0) -> None:
        self.alpha = _alpha(alpha, "MixUpBatch")
        self._seed_rng()

    def __call__(self, *inputs: Any) -> tuple:
        images, labels = _batch(inputs, "MixUpBatch", "<N, H, W, C> or <N, C, H, W>")
        lam = float(self._rng.beta(self.alpha, self.alpha))
        perm = self._rng.permutation(images.shape[0])
        mixed = lam * images.astype(np.float64) + (1 - lam) * images[perm].astype(np.float64)
        out_labels = lam * labels.astype(np.float64) + (1 - lam) * labels[perm]
        return cast_like(mixed, images.dtype), out_labels.astype(np.float32)


class CutMixBatch(RandomOperation):
    """CutMix on a batch: for each image, with probability `prob`, lam ~ Beta(alpha, alpha),
    a box of int(W * sqrt(1 - lam)) x int(H * sqrt(1 - lam)) centred on a uniform pixel
    (clipped to the image) is pasted from a random image of the batch, and the labels are
    mixed by the area kept (float32). `image_batch_format` is the images' layout."""

    def __init__(self, image_batch_format: ImageBatchFormat, alpha: float = 1.0,
                 prob: float = 1.0) -> None:
        if not isinstance(image_batch_format, ImageBatchFormat):
            raise TypeError(f"For 'CutMixBatch', the 'image_batch_format' should be an "
                            f"ImageBatchFormat, but got {image_batch_format!r}.")
        self.image_batch_format = image_batch_format
        self.alpha = _alpha(alpha, "CutMixBatch")
        self.prob = _probability(prob, "CutMixBatch")
        self._seed_rng()

    def __call__(self, *inputs: Any) -> tuple:
        hwc = self.image_batch_format is ImageBatchFormat.NHWC
        images, labels = _batch(inputs, "CutMixBatch", "<N, H, W, C>" if hwc else "<N, C, H, W>")
        n = images.shape[0]
        h, w = images.shape[1:3] if hwc else images.shape[2:4]
        out, out_labels = images.copy(), labels.astype(np.float32)
        for i in range(n):
            lam = float(self._rng.beta(self.alpha, self.alpha))
            if self._rng.random() >= self.prob:
                continue
            j = int(self._rng.integers(n))
            ratio = np.sqrt(1.0 - lam)
            cut_w, cut_h = int(w * ratio), int(h * ratio)
            x, y = int(self._rng.integers(w)), int(self._rng.integers(h))
            x0, x1 = np.clip([x - cut_w // 2, x + cut_w // 2], 0, w)
            y0, y1 = np.clip([y - cut_h // 2, y + cut_h // 2], 0, h)
            if hwc:
                out[i, y0:y1, x0:x1] = images[j, y0:y1, x0:x1]
            else:
                out[i, :, y0:y1, x0:x1] = images[j, :, y0:y1, x0:x1]
            kept = 1.0 - (x1 - x0) * (y1 - y0) / float(h * w)
            out_labels[i] = (kept * labels[i].astype(np.float64) +
                             (1.0 - kept) * labels[j].astype(np.float64)).astype(np.float32)
        return out, out_labels
