"""OcclusionSensitivity (as `mindspore.train.OcclusionSensitivity`): how much a model's
score for a label drops when each part of an image is hidden."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell
from msops.nn.metrics import _BY_NAME, Metric, rearrange_inputs

__all__ = ["OcclusionSensitivity"]


class OcclusionSensitivity(Metric):
    """`OcclusionSensitivity(pad_val=0.0, margin=2, n_batch=128, b_box=None)`:
    `update(model, y_pred, label)` with `y_pred` one image (1, ...) and `label` one class
    index. For every position i of the image (its dims after the batch one; within
    `b_box` = [min1, max1, min2, max2, ...], inclusive, when given) the image with the
    block [i - margin, i + margin) set to `pad_val` is scored by `model` (n_batch images a
    call; its output (n, classes)); `eval()` is the unoccluded score of `label` minus each
    occluded one, in the image's (or the box's) shape, squeezed. `margin`: an int or one
    per image dim."""

    def __init__(self, pad_val: float = 0.0, margin: int | Sequence[int] = 2,
                 n_batch: int = 128, b_box: Sequence[int] | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        validator.check_value_type("pad_val", pad_val, (int, float), name)
        self.pad_val = float(pad_val)
        validator.check_value_type("margin", margin, (int, list, tuple), name)
        values = list(margin) if isinstance(margin, (list, tuple)) else [margin]
        if not values or any(isinstance(m, bool) or not isinstance(m, int) or m < 0
                             for m in values):
            raise ValueError(f"For '{name}', the 'margin' should be an int >= 0 or a list of "
                             f"them, but got {margin!r}.")
        self.margin = margin
        self.n_batch = validator.check_positive_int(n_batch, "n_batch", name)
        if b_box is not None:
            validator.check_value_type("b_box", b_box, (list, tuple), name)
        self.b_box = None if b_box is None else [int(v) for v in b_box]
        self.clear()

    def clear(self) -> None:
        self._baseline = 0.0
        self._sensitivity: np.ndarray | None = None

    def _box(self, shape: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The inclusive (min, max) corners of the analysed region."""
        name = type(self).__name__
        if self.b_box is None:
            return np.zeros(len(shape), int), shape - 1
        if len(self.b_box) != 2 * len(shape):
            raise ValueError(f"For '{name}', the 'b_box' should hold a min and a max for each "
                             f"of the image's {len(shape)} dims, but got {self.b_box}.")
        low, high = np.array(self.b_box[::2]), np.array(self.b_box[1::2])
        low = np.maximum(low, 0)
        high = np.where(high < 0, shape - 1, high)        # a negative max: to the end
        if np.any(high >= shape) or np.any(low > high):
            raise ValueError(f"For '{name}', the 'b_box' should lie in the image {list(shape)} "
                             f"with each min <= its max, but got {self.b_box}.")
        return low, high

    def _scores(self, model: Cell, images: list, label: int) -> np.ndarray:
        out = model(Tensor(np.concatenate(images))).asnumpy()
        if out.ndim != 2 or out.shape[0] != len(images) or not 0 <= label < out.shape[1]:
            raise ValueError(f"For '{type(self).__name__}.update', the model should give "
                             f"(n, classes) scores with the label {label} a class, but got "
                             f"shape {out.shape} for {len(images)} images.")
        return out[:, label]

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        if len(inputs) != 3:
            raise ValueError(f"For '{name}.update', it needs 3 inputs (model, y_pred, label), "
                             f"but got {len(inputs)}.")
        model = inputs[0]
        if not isinstance(model, Cell):
            raise TypeError(f"For '{name}.update', the 'model' (inputs[0]) should be a Cell, "
                            f"but got {type(model).__name__}.")
        image = self._convert_data(inputs[1])
        labels = self._convert_data(inputs[2])
        if image.ndim < 2 or image.shape[0] != 1:
            raise ValueError(f"For '{name}.update', the 'y_pred' should be one image (1, ...), "
                             f"but got shape {image.shape}.")
        if labels.size != 1 or labels.dtype.kind not in "iu":
            raise ValueError(f"For '{name}.update', the 'label' should be one class index, "
                             f"but got {labels!r}.")
        label = int(labels.reshape(()))
        shape = np.array(image.shape[1:])
        margins = np.broadcast_to(np.asarray(self.margin), shape.shape)
        if np.size(self.margin) not in (1, len(shape)):
            raise ValueError(f"For '{name}', the 'margin' should be one int or one per image "
                             f"dim ({len(shape)}), but got {self.margin}.")
        low, high = self._box(shape)
        self._baseline = float(self._scores(model, [image], label)[0])
        out_shape = tuple(high - low + 1)
        scores, batch = [], []
        for k in range(int(np.prod(out_shape))):
            at = np.array(np.unravel_index(k, out_shape)) + low
            block = tuple(slice(max(0, i - m), min(n, i + m))
                          for i, m, n in zip(at, margins, shape))
            occluded = image.copy()
            occluded[(slice(None),) + block] = self.pad_val
            batch.append(occluded)
            if len(batch) == self.n_batch:
                scores.append(self._scores(model, batch, label))
                batch = []
        if batch:
            scores.append(self._scores(model, batch, label))
        self._sensitivity = np.concatenate(scores).reshape(out_shape)

    def eval(self) -> np.ndarray:
        if self._sensitivity is None:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        return np.squeeze(self._baseline - self._sensitivity)


_BY_NAME.update({"occlusion_sensitivity": OcclusionSensitivity})
