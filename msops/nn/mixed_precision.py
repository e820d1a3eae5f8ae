"""`Cell.to_float(dst_type)`: a cell computing in float16 / bfloat16 / float32, as MindSpore.

Inside such a cell's construct, its floating inputs and the Parameters and constant
Tensors (Tensor attributes of the cell tree) its primitives read are cast to `dst_type`
through ordinary Cast ops, so the cast is traced into compiled graphs and recorded on
gradient tapes like any op: the gradients flow back through the Cast to the float32
Parameters. The casting is a primitive-call hook installed while the construct runs; it
wraps the tracer's or the tape's hook (or none, eagerly), and the innermost cell's type
applies, so `bn.to_float(ms.float32)` keeps a BatchNorm inside a float16 net in float32.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from msops.common import dtype as mstype
from msops.common.tensor import Parameter, Tensor
from msops.primitives import primitive as _primitive
from msops.primitives.math_ops import Cast

__all__ = ["MIXED_TYPES", "check_dst_type", "current", "scope", "cast_inputs", "call_through"]

#: the dtypes `to_float` takes
MIXED_TYPES = (mstype.float16, mstype.bfloat16, mstype.float32)
_CASTABLE = MIXED_TYPES             # what is cast: MindSpore's floating mixed-precision types

_scopes: list["_CastingHook"] = []  # the cells running under a type, innermost last


def check_dst_type(dst_type: Any, name: str) -> mstype.Type:
    if dst_type not in MIXED_TYPES:
        raise ValueError(f"For '{name}.to_float', the 'dst_type' should be one of "
                         f"{[str(t) for t in MIXED_TYPES]}, but got {dst_type}.")
    return dst_type


def current() -> mstype.Type | None:
    """The type of the innermost cell running under one (None: no to_float cell runs)."""
    return _scopes[-1].dst if _scopes else None


def call_through(hook: Callable | None, prim: Any, args: Any) -> Any:
    """`prim(*args)` through `hook` (the tracer's or the tape's), or eagerly."""
    if hook is not None:
        return hook(prim, args)
    prev = _primitive.set_trace_hook(None)
    try:
        return prim(*args)
    finally:
        _primitive.set_trace_hook(prev)


def _cast(value: Any, dst: mstype.Type, hook: Callable | None) -> Any:
    if isinstance(value, Tensor) and value.dtype in _CASTABLE and value.dtype != dst:
        return call_through(hook, Cast(), (value, dst))
    return value


class _CastingHook:
    """The primitive-call hook of one to_float cell's construct: its Parameters and constant
    Tensors cast to `dst`, then the call goes on to `inner`, the tracer's or tape's hook
    (None: eagerly)."""

    def __init__(self, dst: mstype.Type, constants: set[int], inner: Callable | None) -> None:
        self.dst, self.constants, self.inner = dst, constants, inner

    def _read(self, a: Any) -> bool:
        return isinstance(a, Parameter) or (isinstance(a, Tensor) and id(a) in self.constants)

    def dtype_of(self, t: Tensor) -> mstype.Type:
        """The dtype `t` reaches a primitive in (what operators promote by)."""
        return self.dst if self._read(t) and t.dtype in _CASTABLE else t.dtype

    def __call__(self, prim: Any, args: Any) -> Any:
        written = prim.assigns_input
        if written is not None and isinstance(args[written], Parameter):
            # a Parameter written in place keeps its dtype: the values written into it are
            # converted to it (MindSpore's implicit conversion of a write's inputs)
            dtype = args[written].dtype
            args = [a if k == written or isinstance(a, Parameter) else _cast(a, dtype, self.inner)
                    for k, a in enumerate(args)]
        elif not isinstance(prim, Cast):
            out = []
            for a in args:
                if isinstance(a, (tuple, list)) and any(self._read(t) for t in a):
                    a = type(a)(_cast(t, self.dst, self.inner) if self._read(t) else t
                                for t in a)
                elif self._read(a):
                    a = _cast(a, self.dst, self.inner)
                out.append(a)
            args = out
        return call_through(self.inner, prim, args)


def _constants(cell: Any) -> set[int]:
    """The ids of the constant Tensors of `cell`'s tree: its Tensor (not Parameter)
    attributes, and those in tuples/lists it holds."""
    out: set[int] = set()
    for _, c in cell.cells_and_names():
        for v in c.__dict__.values():
            for t in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(t, Tensor) and not isinstance(t, Parameter):
                    out.add(id(t))
    return out


def cast_inputs(args: tuple, dst: mstype.Type) -> tuple:
    """The cell's floating Tensor inputs (in tuples too) cast to `dst` (through the hook in
    place: traced or recorded). A Parameter passed in stays itself (a cell may write it in
    place); its reads are cast by the scope."""
    hook = _primitive._trace_hook

    def cast(t: Any) -> Any:
        return t if isinstance(t, Parameter) else _cast(t, dst, hook)
    return tuple(type(a)(cast(t) for t in a) if isinstance(a, (tuple, list)) else cast(a)
                 for a in args)


@contextlib.contextmanager
def scope(cell: Any, dst: mstype.Type) -> Iterator[None]:
    """Run the block (`cell`'s construct) with its reads cast to `dst`."""
    prev = _primitive._trace_hook         # an enclosing cell's casting hook is replaced, not
    hook = _CastingHook(dst, _constants(cell), inner_hook(prev))     # wrapped: innermost wins
    _primitive.set_trace_hook(hook)
    _scopes.append(hook)
    try:
        yield
    finally:
        _scopes.pop()
        _primitive.set_trace_hook(prev)


def inner_hook(hook: Any) -> Any:
    """The tracer's or tape's hook under any casting hooks."""
    while isinstance(hook, _CastingHook):
        hook = hook.inner
    return hook
