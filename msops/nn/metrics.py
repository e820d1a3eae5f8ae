"""Evaluation metrics, as `mindspore.train` (also `nn.Accuracy` ...): the `Metric` base
(`clear` / `update` / `eval`), `Accuracy`, `Loss`, `MAE`, `MSE`.

A metric accumulates over the batches of one evaluation in float64 numpy; `update`
takes Tensors or arrays.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from msops.common.tensor import Tensor

__all__ = ["Metric", "Accuracy", "Loss", "MAE", "MSE", "get_metric_fn", "get_metrics", "names",
           "rearrange_inputs"]


def rearrange_inputs(func: Callable) -> Callable:
    """Decorates a metric's `update(self, *inputs)` (as `mindspore.train.rearrange_inputs`):
    with `self.indexes` set, update receives `[inputs[i] for i in indexes]`. Model passes
    such an update every output of the eval network and lets it pick (`rearranges_inputs`
    marks it); an undecorated update gets the picked outputs from Model."""
    @functools.wraps(func)
    def wrapper(self: Any, *inputs: Any) -> Any:
        indexes = self.indexes
        if indexes:
            if max(indexes) >= len(inputs) or min(indexes) < -len(inputs):
                raise ValueError(f"For '{type(self).__name__}.update', the 'indexes' {indexes} "
                                 f"should index its {len(inputs)} inputs.")
            inputs = tuple(inputs[i] for i in indexes)
        return func(self, *inputs)
    wrapper.rearranges_inputs = True
    return wrapper


class Metric:
    """Base of metrics: `clear()` resets, `update(*inputs)` adds a batch, `eval()` returns
    the value. `set_indexes([i, j])` picks which of the eval network's outputs `update`
    gets (default: Model passes (prediction, label), or (loss,) to `Loss`)."""

    def __init__(self) -> None:
        self._indexes: list[int] | None = None

    def clear(self) -> None:
        raise NotImplementedError(f"For '{type(self).__name__}', 'clear' should be defined.")

    def update(self, *inputs: Any) -> None:
        raise NotImplementedError(f"For '{type(self).__name__}', 'update' should be defined.")

    def eval(self) -> Any:
        raise NotImplementedError(f"For '{type(self).__name__}', 'eval' should be defined.")

    @property
    def indexes(self) -> list[int] | None:
        return self._indexes

    def set_indexes(self, indexes: list[int]) -> "Metric":
        if not isinstance(indexes, (list, tuple)) or \
                not all(isinstance(i, int) and not isinstance(i, bool) for i in indexes):
            raise ValueError(f"For 'set_indexes', the 'indexes' should be a list of ints, but "
                             f"got {indexes!r}.")
        self._indexes = list(indexes)
        return self

    def __call__(self, *inputs: Any) -> Any:
        """clear, update with `inputs`, eval: the metric of one batch."""
        self.clear()
        self.update(*inputs)
        return self.eval()

    @staticmethod
    def _convert_data(data: Any) -> np.ndarray:
        if isinstance(data, Tensor):
            return data.asnumpy()
        if isinstance(data, (np.ndarray, list, tuple, int, float, np.generic)):
            return np.asarray(data)
        raise TypeError(f"For 'Metric', the input should be a Tensor, a numpy array or a "
                        f"list, but got {type(data).__name__}.")

    def _check_inputs(self, inputs: tuple, count: int) -> None:
        if len(inputs) != count:
            raise ValueError(f"For '{type(self).__name__}.update', it needs {count} inputs "
                             f"(the prediction and the label), but got {len(inputs)}.")


class Accuracy(Metric):
    """Fraction of correct predictions. 'classification': `y_pred` (N, C) scores, the
    class is its argmax; `y` class indices (N,) or one-hot (N, C). 'multilabel': `y_pred`
    rounded must equal `y` (N, C) on every label of a sample."""

    def __init__(self, eval_type: str = "classification") -> None:
        super().__init__()
        if eval_type not in ("classification", "multilabel"):
            raise ValueError(f"For 'Accuracy', the 'eval_type' should be 'classification' or "
                             f"'multilabel', but got {eval_type!r}.")
        self.eval_type = eval_type
        self.clear()

    def clear(self) -> None:
        self._correct_num = 0
        self._total_num = 0

    def update(self, *inputs: Any) -> None:
        self._check_inputs(inputs, 2)
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        if self.eval_type == "classification":
            if y_pred.ndim != 2:
                raise ValueError(f"For 'Accuracy', the 'y_pred' should be (N, C) class scores, "
                                 f"but got shape {y_pred.shape}.")
            if y.ndim == y_pred.ndim and y.shape == y_pred.shape:     # one-hot labels
                y = y.argmax(axis=1)
            if y.shape != y_pred.shape[:1]:
                raise ValueError(f"For 'Accuracy', the 'y' should be {y_pred.shape[:1]} class "
                                 f"indices or {y_pred.shape} one-hot, but got shape {y.shape}.")
            correct = (y_pred.argmax(axis=1) == y)
        else:
            if y.shape != y_pred.shape:
                raise ValueError(f"For 'Accuracy', the multilabel 'y' should have the shape of "
                                 f"'y_pred' {y_pred.shape}, but got {y.shape}.")
            correct = (np.round(y_pred) == y).reshape(len(y), -1).all(axis=1)
        self._correct_num += int(correct.sum())
        self._total_num += int(correct.shape[0])

    def eval(self) -> float:
        if self._total_num == 0:
            raise RuntimeError("For 'Accuracy', it can not be calculated because the number "
                               "of samples is 0: call 'update' first.")
        return self._correct_num / self._total_num


class Loss(Metric):
    """Mean of the losses given to `update` (each a scalar, or an array averaged first)."""

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._sum_loss = 0.0
        self._total_num = 0

    def update(self, *inputs: Any) -> None:
        if len(inputs) != 1:
            raise ValueError(f"For 'Loss.update', it needs 1 input (the loss), but got "
                             f"{len(inputs)}.")
        loss = self._convert_data(inputs[0]).astype(np.float64)
        if loss.ndim > 1:
            raise ValueError(f"For 'Loss', the loss should be a scalar or 1-D, but got shape "
                             f"{loss.shape}.")
        self._sum_loss += float(loss.mean()) if loss.size else 0.0
        self._total_num += 1

    def eval(self) -> float:
        if self._total_num == 0:
            raise RuntimeError("For 'Loss', the total number can not be 0: call 'update' "
                               "first.")
        return self._sum_loss / self._total_num


class _ErrorMetric(Metric):
    """Mean over samples of a per-element error, summed over each sample's elements."""

    def __init__(self) -> None:
        super().__init__()
        self.clear()

    def clear(self) -> None:
        self._error_sum = 0.0
        self._samples_num = 0

    def _error(self, diff: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def update(self, *inputs: Any) -> None:
        self._check_inputs(inputs, 2)
        y_pred = self._convert_data(inputs[0]).astype(np.float64)
        y = self._convert_data(inputs[1]).astype(np.float64)
        if y.shape != y_pred.shape:
            y = y.reshape(y_pred.shape) if y.size == y_pred.size else y
        if y.shape != y_pred.shape:
            raise ValueError(f"For '{type(self).__name__}', the 'y' should have the shape of "
                             f"'y_pred' {y_pred.shape}, but got {y.shape}.")
        self._error_sum += float(self._error(y_pred - y).sum())
        self._samples_num += int(y.shape[0])

    def eval(self) -> float:
        if self._samples_num == 0:
            raise RuntimeError(f"For '{type(self).__name__}', the number of samples can not "
                               f"be 0: call 'update' first.")
        return self._error_sum / self._samples_num


class MAE(_ErrorMetric):
    """Mean absolute error."""

    def _error(self, diff: np.ndarray) -> np.ndarray:
        return np.abs(diff)


class MSE(_ErrorMetric):
    """Mean squared error."""

    def _error(self, diff: np.ndarray) -> np.ndarray:
        return diff * diff


#: MindSpore's metric names; the modules defining more metrics add theirs
_BY_NAME = {"accuracy": Accuracy, "acc": Accuracy, "loss": Loss, "mae": MAE, "mse": MSE}


def names() -> list[str]:
    """The names `get_metric_fn` and `Model(metrics={...})` take, sorted."""
    return sorted(_BY_NAME)


def get_metrics(metrics: Any) -> dict[str, Metric] | None:
    """{name: Metric} from a dict of Metrics or a set (list) of metric names, as Model
    takes `metrics`; None stays None."""
    if metrics is None:
        return None
    if isinstance(metrics, dict):
        for name, m in metrics.items():
            if not isinstance(m, Metric):
                raise TypeError(f"For 'get_metrics', every 'metrics' value should be a Metric, "
                                f"but '{name}' is {type(m).__name__}.")
        return dict(metrics)
    if isinstance(metrics, (set, list, tuple)):
        return {name: get_metric_fn(name) for name in sorted(metrics)}
    raise TypeError(f"For 'get_metrics', the 'metrics' should be a set of names or a dict "
                    f"{{name: Metric}}, but got {type(metrics).__name__}.")


def get_metric_fn(name: str, *args: Any, **kwargs: Any) -> Metric:
    """A metric by its MindSpore name (`names()`: 'accuracy' / 'acc', 'loss', 'mae', ...),
    made with `args` and `kwargs`."""
    if name not in _BY_NAME:
        raise ValueError(f"For 'get_metric_fn', the metric name should be one of "
                         f"{sorted(_BY_NAME)}, but got {name!r}.")
    return _BY_NAME[name](*args, **kwargs)
