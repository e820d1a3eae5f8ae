"""Surface-distance metrics of segmentations, as `mindspore.train`: HausdorffDistance,
MeanSurfaceDistance and RootMeanSquareDistance.

`update(y_pred, y, label_idx)` takes two label images of one shape; the voxels equal to
`label_idx` form each mask, and a mask's surface is its voxels with a face neighbour
outside it (the mask XOR its binary erosion; outside the image counts as outside). The
distance from a surface voxel of one mask to the other surface is the Euclidean,
chessboard or taxicab distance to its nearest surface voxel there (scipy's exact
distance transforms); an empty surface on the near side gives no distances (the metric is
inf), an empty one on the far side infinite distances."""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import ndimage

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric, rearrange_inputs

__all__ = ["HausdorffDistance", "MeanSurfaceDistance", "RootMeanSquareDistance"]

_METRICS = ("euclidean", "chessboard", "taxicab")


def surface(mask: np.ndarray) -> np.ndarray:
    """The voxels of a boolean mask with a face neighbour outside it."""
    return mask ^ ndimage.binary_erosion(mask)


def surface_distances(edges: np.ndarray, other: np.ndarray, metric: str) -> np.ndarray:
    """The distance of every voxel of `edges` to the nearest voxel of `other` (1-D, in the
    order of np.nonzero; inf everywhere when `other` is empty)."""
    if not edges.any():
        return np.zeros(0)
    if not other.any():
        return np.full(int(edges.sum()), np.inf)
    if metric == "euclidean":
        field = ndimage.distance_transform_edt(~other)
    else:
        field = ndimage.distance_transform_cdt(~other, metric=metric)
    return np.asarray(field, np.float64)[edges]


class _SurfaceMetric(Metric):
    """The shared update: the two masks' surfaces, kept until eval."""

    def __init__(self, distance_metric: str) -> None:
        super().__init__()
        name = type(self).__name__
        validator.check_value_type("distance_metric", distance_metric, (str,), name)
        self.distance_metric = validator.check_string("distance_metric", distance_metric,
                                                      _METRICS, name)

    def clear(self) -> None:
        self._y_pred_edges: np.ndarray | None = None
        self._y_edges: np.ndarray | None = None

    def _masks(self, inputs: tuple) -> tuple[np.ndarray, np.ndarray]:
        name = type(self).__name__
        if len(inputs) != 3:
            raise ValueError(f"For '{name}.update', it needs 3 inputs (y_pred, y, label_idx), "
                             f"but got {len(inputs)}.")
        y_pred, y = self._convert_data(inputs[0]), self._convert_data(inputs[1])
        label = inputs[2]
        if isinstance(label, bool) or not isinstance(label, (int, float)):
            raise TypeError(f"For '{name}.update', the 'label_idx' (inputs[2]) should be an int "
                            f"or a float, but got {type(label).__name__}.")
        if y_pred.size == 0 or y_pred.shape != y.shape:
            raise ValueError(f"For '{name}.update', the 'y_pred' and 'y' should be non-empty "
                             f"and of one shape, but got {y_pred.shape} and {y.shape}.")
        if label not in y_pred and label not in y:
            raise ValueError(f"For '{name}.update', the 'label_idx' {label} should occur in "
                             f"'y_pred' or 'y', but it does not.")
        return y_pred == label, y == label

    def _update_edges(self, y_pred: np.ndarray, y: np.ndarray) -> None:
        self._y_pred_edges, self._y_edges = surface(y_pred), surface(y)

    def _edges(self) -> tuple[np.ndarray, np.ndarray]:
        if self._y_pred_edges is None:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        return self._y_pred_edges, self._y_edges

    def _distances(self, forward: bool) -> np.ndarray:
        pred, y = self._edges()
        return surface_distances(pred, y, self.distance_metric) if forward else \
            surface_distances(y, pred, self.distance_metric)


class HausdorffDistance(_SurfaceMetric):
    """`HausdorffDistance(distance_metric="euclidean", percentile=None, directed=False,
    crop=True)`: h(A, B) = max over A's surface of the distance to B's surface (its
    `percentile`, in [0, 100], instead of the max); the result h(y_pred, y), or with
    `directed` False max(h(y_pred, y), h(y, y_pred)). `crop` works on the bounding box of
    the two masks' union only (the same result: outside it both masks are empty)."""

    def __init__(self, distance_metric: str = "euclidean", percentile: float | None = None,
                 directed: bool = False, crop: bool = True) -> None:
        super().__init__(distance_metric)
        name = type(self).__name__
        if percentile is not None:
            validator.check_value_type("percentile", percentile, (int, float), name)
            if not 0 <= percentile <= 100:
                raise ValueError(f"For '{name}', the 'percentile' should be in [0, 100], but "
                                 f"got {percentile}.")
        self.percentile = percentile
        self.directed = validator.check_bool("directed", directed, name)
        self.crop = validator.check_bool("crop", crop, name)
        self.clear()

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        y_pred, y = self._masks(inputs)
        if self.crop and (y_pred | y).any():
            where = np.nonzero(y_pred | y)
            box = tuple(slice(int(w.min()), int(w.max()) + 1) for w in where)
            # the box plus a layer of background: the surfaces stay those of the whole image
            y_pred = np.pad(y_pred[box], 1)
            y = np.pad(y[box], 1)
        self._update_edges(y_pred, y)

    def _directed(self, forward: bool) -> float:
        d = self._distances(forward)
        if d.size == 0:
            return np.inf
        return float(d.max()) if self.percentile is None else \
            float(np.percentile(d, self.percentile))

    def eval(self) -> float:
        hd = self._directed(True)
        return hd if self.directed else max(hd, self._directed(False))


class _AverageDistance(_SurfaceMetric):
    """An average of the distances from y_pred's surface to y's (`_average`), with
    `symmetric` the mean of it and the reverse one's, then `_finish`ed."""

    def __init__(self, symmetric: bool = False, distance_metric: str = "euclidean") -> None:
        super().__init__(distance_metric)
        self.symmetric = validator.check_bool("symmetric", symmetric, type(self).__name__)
        self.clear()

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        self._update_edges(*self._masks(inputs))

    def eval(self) -> float:
        averages = []
        for forward in ((True, False) if self.symmetric else (True,)):
            d = self._distances(forward)
            if d.size == 0:
                return np.inf
            averages.append(self._average(d))
        return float(self._finish(np.mean(averages)))

    def _average(self, d: np.ndarray) -> float:
        raise NotImplementedError

    def _finish(self, value: float) -> float:
        return value


class MeanSurfaceDistance(_AverageDistance):
    """`MeanSurfaceDistance(symmetric=False, distance_metric="euclidean")`: the mean
    distance from y_pred's surface to y's; with `symmetric`, the mean of that and of the
    mean from y's surface to y_pred's (as MindSpore computes it)."""

    def _average(self, d: np.ndarray) -> float:
        return d.mean()


class RootMeanSquareDistance(_AverageDistance):
    """`RootMeanSquareDistance(symmetric=False, distance_metric="euclidean")`: the root of
    the mean squared distance from y_pred's surface to y's; with `symmetric`, the root of
    the mean of that mean square and y's surface's to y_pred's. (MindSpore's non-symmetric
    result leaves out the root; msops takes it, as the name says.)"""

    def _average(self, d: np.ndarray) -> float:
        return np.mean(d * d)

    def _finish(self, value: float) -> float:
        return np.sqrt(value)


_BY_NAME.update({"hausdorff_distance": HausdorffDistance,
                 "mean_surface_distance": MeanSurfaceDistance,
                 "root_mean_square_distance": RootMeanSquareDistance})
