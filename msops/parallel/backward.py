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
  slice of the serial gradient, in its leaf's layout.

No op is named: only layouts and replica groups are read.
"""
from __future__ import annotations

from math import prod

import numpy as np

from msops.communication import create_group_partition
from msops.graph.ir import Graph, Node
from msops.parallel.device_matrix import groups_over
from msops.parallel.layout import TensorLayout
from msops.primitives.comm_ops import AllReduce, ReduceOp

__all__ = ["output_seed", "reduce_leaf_gradient", "replica_count"]


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


def reduce_leaf_gradient(graph: Graph, leaf: Node, grad: Node) -> Node:
    """`grad` of a leaf (Parameter or input) summed over the leaf's replica group, laid out
    as the leaf (this rank's slice of the serial gradient)."""
    layout = leaf.layout
    if layout is not None and replica_count(layout) > 1:
        group = create_group_partition(groups_over(layout.device_matrix,
                                                   layout.replica_axes()))
        grad = graph.apply(AllReduce(ReduceOp.SUM, group), [grad])
        grad.comm_bytes = grad.prim.comm_bytes(int(prod(grad.shape)) * grad.dtype.itemsize)
    grad.layout = layout
    return grad

