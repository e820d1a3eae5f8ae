"""A cross-rank agreement check: gather every rank's header, then compare cells pairwise.

`gather_check(method, args, table, left, right, mismatch)` gives `check()`, which runs
`method(*args)` (a small collective filling the int64 `table`) and passes iff
`table.flat[left[k]] == table.flat[right[k]]` for every k; otherwise it calls
`mismatch()`, which raises the detailed error (the same on every rank, since every rank
sees the same table). AllToAllV checks its count matrix so on every call: the comparison
costs nothing next to the gather, and with the C `GatherCheck` no Python frame runs
while the check passes. Without the extension, `_py_gather_check`'s closure.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from msops.primitives.native import fastpath

__all__ = ["gather_check"]


def gather_check(method: Callable, args: tuple, table: np.ndarray, left: np.ndarray,
                 right: np.ndarray, mismatch: Callable[[], None]) -> Callable[[], None]:
    """The check (see the module's docstring). `table`: C-contiguous int64, filled by the
    call; `left`, `right`: equal-length intp indices into its flat cells."""
    make = fastpath.GatherCheck if fastpath is not None else _py_gather_check
    return make(method, args, table, np.ascontiguousarray(left, np.intp),
                np.ascontiguousarray(right, np.intp), mismatch)


def _py_gather_check(method: Callable, args: tuple, table: np.ndarray, left: np.ndarray,
                     right: np.ndarray, mismatch: Callable[[], None]) -> Callable[[], None]:
    """The pure-Python twin of `_fastpath.GatherCheck`."""
    if table.dtype != np.int64 or not table.flags.c_contiguous:
        raise TypeError("table should be an aligned C-contiguous int64 array")
    if left.size != right.size:
        raise ValueError("left and right should have the same size")
    flat = table.reshape(-1)
    for name, idx in (("left", left), ("right", right)):
        bad = np.flatnonzero((idx < 0) | (idx >= flat.size))
        if bad.size:
            k = int(bad[0])
            raise IndexError(f"{name}[{k}] = {idx[k]} is outside the table of {flat.size} cells")

    def check() -> None:
        method(*args)
        if not np.array_equal(flat[left], flat[right]):
            mismatch()
            raise RuntimeError("a gather check's mismatch() should raise")
    return check
