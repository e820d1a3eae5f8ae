"""Buffer plan: which op outputs of a graph share memory, kept by the executor step to step.

An op with `writes_output` writes into a buffer the plan gives it. The buffer is busy
from that node to the last read of any value that may share its memory: an op without
`writes_output` may return a view of an input (Reshape, Identity, Split, StridedSlice,
TupleGetItem, MakeTuple), so its value is taken to alias whatever its inputs alias.
Once free, a buffer serves a later node of the same byte size (through a view of that
node's shape and dtype); buffers live as long as the executor, so a step allocates
nothing else. Memory a graph output may alias goes to the user: its writer gets a new
array every step (FRESH). An op declaring `out_may_be_input` writes into the buffer of
an input that dies at that node when shape and dtype match (a ufunc reads each element
before writing it). Graph inputs, parameters and consts are never written.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from msops.graph.ir import Graph, GraphError, Node

__all__ = ["BufferPlan", "plan_buffers", "alias_roots", "check_parameter_writes", "FRESH"]

#: `BufferPlan.buffer_of` value of a writer whose memory may reach the user: a new array a step
FRESH = -1


@dataclass(frozen=True)
class BufferPlan:
    """`buffer_of[node id]`: the buffer index (or FRESH) of each `writes_output` node;
    `nbytes[i]`: the size of buffer i."""

    buffer_of: dict
    nbytes: tuple


def alias_roots(graph: Graph) -> dict[int, frozenset]:
    """node id -> ids of the nodes whose memory its value may share: a writer, an input,
    a parameter or an array const is its own root; any other op's value has the roots of
    its tensor inputs (not of `const_inputs`: shapes, axes)."""
    roots = {n.id: frozenset((n.id,)) for n in graph.inputs + graph.parameters}
    for n in graph.consts:
        roots[n.id] = frozenset((n.id,)) if isinstance(n.value, np.ndarray) else frozenset()
    for node in graph.nodes:
        if node.prim.writes_output or node.prim.fresh_outputs:
            roots[node.id] = frozenset((node.id,))
        else:
            consts, written = node.prim.const_inputs, node.prim.assigns_input
            roots[node.id] = frozenset().union(    # a write (Assign) returns its value input
                *(roots[i.id] for k, i in enumerate(node.inputs)
                  if k not in consts and k != written))
    return roots


def check_parameter_writes(graph: Graph, roots: dict[int, frozenset]) -> None:
    """A value that may share a Parameter's memory must not be read after a node wrote that
    Parameter in place (it would see the new data): a GraphError naming both lines."""
    written_at: dict[int, Node] = {}           # parameter node id -> the first writer
    for node in graph.nodes + [None]:          # None: the graph's outputs, read at the end
        reads = graph.outputs if node is None else node.inputs
        for k, i in enumerate(reads):
            if node is not None and k == node.prim.assigns_input:
                continue
            hit = next((written_at[r] for r in roots.get(i.id, ()) if r in written_at), None)
            if hit is not None and i is not hit:
                where = f"at {node.source}" if node is not None else "as a graph output"
                name = hit.inputs[hit.prim.assigns_input].name
                raise GraphError(
                    f"For '{hit.prim.name}', the Parameter '{name}' is written in place at {hit.source}, but a value read from it "
                    f"before the write (%{i.id} {i.op}) is used after it, {where}. Use the "
                    f"value the write returns, or copy the value before the write.")
        if node is not None and node.prim.assigns_input is not None:
            target = node.inputs[node.prim.assigns_input]
            if target.kind == "parameter":
                written_at.setdefault(target.id, node)


def _last_uses(graph: Graph, roots: dict[int, frozenset]) -> dict[int, int]:
    """writer id -> position of the last node reading its memory (its own if none does)."""
    last = {n.id: k for k, n in enumerate(graph.nodes) if n.prim.writes_output}
    for k, node in enumerate(graph.nodes):
        for i in node.inputs:
            for r in roots[i.id]:
                if r in last:
                    last[r] = k
    return last


def _nbytes(node: Node) -> int | None:
    """Bytes of a writer's output; None when its shape is not static."""
    if any(d < 0 for d in node.shape):
        return None
    return math.prod(node.shape) * node.dtype.itemsize


def _in_place(node: Node, k: int, plan: dict, last: dict) -> Node | None:
    """The input whose buffer `node` (at position k) may write into, if any."""
    if not node.prim.out_may_be_input:
        return None
    for i in node.inputs:
        if plan.get(i.id, FRESH) != FRESH and last[i.id] == k and \
                i.shape == node.shape and i.dtype == node.dtype:
            return i
    return None


def plan_buffers(graph: Graph) -> BufferPlan:
    """Assign every writer of `graph` a buffer (or FRESH), reusing the free ones."""
    roots = alias_roots(graph)
    to_user = frozenset().union(*(roots[n.id] for n in graph.outputs))
    last = _last_uses(graph, roots)
    dying: dict[int, list[int]] = {}
    for w, k in last.items():
        dying.setdefault(k, []).append(w)
    buffer_of: dict[int, int] = {}
    holder: dict[int, int] = {}                 # buffer -> the writer now using it
    nbytes: list[int] = []
    free: dict[int, list[int]] = {}             # byte size -> free buffers (last freed last)
    for k, node in enumerate(graph.nodes):
        if node.prim.writes_output:
            size = _nbytes(node)
            if node.id in to_user or size is None:
                b = FRESH
            elif (donor := _in_place(node, k, buffer_of, last)) is not None:
                b = buffer_of[donor.id]
            elif free.get(size):
                b = free[size].pop()
            else:
                b = len(nbytes)
                nbytes.append(size)
            buffer_of[node.id] = b
            if b != FRESH:
                holder[b] = node.id
        for w in dying.get(k, ()):
            b = buffer_of[w]
            if b != FRESH and holder[b] == w:
                free.setdefault(nbytes[b], []).append(b)
    return BufferPlan(buffer_of, tuple(nbytes))
