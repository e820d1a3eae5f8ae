"""How the functional spellings call their primitives: one shared primitive per (class,
attributes) eagerly, so its lowered kernels are kept; a fresh one per call while a graph is
traced, since each graph node owns its primitive."""
from __future__ import annotations

from typing import Any, Callable

from msops.primitives import primitive as _primitive
from msops.primitives.math_ops import promoted

__all__ = ["_prim", "_binary"]

_shared: dict = {}


def _prim(cls: type, *attrs: Any) -> Any:
    """`cls(*attrs)`: shared when eager, fresh while tracing."""
    if _primitive._trace_hook is not None:
        return cls(*attrs)
    key = (cls, attrs)
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
