"""Dead-node elimination: drop what no graph output (or side effect) depends on."""
from __future__ import annotations

from msops.graph.ir import Graph, Node

__all__ = ["eliminate_dead_nodes"]


def eliminate_dead_nodes(graph: Graph) -> Graph:
    """Drop op nodes (and parameters, consts) no output depends on, in place.

    Ops whose primitive has a side effect (attr `side_effect_mem`/`side_effect_io`, as
    Send/Receive/Barrier in MindSpore) are kept even when their value is unused.
    """
    live: set[int] = set()
    roots = list(graph.outputs) + [n for n in graph.nodes if _has_side_effect(n)]
    stack = roots
    while stack:
        node = stack.pop()
        if node.id in live:
            continue
        live.add(node.id)
        stack.extend(node.inputs)
    graph.nodes = [n for n in graph.nodes if n.id in live]
    graph.parameters = [n for n in graph.parameters if n.id in live]
    graph.consts = [n for n in graph.consts if n.id in live]
    return graph


def _has_side_effect(node: Node) -> bool:
    attrs = node.prim.attrs
    return bool(attrs.get("side_effect_mem") or attrs.get("side_effect_io"))
