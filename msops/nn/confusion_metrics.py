"""ConfusionMatrixMetric (as `mindspore.train.ConfusionMatrixMetric`): a measure derived
from the true/false positive/negative counts of binarized one-hot predictions (a
classification's, or a segmentation's per channel), such as sensitivity, precision or F1."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric, rearrange_inputs

__all__ = ["ConfusionMatrixMetric"]

#: every accepted name (spaces or underscores, any case) -> the measure computed
_ALIASES = {
    "tpr": ("sensitivity", "recall", "hit_rate", "true_positive_rate", "tpr"),
    "tnr": ("specificity", "selectivity", "true_negative_rate", "tnr"),
    "ppv": ("precision", "positive_predictive_value", "ppv"),
    "npv": ("negative_predictive_value", "npv"),
    "fnr": ("miss_rate", "false_negative_rate", "fnr"),
    "fpr": ("fall_out", "false_positive_rate", "fpr"),
    "fdr": ("false_discovery_rate", "fdr"),
    "for": ("false_omission_rate", "for"),
    "pt": ("prevalence_threshold", "pt"),
    "ts": ("threat_score", "critical_success_index", "ts", "csi"),
    "acc": ("accuracy", "acc"),
    "ba": ("balanced_accuracy", "ba"),
    "f1": ("f1_score", "f1"),
    "mcc": ("matthews_correlation_coefficient", "mcc"),
    "fm": ("fowlkes_mallows_index", "fm"),
    "bm": ("informedness", "bookmaker_informedness", "bm"),
    "mk": ("markedness", "deltap", "mk"),
}
_MEASURE = {alias: measure for measure, names in _ALIASES.items() for alias in names}
_DECREASES = ("none", "mean", "sum", "mean_batch", "sum_batch", "mean_channel", "sum_channel")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 (the measure is undefined there)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)


def confusion_measure(measure: str, counts: np.ndarray) -> np.ndarray:
    """The measure of counts [..., 4] = (tp, fp, tn, fn), NaN where undefined."""
    tp, fp, tn, fn = (counts[..., k] for k in range(4))
    p, n = tp + fn, fp + tn
    tpr, tnr = _ratio(tp, p), _ratio(tn, n)
    ppv, npv = _ratio(tp, tp + fp), _ratio(tn, tn + fn)
    simple = {"tpr": (tp, p), "tnr": (tn, n), "ppv": (tp, tp + fp), "npv": (tn, tn + fn),
              "fnr": (fn, p), "fpr": (fp, n), "fdr": (fp, fp + tp), "for": (fn, fn + tn),
              "ts": (tp, tp + fn + fp), "acc": (tp + tn, p + n),
              "f1": (2.0 * tp, 2.0 * tp + fn + fp),
              "mcc": (tp * tn - fp * fn, np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))),
              "pt": (np.sqrt(tpr * (1.0 - tnr)) + tnr - 1.0, tpr + tnr - 1.0)}
    if measure in simple:
        return _ratio(*simple[measure])
    return {"ba": (tpr + tnr) / 2.0, "fm": np.sqrt(ppv * tpr), "bm": tpr + tnr - 1.0,
            "mk": ppv + npv - 1.0}[measure]


def channel_counts(y_pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(tp, fp, tn, fn) per sample and channel of binarized (N, C, ...) arrays: (N, C, 4)."""
    batch, channels = y_pred.shape[:2]
    pred = y_pred.reshape(batch, channels, -1).astype(np.float64)
    true = y.reshape(batch, channels, -1).astype(np.float64)
    tp = ((pred + true) == 2).sum(-1).astype(np.float64)
    tn = ((pred + true) == 0).sum(-1).astype(np.float64)
    positives = true.sum(-1)
    return np.stack([tp, true.shape[-1] - positives - tn, tn, positives - tp], -1)


