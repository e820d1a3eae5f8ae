"""The tail of a parallel step: what a step traces after its gradients (the optimizer's
update, gradient clipping or scaling) runs on each rank's slices as they are, without a
partition pass. Element-wise work on slices is the serial work on those slices; a
reduction over a split dim is not (each rank would reduce only its slice, a silent wrong
answer), so `check_local_tail` refuses it by name.

Layouts are followed from the nodes that carry one (gradients, Parameters) through the
element-wise nodes of the same shape; only sharding rules are read, no op is named.
"""
from __future__ import annotations

from msops.graph.ir import Graph, Node
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import is_split
from msops.primitives.sharding import spec_of

__all__ = ["check_local_tail"]


def check_local_tail(graph: Graph, start: int, api: str) -> None:
    """Raise NotImplementedError naming the first node from `graph.nodes[start]` on that
    reduces over a dim its input holds split."""
    layouts: dict[int, TensorLayout] = {}

    def split_layout(node: Node) -> TensorLayout | None:
        lay = layouts.get(node.id) or getattr(node, "layout", None)
        return lay if lay is not None and is_split(lay) else None

    for node in graph.nodes[start:]:
        prim = node.prim
        if prim is None or isinstance(node.dtype, tuple):    # a multi-output op: not here
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
        kept = {letter for letters in spec.outs for letter in letters if letter is not None}
        for x, lay, letters in zip(tensors, lays, spec.ins):
            if lay is None:
                continue
            for d, letter in enumerate(letters):
                if letter is not None and letter not in kept and lay.dim_parts(d) > 1:
                    raise NotImplementedError(
                        f"For '{api}', '{prim.name}' after the gradients of a parallel step "
                        f"reduces dim {d} of a Tensor that is split there ({lay}); that part "
                        f"of the step runs on each rank's slice, so it would reduce only this "
                        f"rank's part (at {node.source}). Reduce in the network's forward, or "
                        f"run the step in data_parallel without the parallel optimizer.")
        for x, lay in zip(tensors, lays):   # element-wise on a split input: its layout
            if lay is not None and tuple(x.shape) == tuple(node.shape):
                layouts[node.id] = lay
                break
