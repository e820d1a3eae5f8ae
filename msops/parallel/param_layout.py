"""Parameter layouts of a compiled network, in MindSpore's `parameter_layout_dict` form."""
from __future__ import annotations

from typing import NamedTuple

from msops.graph.ir import Graph
from msops.parallel.layout import TensorLayout

__all__ = ["ParameterLayout", "parameter_layouts"]


class ParameterLayout(NamedTuple):
    """One parameter's layout, indexable as MindSpore's list
    `[dev_matrix, tensor_map, slice_shape, field_size, uniform_split, opt_shard_group]`.

    `tensor_map` counts device axes from the right (-1: not split); `layout` is the
    TensorLayout itself (full shape included)."""

    dev_matrix: list
    tensor_map: list
    slice_shape: list
    field_size: int
    uniform_split: bool
    opt_shard_group: str
    layout: TensorLayout


def parameter_layouts(graph: Graph) -> dict[str, ParameterLayout]:
    """Parameter name -> its layout, read off a compiled local graph (each parameter's
    node takes the layout of its first consumer); empty for a stand-alone graph."""
    out = {}
    for node in graph.parameters:
        lay: TensorLayout | None = node.layout
        if lay is None:
            continue
        out[node.value.name] = ParameterLayout(list(lay.device_matrix), list(lay.tensor_map),
                                               list(lay.slice_shape), 0, True, "", lay)
    return out
