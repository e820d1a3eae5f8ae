"""How the functional spellings call their primitives: one shared primitive per (class,
attributes) eagerly, so its lowered kernels are kept; a fresh one per call while a graph is
traced, since each graph node owns its primitive."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from msops.common.tensor import Tensor
from msops.primitives import primitive as _primitive
from msops.primitives.math_ops import promoted

__all__ = ["_prim", "_binary", "CALLS"]

_shared: dict = {}


def _prim(cls: type, *attrs: Any) -> Any:
    """`cls(*attrs)`: shared when eager, fresh while tracing. The key holds each attribute's
    type, so an equal value of another type (1 for True) makes its own primitive, whose
    checks then see it."""
    if _primitive._trace_hook is not None:
        return cls(*attrs)
    key = (cls, attrs, tuple(map(type, attrs)))
    prim = _shared.get(key)
    if prim is None:
        prim = _shared[key] = cls(*attrs)
    return prim


def _binary(cls: type, doc: str, promote: bool = True) -> Callable:
    """The functional form of a binary primitive; operands of different dtypes are cast to
    the promoted one first, as the Tensor operators (MindSpore's implicit promotion), unless
    the op takes one dtype only (`promote=False`: the logical ops' bools)."""
    def call(input: Any, other: Any) -> Any:
        return _prim(cls)(*(promoted((input, other)) if promote else (input, other)))
    call.__doc__ = doc
    return call


class _Calls:
    """The graph-builder interface (`apply`, `const`, `make_tuple`, `getitem`) done by calling
    each primitive: a helper written for expansion rules (a ShardedCall) then also serves a
    layer, running eagerly or recorded by the tracer like any primitive call."""

    @staticmethod
    def apply(prim: Any, inputs: Any) -> Any:
        return prim(*inputs)

    @staticmethod
    def const(value: Any) -> Any:
        return Tensor(value) if isinstance(value, np.ndarray) else value

    @staticmethod
    def make_tuple(values: Any) -> tuple:
        return tuple(values)

    @staticmethod
    def getitem(value: Any, index: int) -> Any:
        return value[index]


CALLS = _Calls()
