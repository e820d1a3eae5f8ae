"""Micro-batches of one call: `network` run on equal dim-0 slices of its inputs, its
outputs summed (MindSpore's `_MicroBatch` slicing and the add of its micro-batch cells).

`GradAccumulationCell` / `PipelineCell` build on it to accumulate gradients (and to flow
through pipeline stages), `MicroBatchInterleaved` to interleave two independent halves of
a batch. The slices are StridedSlices, so a sharded batch dim stays sharded.
"""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import validator
from msops.common.tensor import Tensor
from msops.graph import tracer
from msops.nn.cell import Cell

__all__ = ["MicroBatches", "MicroBatchInterleaved"]


class MicroBatches(Cell):
    """`network` on `count` dim-0 slices of every Tensor input (others passed whole);
    `construct` returns the sum of its outputs. `arg` names `count` in errors."""

    #: whether the traced nodes record their micro-batch (`graph.micro_of`): a pipeline's,
    #: which its 1F1B schedule orders by
    scheduled = False

    def __init__(self, network: Cell, count: int, arg: str) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        validator.check_value_type("network", network, Cell, name)
        validator.check_positive_int(count, arg, name)
        self.network = network
        self._slice = ops.StridedSlice()
        self._add = ops.Add()
        self.__dict__["_count"] = (count, arg)

    def _micro(self, i: int, x: Any) -> Any:
        """Micro-batch i of one input (a non-Tensor input is passed whole)."""
        if not isinstance(x, Tensor) and not hasattr(x, "shape"):
            return x
        count, arg = self._count
        shape = tuple(x.shape)
        if not shape or shape[0] % count:
            raise ValueError(f"For '{self.cls_name}', the inputs' dim 0 should be divisible "
                             f"by {arg}: {count}, but got shape {list(shape)}.")
        size = shape[0] // count
        begin = (i * size,) + (0,) * (len(shape) - 1)
        end = ((i + 1) * size,) + shape[1:]
        return self._slice(x, begin, end, (1,) * len(shape))

    def construct(self, *inputs: Any) -> Any:
        total = None
        graph = tracer.active_graph() if self.scheduled and tracer.is_tracing() else None
        for i in range(self._count[0]):
            start = len(graph.nodes) if graph is not None else 0
            out = self.network(*(self._micro(i, x) for x in inputs))
            if graph is not None:          # micro-batch i's nodes (a pipeline's schedule)
                for n in graph.nodes[start:]:
                    graph.micro_of[n.id] = (i, 0)
            if total is not None and not hasattr(out, "shape"):
                raise TypeError(f"For '{self.cls_name}', the network should return a Tensor "
                                f"(the micro-batches' outputs are summed), but got "
                                f"{type(out).__name__}.")
            total = out if total is None else self._add(total, out)
        return total


class MicroBatchInterleaved(MicroBatches):
    """`MicroBatchInterleaved(network, interleave_num=2)`: `network` run on `interleave_num`
    equal dim-0 slices of its inputs, returning the sum of their outputs (MindSpore's cell;
    on its devices the independent slices overlap one's communication with another's
    computation, here they run one after the other).

    >>> net = nn.MicroBatchInterleaved(nn.WithLossCell(backbone, loss), 2)
    """

    def __init__(self, network: Cell, interleave_num: int = 2) -> None:
        super().__init__(network, interleave_num, "interleave_num")
        self.interleave_num = interleave_num
