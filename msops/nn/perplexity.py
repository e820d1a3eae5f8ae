"""Perplexity, as `mindspore.train`: exp of the mean negative log-probability of the
labels."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric

__all__ = ["Perplexity"]


class Perplexity(Metric):
    """`Perplexity(ignore_label=None)`: `update(preds, labels)` with `preds` (..., C)
    probabilities and `labels` one class index per row of them; `eval()` is
    exp(-sum(log p[label]) / count) over every update, probabilities floored at 1e-10 and
    the rows whose label is `ignore_label` left out."""

    def __init__(self, ignore_label: int | None = None) -> None:
        super().__init__()
        if ignore_label is not None:
            validator.check_int("ignore_label", ignore_label, type(self).__name__)
        self.ignore_label = ignore_label
        self.clear()

    def clear(self) -> None:
        self._sum_metric = 0.0
        self._num_inst = 0

    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        self._check_inputs(inputs, 2)
        preds = self._convert_data(inputs[0]).astype(np.float64)
        labels = self._convert_data(inputs[1])
        if preds.ndim < 1 or labels.size * preds.shape[-1] != preds.size:
            raise RuntimeError(f"For '{name}', the 'labels' should hold one class per row of "
                               f"'preds' {preds.shape}, but got shape {labels.shape}.")
        rows = preds.reshape(-1, preds.shape[-1])
        labels = labels.reshape(-1)
        keep = np.ones(labels.shape, bool) if self.ignore_label is None else \
            labels != self.ignore_label
        classes = labels[keep].astype(np.int64)
        if classes.size and (classes.min() < 0 or classes.max() >= rows.shape[1]):
            raise ValueError(f"For '{name}', the 'labels' should be class indices in [0, "
                             f"{rows.shape[1]}), but got values in [{classes.min()}, "
                             f"{classes.max()}].")
        probs = rows[keep][np.arange(classes.size), classes]
        self._sum_metric -= float(np.log(np.maximum(probs, 1e-10)).sum())
        self._num_inst += int(classes.size)

    def eval(self) -> float:
        if self._num_inst == 0:
            raise RuntimeError(f"For '{type(self).__name__}', the number of samples can not be "
                               f"0: call 'update' first.")
        return math.exp(self._sum_metric / self._num_inst)


_BY_NAME["perplexity"] = Perplexity
