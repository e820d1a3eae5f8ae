"""The kernel of the common collectives: one mpi4py buffer call into a reused output.

`buffer_call(...)` gives `kernel(x) -> out` running
`method([x, *send_tail], [out, *recv_tail], *extra)` for one signature (output shape and
dtype fixed). A small output is the kernel's last one again when nothing else refers to
it (see `outputs`); a large one comes from the pool. A None tail drops that spec: no
receive buffer (the result is x itself: a broadcast's root) or no send buffer (the other
ranks of a broadcast). `tupled`: x arrives in a list of one, the result leaves in a
1-tuple. `before`: called with no arguments first, a check that must pass before data
moves (AllToAllV's count exchange). An exception goes through `reraise(prim, err)` (an
MPI error becomes the op's RuntimeError). The kernel is the C `BufferCall` when the
extension is built, else `_py_buffer_call`'s closure.
"""
from __future__ import annotations

from sys import getrefcount
from typing import Any, Callable

import numpy as np

from msops.primitives import outputs
from msops.primitives.native import fastpath

__all__ = ["buffer_call"]


def buffer_call(prim: Any, method: Callable, send_tail: tuple | None, recv_tail: tuple | None,
                extra: tuple, shape: tuple, dtype: np.dtype, reraise: Callable,
                tupled: bool = False, before: Callable | None = None) -> Callable:
    """One signature's kernel `kernel(x, *ignored) -> out` (see the module's docstring)."""
    shape = tuple(shape)
    held = 0 if recv_tail is None else outputs.charge_held(shape, dtype)
    maker = None if held or recv_tail is None else outputs.fresh_maker(shape, dtype)
    make = fastpath.BufferCall if fastpath is not None else _py_buffer_call
    kernel = make(method, send_tail, recv_tail, extra, shape, dtype, maker, prim, reraise, tupled,
                  before)
    if held:
        outputs.refund_when_gone(kernel, held)
    return kernel


def _py_buffer_call(method: Callable, send_tail: tuple | None, recv_tail: tuple | None,
                    extra: tuple, shape: tuple, dtype: np.dtype, maker: Callable | None,
                    prim: Any, reraise: Callable, tupled: bool = False,
                    before: Callable | None = None) -> Callable:
    """The pure-Python twin of `_fastpath.BufferCall` (maker None: hold the last output)."""
    held, free = None, outputs.FREE_IN_CELL

    def kernel(x: Any, *_: Any) -> Any:
        nonlocal held
        if tupled:
            if len(x) != 1:
                raise TypeError("this buffer-call kernel takes a list of one array")
            x = x[0]
        try:
            if before is not None:                  # ahead of the output, as in C
                before()
            if recv_tail is None:
                out = x
            elif maker is not None:
                out = maker()
            else:
                if held is None or getrefcount(held) != free:     # still someone's output
                    held = np.empty(shape, dtype)
                out = held
            if send_tail is None:
                method([out, *recv_tail], *extra)
            elif recv_tail is None:
                method([x, *send_tail], *extra)
            else:
                method([x, *send_tail], [out, *recv_tail], *extra)
        except Exception as err:
            reraise(prim, err)
            raise
        return (out,) if tupled else out
    return kernel
