"""Scheduling: the order the executor runs `graph.nodes` in, changed without changing results.

A pass that appends work which depends on only part of the graph (a gradient bucket's
AllReduce needs just its bucket's gradients) can hoist that work to where its inputs are
complete (`schedule_early`), so it is issued while the rest of the graph is still to run.
A pass that replaces nodes (communication fusion) re-sorts the graph by wanted positions
(`reorder`) under every ordering constraint (`order_dependencies`): data edges, and the
ones that are not data edges because a graph runs in node order:

* memory: a Parameter written in place (Assign) is read through its leaf node by the nodes
  before the write (old value) and possibly after it (new value), so each reader keeps its
  side of each write;
* effects: collectives must be issued in one order on every rank; a point-to-point or
  side-effecting communication node (Send, Receive, NeighborExchange, Barrier) may sit
  differently in different ranks' graphs, so no collective crosses one.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left
from typing import Callable, Iterable

from msops.graph.buffers import alias_roots
from msops.graph.ir import Graph, GraphError, Node

__all__ = ["schedule_early", "order_dependencies", "reorder"]


def schedule_early(graph: Graph, nodes: Iterable[Node]) -> None:
    """Reorder `graph.nodes` in place: each of `nodes` right after the last node it reads
    (at the start when it reads only inputs, parameters and constants).

    A moved node must have no side effect a later node relies on by order alone; the
    passes hoist pure ops (reshape, concat, slice, collectives), whose dependencies are
    all data edges. Collectives keep one order on every rank, since every rank's graph has
    the same structure and the reordering reads only that structure.
    """
    early = {n.id for n in nodes}
    if not early:
        return
    order = [n for n in graph.nodes if n.id not in early]
    pending = [n for n in graph.nodes if n.id in early]        # topological already
    in_graph = {n.id for n in graph.nodes}
    wanted = {i.id for n in pending for i in n.inputs}          # producers of moved nodes
    done: set[int] = set()
    result: list[Node] = []

    def place_ready() -> None:
        # one sweep suffices: `pending` is in topological order, so a node's moved
        # producers come before it in the list and are placed earlier in the same sweep
        nonlocal pending
        left = []
        for n in pending:
            if all(i.id in done or i.id not in in_graph for i in n.inputs):
                result.append(n)
                done.add(n.id)
            else:
                left.append(n)
        pending = left

    place_ready()
    for n in order:
        result.append(n)
        done.add(n.id)
        if pending and n.id in wanted:
            place_ready()
    if pending:                      # graph.nodes was not in topological order
        raise GraphError(f"For '{graph.name}', the nodes should be in topological order "
                         f"to be rescheduled, but got {pending[0]!r} before its inputs.")
    graph.nodes = result


def _fixed(node: Node) -> bool:
    """A communication node other collectives must not cross (see the module docstring)."""
    attrs = node.prim.attrs
    return node.is_communication and bool(getattr(node.prim, "point_to_point", False) or
                                          attrs.get("side_effect_io") or
                                          attrs.get("side_effect_mem"))


def order_dependencies(graph: Graph) -> dict[int, set[int]]:
    """node id -> ids of the op nodes it must follow besides its inputs (memory and effect
    constraints, read off the current order, which must be valid)."""
    nodes = graph.nodes
    deps: dict[int, set[int]] = {n.id: set() for n in nodes}
    roots = alias_roots(graph)
    params = {p.id for p in graph.parameters}
    writes: dict[int, list[int]] = {}            # parameter id -> positions of its writers
    for k, n in enumerate(nodes):
        if n.prim.assigns_input is not None:
            for r in roots[n.inputs[n.prim.assigns_input].id] & params:
                writes.setdefault(r, []).append(k)
    if writes:
        for k, n in enumerate(nodes):
            read = set().union(*(roots[i.id] for j, i in enumerate(n.inputs)
                                 if j != n.prim.assigns_input)) & writes.keys()
            for r in read:
                at = writes[r]
                w = bisect_left(at, k)           # writers before k: at[:w]; after: at[w:]
                if w:
                    deps[n.id].add(nodes[at[w - 1]].id)
                if w < len(at) and at[w] != k:
                    deps[nodes[at[w]].id].add(n.id)
            if n.prim.assigns_input is not None:  # writes of one Parameter keep their order
                for r in roots[n.inputs[n.prim.assigns_input].id] & params:
                    at = writes[r]
                    w = at.index(k)
                    if w:
                        deps[n.id].add(nodes[at[w - 1]].id)
    comm = [(k, n) for k, n in enumerate(nodes) if n.is_communication]
    for k, f in comm:
        if _fixed(f):
            for j, c in comm:
                if j < k:
                    deps[f.id].add(c.id)
                elif j > k:
                    deps[c.id].add(f.id)
    return deps


def reorder(graph: Graph, key: Callable[[Node], tuple],
            deps: dict[int, set[int]] | None = None) -> None:
    """Sort `graph.nodes` in place: each node after its inputs and `deps`, and otherwise
    in the order of `key` (the node with the smallest key among those whose inputs are
    done runs next). Ties keep no particular order, so keys should be distinct."""
    deps = deps or {}
    ids = {n.id for n in graph.nodes}
    waiting: dict[int, int] = {}
    users: dict[int, list[Node]] = {}
    for n in graph.nodes:
        before = {i.id for i in n.inputs if i.id in ids} | (deps.get(n.id, set()) & ids)
        waiting[n.id] = len(before)
        for b in before:
            users.setdefault(b, []).append(n)
    ready = [(key(n), n.id, n) for n in graph.nodes if not waiting[n.id]]
    heapq.heapify(ready)
    result: list[Node] = []
    while ready:
        _, _, n = heapq.heappop(ready)
        result.append(n)
        for u in users.get(n.id, ()):
            waiting[u.id] -= 1
            if not waiting[u.id]:
                heapq.heappush(ready, (key(u), u.id, u))
    if len(result) != len(graph.nodes):
        stuck = next(n for n in graph.nodes if waiting[n.id])
        raise GraphError(f"For '{graph.name}', the nodes should have no cyclic dependency to "
                         f"be reordered, but {stuck!r} waits on itself.")
    graph.nodes = result
