"""`pad`, as `mindspore.ops.pad`: a Tensor widened (or, by negative amounts, cropped) at both
ends of its last dims. Each padded dim is cropped by a StridedSlice, then joined by a Concat
to the new border: a constant block, its reflection (a reversed slice), its edge repeated
(a Tile) or its other end (circular). So it traces, shards (a padded dim is taken whole) and
differentiates (the border's gradient flows back into the elements it copied)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.slice_func import slice_along
from msops.primitives.array_ops import Concat
from msops.primitives.shape_ops import Tile

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _padding(padding: Any, ndim: int) -> list:
    """[(dim, before, after)] from MindSpore's flat (left, right, top, bottom, ...) pairs,
    which start at the last dim."""
    if isinstance(padding, Tensor):
        padding = padding.asnumpy().tolist()
    if not isinstance(padding, (tuple, list)) or not all(
            isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in padding):
        raise TypeError(f"For 'pad', the 'padding' should be a tuple/list of ints, but got "
                        f"{padding!r}.")
    if len(padding) % 2:
        raise ValueError(f"For 'pad', the length of 'padding' should be even, but got "
                         f"{len(padding)}.")
    if len(padding) // 2 > ndim:
        raise ValueError(f"For 'pad', the 'padding' should pad at most the {ndim} dims of "
                         f"'input_x' (length <= {2 * ndim}), but got length {len(padding)}.")
    return [(ndim - 1 - k, int(padding[2 * k]), int(padding[2 * k + 1]))
            for k in range(len(padding) // 2)]


def _border(name: str, x: Any, dim: int, width: int, at_start: bool, mode: str,
            value: Any) -> Any:
    """The `width` elements joined to x before (at_start) or after dim `dim`."""
    n = x.shape[dim]
    if mode == "constant":
        shape = list(x.shape)
        shape[dim] = width
        return Tensor(np.full(shape, value, x.dtype.np_dtype))
    if mode in ("reflect", "symmetric"):
        edge = mode == "symmetric"            # symmetric repeats the edge, reflect does not
        if width > n - (not edge):
            bound = "at most" if edge else "smaller than"
            raise ValueError(f"For '{name}', a '{mode}' padding should be {bound} the size {n} "
                             f"of dim {dim}, but got {width}.")
        skip = 0 if edge else 1
        part = slice_along(x, dim, skip, width + skip) if at_start else \
            slice_along(x, dim, n - skip - width, n - skip)
        return slice_along(part, dim, None, None, -1)
    if mode == "replicate":
        if n == 0:
            raise ValueError(f"For '{name}', a 'replicate' padding needs dim {dim} to be "
                             f"non-empty, but it has size 0.")
        edge = slice_along(x, dim, 0, 1) if at_start else slice_along(x, dim, n - 1, n)
        multiples = [1] * len(x.shape)
        multiples[dim] = width
        return _prim(Tile)(edge, tuple(multiples))
    if width > n:                                            # circular
        raise ValueError(f"For '{name}', a 'circular' padding should be at most the size {n} "
                         f"of dim {dim}, but got {width}.")
    return slice_along(x, dim, n - width, n) if at_start else slice_along(x, dim, 0, width)


def pad(input_x: Any, padding: Any, mode: str = "constant", value: Any = None) -> Any:
    """input_x padded by `padding` = (left, right) for the last dim, then (top, bottom) for
    the one before, ...; negative amounts crop. mode 'constant' fills `value` (0 when None),
    'reflect' mirrors without the edge, 'replicate' repeats the edge, 'circular' wraps."""
    check_tensor("pad", "input_x", input_x)
    if mode not in _MODES:
        raise ValueError(f"For 'pad', the 'mode' should be one of {list(_MODES)}, but got "
                         f"{mode!r}.")
    if mode != "constant" and value is not None:
        raise ValueError(f"For 'pad', the 'value' should be None unless the 'mode' is "
                         f"'constant', but got value={value!r} with mode {mode!r}.")
    if value is None:
        value = 0
    if not isinstance(value, (bool, int, float, np.number)):
        raise TypeError(f"For 'pad', the 'value' should be a number or None, but got "
                        f"{type(value).__name__}.")
    return pad_dims("pad", input_x, _padding(padding, len(input_x.shape)), mode, value)


def pad_dims(name: str, x: Any, spec: Any, mode: str, value: Any = 0) -> Any:
    """x padded by [(dim, before, after)] (negative amounts crop) in `mode` ('constant' with
    `value`, 'reflect', 'symmetric' (the edge repeated in the mirror), 'replicate',
    'circular'); errors name `name`. The body of ops.pad and of the nn padding layers."""
    for dim, before, after in spec:
        n = x.shape[dim]
        begin, end = max(-before, 0), n - max(-after, 0)
        if end < begin:
            raise ValueError(f"For '{name}', the padding ({before}, {after}) of dim {dim} should "
                             f"leave a size >= 0 of its {n} elements, but crops "
                             f"{max(-before, 0) + max(-after, 0)}.")
        x = slice_along(x, dim, begin, end)
        parts = ([_border(name, x, dim, before, True, mode, value)] if before > 0 else []) + \
            [x] + ([_border(name, x, dim, after, False, mode, value)] if after > 0 else [])
        if len(parts) > 1:
            x = _prim(Concat, dim)(tuple(parts))
    return x
