"""Similarity metrics, as `mindspore.train`: Dice (overlap of a prediction and its target)
and CosineSimilarity (of the rows of a matrix)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric

__all__ = ["Dice", "CosineSimilarity"]


class Dice(Metric):
    """`Dice(smooth=1e-5)`: the mean over updates of 2 * sum(y_pred * y) /
    (sum(y_pred**2) + sum(y**2) + smooth), each update's arrays (of one shape) taken whole."""

    def __init__(self, smooth: float = 1e-5) -> None:
        super().__init__()
        name = type(self).__name__
        validator.check_value_type("smooth", smooth, (int, float), name)
        if not smooth > 0:
            raise ValueError(f"For '{name}', the 'smooth' should be > 0, but got {smooth}.")
        self.smooth = float(smooth)
        self.clear()

    def clear(self) -> None:
        self._dice_coeff_sum = 0.0
        self._samples_num = 0

    def update(self, *inputs: Any) -> None:
        self._check_inputs(inputs, 2)
        y_pred = self._convert_data(inputs[0]).astype(np.float64).reshape(-1)
        y = self._convert_data(inputs[1]).astype(np.float64)
        if y.size != y_pred.size:
            raise ValueError(f"For '{type(self).__name__}', the 'y_pred' and 'y' should have "
                             f"one shape, but got {y_pred.size} and {y.size} elements.")
        y = y.reshape(-1)
        self._dice_coeff_sum += 2.0 * (y_pred @ y) / (y_pred @ y_pred + y @ y + self.smooth)
        self._samples_num += 1

    def eval(self) -> float:
        if self._samples_num == 0:
            raise RuntimeError(f"For '{type(self).__name__}', the number of samples can not "
                               f"be 0: call 'update' first.")
        return self._dice_coeff_sum / self._samples_num


class CosineSimilarity(Metric):
    """`CosineSimilarity(similarity="cosine", reduction="none", zero_diagonal=True)`:
    `update(x)` takes an (N, D) matrix (each update replaces the last); `eval()` is the
    (N, N) matrix of its rows' similarities ("cosine", or "dot" products), the diagonal
    zeroed with `zero_diagonal`, reduced over the last dim by "sum" or "mean" to (N,)."""

    def __init__(self, similarity: str = "cosine", reduction: str = "none",
                 zero_diagonal: bool = True) -> None:
        super().__init__()
        name = type(self).__name__
        self.similarity = validator.check_string("similarity", similarity, ("dot", "cosine"),
                                                 name)
        self.reduction = validator.check_string("reduction", reduction,
                                                ("none", "sum", "mean"), name)
        self.zero_diagonal = validator.check_bool("zero_diagonal", zero_diagonal, name)
        self.clear()

    def clear(self) -> None:
        self.sqr_mtx_res: np.ndarray | None = None

    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        if len(inputs) != 1:
            raise ValueError(f"For '{name}.update', it needs 1 input (the matrix), but got "
                             f"{len(inputs)}.")
        x = self._convert_data(inputs[0]).astype(np.float64)
        if x.ndim != 2:
            raise ValueError(f"For '{name}', the input should be an (N, D) matrix, but got "
                             f"shape {x.shape}.")
        if self.similarity == "cosine":
            norms = np.linalg.norm(x, axis=1, keepdims=True)
            if np.any(norms == 0):
                raise ValueError(f"For '{name}', every row should be non-zero to have a "
                                 f"cosine, but row {int(np.argmin(norms))} is zero.")
            x = x / norms
        self.sqr_mtx_res = x @ x.T

    def eval(self) -> np.ndarray:
        if self.sqr_mtx_res is None:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        out = self.sqr_mtx_res.copy()
        if self.zero_diagonal:
            np.fill_diagonal(out, 0.0)
        if self.reduction == "mean":
            return out.mean(axis=-1)
        if self.reduction == "sum":
            return out.sum(axis=-1)
        return out


_BY_NAME.update({"dice": Dice, "cosine_similarity": CosineSimilarity})
