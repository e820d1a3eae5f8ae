"""`Cell.set_inputs`: the declared inputs of a cell's later calls (MindSpore's dynamic shape).

MindSpore compiles one graph for the declared shapes, whose `None` (-1) dims are free;
msops compiles per call signature anyway, so the declaration is a contract checked on
every call: the number of inputs, and of each declared Tensor the dtype, the rank (unless
declared `[-2]`: any rank) and every fixed dim.
"""
from __future__ import annotations

from typing import Any, Sequence

from msops.common.tensor import Tensor

__all__ = ["check_declared", "check_call", "declared_shape"]


def declared_shape(t: Tensor) -> tuple | None:
    """The shape a placeholder declares (-1: a free dim); None: any rank."""
    shape = getattr(t, "_declared_shape", None)
    if shape is None:
        return tuple(t.shape)
    return None if shape == (-2,) else shape


def check_declared(name: str, inputs: Sequence[Any]) -> None:
    if not inputs:
        raise ValueError(f"For '{name}.set_inputs', at least one input should be declared, "
                         f"but got none.")
    for k, t in enumerate(inputs):
        if isinstance(t, (tuple, list)):
            check_declared(name, t)
        elif not isinstance(t, Tensor) and t is not None and \
                not isinstance(t, (bool, int, float, str)):
            raise TypeError(f"For '{name}.set_inputs', the input {k} should be a Tensor (its "
                            f"None dims free), a tuple or list of them, or a constant, but "
                            f"got {type(t).__name__}.")


def _shape_text(shape: tuple | None) -> str:
    return "any rank" if shape is None else str([None if d == -1 else d for d in shape])


def check_call(name: str, declared: Sequence[Any], args: Sequence[Any], where: str = "") -> None:
    """Raise when `args` do not fit `declared` (set_inputs's placeholders)."""
    if len(args) != len(declared):
        raise ValueError(f"For '{name}', set_inputs declared {len(declared)} input(s){where}, "
                         f"but the call got {len(args)}.")
    for k, (want, got) in enumerate(zip(declared, args)):
        at = f"{where} input {k}" if where else f"input {k}"
        if isinstance(want, (tuple, list)):
            if not isinstance(got, (tuple, list)):
                raise TypeError(f"For '{name}', set_inputs declared {at} a {type(want).__name__}"
                                f", but the call got {type(got).__name__}.")
            check_call(name, want, got, f" (in {at})")
            continue
        if not isinstance(want, Tensor):
            continue
        if not isinstance(got, Tensor):
            raise TypeError(f"For '{name}', set_inputs declared {at} a Tensor, but the call "
                            f"got {type(got).__name__}.")
        if got.dtype != want.dtype:
            raise TypeError(f"For '{name}', set_inputs declared {at} of dtype {want.dtype}, but "
                            f"the call got {got.dtype}.")
        shape = declared_shape(want)
        if shape is None:
            continue
        if len(got.shape) != len(shape) or any(
                d != -1 and d != g for d, g in zip(shape, got.shape)):
            raise ValueError(f"For '{name}', set_inputs declared {at} of shape "
                             f"{_shape_text(shape)} (None: any length), but the call got "
                             f"{list(got.shape)}.")
