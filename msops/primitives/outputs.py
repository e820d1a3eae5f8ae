"""Output arrays of lowered kernels: handed out again once nothing else refers to them.

An eager call or a compiled step returns a new array, but making one costs: `np.empty`
is a third of an 8 B collective's time, and a fresh multi-MiB array page-faults when
first written (a 16 MiB AllReduce into a new array took 1.8x as long as into a reused
one). An array whose only reference is ours (its Tensor and every view of it are gone)
is free: handing it out again cannot be observed. So each lowered signature keeps the
last output it made when small (`output_maker`, or a kernel charged by `charge_held`;
HELD_LIMIT bytes in all), and large outputs come from a bounded pool of such arrays
(`OutputPool`). Freedom is one reference count.
"""
from __future__ import annotations

import functools
import math
import weakref
from sys import getrefcount
from typing import Callable

import numpy as np

__all__ = ["OutputPool", "output_maker", "length_maker", "fresh_maker", "allocate",
           "charge_held", "refund_when_gone", "RECYCLE_BYTES", "HELD_LIMIT", "FREE_IN_CELL"]

#: outputs of at least this many bytes come from the pool (smaller ones: one held a signature)
RECYCLE_BYTES = 4 << 20
#: bytes that small outputs held by signatures may take in all; beyond it they are not held
HELD_LIMIT = 64 << 20


class OutputPool:
    """Arrays of any shape, each handed out again once nothing else refers to it.

    Keeps at most `limit` bytes; free arrays are dropped oldest first to make room.
    """

    def __init__(self, limit: int) -> None:
        self.limit, self.nbytes = limit, 0
        self.arrays: dict[tuple, list[np.ndarray]] = {}

    def take(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """A free pooled array of `shape` and `dtype`, else a new one (pooled if there is room)."""
        arrays = self.arrays.get((shape, dtype))
        if arrays:
            i = _free_index(arrays)
            if i >= 0:
                return arrays[i]
        a = np.empty(shape, dtype)
        if self._make_room(a.nbytes):
            self.arrays.setdefault((shape, dtype), []).append(a)
            self.nbytes += a.nbytes
        return a

    def _make_room(self, nbytes: int) -> bool:
        while self.nbytes + nbytes > self.limit:
            for key, arrays in self.arrays.items():
                i = _free_index(arrays)
                if i >= 0:
                    break
            else:
                return False                     # everything pooled is in use
            self.nbytes -= arrays.pop(i).nbytes
            if not arrays:
                del self.arrays[key]
        return True


def _free_index(arrays: list) -> int:
    """Index of the first array only `arrays` refers to, or -1."""
    for i in range(len(arrays)):
        if getrefcount(arrays[i]) == _FREE_IN_LIST:
            return i
    return -1


def _refs_in_list() -> int:
    arrays = [np.empty(0)]
    return getrefcount(arrays[0])


def _refs_in_cell() -> int:
    held = np.empty(0)

    def count() -> int:
        return getrefcount(held)
    return count()


# references to a free array: a list's (or a closure cell's) and getrefcount's argument
_FREE_IN_LIST, FREE_IN_CELL = _refs_in_list(), _refs_in_cell()
POOL = OutputPool(256 << 20)


class _Held:
    """Bytes held by signatures' last outputs, within HELD_LIMIT (given back when a holder dies)."""
    nbytes = 0

    @classmethod
    def refund(cls, nbytes: int) -> None:
        cls.nbytes -= nbytes


def nbytes_of(shape: tuple, dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def charge_held(shape: tuple, dtype: np.dtype) -> int:
    """Bytes charged for one signature to hold its last output: 0 when it may not (a large
    output, which the pool serves, or HELD_LIMIT reached). Give them back with
    `refund_when_gone(holder, nbytes)`."""
    nbytes = nbytes_of(shape, dtype)
    if nbytes >= RECYCLE_BYTES or _Held.nbytes + nbytes > HELD_LIMIT:
        return 0
    _Held.nbytes += nbytes
    return nbytes


def refund_when_gone(holder: object, nbytes: int) -> None:
    weakref.finalize(holder, _Held.refund, nbytes)


def fresh_maker(shape: tuple, dtype: np.dtype) -> Callable[[], np.ndarray]:
    """A maker of outputs that are not held: the pool's when large, else new arrays."""
    if nbytes_of(shape, dtype) >= RECYCLE_BYTES:
        return functools.partial(POOL.take, shape, dtype)
    return functools.partial(np.empty, shape, dtype)


def allocate(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """One output array whose shape changes call to call: pooled when large, else new."""
    if nbytes_of(shape, dtype) >= RECYCLE_BYTES:
        return POOL.take(shape, dtype)
    return np.empty(shape, dtype)


def output_maker(shape: tuple, dtype: np.dtype) -> Callable[[], np.ndarray]:
    """The maker of one signature's outputs: its last output again when that is free."""
    nbytes = charge_held(shape, dtype)
    if not nbytes:
        return fresh_maker(shape, dtype)
    held = np.empty(shape, dtype)

    def take() -> np.ndarray:
        nonlocal held
        if getrefcount(held) != FREE_IN_CELL:      # still someone's output: make another
            held = np.empty(shape, dtype)
        return held
    refund_when_gone(take, nbytes)
    return take


def length_maker(dtype: np.dtype) -> Callable[[int], np.ndarray]:
    """The maker of one kernel's 1-D outputs whose length may change call to call
    (AllToAllV's derived form): `take(n)` is its last output again when that is free and n
    long, else a new one, held in its place within HELD_LIMIT (large ones: the pool's)."""
    state: list = [None, 0]                      # the held output, the bytes charged for it

    def take(n: int) -> np.ndarray:
        if state[0] is not None and state[0].shape[0] == n and \
                getrefcount(state[0]) == _FREE_IN_LIST:
            return state[0]
        _Held.refund(state[1])
        state[0], state[1] = None, charge_held((n,), dtype)
        if not state[1]:
            return allocate((n,), dtype)
        state[0] = np.empty(n, dtype)
        return state[0]
    weakref.finalize(take, lambda: _Held.refund(state[1]))
    return take
