"""Assemble the full value of a sharded network output on every rank."""
from __future__ import annotations

from msops.common.tensor import Tensor
from msops.parallel.layout import TensorLayout
from msops.parallel.redistribution_emit import run_plan
from msops.parallel.redistribution_plan import plan

__all__ = ["gather_full"]


def gather_full(tensor: Tensor) -> Tensor:
    """The whole tensor on every rank, from each rank's slice of a parallel graph's output.

    Every rank must call it (it runs the collectives of a plan to full replication). A
    Parameter holding its slice after a parallel compile is gathered by its `_layout`. A
    Tensor without a layout (stand-alone run, or already whole) is returned as it is.
    """
    layout: TensorLayout | None = getattr(tensor, "layout", None) or \
        getattr(tensor, "_layout", None)
    if layout is None:
        return tensor
    full = TensorLayout(layout.device_matrix, (-1,) * len(layout.tensor_shape),
                        layout.tensor_shape)
    steps = plan(layout, full, tensor.dtype.itemsize)
    return Tensor._wrap(run_plan(steps, tensor.asnumpy()))
