"""Communication fusion: several independent collectives of one kind, group and dtype run
as ONE collective on a packed flat buffer (MindSpore's `comm_fusion`).

A collective's fusion rule (`@fusion_rule(Cls)`, beside its class) returns a `CommFusion`:
the comm_fusion entry that sizes its buckets (`kind`), the key applications must share to
fuse, the bytes it adds to a bucket, and `build`, which emits the fused collective and its
packing through a graph builder `g` (`apply`, `add_const`, `make_tuple`), returning one
value per fused application. The packings, each exact for its collective:

    flat (AllReduce)            pack: flatten each piece, concatenate          (S,)
                                unpack: piece i = result[o_i : o_i + s_i], reshaped
    rank-major (AllGather)      pack: as flat; the gathered buffer is rank-major (N*S,)
                                unpack: piece i = rows (N, S)[:, o_i : o_i + s_i]
                                reshaped to (N*x1_i, ...) (rank r's block first)
    block-major (ReduceScatter) pack: piece i (N*b_i, ...) viewed (N, s_i/N), the views
                                concatenated along dim 1 and flattened, so rank r's
                                block of every piece is contiguous in row r
                                unpack: as flat, with the per-rank sizes s_i/N

Packing costs one local copy of the bucket each way; fusing saves a collective per piece,
which on small pieces (and oversubscribed ranks, where every collective is a rendezvous)
costs far more than the bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Callable, Sequence

from msops.primitives.array_ops import Concat, Reshape, StridedSlice

__all__ = ["CommFusion", "pack_flat", "unpack_flat", "unpack_rank_major", "pack_block_major"]


@dataclass(frozen=True)
class CommFusion:
    """How one application of a collective fuses with others of the same `key`.

    kind:   the comm_fusion entry whose size bounds its buckets ("allreduce", ...)
    key:    applications with equal keys may share one collective (op, group, dtype, ...)
    nbytes: what this application adds to a bucket (its input's bytes)
    build:  (g, nodes) -> one value per node: the fused collective of the applications
            `nodes` (all with this key), emitted with its packing through builder `g`
    """

    kind: str
    key: tuple
    nbytes: int
    build: Callable[[Any, list], list]


def _flat(g: Any, x: Any) -> Any:
    return g.apply(Reshape(), [x, g.add_const((-1,))])


def _slice(g: Any, x: Any, begin: tuple, end: tuple) -> Any:
    return g.apply(StridedSlice(), [x, g.add_const(begin), g.add_const(end),
                                    g.add_const((1,) * len(begin))])


def pack_flat(g: Any, xs: Sequence[Any]) -> Any:
    """The pieces flattened and concatenated: one 1-D buffer (one copy)."""
    return g.apply(Concat(0), [g.make_tuple([_flat(g, x) for x in xs])])


def unpack_flat(g: Any, flat: Any, shapes: Sequence[Sequence[int]]) -> list:
    """Pieces of `shapes` cut, in order, from the 1-D `flat`."""
    out, start = [], 0
    for shape in shapes:
        size = prod(shape)
        part = _slice(g, flat, (start,), (start + size,))
        out.append(g.apply(Reshape(), [part, g.add_const(tuple(shape))]))
        start += size
    return out


def unpack_rank_major(g: Any, gathered: Any, n: int, shapes: Sequence[Sequence[int]]) -> list:
    """The gathered pieces from an AllGather of `pack_flat` over n ranks: `shapes` are the
    gathered shapes (N*x1, ...); rank r's packed block is row r of (N, S)."""
    per_rank = [prod(s) // n for s in shapes]
    rows = g.apply(Reshape(), [gathered, g.add_const((n, sum(per_rank)))])
    out, start = [], 0
    for shape, size in zip(shapes, per_rank):
        part = _slice(g, rows, (0, start), (n, start + size))      # (N, size): one copy
        out.append(g.apply(Reshape(), [part, g.add_const(tuple(shape))]))
        start += size
    return out


def pack_block_major(g: Any, xs: Sequence[Any], n: int) -> Any:
    """The pieces (N*b_i, ...) packed so that a ReduceScatter over n ranks leaves on rank r
    the concatenation of every piece's block r: (N, s_i/N) views joined along dim 1."""
    blocks = [g.apply(Reshape(), [x, g.add_const((n, prod(x.shape) // n))]) for x in xs]
    return _flat(g, g.apply(Concat(1), [g.make_tuple(blocks)]))
