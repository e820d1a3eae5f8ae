"""Writing a collective's result into the caller's Tensor, as torch-style calls do.

Eagerly the Tensor's own buffer is overwritten (every view of it sees the result; a
Parameter takes the value through set_data). While a graph is traced (ms.jit, GRAPH_MODE)
the traced Tensor is rebound to the result, so the rest of the function reads it; a
compiled function's input, a Parameter or a Tensor made outside the function cannot be
written that way, and is refused rather than left unchanged behind the caller's back.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.communication._comm_call import CommHandle, handle
from msops.graph.tracer import SymbolicTensor

__all__ = ["write", "write_list", "set_comm_ops_inplace", "is_inplace", "result"]

#: the functions that also have a returning form (MindSpore 2.9+'s `set_comm_ops_inplace`),
#: and whether each writes in place (the default) or returns (Tensor, CommHandle or None)
_INPLACE = {"all_reduce": True, "all_gather_into_tensor": True, "reduce_scatter_tensor": True,
            "all_to_all_single": True}


def set_comm_ops_inplace(is_enable: bool, func_list: list | None = None) -> None:
    """Make the functions named in `func_list` (None: all_reduce, all_gather_into_tensor,
    reduce_scatter_tensor, all_to_all_single) write in place (True) or return
    (Tensor, CommHandle or None) and leave their output argument alone (False). Applies to
    them wherever they are called from (ops, ops.communication, mint.distributed). A
    setting of this process: set it alike on every rank."""
    api = "set_comm_ops_inplace"
    if not isinstance(is_enable, bool):
        raise TypeError(f"For '{api}', the 'is_enable' should be a bool, but got "
                        f"{type(is_enable).__name__}.")
    if func_list is not None and not isinstance(func_list, list):
        raise TypeError(f"For '{api}', the 'func_list' should be None or a list, but got "
                        f"{type(func_list).__name__}.")
    names = list(_INPLACE) if func_list is None else \
        [getattr(f, "__name__", f) for f in func_list]
    for name in names:
        if name not in _INPLACE:
            raise ValueError(f"For '{api}', every name in 'func_list' should be one of "
                             f"{list(_INPLACE)}, but got {name!r}.")
    for name in names:
        _INPLACE[name] = is_enable


def is_inplace(api: str) -> bool:
    """Whether function `api` (one with a returning form) writes in place now."""
    return _INPLACE[api]


def result(api: str, arg: str, target: Tensor, value: Tensor,
           async_op: bool) -> CommHandle | tuple | None:
    """What a function with a returning form gives back: in place, target := value and
    the handle; otherwise (value, handle), the target left alone."""
    if not _INPLACE[api]:
        return value, handle(async_op)
    write(api, arg, target, value)
    return handle(async_op)


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
