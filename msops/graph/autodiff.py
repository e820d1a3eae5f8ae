"""Reverse-mode autodiff on the graph IR: append a traced graph's backward to the graph.

`differentiate(graph, seeds, wrt)` walks the op nodes in reverse order and calls each
primitive's backward rule (`@bprop(Cls)`, registered beside the class) with the Graph as
the builder, so the backward is made of ordinary nodes: forward and backward compile
into one graph and run through the executor like any other. The pass names no op:

* a value read by several nodes gets the sum of their gradients (AddN);
* a tuple value (a multi-output op, a MakeTuple) gets one gradient per element;
  elements nobody differentiated are zeros when the op's rule runs;
* only floating-point values carry gradients; a rule's None means "no gradient";
* communication nodes run their rule even when no gradient reaches them (zeros): the
  partner ranks of a Send, Receive or collective take part in the backward too;
* the activations of recomputed cells are emitted again before their backward use
  (graph/recompute.py);
* a node's backward nodes run on its pipeline stage (`graph.stage_of`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.graph.ir import Graph, GraphError, Node
from msops.graph.recompute import recompute_spans
from msops.graph.tape import Tape
from msops.graph.tracer import inline
from msops.primitives.math_ops import AddN, Conj
from msops.primitives.rules import reason_without, rule_of

__all__ = ["differentiate", "differentiable"]


def differentiable(dtype: Any, kinds: tuple = ("float", "complex")) -> bool:
    """Whether values of `dtype` (a Type, or a tuple of them) carry gradients: floats and
    complex numbers (of a real loss: dL/dRe + i dL/dIm, see primitives/fft_ops.py)."""
    if isinstance(dtype, tuple):
        return any(differentiable(d, kinds) for d in dtype)
    return getattr(dtype, "kind", None) in kinds


class _Gradients:
    """The gradient contributions collected for each value, summed when read."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.parts: dict[int, Any] = {}     # node id -> list, or {element: list} for tuples

    def add(self, node: Node, grad: Any) -> None:
        if grad is None or not differentiable(node.dtype):
            return
        if node.is_tuple:
            per = self.parts.setdefault(node.id, {})
            for k, g in enumerate(grad):
                if g is not None and differentiable(node.dtype[k]):
                    per.setdefault(k, []).append(g)
        else:
            self.parts.setdefault(node.id, []).append(grad)

    def has(self, node: Node) -> bool:
        return bool(self.parts.get(node.id))

    def _sum(self, parts: list) -> Node:
        if len(parts) == 1:
            return parts[0]
        g = self.graph
        return g.apply(AddN(), [g.make_tuple(parts)])

    def total(self, node: Node) -> Any:
        """The gradient of `node` (zeros for a tensor, or tuple elements, that got none)."""
        parts = self.parts.get(node.id)
        if not node.is_tuple:
            return self._sum(parts) if parts else _zeros(self.graph, node.shape, node.dtype)
        parts = parts or {}
        return [self._sum(parts[k]) if k in parts else _zeros(self.graph, s, d)
                for k, (s, d) in enumerate(zip(node.shape, node.dtype))]


def _zeros(graph: Graph, shape: Sequence[int], dtype: Any) -> Node:
    return graph.add_const(np.zeros(tuple(shape), dtype.np_dtype))


def _where(node: Node) -> str:
    return f"\n  In {node.source}" if node.source else ""


def _rule(node: Node) -> Any:
    rule = rule_of("bprop", node.prim)
    if rule is None:
        reason = reason_without("bprop", node.prim) or "none is registered"
        raise NotImplementedError(f"For '{node.prim.name}', there is no backward rule: "
                                  f"{reason}.{_where(node)}")
    if not getattr(node.prim, "complex_grad", False) and _has_complex(node):
        raise NotImplementedError(f"For '{node.prim.name}', the gradient through complex values "
                                  f"is not implemented (its backward rule is written for real "
                                  f"ones).{_where(node)}")
    return rule


def _conj(graph: Any, node: Node) -> Node:
    """`node` conjugated when complex, else itself (a holomorphic op's rule reads these)."""
    if not differentiable(node.dtype, ("complex",)):
        return node
    return graph.apply(Conj(), [node], node.source)


def _has_complex(node: Node) -> bool:
    """Whether a complex value enters or leaves `node`."""
    return any(differentiable(n.dtype, ("complex",)) for n in (node, *node.inputs))


