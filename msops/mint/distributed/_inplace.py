"""Writing a collective's result into the caller's Tensor, as torch-style calls do.

Eagerly the Tensor's own buffer is overwritten (every view of it sees the result; a
Parameter takes the value through set_data). While a graph is traced (ms.jit, GRAPH_MODE)
the traced Tensor is rebound to the result, so the rest of the function reads it; a
compiled function's input, a Parameter or a Tensor made outside the function cannot be
written that way, and is refused rather than left unchanged behind the caller's back.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.graph.tracer import SymbolicTensor

__all__ = ["write", "write_list"]


def write(api: str, arg: str, target: Tensor, value: Tensor) -> None:
    """target := value (same dtype; value reshaped when it holds as many elements)."""
    if target.dtype != value.dtype:
        raise TypeError(f"For '{api}', the '{arg}' should have dtype {value.dtype} (the "
                        f"input's), but got {target.dtype}.")
    if tuple(target.shape) != tuple(value.shape):
        if int(np.prod(target.shape)) != int(np.prod(value.shape)):
            raise ValueError(f"For '{api}', the '{arg}' should have shape {list(value.shape)} "
                             f"(the result's), but got {list(target.shape)}.")
        from msops.ops.array_func import reshape
        value = reshape(value, target.shape)
    if isinstance(target, SymbolicTensor):
        if target._node.kind in ("input", "parameter"):
            raise ValueError(f"For '{api}', the '{arg}' is an input or Parameter of the "
                             f"function being compiled, which cannot be written in place in "
                             f"a graph: pass a value computed in the function (e.g. x * 1) "
                             f"and return it, or call '{api}' outside ms.jit.")
        target._node, target._dtype = value._node, value._dtype
        return
    if isinstance(value, SymbolicTensor):
        raise ValueError(f"For '{api}', the '{arg}' is a Tensor made outside the function "
                         f"being compiled, which cannot be written in place in a graph: pass "
                         f"a value computed in the function and return it.")
    if isinstance(target, Parameter):
        target.set_data(value.asnumpy())
    elif target._data.flags.writeable:
        np.copyto(target._data, value.asnumpy())
    else:                                   # a read-only buffer: the Tensor takes a copy
        target._data = value.asnumpy().copy()


def write_list(api: str, arg: str, targets: Sequence[Tensor], values: Sequence[Tensor]) -> None:
    """targets[i] := values[i]; the list must hold one Tensor per value."""
    if len(targets) != len(values):
        raise ValueError(f"For '{api}', the length of '{arg}' should be the group size "
                         f"{len(values)}, but got {len(targets)}.")
    for i, (t, v) in enumerate(zip(targets, values)):
        write(api, f"{arg}[{i}]", t, v)
