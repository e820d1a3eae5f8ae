"""Communication fusion: independent collectives of one kind, group and dtype become one
collective on a packed buffer, in buckets of at most `comm_fusion`'s size for that kind.

Candidates are the communication nodes with a fusion id > 0 (their `fusion` attribute, as
MindSpore spells it: the parallel optimizer's gathers and the reduce-scatters of their
gradients carry 1; 0, the default, never fuses) whose primitive's fusion rule (registered
beside its class, `primitives/comm_fusion.py`) accepts the application. The pass names no
op: the rule gives the bucket kind, the key and the packing.

Buckets form in the order the candidates' inputs complete (the backward's reduce-scatters
in the order the backward finishes their gradients; the forward's gathers of Parameters
are all complete at step start), one open bucket per (kind, key, fusion id), closed when
the next candidate would overflow it or depend on it: the members of a bucket, and the
buckets taken as single nodes, stay free of cycles under every ordering constraint
(`schedule.order_dependencies`). Each fused collective is then placed right after the last
of its inputs completes (`schedule.reorder`), so the forward's gathers run first as one
bucket and each backward bucket is issued as soon as its last gradient is done; a consumer
of an earlier member waits for the bucket. The decisions read only the graph's structure,
so ranks with the same program issue the same fused collectives in the same order.
"""
from __future__ import annotations

from typing import Any, Mapping

from msops.graph.ir import Graph, Node
from msops.graph.schedule import order_dependencies, reorder
from msops.primitives.rules import rule_of

__all__ = ["fuse_communication"]


class _Bucket:
    __slots__ = ("key", "spec", "members", "mask", "anc", "nbytes", "ready")

    def __init__(self, key: tuple, spec: Any) -> None:
        self.key, self.spec = key, spec
        self.members: list[Node] = []
        self.mask = self.anc = self.nbytes = 0
        self.ready = -1


def _candidates(graph: Graph) -> list[tuple[Node, Any]]:
    out = []
    for n in graph.nodes:
        if n.is_communication and n.prim.attrs.get("fusion", 0):
            rule = rule_of("fusion", n.prim)
            spec = rule(n.prim, n) if rule is not None else None
            if spec is not None:
                out.append((n, spec))
    return out


def fuse_communication(graph: Graph, limits: Mapping[str, int]) -> int:
    """Fuse the graph's fusible collectives in place, each kind in buckets of at most
    `limits[kind]` bytes (a larger piece is a bucket alone; a kind not in `limits` does not
    fuse). Returns the number of collectives saved."""
    cands = [(n, s) for n, s in _candidates(graph) if s.kind in limits]
    if len(cands) < 2:
        return 0
    pos = {n.id: k for k, n in enumerate(graph.nodes)}
    deps = order_dependencies(graph)
    bit = {n.id: 1 << k for k, (n, _) in enumerate(cands)}
    anc: dict[int, int] = {}               # node id -> its candidate ancestors (a bit set)
    ready: dict[int, int] = {}             # candidate id -> position its inputs complete at
    for n in graph.nodes:
        before = [i.id for i in n.inputs if i.id in pos] + list(deps[n.id])
        a = 0
        for b in before:
            a |= anc[b] | bit.get(b, 0)
        anc[n.id] = a
        if n.id in bit:
            ready[n.id] = max((pos[b] for b in before), default=-1)

    buckets: list[_Bucket] = []
    current: dict[tuple, _Bucket] = {}
    for n, spec in sorted(cands, key=lambda c: (ready[c[0].id], pos[c[0].id])):
        key = (spec.kind, spec.key, n.prim.attrs["fusion"])
        b = current.get(key)
        if b is None or b.nbytes + spec.nbytes > limits[spec.kind] or \
                _cyclic(buckets, b, bit[n.id], anc[n.id]):
            b = current[key] = _Bucket(key, spec)
            buckets.append(b)
        b.members.append(n)
        b.mask |= bit[n.id]
        b.anc |= anc[n.id]
        b.nbytes += spec.nbytes
        b.ready = max(b.ready, ready[n.id])
    fused = [b for b in buckets if len(b.members) > 1]
    if not fused:
        return 0
    _build(graph, fused, pos, deps)
    return sum(len(b.members) - 1 for b in fused)


def _cyclic(buckets: list[_Bucket], b: _Bucket, new: int, new_anc: int) -> bool:
    """Whether adding the candidate (bit `new`, ancestors `new_anc`) to bucket `b` would make
    some member depend on another, every bucket taken as one node."""
    members, reach = b.mask | new, b.anc | new_anc
    while True:
        if reach & members:
            return True
        grown = reach
        for other in buckets:
            if other is not b and other.mask & reach:
                grown |= other.mask | other.anc
        if grown == reach:
            return False
        reach = grown


def _build(graph: Graph, fused: list[_Bucket], pos: dict[int, int],
           deps: dict[int, set[int]]) -> None:
    """Emit each bucket's fused collective, route the members' readers to it, drop the
    members and re-sort the graph with every bucket placed where its inputs complete."""
    replace: dict[int, Node] = {}
    collective_of: dict[int, int] = {}      # member id -> its fused collective's id
    key: dict[int, tuple] = {n.id: (k, 0, 0) for n, k in ((n, pos[n.id]) for n in graph.nodes)}
    new_deps: dict[int, set[int]] = {}
    for b in fused:
        start = len(graph.nodes)
        outs = b.spec.build(graph, b.members)
        made = graph.nodes[start:]
        comm = next(n for n in made if n.is_communication)
        member_deps = set().union(*(deps[m.id] for m in b.members))
        for k, n in enumerate(made):
            n.source = b.members[0].source
            key[n.id] = (b.ready, 1, k)
            new_deps[n.id] = member_deps
        comm.comm_bytes = comm.prim.comm_bytes(b.nbytes)
        for m, out in zip(b.members, outs):
            out.layout = m.layout
            replace[m.id] = out
            collective_of[m.id] = comm.id
    members = set(replace)
    graph.nodes = [n for n in graph.nodes if n.id not in members]
    for n in graph.nodes:
        n.inputs = [replace.get(i.id, i) for i in n.inputs]
        if n.id not in new_deps:
            new_deps[n.id] = {collective_of.get(d, d) for d in deps.get(n.id, ())}
    graph.outputs = [replace.get(o.id, o) for o in graph.outputs]
    for n in graph.nodes:                   # a bucket's deps may name another's member
        new_deps[n.id] = {collective_of.get(d, d) for d in new_deps[n.id]}
    reorder(graph, lambda n: key[n.id], new_deps)
