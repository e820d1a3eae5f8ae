"""One-time check, at compile, that every rank compiled the same program.

A parallel graph runs its collectives in the same order on every rank only if every
rank traced the same ops on inputs of the same shapes. Ranks exchange a fingerprint
of (input shapes and dtypes, op sequence) once per compile — one tiny Allgather, not
one per step — so a rank fed a different shape fails on every rank with a clear
error before any collective of the step can hang or truncate.
"""
from __future__ import annotations

import zlib

import numpy as np

from msops.communication import get_group, is_simulation
from msops.graph.ir import Graph

__all__ = ["check_same_program"]


def _signature(graph: Graph) -> str:
    inputs = ", ".join(f"{n.name or 'input'}: {list(n.shape)} {n.dtype}" for n in graph.inputs)
    return f"({inputs}) -> " + " ".join(n.op for n in graph.nodes)


def check_same_program(graph: Graph, where: str) -> None:
    """ValueError on every rank unless all ranks traced `graph` (global) identically."""
    world = get_group()
    if is_simulation() or world.size == 1:
        return
    from mpi4py import MPI
    sig = _signature(graph)
    mine = np.array([zlib.crc32(sig.encode())], np.int64)
    every = np.empty(world.size, np.int64)
    world.comm(where).Allgather([mine, MPI.INT64_T], [every, MPI.INT64_T])
    differ = [r for r in range(world.size) if every[r] != every[0]]
    if differ:
        raise ValueError(f"For '{where}', every rank should compile the same program (the same "
                         f"input shapes, dtypes and ops), but ranks {differ} differ from rank "
                         f"0. This rank ({world.rank}) traced {sig[:300]}")