class _At:
    """The builder as one rule sees it: the nodes it makes carry the forward node's source
    line (dumps and errors of the backward name the user's line)."""

    __slots__ = ("builder", "source")

    def __init__(self, builder: Any, source: str | None) -> None:
        self.builder, self.source = builder, source

    def apply(self, prim: Any, inputs: Sequence[Node], source: str | None = None) -> Node:
        return self.builder.apply(prim, inputs, source or self.source)

    def add_const(self, value: Any) -> Node:
        return self.builder.add_const(value)

    def getitem(self, node: Node, index: int, source: str | None = None) -> Node:
        return self.builder.getitem(node, index, source or self.source)

    def make_tuple(self, nodes: Sequence[Node], source: str | None = None) -> Node:
        return self.builder.make_tuple(nodes, source or self.source)

    def inline(self, fn: Any, nodes: Sequence[Node]) -> list[Node]:
        """`fn` (a Python function of Tensors, a gradient hook) applied to `nodes`: on a tape
        run at once on their values, on a graph traced into it. One node per Tensor it
        returns."""
        if isinstance(self.builder, Tape):
            return self.builder.inline(fn, nodes)
        return inline(self.builder, fn, nodes)


def _dynamic_input(node: Node) -> int | None:
    """The index of an input whose shape is known only at run time (-1 dims), if any."""
    for k, i in enumerate(node.inputs):
        if isinstance(i.shape, tuple) and any(isinstance(d, int) and d < 0 for d in i.shape):
            return k
    return None


def _dynamic_message(node: Node, k: int) -> str:
    src = node.inputs[k]
    made_by = src.prim.name if src.kind == "op" else src.kind
    return (f"For '{node.prim.name}', the backward rule needs the static shape of input {k}, "
            f"but got {list(src.shape)} (a run-time length, from '{made_by}'). Compiled "
            f"graphs differentiate only static shapes here: take the gradient in "
            f"PYNATIVE_MODE, or give the op a static shape.{_where(node)}")


def differentiate(graph: Graph, seeds: Sequence[tuple[Node, Node]],
                  wrt: Sequence[Node]) -> list[Node]:
    """Append to `graph` the gradients of the seeded outputs with respect to `wrt`.

    `seeds`: (output node, its gradient node: ones or a sens input). Returns one gradient
    node per `wrt` node (zeros where none flows: unused, cut by stop_gradient, or an
    integer value).
    """
    forward = list(graph.nodes)
    requires = {n.id for n in wrt}
    for node in forward:        # values that depend on a wrt node, and every collective
        if differentiable(node.dtype) and (node.is_communication or
                                           any(i.id in requires for i in node.inputs)):
            requires.add(node.id)
    grads = _Gradients(graph)
    for out, seed in seeds:
        if out.id in requires:
            grads.add(out, seed)
    stage_of = getattr(graph, "stage_of", None)      # a Graph's (a Tape has none)
    for node in reversed(forward):
        if node.id not in requires or not (grads.has(node) or node.is_communication):
            continue
        rule = _rule(node)
        start = len(graph.nodes)
        dout = grads.total(node)
        ins, at = node.inputs, node
        if getattr(node.prim, "holomorphic", False) and _has_complex(node):
            ins, at = [_conj(graph, i) for i in ins], _conj(graph, node)
        try:
            in_grads = rule(node.prim, ins, at, dout, _At(graph, node.source))
        except Exception as err:
            dynamic = _dynamic_input(node)
            if dynamic is not None:
                raise NotImplementedError(_dynamic_message(node, dynamic)) from err
            if not isinstance(err, (NotImplementedError, ValueError, TypeError)):
                raise
            if _where(node) and _where(node) in str(err):
                raise
            raise type(err)(f"{err}\n  In the backward of '{node.prim.name}'"
                            f"{_where(node)}") from err
        if len(in_grads) != len(node.inputs):
            raise GraphError(f"For '{node.prim.name}', the backward rule should return one "
                             f"gradient per input: {len(node.inputs)}, but got "
                             f"{len(in_grads)}.")
        for i, g in zip(node.inputs, in_grads):
            if i.id in requires:
                grads.add(i, g)
        if stage_of and node.id in stage_of:          # a node's backward runs on its stage
            for b in graph.nodes[start:]:
                stage_of[b.id] = stage_of[node.id]
        micro_of = getattr(graph, "micro_of", None)    # ... in its micro-batch's backward
        if micro_of and node.id in micro_of:
            for b in graph.nodes[start:]:
                micro_of[b.id] = (micro_of[node.id][0], 1)
    out = [grads.total(n) if grads.has(n) else _zeros(graph, n.shape, n.dtype) for n in wrt]
    if getattr(graph, "recompute", None):       # a Graph with recomputed cells (not a Tape)
        recompute_spans(graph, len(forward))
    return out
