"""One-time check, at compile, that every rank compiled the same program.

A parallel graph runs its collectives in the same order on every rank only if every rank
traced the same program. The program is described one line an item: the auto-parallel
context, each input and parameter (name, shape, dtype, layout), and each op in order
(name, attributes, in/out strategies, input and output shapes and dtypes, layout). Ranks
exchange one crc32 of that description once per compile — one tiny Allgather, not one
per step — so the step itself pays nothing. Only when the digests differ do the ranks
gather every rank's description (the slow path), find the first line that differs and
raise, on every rank, the same ValueError showing each side with its source line:
"line 7 differs: rank 1: MatMul in_strategy ((2, 1), (1, 1)) ...; ranks 0, 2, 3: ...".
Source lines are shown, not compared.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from msops.communication import get_group, is_simulation
from msops.graph.ir import Graph, Node
from msops.parallel.context import parallel_snapshot

__all__ = ["check_same_program", "describe_program"]

#: attributes that differ between ranks by design (rank ids) or repeat the strategy
_LOCAL_ATTRS = frozenset({"rank", "rank_id", "in_strategy", "out_strategy"})


def _value(v: Any) -> str:
    if isinstance(v, np.ndarray):                    # a captured constant: its bytes' crc
        return f"array{list(v.shape)} {v.dtype} crc {zlib.crc32(v.tobytes()):08x}"
    return repr(v)


def _abstract(n: Node) -> str:
    if n.kind == "const" and n.dtype is None:
        return _value(n.value)
    return f"{list(n.shape) if not n.is_tuple else n.shape} {n.dtype}"


def _line(n: Node) -> str:
    """What every rank must agree on about one node."""
    layout = f" layout {n.layout}" if n.layout is not None else ""
    if n.kind in ("input", "parameter"):
        return f"{n.kind} {n.name or ''}: {_abstract(n)}{layout}"
    prim = n.prim
    attrs = ", ".join(f"{k}={_value(v)}" for k, v in prim.attrs.items()
                      if k not in _LOCAL_ATTRS)
    strategy = "" if prim.in_strategy is None else f" in_strategy {prim.in_strategy}"
    if prim.out_strategy is not None:
        strategy += f" out_strategy {prim.out_strategy}"
    ins = ", ".join(_abstract(i) for i in n.inputs)
    return f"{prim.name}({attrs}){strategy} on ({ins}) -> {_abstract(n)}{layout}"


#: context keys ranks may set differently: their rank and the files they write or read (a
#: loaded strategy file's effect shows in the ops' strategies and layouts compared below)
_PER_RANK = {"global_rank", "strategy_ckpt_config", "strategy_ckpt_save_file",
             "strategy_ckpt_load_file", "group_ckpt_save_file"}


def describe_program(graph: Graph) -> list[tuple[str, str]]:
    """The program as (line, source) pairs: context, inputs, parameters, ops in order."""
    shared = tuple(kv for kv in parallel_snapshot() if kv[0] not in _PER_RANK)
    items = [(f"auto-parallel context {shared}", "")]
    items += [(_line(n), "") for n in graph.inputs + graph.parameters]
    items += [(_line(n), n.source or "") for n in graph.nodes]
    return items


def check_same_program(graph: Graph, where: str) -> None:
    """ValueError on every rank unless all ranks traced `graph` (global) identically."""
    world = get_group()
    if is_simulation() or world.size == 1:
        return
    from mpi4py import MPI
    items = describe_program(graph)
    text = "\n".join(line for line, _ in items)
    mine = np.array([zlib.crc32(text.encode())], np.int64)
    every = np.empty(world.size, np.int64)
    comm = world.comm(where)
    comm.Allgather([mine, MPI.INT64_T], [every, MPI.INT64_T])
    if (every != every[0]).any():
        raise ValueError(_difference(comm, items, where))


def _difference(comm: Any, items: list[tuple[str, str]], where: str) -> str:
    """The slow path: gather every rank's description; the same message on every rank."""
    from mpi4py import MPI
    raw = np.frombuffer("\x00".join(f"{line}\x01{src}" for line, src in items).encode(),
                        np.uint8)
    sizes = np.empty(comm.size, np.int64)
    comm.Allgather([np.array([raw.size], np.int64), MPI.INT64_T], [sizes, MPI.INT64_T])
    every = np.empty(int(sizes.sum()), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    comm.Allgatherv([raw, MPI.BYTE], [every, (sizes.tolist(), offsets.tolist()), MPI.BYTE])
    programs = []
    for off, size in zip(offsets, sizes):
        chunk = every[off:off + size].tobytes().decode("utf-8", "replace")
        programs.append([tuple(item.split("\x01", 1)) for item in chunk.split("\x00")])
    lines = [[line for line, _ in p] for p in programs]
    k = next(i for i in range(max(map(len, lines)) + 1)
             if len({tuple(ls[i:i + 1]) for ls in lines}) > 1)
    sides: dict[str, list[int]] = {}
    for r, p in enumerate(programs):
        if k < len(p):
            line, src = p[k]
            side = line + (f" at {src}" if src else "")
        else:
            side = f"(the program ends after {len(p)} lines)"
        sides.setdefault(side, []).append(r)
    shown = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {side}"
                      for side, rs in sides.items())
    return (f"For '{where}', every rank should compile the same program (context, input and "
            f"parameter shapes and dtypes, ops in order with their attributes, strategies "
            f"and layouts), but line {k} differs: {shown}.")
