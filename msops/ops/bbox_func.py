"""Bounding-box functions of `mindspore.ops`' image family: bounding_box_encode and
bounding_box_decode (the (dx, dy, dw, dh) deltas between anchors and boxes, with MindSpore's
+1 pixel widths), check_valid (boxes inside the image), and crop_and_resize (bilinear or
nearest crops of an NHWC image batch, TensorFlow's definition). All are compositions of
element-wise primitives and Gather, so they trace, shard and differentiate as those do
(crop_and_resize's gradient reaches the image and, bilinearly, the boxes)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.grid_sample_func import clamp_range
from msops.primitives.array_ops import Reshape, Split
from msops.primitives.elementwise_ops import GreaterEqual, LessEqual, Select
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Cast, Exp, Log
from msops.primitives.piecewise_ops import Floor, LogicalAnd
from msops.primitives.shape_ops import BroadcastTo, ExpandDims, Squeeze
from msops.primitives.stack_ops import Stack
from msops.primitives.unary_ops import Sign

__all__ = ["bounding_box_encode", "bounding_box_decode", "check_valid", "crop_and_resize"]

_BOX_TYPES = (mstype.float16, mstype.float32)


def _boxes(name: str, arg: str, x: Any) -> list:
    """x (n, 4) of float16/float32 as its four columns, each (n,)."""
    check_tensor(name, arg, x)
    validator.check_tensor_dtype_valid(arg, x.dtype, _BOX_TYPES, name)
    if len(x.shape) != 2 or x.shape[1] != 4:
        raise ValueError(f"For '{name}', the '{arg}' should be (n, 4), but got shape "
                         f"{list(x.shape)}.")
    return [_prim(Squeeze, 1)(c) for c in _prim(Split, 1, 4)(x)]


def _four(name: str, arg: str, value: Any) -> tuple:
    validator.check_value_type(arg, value, (tuple, list), name)
    if len(value) != 4 or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                  for v in value):
        raise ValueError(f"For '{name}', the '{arg}' should be 4 numbers, but got {value!r}.")
    return tuple(float(v) for v in value)


def _centres(x1: Any, y1: Any, x2: Any, y2: Any) -> tuple:
    """(cx, cy, w, h) of boxes, widths and heights counting both end pixels (+1)."""
    return ((x1 + x2) * 0.5, (y1 + y2) * 0.5, x2 - x1 + 1.0, y2 - y1 + 1.0)


def bounding_box_encode(anchor_box: Any, groundtruth_box: Any,
                        means: tuple = (0.0, 0.0, 0.0, 0.0),
                        stds: tuple = (1.0, 1.0, 1.0, 1.0)) -> Any:
    """The deltas (n, 4) taking each anchor (x1, y1, x2, y2) to its ground-truth box:
    ((gx - px) / pw, (gy - py) / ph, log(gw / pw), log(gh / ph)), less `means`, over `stds`
    (centres and +1 widths and heights), as `mindspore.ops.bounding_box_encode`."""
    name = "bounding_box_encode"
    means, stds = _four(name, "means", means), _four(name, "stds", stds)
    if groundtruth_box.dtype != anchor_box.dtype or \
            tuple(groundtruth_box.shape) != tuple(anchor_box.shape):
        raise ValueError(f"For '{name}', the 'groundtruth_box' should have the anchor_box's "
                         f"shape {list(anchor_box.shape)} and dtype {anchor_box.dtype}, but "
                         f"got {list(groundtruth_box.shape)} and {groundtruth_box.dtype}.")
    px, py, pw, ph = _centres(*_boxes(name, "anchor_box", anchor_box))
    gx, gy, gw, gh = _centres(*_boxes(name, "groundtruth_box", groundtruth_box))
    deltas = ((gx - px) / pw, (gy - py) / ph, _prim(Log)(gw / pw), _prim(Log)(gh / ph))
    return _prim(Stack, 1)(tuple((d - m) / s for d, m, s in zip(deltas, means, stds)))


def bounding_box_decode(anchor_box: Any, deltas: Any, max_shape: tuple,
                        means: tuple = (0.0, 0.0, 0.0, 0.0),
                        stds: tuple = (1.0, 1.0, 1.0, 1.0),
                        wh_ratio_clip: float = 0.016) -> Any:
    """The boxes (n, 4) (x1, y1, x2, y2) the deltas (times `stds`, plus `means`; dw and dh
    clipped to |log(wh_ratio_clip)|) make of each anchor, clipped to the image
    `max_shape` (height, width), as `mindspore.ops.bounding_box_decode`."""
    name = "bounding_box_decode"
    means, stds = _four(name, "means", means), _four(name, "stds", stds)
    validator.check_value_type("wh_ratio_clip", wh_ratio_clip, float, name)
    validator.check_value_type("max_shape", max_shape, (tuple, list), name)
    if len(max_shape) != 2 or not all(isinstance(v, int) and v > 0 for v in max_shape):
        raise ValueError(f"For '{name}', the 'max_shape' should be 2 positive ints (height, "
                         f"width), but got {max_shape!r}.")
    if deltas.dtype != anchor_box.dtype or tuple(deltas.shape) != tuple(anchor_box.shape):
        raise ValueError(f"For '{name}', the 'deltas' should have the anchor_box's shape "
                         f"{list(anchor_box.shape)} and dtype {anchor_box.dtype}, but got "
                         f"{list(deltas.shape)} and {deltas.dtype}.")
    px, py, pw, ph = _centres(*_boxes(name, "anchor_box", anchor_box))
    dx, dy, dw, dh = (d * s + m for d, m, s in
                      zip(_boxes(name, "deltas", deltas), means, stds))
    limit = abs(math.log(wh_ratio_clip))
    dw, dh = (clamp_range(d, -limit, limit) for d in (dw, dh))
    gx, gy = px + pw * dx, py + ph * dy
    gw, gh = pw * _prim(Exp)(dw), ph * _prim(Exp)(dh)
    height, width = max_shape

    def clip(v: Any, top: int) -> Any:
        return clamp_range(v, 0.0, float(top - 1))
    return _prim(Stack, 1)((clip(gx - gw * 0.5 + 0.5, width), clip(gy - gh * 0.5 + 0.5, height),
                            clip(gx + gw * 0.5 - 0.5, width), clip(gy + gh * 0.5 - 0.5, height)))


def check_valid(bboxes: Any, img_metas: Any) -> Any:
    """Whether each box (x0, y0, x1, y1) of bboxes (N, 4) lies in the image of img_metas
    (height, width, ratio): x0 >= 0, y0 >= 0, x1 <= width * ratio - 1 and
    y1 <= height * ratio - 1; bool (N,), as `mindspore.ops.check_valid`."""
    name = "check_valid"
    x0, y0, x1, y1 = _boxes(name, "bboxes", bboxes)
    check_tensor(name, "img_metas", img_metas)
    validator.check_tensor_dtype_valid("img_metas", img_metas.dtype, _BOX_TYPES, name)
    if tuple(img_metas.shape) != (3,):
        raise ValueError(f"For '{name}', the 'img_metas' should be (3,) (height, width, "
                         f"ratio), but got shape {list(img_metas.shape)}.")
    meta = _prim(Cast)(img_metas, bboxes.dtype)
    height, width, ratio = (_prim(Squeeze, 0)(m) for m in _prim(Split, 0, 3)(meta))
    ok = [_prim(GreaterEqual)(x0, 0.0), _prim(GreaterEqual)(y0, 0.0),
          _prim(LessEqual)(x1, width * ratio - 1.0), _prim(LessEqual)(y1, height * ratio - 1.0)]
    out = ok[0]
    for o in ok[1:]:
        out = _prim(LogicalAnd)(out, o)
    return out


def _positions(lo: Any, hi: Any, size: int, crop: int) -> tuple:
    """((B, crop) source coordinates of the crop's rows (or columns) between the normalised
    lo and hi of each box, (B, crop) whether each lies inside [0, size - 1])."""
    lo, hi = _prim(ExpandDims)(lo, 1), _prim(ExpandDims)(hi, 1)
    if crop > 1:
        steps = Tensor(np.arange(crop, dtype=np.float32)[None, :] / (crop - 1))
        at = lo * float(size - 1) + steps * ((hi - lo) * float(size - 1))
    else:
        at = (lo + hi) * (0.5 * (size - 1))
    inside = _prim(LogicalAnd)(_prim(GreaterEqual)(at, 0.0), _prim(LessEqual)(at, size - 1.0))
    return at, inside


def crop_and_resize(image: Any, boxes: Any, box_indices: Any, crop_size: tuple,
                    method: str = "bilinear", extrapolation_value: float = 0.0) -> Any:
    """Crops of image (batch, H, W, C) by boxes (B, 4) of normalised (y1, x1, y2, x2)
    (image box_indices[i]), each resized to crop_size (crop_height, crop_width) by
    'bilinear' or 'nearest' sampling of the corners' grid (TensorFlow's rule: row r at
    y1 (H - 1) + r (y2 - y1) (H - 1) / (crop_height - 1)); points outside the image read
    `extrapolation_value`. float32 (B, crop_height, crop_width, C), as
    `mindspore.ops.crop_and_resize`."""
    name = "crop_and_resize"
    check_tensor(name, "image", image)
    check_tensor(name, "boxes", boxes)
    check_tensor(name, "box_indices", box_indices)
    validator.check_tensor_dtype_valid("boxes", boxes.dtype, (mstype.float32,), name)
    validator.check_tensor_dtype_valid("box_indices", box_indices.dtype, (mstype.int32,), name)
    validator.check_string("method", method, ("bilinear", "nearest"), name)
    validator.check_value_type("extrapolation_value", extrapolation_value, (float, int), name)
    validator.check_value_type("crop_size", crop_size, (tuple, list), name)
    if len(crop_size) != 2 or not all(isinstance(v, int) and v > 0 for v in crop_size):
        raise ValueError(f"For '{name}', the 'crop_size' should be 2 positive ints, but got "
                         f"{crop_size!r}.")
    if len(image.shape) != 4 or len(boxes.shape) != 2 or boxes.shape[1] != 4 or \
            tuple(box_indices.shape) != (boxes.shape[0],):
        raise ValueError(f"For '{name}', the 'image' should be 4-D (batch, H, W, C), 'boxes' "
                         f"(B, 4) and 'box_indices' (B,), but got shapes {list(image.shape)}, "
                         f"{list(boxes.shape)} and {list(box_indices.shape)}.")
    batch, h, w, c = image.shape
    nb = boxes.shape[0]
    ch, cw = crop_size
    y1, x1, y2, x2 = (_prim(Squeeze, 1)(v) for v in _prim(Split, 1, 4)(boxes))
    ys, y_in = _positions(y1, y2, h, ch)                       # (B, ch)
    xs, x_in = _positions(x1, x2, w, cw)                       # (B, cw)
    flat = _prim(Reshape)(_prim(Cast)(image, mstype.float32), (batch * h * w, c))
    base = _prim(Cast)(_prim(ExpandDims)(_prim(ExpandDims)(box_indices, 1), 2),
                       mstype.float32) * float(h * w)          # (B, 1, 1)

    def read(yy: Any, xx: Any) -> Any:
        """(B, ch, cw, C) pixels at integer-valued rows yy (B, ch) and columns xx (B, cw)."""
        at = base + _prim(ExpandDims)(clamp_range(yy, 0.0, h - 1.0), 2) * float(w) + \
            _prim(ExpandDims)(clamp_range(xx, 0.0, w - 1.0), 1)
        return _prim(Gather)(flat, _prim(Cast)(at, mstype.int32), 0)

    if method == "nearest":                 # rounding halves away from zero, as roundf
        out = read(_round_half_away(ys), _round_half_away(xs))
    else:
        top, left = _prim(Floor)(ys), _prim(Floor)(xs)
        dy = _prim(ExpandDims)(_prim(ExpandDims)(ys - top, 2), 3)     # (B, ch, 1, 1)
        dx = _prim(ExpandDims)(_prim(ExpandDims)(xs - left, 1), 3)    # (B, 1, cw, 1)
        upper = read(top, left) * (1.0 - dx) + read(top, left + 1.0) * dx
        lower = read(top + 1.0, left) * (1.0 - dx) + read(top + 1.0, left + 1.0) * dx
        out = upper * (1.0 - dy) + lower * dy
    inside = _prim(LogicalAnd)(_prim(ExpandDims)(y_in, 2), _prim(ExpandDims)(x_in, 1))
    inside = _prim(BroadcastTo, (nb, ch, cw, c))(_prim(ExpandDims)(inside, 3))
    fill = Tensor(np.full((nb, ch, cw, c), extrapolation_value, np.float32))
    return _prim(Select)(inside, out, fill)


def _round_half_away(v: Any) -> Any:
    """v rounded to the nearest integer, halves away from zero: sign(v) floor(|v| + 1/2)."""
    return _prim(Sign)(v) * _prim(Floor)(v * _prim(Sign)(v) + 0.5)
