"""ROC and auc, as `mindspore.train`: the receiver operating characteristic curve of
scores against labels (one-vs-rest per class when there are several) and the area under
a curve."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.metrics import _BY_NAME, Metric

__all__ = ["ROC", "auc"]


def _curve(scores: np.ndarray, positive: np.ndarray) -> tuple:
    """(fpr, tpr, thresholds): one point per distinct score, highest first, after the
    (0, 0) point whose threshold is the highest score + 1."""
    order = np.argsort(-scores, kind="mergesort")
    scores, positive = scores[order], positive[order]
    last = np.r_[np.nonzero(np.diff(scores))[0], scores.size - 1]   # end of each score run
    tps = np.cumsum(positive)[last]
    fps = (last + 1) - tps
    tps, fps = np.r_[0, tps], np.r_[0, fps]
    thresholds = np.r_[scores[0] + 1, scores[last]]
    with np.errstate(invalid="ignore", divide="ignore"):
        fpr = fps / fps[-1] if fps[-1] > 0 else np.full(fps.shape, np.nan)
        tpr = tps / tps[-1] if tps[-1] > 0 else np.full(tps.shape, np.nan)
    return fpr, tpr, thresholds


class ROC(Metric):
    """`ROC(class_num=None, pos_label=None)`: `eval()` is (fpr, tpr, thresholds) over the
    samples of every update. Binary: `y_pred` (N,) scores and `y` (N,) labels, positive
    where y == `pos_label` (default 1). Several classes (`class_num` > 1, or (N, C) scores
    with (N,) labels): `y` (N,) class indices or (N, C) one-hot; each of fpr, tpr and
    thresholds is a list, one curve per class (class c against the rest). A class without
    positive (negative) samples has a NaN tpr (fpr), as MindSpore's and scikit-learn's."""

    def __init__(self, class_num: int | None = None, pos_label: int | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        if class_num is not None:
            validator.check_positive_int(class_num, "class_num", name)
        if pos_label is not None:
            validator.check_int("pos_label", pos_label, name)
        self.class_num, self.pos_label = class_num, pos_label
        self.clear()

    def clear(self) -> None:
        self.y_pred: list = []
        self.y: list = []
        self._classes: int | None = None          # several classes: how many
        self._is_update = False

    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        self._check_inputs(inputs, 2)
        y_pred = self._convert_data(inputs[0]).astype(np.float64)
        y = self._convert_data(inputs[1])
        # several classes: given, or scores with one more dim than the labels
        classes = self.class_num if (self.class_num or 1) > 1 else \
            y_pred.shape[1] if y_pred.ndim == 2 and y.ndim == 1 else None
        if self._classes is not None and classes != self._classes:
            raise ValueError(f"For '{name}.update', the class number should match the earlier "
                             f"updates' {self._classes}, but got {classes}.")
        multi = classes is not None
        if multi:
            if y.ndim == 2 and y.shape == y_pred.shape:
                y = y.argmax(axis=1)
            if y_pred.ndim != 2 or y_pred.shape[1] != classes or y.shape != y_pred.shape[:1]:
                raise ValueError(f"For '{name}', the 'y_pred' should be (N, {classes}) "
                                 f"scores and 'y' (N,) class indices or (N, {classes}) "
                                 f"one-hot, but got shapes {y_pred.shape} and {y.shape}.")
            if self.pos_label is not None:
                raise ValueError(f"For '{name}', the 'pos_label' should be None with "
                                 f"{classes} classes (each class is the positive one in "
                                 f"turn), but got {self.pos_label}.")
        elif y_pred.reshape(-1).shape != y.reshape(-1).shape:
            raise ValueError(f"For '{name}', the binary 'y_pred' and 'y' should hold one "
                             f"score and one label per sample, but got shapes "
                             f"{y_pred.shape} and {y.shape}.")
        self.y_pred.append(y_pred if multi else y_pred.reshape(-1))
        self.y.append(y.reshape(-1))
        self._classes = classes
        self._is_update = True

    def eval(self) -> tuple:
        if not self._is_update:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        y_pred, y = np.concatenate(self.y_pred), np.concatenate(self.y)
        if self._classes is not None:
            curves = [_curve(y_pred[:, c], (y == c).astype(np.float64))
                      for c in range(self._classes)]
            return tuple(list(part) for part in zip(*curves))
        pos = 1 if self.pos_label is None else self.pos_label
        return _curve(y_pred, (y == pos).astype(np.float64))


def auc(x: Any, y: Any, reorder: bool = False) -> float:
    """The area under the curve through the points (x, y), by the trapezoidal rule. `x`
    must be monotonic (decreasing x gives the area with its sign kept positive) unless
    `reorder`, which sorts the points by x (then y) first."""
    x = np.asarray(x.asnumpy() if isinstance(x, Tensor) else x, np.float64).reshape(-1)
    y = np.asarray(y.asnumpy() if isinstance(y, Tensor) else y, np.float64).reshape(-1)
    validator.check_bool("reorder", reorder, "auc")
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"For 'auc', the 'x' and 'y' should be two curves of the same "
                         f"length, at least 2 points, but got {x.size} and {y.size} points.")
    direction = 1.0
    if reorder:
        order = np.lexsort((y, x))
        x, y = x[order], y[order]
    else:
        dx = np.diff(x)
        if np.any(dx < 0):
            if not np.all(dx <= 0):
                raise ValueError("For 'auc', the 'x' should be monotonic (or pass "
                                 "reorder=True), but it rises and falls.")
            direction = -1.0
    return float(direction * np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


_BY_NAME["roc"] = ROC
