"""Gradient clipping, as `mindspore.ops`: clip_by_value, clip_by_norm, clip_by_global_norm.

Written with primitives, so they trace, differentiate and shard as they do: in a sharded
graph the sums and maxima over a split Tensor are the whole Tensor's (the partition pass
combines the partial results), so every rank scales by the same global norm. The norm is
accumulated in float32 (float64 when an input is float64) and the scale cast back to each
Tensor's dtype.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.ops.math_func import clamp
from msops.primitives.elementwise_ops import Maximum, Minimum, Pow, Sqrt
from msops.primitives.math_ops import AddN, Cast, Mul, RealDiv, ReduceMax, ReduceSum, Square
from msops.primitives.unary_ops import Abs

__all__ = ["clip_by_value", "clip_by_norm", "clip_by_global_norm"]


def _tensors(name: str, x: Any) -> tuple[list, bool]:
    """(the Tensors of `x`, whether `x` was one Tensor)."""
    if isinstance(x, Tensor):
        return [x], True
    if isinstance(x, (tuple, list)) and x and all(isinstance(t, Tensor) for t in x):
        return list(x), False
    raise TypeError(f"For '{name}', the 'x' should be a Tensor or a non-empty list/tuple of "
                    f"Tensors, but got {type(x).__name__}.")


def _floats(name: str, tensors: Sequence[Tensor]) -> mstype.Type:
    """The dtype norms are accumulated in: float64 if any Tensor is, else float32."""
    for t in tensors:
        if t.dtype not in mstype.float_type:
            raise TypeError(f"For '{name}', every Tensor should have a float dtype, but got "
                            f"{t.dtype}.")
    return mstype.float64 if any(t.dtype == mstype.float64 for t in tensors) else mstype.float32


def _scalar(value: float, dtype: mstype.Type) -> Tensor:
    return Tensor(np.asarray(value, mstype.dtype_to_nptype(dtype)))


def _as(t: Any, dtype: mstype.Type) -> Any:
    return t if t.dtype == dtype else _prim(Cast)(t, dtype)


def _positive(name: str, arg: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"For '{name}', the '{arg}' should be a number > 0, but got "
                         f"{value!r}.")
    return float(value)


def clip_by_value(x: Any, clip_value_min: Any = None, clip_value_max: Any = None) -> Any:
    """Each element of `x` (a Tensor, or a list/tuple of them: the same structure back)
    limited to [clip_value_min, clip_value_max] (either may be None, not both)."""
    tensors, single = _tensors("clip_by_value", x)
    if clip_value_min is None and clip_value_max is None:
        raise ValueError("For 'clip_by_value', at least one of 'clip_value_min' and "
                         "'clip_value_max' should be given, but got both None.")
    out = [clamp(t, clip_value_min, clip_value_max) for t in tensors]
    return out[0] if single else type(x)(out)


def _total_norm(tensors: Sequence[Tensor], norm_type: float, acc: mstype.Type) -> Any:
    """The `norm_type`-norm of every element of `tensors` together (a 0-d Tensor)."""
    everything = ()
    if norm_type == math.inf:
        parts = [_as(_prim(ReduceMax)(_prim(Abs)(t), everything), acc) for t in tensors]
        total = parts[0]
        for part in parts[1:]:
            total = _prim(Maximum)(total, part)
        return total
    if norm_type == 2.0:
        parts = [_prim(ReduceSum)(_prim(Square)(_as(t, acc)), everything) for t in tensors]
        total = parts[0] if len(parts) == 1 else _prim(AddN)(tuple(parts))
        return _prim(Sqrt)(total)
    p = _scalar(norm_type, acc)
    parts = [_prim(ReduceSum)(_prim(Pow)(_prim(Abs)(_as(t, acc)), p), everything)
             for t in tensors]
    total = parts[0] if len(parts) == 1 else _prim(AddN)(tuple(parts))
    return _prim(Pow)(total, _scalar(1.0 / norm_type, acc))


def clip_by_norm(x: Any, max_norm: float, norm_type: float = 2.0,
                 error_if_nonfinite: bool = False) -> Any:
    """`x` (a Tensor or a list/tuple of them) scaled by min(1, max_norm / (norm + 1e-6)),
    norm the `norm_type`-norm (2, inf or any p > 0) of all their elements together, as
    torch's clip_grad_norm_. With `error_if_nonfinite` (eager only) a NaN or Inf norm is
    a ValueError."""
    name = "clip_by_norm"
    tensors, single = _tensors(name, x)
    max_norm = _positive(name, "max_norm", max_norm)
    if norm_type == "inf":
        norm_type = math.inf
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or \
            not norm_type > 0:
        raise ValueError(f"For '{name}', the 'norm_type' should be a number > 0 or inf, but "
                         f"got {norm_type!r}.")
    acc = _floats(name, tensors)
    total = _total_norm(tensors, float(norm_type), acc)
    if error_if_nonfinite and type(total) is Tensor and not np.isfinite(total.asnumpy()).all():
        raise ValueError(f"For '{name}', the total norm of order {norm_type} is not finite: "
                         f"{total.asnumpy()}.")
    coef = _prim(Minimum)(_prim(RealDiv)(_scalar(max_norm, acc), total + _scalar(1e-6, acc)),
                          _scalar(1.0, acc))
    out = [_prim(Mul)(t, _as(coef, t.dtype)) for t in tensors]
    return out[0] if single else type(x)(out)


def clip_by_global_norm(x: Any, clip_norm: float = 1.0, use_norm: Any = None) -> tuple:
    """Each Tensor of `x` (a list/tuple) times clip_norm / max(global_norm, clip_norm),
    global_norm the 2-norm of all their elements together (MindSpore's and TensorFlow's
    rule: unchanged when the norm is within `clip_norm`). `use_norm` must be None."""
    name = "clip_by_global_norm"
    if isinstance(x, Tensor):
        x = (x,)
    tensors, _ = _tensors(name, x)
    clip_norm = _positive(name, "clip_norm", clip_norm)
    if use_norm is not None:
        raise ValueError(f"For '{name}', the 'use_norm' should be None (reserved), but got "
                         f"{use_norm!r}.")
    acc = _floats(name, tensors)
    norm = _total_norm(tensors, 2.0, acc)
    limit = _scalar(clip_norm, acc)
    scale = _prim(RealDiv)(limit, _prim(Maximum)(norm, limit))
    return tuple(_prim(Mul)(t, _as(scale, t.dtype)) for t in tensors)
