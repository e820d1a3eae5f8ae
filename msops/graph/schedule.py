"""Scheduling: move chosen nodes as early in the execution order as their inputs allow.

The executor runs `graph.nodes` in order. A pass that appends work which depends on
only part of the graph (a gradient bucket's AllReduce needs just its bucket's
gradients) can hoist that work to where its inputs are complete, so it is issued while
the rest of the graph is still to run, not after all of it. Only the order changes; the
moved nodes keep their relative order and every node still follows its inputs.
"""
from __future__ import annotations

from typing import Iterable

from msops.graph.ir import Graph, GraphError, Node

__all__ = ["schedule_early"]


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
