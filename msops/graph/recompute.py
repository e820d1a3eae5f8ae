"""Recompute (MindSpore's `Cell.recompute()`): a marked cell's forward is emitted again in
the backward instead of keeping its activations from the forward.

While a graph is traced, the op nodes a recomputed cell's construct made form one span
(`graph.recompute`; the outermost marked cell's, one per call; the partition pass maps
each to the local nodes it made). After `differentiate`
appended the backward, `recompute_spans` clones, for each span, the nodes the backward
reads (and what they need inside the span) and places the clones right before the first
backward node reading any of them; the backward reads the clones. The originals then die
with their last forward use, so the buffer plan reuses their memory: the span's inputs
(its checkpoint) stay alive, its inner activations do not. Nodes that must not run twice
stay shared: collectives (their partners run once), in-place writes, side effects and
random draws (a second draw would differ).
"""
from __future__ import annotations

from msops.graph.ir import Graph, Node

__all__ = ["recompute_spans"]


def _recomputable(node: Node) -> bool:
    prim = node.prim
    attrs = prim.attrs
    return not (prim.is_communication or prim.assigns_input is not None or prim.draws_random
                or attrs.get("side_effect_mem") or attrs.get("side_effect_io"))


def recompute_spans(graph: Graph, n_forward: int) -> int:
    """Re-emit each recompute span's activations the backward (the nodes after the first
    `n_forward`) reads, before their first backward use. Returns the number of clones."""
    total = 0
    for span in getattr(graph, "recompute", ()):
        forward = graph.nodes[:n_forward]
        ok = {n.id: n for n in forward if n.id in span and _recomputable(n)}
        used = {i.id for b in graph.nodes[n_forward:] for i in b.inputs if i.id in ok}
        if not used:
            continue
        need, stack = set(), list(used)
        while stack:                           # what the read nodes need inside the span
            k = stack.pop()
            if k not in need:
                need.add(k)
                stack.extend(i.id for i in ok[k].inputs if i.id in ok)
        clones: dict[int, Node] = {}
        for n in forward:
            if n.id in need:
                c = graph._new("op", prim=n.prim, inputs=[clones.get(i.id, i) for i in n.inputs],
                               shape=n.shape, dtype=n.dtype, source=n.source)
                c.layout = n.layout
                if n.id in graph.stage_of:
                    graph.stage_of[c.id] = graph.stage_of[n.id]
                if n.id in graph.micro_of:        # recomputed for the backward
                    graph.micro_of[c.id] = (graph.micro_of[n.id][0], 1)
                clones[n.id] = c
        first = next(k for k in range(n_forward, len(graph.nodes))
                     if any(i.id in used for i in graph.nodes[k].inputs))
        for b in graph.nodes[first:]:
            b.inputs = [clones[i.id] if i.id in used else i for i in b.inputs]
        graph.nodes[first:first] = list(clones.values())
        total += len(clones)
    return total
