"""The eager check's one small collective on a group: MAX over its ranks of [d, -d].

Every member of a communicator gets one `DigestExchange` when the communicator is made (a
point every member reaches in the same order, as MPI asks of a persistent collective's
initialization). Where the MPI library has MPI-4 persistent collectives, the exchange is
an `Allreduce_init` made once, started and waited per call: its arguments are parsed once
and, on 2 ranks over shared memory, it runs in 2.0-2.5 us against 3.1-3.7 us for the same
in-place `Allreduce` (docs/performance.md). Otherwise, and on a host running more ranks
than it has cores (there the persistent schedule's extra progress rounds cost more than
the blocking call: 17.4 against 14.5 us on 4 ranks over 2 cores), it is that blocking
`Allreduce`. The choice is made once for the world, alike on every rank: a persistent
collective never matches a blocking one. MSOPS_CHECK_EXCHANGE=persistent or =blocking
overrides the core count (persistent still needs the library's support).
"""
from __future__ import annotations

import array
import atexit
import os
import weakref
from typing import Any, Callable

__all__ = ["DigestExchange", "persistent_possible"]

_live: weakref.WeakSet = weakref.WeakSet()


class DigestExchange:
    """[d, -d] in `buf` (two int64 made once) becomes [max d, -min d] over the group's ranks
    in one small collective: they sum to 0 iff every rank stored the same d."""

    __slots__ = ("buf", "request", "_spec", "_comm", "__weakref__")

    def __init__(self, comm: Any, persistent: bool) -> None:
        from mpi4py import MPI
        self.buf = array.array("q", (0, 0))
        self._spec = [self.buf, MPI.INT64_T]
        self._comm = comm
        self.request = comm.Allreduce_init(MPI.IN_PLACE, self._spec, MPI.MAX) \
            if persistent else None
        if self.request is not None:
            _live.add(self)

    def call_lines(self, bind: Callable[[str, Any], str]) -> list[str]:
        """The exchange as lines of generated code (common/codegen.py's `bind`)."""
        if self.request is not None:
            return [f"{bind('start', self.request.Start)}()", f"{bind('wait', self.request.Wait)}()"]
        from mpi4py import MPI
        return [f"{bind('allreduce', self._comm.Allreduce)}({bind('in_place', MPI.IN_PLACE)}, "
                f"{bind('spec', self._spec)}, {bind('max_op', MPI.MAX)})"]

    def agree(self, d: int) -> bool:
        """Store [d, -d], exchange; whether every rank stored the same d (rare callers: the
        generated calls hold `call_lines` inline). MPI errors propagate as MPI.Exception."""
        self.buf[0], self.buf[1] = d, -d
        if self.request is not None:
            self.request.Start()
            self.request.Wait()
        else:
            from mpi4py import MPI
            self._comm.Allreduce(MPI.IN_PLACE, self._spec, MPI.MAX)
        return self.buf[0] + self.buf[1] == 0

    def free(self) -> None:
        """Free the persistent request (before its communicator is freed, and before MPI is
        finalized: MPICH warns of a request left alive)."""
        if self.request is not None:
            self.request.Free()
            self.request = None
            _live.discard(self)


def persistent_possible(comm: Any, ranks_here: int) -> bool:
    """This rank's vote for persistent exchanges: the library has MPI-4 persistent
    collectives and this host has a core for each of its `ranks_here` ranks. The world
    takes the AND of the votes."""
    from mpi4py import MPI
    if MPI.Get_version() < (4, 0) or not hasattr(comm, "Allreduce_init"):
        return False
    chosen = os.environ.get("MSOPS_CHECK_EXCHANGE", "").strip().lower()
    if chosen in ("persistent", "blocking"):
        return chosen == "persistent"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1)
    return ranks_here <= cores


@atexit.register
def _free_all() -> None:
    # registered after mpi4py is imported, so it runs before mpi4py finalizes MPI
    for exchange in list(_live):
        exchange.free()
