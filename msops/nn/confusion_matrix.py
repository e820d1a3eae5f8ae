"""ConfusionMatrix, as `mindspore.train`: counts of (true class, predicted class) pairs
accumulated over the batches."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric

__all__ = ["ConfusionMatrix"]

_NORMALIZE = ("no_norm", "target", "prediction", "all")


class ConfusionMatrix(Metric):
    """`ConfusionMatrix(num_classes, normalize="no_norm", threshold=0.5)`: `eval()` is the
    (num_classes, num_classes) matrix, row = true class, column = predicted class.

    `update(y_pred, y)`: `y` (N, ...) class indices; `y_pred` (N, C, ...) scores (the class
    is the argmax over dim 1) or (N, ...) classes (float ones are 1 where >= threshold,
    else 0: binary). `normalize`: "target" divides each row by its sum, "prediction" each
    column, "all" the whole matrix (an empty row or column gives 0)."""

    def __init__(self, num_classes: int, normalize: str = "no_norm",
                 threshold: float = 0.5) -> None:
        super().__init__()
        name = type(self).__name__
        self.num_classes = validator.check_positive_int(num_classes, "num_classes", name)
        self.normalize = validator.check_string("normalize", normalize, _NORMALIZE, name)
        self.threshold = float(validator.check_value_type("threshold", threshold,
                                                          (int, float), name))
        self.clear()

    def clear(self) -> None:
        self.confusion_matrix = np.zeros((self.num_classes, self.num_classes))
        self._is_update = False

    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        self._check_inputs(inputs, 2)
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim not in (y.ndim, y.ndim + 1):
            raise ValueError(f"For '{name}', the 'y_pred' should have the dims of 'y' "
                             f"({y.ndim}) or one more, but got {y_pred.ndim}.")
        if y_pred.ndim == y.ndim + 1:
            y_pred = y_pred.argmax(axis=1)
        elif y_pred.dtype.kind == "f":
            y_pred = (y_pred >= self.threshold).astype(np.int64)
        if y_pred.shape != y.shape:
            raise ValueError(f"For '{name}', the predicted classes should have the shape of "
                             f"'y' {y.shape}, but got {y_pred.shape}.")
        pairs = [("y", y), ("y_pred", y_pred)]
        for arg, v in pairs:
            if v.size and (v.min() < 0 or v.max() >= self.num_classes or
                           not np.all(v == np.round(v))):
                raise ValueError(f"For '{name}', the '{arg}' classes should be ints in [0, "
                                 f"{self.num_classes}), but got values in [{v.min()}, "
                                 f"{v.max()}].")
        index = y.reshape(-1).astype(np.int64) * self.num_classes + \
            y_pred.reshape(-1).astype(np.int64)
        counts = np.bincount(index, minlength=self.num_classes ** 2)
        self.confusion_matrix += counts.reshape(self.num_classes, self.num_classes)
        self._is_update = True

    def eval(self) -> np.ndarray:
        if not self._is_update:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        matrix = self.confusion_matrix.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.normalize == "target":
                matrix = matrix / matrix.sum(axis=1, keepdims=True)
            elif self.normalize == "prediction":
                matrix = matrix / matrix.sum(axis=0, keepdims=True)
            elif self.normalize == "all":
                matrix = matrix / matrix.sum()
        matrix[np.isnan(matrix)] = 0.0
        return matrix


_BY_NAME["confusion_matrix"] = ConfusionMatrix
