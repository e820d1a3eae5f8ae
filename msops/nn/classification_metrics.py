"""Classification metrics, as `mindspore.train`: Precision, Recall, Fbeta / F1 (per class,
from counts accumulated over the batches) and TopKCategoricalAccuracy (Top1 / Top5).

`update(y_pred, y)`: `y_pred` (N, C) class scores; `y` (N,) class indices or (N, C)
one-hot rows. 'classification' counts the argmax class of each row as predicted. Precision
and Recall also take eval_type='multilabel' (MindSpore's rule): `y_pred` and `y` are (N, C)
0/1, and each sample gets its own value (its true positives over its predicted, or
actual, positives), collected over the updates. A class (or sample) with no predicted or
actual positives scores 0 (the counts are divided by count + the smallest float).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric

__all__ = ["Precision", "Recall", "Fbeta", "F1", "TopKCategoricalAccuracy",
           "Top1CategoricalAccuracy", "Top5CategoricalAccuracy"]

_EPS = sys.float_info.min


def _one_hot_rows(y: np.ndarray) -> bool:
    """(N, C) 0/1 rows with exactly one 1 each."""
    return y.ndim == 2 and y.shape[1] > 1 and bool(np.isin(y, (0, 1)).all()) and \
        bool((y.sum(axis=1) == 1).all())


class _Counts(Metric):
    """Per-class (multilabel: per-sample) true positives and the positives counted by
    `_counted(pred, y)` (the predicted ones for Precision, the actual ones for Recall)."""

    def __init__(self, eval_type: str = "classification") -> None:
        super().__init__()
        name = type(self).__name__
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(f"For '{name}', the 'eval_type' should be 'classification' or "
                             f"'multilabel', but got {eval_type!r}.")
        self._type = eval_type
        self.eps = _EPS
        self.clear()

    def clear(self) -> None:
        self._class_num = 0
        multilabel = self._type == "multilabel"
        self._true_positives: Any = np.empty(0) if multilabel else 0
        self._counted_positives: Any = np.empty(0) if multilabel else 0
        self._samples = 0                                  # multilabel: samples seen

    def _counted(self, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def update(self, *inputs: Any) -> None:
        pred, y = _classes(self, inputs, self._type)
        counted = self._counted(pred, y)
        true_positives = (pred * y).sum(axis=self._axis)
        if self._type == "multilabel":
            self._true_positives = np.concatenate([self._true_positives, true_positives])
            self._counted_positives = np.concatenate([self._counted_positives, counted])
            self._samples += len(true_positives)
        else:
            self._true_positives = self._true_positives + true_positives
            self._counted_positives = self._counted_positives + counted

    @property
    def _axis(self) -> int:
        """Count per class (over samples) or, multilabel, per sample (over classes)."""
        return 1 if self._type == "multilabel" else 0

    def eval(self, average: bool = False) -> Any:
        """Per class (multilabel: per sample) values, or their mean with `average`."""
        name = type(self).__name__
        if self._class_num == 0:
            raise RuntimeError(f"For '{name}', it can not be calculated because the number of "
                               f"samples is 0: call 'update' first.")
        validator.check_bool("average", average, name)
        result = self._true_positives / (self._counted_positives + self.eps)
        return result.mean() if average else result


def _classes(metric: Metric, inputs: tuple, eval_type: str) -> tuple[np.ndarray, np.ndarray]:
    """(predicted, actual) as (N, C) 0/1 float64 arrays, after MindSpore's checks; records
    the class count of the first update on `metric` (later ones must match)."""
    name = type(metric).__name__
    metric._check_inputs(inputs, 2)
    y_pred = metric._convert_data(inputs[0]).astype(np.float64)
    y = metric._convert_data(inputs[1])
    if eval_type == "classification":
        if y_pred.ndim == y.ndim and _one_hot_rows(y):
            y = y.argmax(axis=1)
        if y_pred.ndim != 2 or y.reshape(-1).shape != y_pred.shape[:1] or y.ndim > 2:
            raise ValueError(f"For '{name}', the 'y_pred' should be (N, C) class scores and 'y' "
                             f"(N,) class indices or (N, C) one-hot, but got shapes "
                             f"{y_pred.shape} and {y.shape}.")
    elif y_pred.ndim != 2 or y.shape != y_pred.shape or \
            not (np.isin(y_pred, (0, 1)).all() and np.isin(y, (0, 1)).all()):
        raise ValueError(f"For '{name}', in the multilabel case 'y_pred' and 'y' should be "
                         f"(N, C) arrays of 0 and 1 of one shape, but got shapes "
                         f"{y_pred.shape} and {y.shape}.")
    classes = y_pred.shape[1]
    if metric._class_num and classes != metric._class_num:
        raise ValueError(f"For '{name}.update', the class number should match the earlier "
                         f"updates' {metric._class_num}, but got {classes}.")
    if eval_type == "multilabel":
        metric._class_num = classes
        return y_pred, y.astype(np.float64)
    labels = y.reshape(-1)
    if labels.size and (labels.dtype.kind not in "iu" and not np.all(labels == np.round(labels))
                        or labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"For '{name}', the 'y' should hold class indices in [0, {classes}), "
                         f"but got values in [{labels.min()}, {labels.max()}].")
    metric._class_num = classes
    eye = np.eye(classes)
    return eye[y_pred.argmax(axis=1)], eye[labels.astype(np.int64)]


class Precision(_Counts):
    """Precision: true positives / predicted positives, per class (or sample, multilabel).
    `eval(average=False)`: the array of them; `average=True`: their mean."""

    def _counted(self, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        return pred.sum(axis=self._axis)


class Recall(_Counts):
    """Recall: true positives / actual positives, per class (or sample, multilabel).
    `eval(average=False)`: the array of them; `average=True`: their mean."""

    def _counted(self, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
        return y.sum(axis=self._axis)


class Fbeta(Metric):
    """F-beta score per class ('classification' only):
    (1 + beta**2) * TP / (beta**2 * actual positives + predicted positives)."""

    def __init__(self, beta: float) -> None:
        super().__init__()
        validator.check_value_type("beta", beta, (int, float), type(self).__name__)
        if not beta > 0:
            raise ValueError(f"For '{type(self).__name__}', the 'beta' should be > 0, but got "
                             f"{beta}.")
        self.beta = float(beta)
        self.eps = _EPS
        self.clear()

    def clear(self) -> None:
        self._class_num = 0
        self._true_positives: Any = 0
        self._actual_positives: Any = 0
        self._positives: Any = 0

    def update(self, *inputs: Any) -> None:
        pred, y = _classes(self, inputs, "classification")
        self._true_positives = self._true_positives + (pred * y).sum(axis=0)
        self._actual_positives = self._actual_positives + y.sum(axis=0)
        self._positives = self._positives + pred.sum(axis=0)

    def eval(self, average: bool = False) -> Any:
        """Per class F-beta scores, or their mean with `average`."""
        name = type(self).__name__
        validator.check_bool("average", average, name)
        if self._class_num == 0:
            raise RuntimeError(f"For '{name}', it can not be calculated because the number of "
                               f"samples is 0: call 'update' first.")
        b2 = self.beta ** 2
        score = (1.0 + b2) * self._true_positives / (
            b2 * self._actual_positives + self._positives + self.eps)
        return score.mean() if average else score


class F1(Fbeta):
    """The F1 score: Fbeta with beta = 1."""

    def __init__(self) -> None:
        super().__init__(1.0)


class TopKCategoricalAccuracy(Metric):
    """Fraction of samples whose label is among the `k` highest scores of `y_pred` (N, C);
    `y` (N,) class indices or (N, C) one-hot. Among equal scores the lower class index
    ranks first."""

    def __init__(self, k: int) -> None:
        super().__init__()
        name = type(self).__name__
        if isinstance(k, bool) or not isinstance(k, int):
            raise TypeError(f"For '{name}', the 'k' should be an int, but got "
                            f"{type(k).__name__}.")
        if k < 1:
            raise ValueError(f"For '{name}', the 'k' should be >= 1, but got {k}.")
        self.k = k
        self.clear()

    def clear(self) -> None:
        self._correct_num = 0
        self._samples_num = 0

    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        self._check_inputs(inputs, 2)
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim == y.ndim and _one_hot_rows(y):
            y = y.argmax(axis=1)
        if y_pred.ndim != 2 or y.reshape(-1).shape != y_pred.shape[:1]:
            raise ValueError(f"For '{name}', the 'y_pred' should be (N, C) class scores and 'y' "
                             f"(N,) class indices or (N, C) one-hot, but got shapes "
                             f"{y_pred.shape} and {y.shape}.")
        top = np.argsort(-y_pred, axis=1, kind="stable")[:, :self.k]
        self._correct_num += int((top == y.reshape(-1, 1)).any(axis=1).sum())
        self._samples_num += y_pred.shape[0]

    def eval(self) -> float:
        if self._samples_num == 0:
            raise RuntimeError(f"For '{type(self).__name__}', it can not be calculated because "
                               f"the number of samples is 0: call 'update' first.")
        return self._correct_num / self._samples_num


class Top1CategoricalAccuracy(TopKCategoricalAccuracy):
    """TopKCategoricalAccuracy with k = 1."""

    def __init__(self) -> None:
        super().__init__(1)


class Top5CategoricalAccuracy(TopKCategoricalAccuracy):
    """TopKCategoricalAccuracy with k = 5."""

    def __init__(self) -> None:
        super().__init__(5)


# MindSpore's names for `get_metric_fn` and Model(metrics={...names})
_BY_NAME.update({"precision": Precision, "recall": Recall, "F1": F1,
                 "top_k_categorical_accuracy": TopKCategoricalAccuracy,
                 "top_1_categorical_accuracy": Top1CategoricalAccuracy,
                 "top_5_categorical_accuracy": Top5CategoricalAccuracy})
