"""A weak mapping keyed by object identity.

`weakref.WeakKeyDictionary` finds a key by `==`, and a weak reference compares its live
referents with `==`; a Tensor's `==` is element-wise (as MindSpore's), so Tensors and
Parameters cannot be its keys. This map keys them by `id()` instead and forgets an entry
when its key is collected.
"""
from __future__ import annotations

import weakref
from typing import Any, Generic, Iterator, TypeVar

__all__ = ["WeakIdentityMap"]

V = TypeVar("V")
_MISSING = object()


class WeakIdentityMap(Generic[V]):
    """key -> value for live keys, found by identity."""

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref, V]] = {}

    def _forget(self, key_id: int) -> Any:
        def callback(_: weakref.ref) -> None:
            self._data.pop(key_id, None)
        return callback

    def __setitem__(self, key: Any, value: V) -> None:
        self._data[id(key)] = (weakref.ref(key, self._forget(id(key))), value)

    def _entry(self, key: Any) -> Any:
        hit = self._data.get(id(key))
        return _MISSING if hit is None or hit[0]() is not key else hit[1]

    def __getitem__(self, key: Any) -> V:
        value = self._entry(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._entry(key)
        return default if value is _MISSING else value

    def __contains__(self, key: Any) -> bool:
        return self._entry(key) is not _MISSING

    def pop(self, key: Any, default: Any = None) -> Any:
        value = self._entry(key)
        if value is _MISSING:
            return default
        del self._data[id(key)]
        return value

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[Any]:
        return (k for k in (ref() for ref, _ in list(self._data.values())) if k is not None)
