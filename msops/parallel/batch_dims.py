"""data_parallel's default split: the batch dim of every value, followed from the fed inputs.

In `parallel_mode="data_parallel"` each rank computes on its own batch slice and holds
every Parameter whole (as MindSpore). The default strategy therefore splits the letter
of the batch dim, wherever the graph has carried it: dim 0 of a fed input, then through
each op by its sharding rule's letters (a Transpose moves it, a reduction over it drops
it). An op none of whose inputs carries the batch (a Reshape or slice of a Parameter)
runs whole, so no Parameter is ever stored as a slice.
"""
from __future__ import annotations

from typing import Sequence

from msops.graph.ir import Node
from msops.primitives.sharding import DimSpec

__all__ = ["BatchDims"]


class BatchDims:
    """Global node id -> the dim holding the batch (None: none; a tuple for tuple values)."""

    def __init__(self, inputs: Sequence[Node]) -> None:
        self.dims: dict[int, object] = {n.id: 0 if n.shape else None for n in inputs}

    def letter(self, tensors: Sequence[Node], spec: DimSpec, lead: int) -> str | None:
        """The batch letter of an op: its first input carrying the batch, read in the spec
        (`lead`: entries before the tensor inputs, a shape input's)."""
        for t, letters in zip(tensors, spec.ins[lead:]):
            d = self.dims.get(t.id)
            if isinstance(d, int) and d < len(letters) and letters[d] is not None:
                return letters[d]
        return None

    def record(self, node: Node, spec: DimSpec, letter: str | None) -> None:
        """Where `node`'s outputs hold the batch letter."""
        outs = tuple(o.index(letter) if letter is not None and letter in o else None
                     for o in spec.outs)
        self.dims[node.id] = outs if node.is_tuple else outs[0]

    def getitem(self, node: Node, source: Node, index: int) -> None:
        """A tuple item carries its item's batch dim."""
        d = self.dims.get(source.id)
        self.dims[node.id] = d[index] if isinstance(d, tuple) else None
