"""Argument checks and constants the functional forms share (loss_func, class_loss_func,
nn_func and the nn layers calling them): float Tensors, matching dtypes, broadcastable
shapes, each error naming the function or layer the user called."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor

__all__ = ["check_float", "check_like", "check_broadcast", "const"]


def check_float(name: str, arg: str, x: Any) -> Any:
    """x is a Tensor of a float dtype."""
    check_tensor(name, arg, x)
    if x.dtype not in mstype.float_type:
        raise TypeError(f"For '{name}', the '{arg}' should have a float dtype, but got "
                        f"{x.dtype}.")
    return x


def check_broadcast(name: str, arg: str, shape: tuple, target: tuple,
                    mutual: bool = False) -> None:
    """`shape` broadcasts to `target` (mutual: the two broadcast together)."""
    try:
        joint = np.broadcast_shapes(shape, target)
    except ValueError:
        joint = None
    if joint is None or (not mutual and tuple(joint) != tuple(target)):
        how = "broadcast with" if mutual else "broadcast to"
        raise ValueError(f"For '{name}', the '{arg}' should {how} the shape {list(target)}, "
                         f"but got {list(shape)}.")


def check_like(name: str, arg: str, x: Any, like: Any, like_arg: str) -> None:
    """x is a float Tensor of like's dtype."""
    check_float(name, arg, x)
    if x.dtype != like.dtype:
        raise TypeError(f"For '{name}', the '{arg}' should have the dtype of '{like_arg}' "
                        f"{like.dtype}, but got {x.dtype}.")


@functools.lru_cache(maxsize=None)
def const(value: float, dtype: mstype.Type) -> Tensor:
    """A 0-d Tensor of `value` in `dtype` (made once per pair)."""
    return Tensor(np.array(value, mstype.dtype_to_nptype(dtype)))
