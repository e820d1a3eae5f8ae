"""Box overlaps with `mindspore.ops`' names, arguments and defaults: iou. A composite of
element-wise primitives on the boxes' broadcast coordinates, so it traces, shards and
differentiates as they do."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import reshape
from msops.ops.slice_func import narrow
from msops.primitives.elementwise_ops import Maximum, Minimum
from msops.primitives.math_ops import Add, Mul, RealDiv, Sub

__all__ = ["iou"]

#: MindSpore's kernel adds it to the divisor
_EPS = 1e-10


def _coordinates(box: Any, column: bool) -> list:
    """x0, y0, x1, y1 of (K, 4) boxes, each (K, 1) (column) or (1, K)."""
    shape = (-1, 1) if column else (1, -1)
    return [reshape(narrow(box, 1, i, 1), shape) for i in range(4)]


def _area(x0: Any, y0: Any, x1: Any, y1: Any) -> Any:
    """(x1 - x0 + 1) * (y1 - y0 + 1): MindSpore's pixel-inclusive box area."""
    return _prim(Mul)(_prim(Add)(_prim(Sub)(x1, x0), 1.0), _prim(Add)(_prim(Sub)(y1, y0), 1.0))


def iou(anchor_boxes: Any, gt_boxes: Any, mode: str = "iou") -> Any:
    """The (M, N) overlaps of N anchor boxes with M ground-truth boxes, each (x0, y0, x1,
    y1): intersection / union ('iou') or intersection / the ground truth's area ('iof').
    Areas count pixels inclusively, (x1 - x0 + 1) * (y1 - y0 + 1), and 1e-10 is added to the
    divisor, as MindSpore's kernel."""
    for arg, v in (("anchor_boxes", anchor_boxes), ("gt_boxes", gt_boxes)):
        check_tensor("iou", arg, v)
        validator.check_tensor_dtype_valid(arg, v.dtype, mstype.float_type, "iou")
        if len(v.shape) != 2 or v.shape[1] != 4:
            raise ValueError(f"For 'iou', the '{arg}' should be of shape (N, 4), but got "
                             f"{list(v.shape)}.")
    if anchor_boxes.dtype != gt_boxes.dtype:
        raise TypeError(f"For 'iou', the 'anchor_boxes' and 'gt_boxes' should have one dtype, "
                        f"but got {anchor_boxes.dtype} and {gt_boxes.dtype}.")
    if mode not in ("iou", "iof"):
        raise KeyError(f"For 'iou', the 'mode' should be 'iou' or 'iof', but got {mode!r}.")
    ax0, ay0, ax1, ay1 = _coordinates(anchor_boxes, False)
    gx0, gy0, gx1, gy1 = _coordinates(gt_boxes, True)
    width = _prim(Maximum)(_prim(Add)(_prim(Sub)(_prim(Minimum)(ax1, gx1),
                                                 _prim(Maximum)(ax0, gx0)), 1.0), 0.0)
    height = _prim(Maximum)(_prim(Add)(_prim(Sub)(_prim(Minimum)(ay1, gy1),
                                                  _prim(Maximum)(ay0, gy0)), 1.0), 0.0)
    overlap = _prim(Mul)(width, height)
    gt_area = _area(gx0, gy0, gx1, gy1)
    if mode == "iof":
        return _prim(RealDiv)(overlap, _prim(Add)(gt_area, _EPS))
    union = _prim(Sub)(_prim(Add)(_area(ax0, ay0, ax1, ay1), gt_area), overlap)
    return _prim(RealDiv)(overlap, _prim(Add)(union, _EPS))
