"""`lazy_inline`: MindSpore's decorator for a Cell's `__init__` that compiles a repeated
block once and reuses it. msops traces every call to a flat graph, so there is nothing
to reuse: the decorator is accepted and leaves the function as it is."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["lazy_inline"]


def lazy_inline(fn: Callable | None = None, attrs: Any = None,
                policy: Any = None) -> Callable:
    """`@lazy_inline` or `@lazy_inline(attrs=..., policy=...)` on `Cell.__init__`: a no-op
    (the network computes the same either way)."""
    if fn is None:
        return lambda f: f
    if not callable(fn):
        raise TypeError(f"For 'lazy_inline', it should decorate a function (a Cell's "
                        f"__init__), but got {type(fn).__name__}.")
    return fn
