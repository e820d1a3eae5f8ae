"""The tail of a parallel step: what a step traces after its gradients (the optimizer's
update, gradient clipping or scaling) runs on each rank's slices, after the partition
pass. Element-wise work on slices is the serial work on those slices. A reduction over a
dim its input holds split gives this rank's partial result: `complete_local_tail`
combines it over the ranks holding the other parts (an AllReduce of the op's partial
kind over the device axes splitting the reduced dims, a mean's sum then divided), as
the partition pass does for the forward, so a global gradient norm is the serial one.

Layouts are followed from the nodes that carry one (gradients, Parameters) through the
element-wise nodes of the same shape; only sharding rules are read, no op is named.
What the tail cannot complete this way (a reduction that keeps split dims, or inputs
split differently) is a NotImplementedError naming the op.
"""
from __future__ import annotations

from math import prod

import numpy as np

from msops.parallel.stages import create_stage_groups
from msops.graph.ir import Graph, Node
from msops.parallel.device_matrix import groups_over
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import is_split
from msops.primitives.comm_ops import AllReduce, ReduceOp
from msops.primitives.math_ops import Mul
from msops.primitives.sharding import DimSpec, spec_of

__all__ = ["complete_local_tail"]


def complete_local_tail(graph: Graph, start: int, api: str) -> None:
    """Combine over the ranks every reduction from `graph.nodes[start]` on that reduces a
    dim its input holds split; refuse what cannot be combined so."""
    layouts: dict[int, TensorLayout] = {}

    def split_layout(node: Node) -> TensorLayout | None:
        lay = layouts.get(node.id) or node.layout
        return lay if lay is not None and is_split(lay) else None

    for node in list(graph.nodes[start:]):
        prim = node.prim
        if prim is None or node.is_tuple:
            continue
        const_at = set(getattr(prim, "const_inputs", ()))
        tensors = [x for k, x in enumerate(node.inputs) if k not in const_at]
        lays = [split_layout(x) for x in tensors]
        if not any(lays):
            continue
        consts = {k: x.value for k, x in enumerate(node.inputs) if k in const_at}
        try:
            spec = spec_of(prim, [tuple(x.shape) for x in tensors], [tuple(node.shape)], consts)
        except (ValueError, TypeError):
            continue                          # no rule: the op's own checks decide
        reduced = _split_reductions(api, node, spec, tensors, lays)
        if reduced is not None:
            _combine(graph, node, spec, *reduced)
            continue
        for x, lay in zip(tensors, lays):   # element-wise on a split input: its layout
            if lay is not None and tuple(x.shape) == tuple(node.shape):
                layouts[node.id] = lay
                break


def _split_reductions(api: str, node: Node, spec: DimSpec, tensors: list,
                      lays: list) -> tuple | None:
    """(device matrix, the device axes splitting the reduced dims, how many parts they
    make) when `node` reduces a split dim, else None; a NotImplementedError for what a
    combine cannot complete."""
    kept = {letter for letters in spec.outs for letter in letters if letter is not None}
    by_letter: dict[str, set] = {}                 # reduced letter -> how inputs split it
    kept_split = False
    for x, lay, letters in zip(tensors, lays, spec.ins):
        for d, letter in enumerate(letters):
            if letter is None:
                continue
            split = lay is not None and lay.dim_parts(d) > 1
            if letter in kept:
                kept_split |= split
            else:
                by_letter.setdefault(letter, set()).add(
                    (lay.device_matrix, lay.dim_axes[d]) if split else None)
    split_letters = {k: v for k, v in by_letter.items() if v != {None}}
    if not split_letters:
        return None
    first = next(lay for lay in lays if lay is not None)
    if kept_split:
        _refuse(api, node, first, "keeps a split dim while reducing a split one")
    if any(len(v) != 1 for v in split_letters.values()) or \
            len({dm for v in split_letters.values() for dm, _ in v}) != 1:
        _refuse(api, node, first, "has inputs split differently over a reduced dim")
    dm = next(iter(next(iter(split_letters.values()))))[0]
    axes = tuple(sorted({a for v in split_letters.values() for _, ax in v for a in ax}))
    lay = next(lay for lay in lays if lay is not None and lay.device_matrix == dm)
    return dm, axes, prod(lay.axis_size(a) for a in axes)


def _refuse(api: str, node: Node, lay: TensorLayout, what: str) -> None:
    raise NotImplementedError(
        f"For '{api}', '{node.op}' after the gradients of a parallel step {what} ({lay}); "
        f"that part of the step runs on each rank's slice, at {node.source}. Reduce in the "
        f"network's forward, or over whole dims.")


def _combine(graph: Graph, node: Node, spec: DimSpec, dm: tuple, axes: tuple,
             parts: int) -> None:
    """Replace `node`'s uses by its partial result combined over the device `axes`."""
    op = ReduceOp.SUM if spec.partial_op == "mean" else spec.partial_op
    group = create_stage_groups(groups_over(dm, axes))
    made = [graph.apply(AllReduce(op, group), [node], node.source)]
    if spec.partial_op == "mean":
        scale = graph.add_const(np.asarray(1.0 / parts, dtype=node.dtype.np_dtype))
        made.append(graph.apply(Mul(), [made[0], scale], node.source))
    out = made[-1]
    for m in made:                                   # right after the reduction
        graph.nodes.remove(m)
    at = graph.nodes.index(node) + 1
    graph.nodes[at:at] = made
    for later in graph.nodes[at + len(made):]:
        later.inputs = [out if x is node else x for x in later.inputs]
    graph.outputs = [out if x is node else x for x in graph.outputs]
