"""The parallel backward: seeds and leaf-gradient reductions around `differentiate`.

The partition pass makes a rank-local graph; `graph.autodiff.differentiate` runs on it
unchanged, each inserted redistribution (StridedSlice, AllGather, AlltoAll, AllReduce,
ReduceScatter, an expansion's subgraph) differentiating by its own registered rule.
Read as one function of every rank's local values, the local graphs compute the global
network, so two things make its gradient the serial network's gradient:

* the seed: each rank seeds its output slice with ones divided by the number of ranks
  holding that slice (its replica group), so the ranks' objectives sum to the global
  output once (MindSpore splits the sens by the output's layout the same way);
* the leaves: ranks in a replica group hold copies of one slice of a Parameter (or of an
  input); the gradient of the shared value is the sum of the copies' gradients, an
  AllReduce(sum) over exactly that group, after which every gradient is this rank's
  slice of the serial gradient, in its leaf's layout. The reductions are fused into
  buckets (comm_fusion's allreduce size, MindSpore's setting): fewer, larger collectives,
  formed in the order the backward completes the gradients and each scheduled right
  after its last gradient (`graph.schedule.schedule_early`).

No op is named: only layouts and replica groups are read.
"""
from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from msops.parallel.stage_split import infer_stages, physical
from msops.parallel.stages import create_stage_groups, stage_num
from msops.graph.ir import Graph, Node
from msops.graph.schedule import schedule_early
from msops.parallel.device_matrix import groups_over
from msops.parallel.layout import TensorLayout
from msops.parallel.partition import annotate_comm_bytes
from msops.primitives.array_ops import Concat, Identity, Reshape, StridedSlice
from msops.primitives.comm_ops import AllReduce, ReduceOp
from msops.primitives.math_ops import Mul

__all__ = ["output_seed", "sens_seed", "reduce_leaf_gradients", "replica_count"]


def replica_count(layout: TensorLayout | None) -> int:
    """How many ranks hold the same slice as this one (1 without a layout)."""
    if layout is None:
        return 1
    return prod(layout.axis_size(k) for k in layout.replica_axes())


def output_seed(graph: Graph, out: Node) -> Node:
    """The seed of a local output: ones / the output's replica count, in its layout."""
    seed = graph.add_const(np.full(out.shape, 1.0 / replica_count(out.layout),
                                   out.dtype.np_dtype))
    seed.layout = out.layout
    return seed


def sens_seed(graph: Graph, out: Node, sens: Node) -> Node:
    """The seed of a local output from its sens (this rank's slice, a graph input): the
    slice / the output's replica count, in its layout, so that the ranks' seeds sum to
    the sens once (as `output_seed` does for ones)."""
    count = replica_count(out.layout)
    if count != 1:
        sens = graph.apply(Mul(), [sens, graph.add_const(
            np.asarray(1.0 / count, out.dtype.np_dtype))])
    sens.layout = out.layout
    return sens


def reduce_leaf_gradients(graph: Graph, leaves: Sequence[Node], grads: Sequence[Node],
                          bucket_bytes: int) -> list[Node]:
    """Each leaf's gradient summed over the leaf's replica group and laid out as the leaf
    (this rank's slice of the serial gradient).

    Gradients reduced over the same group with the same dtype (and Parameters' fusion id,
    and pipeline stage) are fused into buckets of at most `bucket_bytes` (a gradient larger than that is a
    bucket alone), in the order the backward completes them (the last layer's first): one
    AllReduce of the flattened,
    concatenated bucket, sliced and reshaped back. Each bucket's reduction is scheduled
    right after the node completing its last gradient, so it is issued while the
    backward of the earlier layers is still to run.
    """
    out = list(grads)
    done_at = {n.id: k for k, n in enumerate(graph.nodes)}   # where each gradient completes
    pending: dict[tuple, list[int]] = {}          # (group, dtype, ...) -> leaf indices
    stages = physical(infer_stages(graph)) if stage_num() > 1 else {}
    for k, leaf in enumerate(leaves):
        layout = leaf.layout
        if layout is not None and replica_count(layout) > 1:
            group = create_stage_groups(groups_over(layout.device_matrix,
                                                       layout.replica_axes()))
            # a Parameter's comm_fusion id (Cell.set_comm_fusion; MindSpore's default 1):
            # only gradients of Parameters sharing one are fused
            fusion = getattr(leaf.value, "comm_fusion", 1) if leaf.kind == "parameter" else 1
            # a bucket holds one pipeline stage's gradients (each stage reduces its own)
            stage = stages.get(grads[k].id)
            pending.setdefault((group, grads[k].dtype, fusion, stage), []).append(k)
    first = len(graph.nodes)
    for (group, _, _, _), ks in pending.items():
        ks = sorted(ks, key=lambda k: done_at.get(grads[k].id, -1))     # stable: ties in leaf order
        for bucket in _buckets(ks, [_nbytes(grads[k]) for k in ks], bucket_bytes):
            for k, g in zip(bucket, _all_reduce(graph, group, [grads[k] for k in bucket])):
                out[k] = g
    schedule_early(graph, graph.nodes[first:])
    for k, (leaf, g) in enumerate(zip(leaves, out)):
        if g.layout is not None and g.layout != leaf.layout:   # one node, two leaves' grads
            g = out[k] = graph.apply(Identity(), [g])
        g.layout = leaf.layout
    annotate_comm_bytes(graph)            # the backward's collectives too
    return out


def _buckets(items: list[int], sizes: list[int], limit: int) -> list[list[int]]:
    """`items` cut, in order, into runs of total size at most `limit` (at least one each)."""
    runs: list[list[int]] = []
    total = limit + 1
    for item, size in zip(items, sizes):
        if total + size > limit:
            runs.append([])
            total = 0
        runs[-1].append(item)
        total += size
    return runs


def _all_reduce(graph: Graph, group: str, grads: list[Node]) -> list[Node]:
    """AllReduce(sum) of `grads` over `group`: one collective for all of them."""
    if len(grads) == 1:
        return [_summed(graph, group, grads[0])]
    flat = [graph.apply(Reshape(), [g, graph.add_const((-1,))]) for g in grads]
    summed = _summed(graph, group, graph.apply(Concat(0), [graph.make_tuple(flat)]))
    out, start = [], 0
    for g in grads:
        size = int(prod(g.shape))
        part = graph.apply(StridedSlice(), [summed, graph.add_const((start,)),
                                            graph.add_const((start + size,)),
                                            graph.add_const((1,))])
        out.append(graph.apply(Reshape(), [part, graph.add_const(tuple(g.shape))]))
        start += size
    return out


def _summed(graph: Graph, group: str, grad: Node) -> Node:
    return graph.apply(AllReduce(ReduceOp.SUM, group), [grad])


def _nbytes(node: Node) -> int:
    return int(prod(node.shape)) * node.dtype.itemsize
