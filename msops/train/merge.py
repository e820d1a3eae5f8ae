"""Whole parameters from per-rank slices: merge_sliced_parameter, load_distributed_checkpoint.

Shard files (saved with `integrated_save=False`) record each slice's layout, so slices are
put back by layout (any split dims), and a network with another strategy or another rank
count takes the whole values (its parallel pass slices them again).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import place_slices
from msops.train.serialization import load_param_into_net
from msops.train.transform import merged_parameters, read_shards

__all__ = ["merge_sliced_parameter", "load_distributed_checkpoint"]


def _layout_of(strategy: Mapping[str, Any] | None, name: str, first: Parameter):
    if strategy is not None and name in strategy:
        lay = strategy[name]
        return getattr(lay, "layout", lay)           # a ParameterLayout or a TensorLayout
    return getattr(first, "layout", None)


def merge_sliced_parameter(sliced_parameters: Sequence[Parameter],
                           strategy: Mapping[str, Any] | None = None) -> Parameter:
    """One Parameter from the slices of every rank (rank order).

    Slices are placed by the layout in `strategy[name]` (a TensorLayout or an entry of
    `parameter_layout_dict`), else by the slices' own `.layout` (shard files carry it),
    else concatenated along dim 0 (MindSpore's default)."""
    api = "merge_sliced_parameter"
    if not isinstance(sliced_parameters, (list, tuple)) or not sliced_parameters:
        raise ValueError(f"For '{api}', the 'sliced_parameters' should be a non-empty list of "
                         f"Parameters, but got {sliced_parameters!r:.80}.")
    first = sliced_parameters[0]
    for i, p in enumerate(sliced_parameters):
        if not isinstance(p, Parameter):
            raise TypeError(f"For '{api}', the 'sliced_parameters[{i}]' should be a Parameter, "
                            f"but got {type(p).__name__}.")
        if (p.name, p.dtype, p.shape) != (first.name, first.dtype, first.shape):
            raise ValueError(f"For '{api}', every slice should have the name, dtype and shape "
                             f"of the first ({first.name}, {first.dtype}, {first.shape}), but "
                             f"got ({p.name}, {p.dtype}, {p.shape}) at index {i}.")
    blocks = np.stack([p.asnumpy() for p in sliced_parameters])
    layout: TensorLayout | None = _layout_of(strategy, first.name, first)
    if layout is None:
        merged = np.concatenate(list(blocks)) if blocks.ndim > 1 else blocks.reshape(-1)
    else:
        if layout.device_num != len(sliced_parameters):
            raise ValueError(f"For '{api}', the number of slices of '{first.name}' should be "
                             f"{layout.device_num} (one per rank of {layout}), but got "
                             f"{len(sliced_parameters)}.")
        merged = place_slices(blocks, layout)
    return Parameter(Tensor(merged), name=first.name, requires_grad=first.requires_grad)


def load_distributed_checkpoint(network: Cell, checkpoint_filenames: Sequence[str],
                                strict_load: bool = False, format: str | None = None, *,
                                train_strategy_filename: str | None = None,
                                ) -> tuple[list[str], list[str]]:
    """Load shard files (one per rank of the saving run, in rank order) into `network`,
    whatever its strategy or rank count: each parameter is merged by its layout (the
    shard files', else `train_strategy_filename`'s, the saving run's strategy file) and
    loaded whole. Returns load_param_into_net's (not loaded, not used)."""
    api = "load_distributed_checkpoint"
    if isinstance(checkpoint_filenames, str) or not checkpoint_filenames:
        raise ValueError(f"For '{api}', the 'checkpoint_filenames' should be a non-empty list "
                         f"of shard files in rank order, but got {checkpoint_filenames!r}.")
    shards = read_shards(list(checkpoint_filenames), train_strategy_filename, api, format)
    merged = {name: Parameter(Tensor(full), name=name)
              for name, full in merged_parameters(shards)}
    return load_param_into_net(network, merged, strict_load=strict_load)