def decrease(chart: np.ndarray, how: str) -> np.ndarray | float:
    """A (N, C) chart of measures reduced as `how` says, NaN entries left out of means
    (and counted as 0 in sums): 'mean' the mean over samples of each sample's channel mean,
    'mean_batch' / 'mean_channel' per channel / per sample, 'sum*' the sums, 'none' the
    chart with NaN as 0."""
    defined = ~np.isnan(chart)
    chart = np.where(defined, chart, 0.0)

    def mean(axis: int) -> np.ndarray:
        count = defined.sum(axis)
        return np.where(count > 0, chart.sum(axis) / np.maximum(count, 1), 0.0), count

    if how == "mean":
        per_sample, count = mean(1)
        samples = int((count > 0).sum())
        return float(per_sample.sum() / samples) if samples else 0.0
    if how == "sum":
        return float(chart.sum())
    if how == "mean_batch":
        return mean(0)[0]
    if how == "mean_channel":
        return mean(1)[0]
    if how == "sum_batch":
        return chart.sum(0)
    if how == "sum_channel":
        return chart.sum(1)
    return chart


class ConfusionMatrixMetric(Metric):
    """`ConfusionMatrixMetric(skip_channel=True, metric_name="sensitivity",
    calculation_method=False, decrease="mean")`: `update(y_pred, y)`, both binarized
    one-hot (N, C, ...) of one shape.

    With `calculation_method` False (and always for classification-shaped input, (N, C) or
    (N, C, 1)) the counts of every sample and channel are summed over the updates and
    `eval()` is the measure of the total, shape (1,). With it True, `eval()` is the
    per-sample per-channel measure of every updated sample reduced by `decrease`.
    `skip_channel` False leaves out the first channel (when C > 1): MindSpore's code
    does so (its docs say the reverse), and msops follows the code."""

    def __init__(self, skip_channel: bool = True, metric_name: str = "sensitivity",
                 calculation_method: bool = False, decrease: str = "mean") -> None:
        super().__init__()
        name = type(self).__name__
        self.skip_channel = validator.check_bool("skip_channel", skip_channel, name)
        self.calculation_method = validator.check_bool("calculation_method",
                                                       calculation_method, name)
        validator.check_value_type("metric_name", metric_name, (str,), name)
        key = metric_name.replace(" ", "_").lower()
        if key not in _MEASURE:
            raise ValueError(f"For '{name}', the 'metric_name' should be one of "
                             f"{sorted(_MEASURE)} (spaces for underscores, any case), but got "
                             f"{metric_name!r}.")
        self.metric_name, self._measure = metric_name, _MEASURE[key]
        validator.check_value_type("decrease", decrease, (str,), name)
        self.decrease = validator.check_string("decrease", decrease, _DECREASES, name)
        self.clear()

    def clear(self) -> None:
        self._totals = np.zeros(4)
        self._charts: list[np.ndarray] = []
        self._kind: str | None = None

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        if len(inputs) != 2:
            raise ValueError(f"For '{name}.update', it needs 2 inputs (y_pred, y), but got "
                             f"{len(inputs)}.")
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if y_pred.ndim < 2 or y_pred.shape != y.shape:
            raise ValueError(f"For '{name}.update', the 'y_pred' and 'y' should be one-hot "
                             f"(N, C, ...) of one shape, but got {y_pred.shape} and {y.shape}.")
        for arg, value in (("y_pred", y_pred), ("y", y)):
            if not np.isin(value, (0, 1)).all():
                raise ValueError(f"For '{name}.update', the '{arg}' should be binarized (0 or "
                                 f"1), but it holds other values.")
        if not self.skip_channel and y.shape[1] > 1:
            y_pred, y = y_pred[:, 1:], y[:, 1:]
        counts = channel_counts(y_pred, y)
        classification = y.ndim == 2 or (y.ndim == 3 and y.shape[-1] == 1)
        kind = "charts" if self.calculation_method and not classification else "totals"
        if self._kind not in (None, kind):
            raise ValueError(f"For '{name}.update', with 'calculation_method' True the inputs "
                             f"should all be classification-shaped ((N, C) or (N, C, 1): "
                             f"counts summed) or all not (measures per sample), but got both.")
        self._kind = kind
        if kind == "charts":
            self._charts.append(confusion_measure(self._measure, counts))
        else:
            self._totals += counts.sum(axis=(0, 1))

    def eval(self) -> Any:
        if self._kind is None:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        if self._kind == "charts":
            return decrease(np.concatenate(self._charts), self.decrease)
        return confusion_measure(self._measure, self._totals[None])


_BY_NAME.update({"confusion_matrix_metric": ConfusionMatrixMetric})
