"""Whole parameters from per-rank slices: merge_sliced_parameter, load_distributed_checkpoint.

Shard files (saved with `integrated_save=False`) record each slice's layout, so slices are
put back by layout (any split dims), and a network with another strategy or another rank
count takes the whole values (its parallel pass slices them again).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import place_slices
from msops.parallel.strategy_ckpt import layout_from_item
from msops.train.serialization import load_param_into_net, resolve_format
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


def _strategy_layout(api: str, name: str, entry: Any) -> TensorLayout:
    """A predict_strategy entry as a TensorLayout: a ParameterLayout (what
    `parameter_layout_dict` and `Model.infer_predict_layout` give), a TensorLayout, or
    MindSpore's list [dev_matrix, tensor_map, slice_shape, ...]."""
    layout = getattr(entry, "layout", entry)
    if isinstance(layout, TensorLayout):
        return layout
    if isinstance(entry, (list, tuple)) and len(entry) >= 3:
        return layout_from_item(name, {"dev_matrix": entry[0], "tensor_map": entry[1],
                                       "slice_shape": entry[2]})
    raise TypeError(f"For '{api}', the 'predict_strategy' of '{name}' should be a layout "
                    f"(an entry of parameter_layout_dict), but got {type(entry).__name__}.")


def _check_predict_strategy(api: str, network: Cell, strategy: Any) -> None:
    """The network's own layouts cut what it loads: `predict_strategy` must be them (as
    `Model.infer_predict_layout` gives them), else the ranks would load other slices."""
    if not isinstance(strategy, Mapping):
        raise TypeError(f"For '{api}', the 'predict_strategy' should be a dict of parameter "
                        f"name -> layout, but got {type(strategy).__name__}.")
    params = {p.name for p in network.get_parameters()}
    own = network.parameter_layout_dict
    for name, entry in strategy.items():
        if name not in params:
            raise ValueError(f"For '{api}', the 'predict_strategy' should name parameters of "
                             f"the network, but got '{name}'.")
        want = _strategy_layout(api, name, entry)
        got = own[name].layout if name in own else None
        if got != want:
            raise ValueError(f"For '{api}', the 'predict_strategy' of '{name}' should be the "
                             f"network's compiled layout {got}, but got {want}: compile the "
                             f"network with that strategy first (Model.infer_predict_layout).")


def load_distributed_checkpoint(network: Cell, checkpoint_filenames: Sequence[str] | None = None,
                                predict_strategy: Mapping[str, Any] | None = None,
                                train_strategy_filename: str | None = None,
                                strict_load: bool = False, dec_key: Any = None,
                                dec_mode: str = "AES-GCM", format: str | None = None,
                                unified_safetensors_dir: str | None = None,
                                dst_safetensors_dir: str | None = None,
                                rank_id: int | None = None, output_format: str = "safetensors",
                                name_map: Mapping[str, str] | None = None,
                                max_process_num: int = 64, return_param_dict: bool = False,
                                ) -> Any:
    """Load shard files (one per rank of the saving run, in rank order) into `network`,
    whatever its strategy or rank count: each parameter is merged by its layout (the
    shard files', else `train_strategy_filename`'s, the saving run's strategy file) and
    loaded whole; a compiled network keeps its slices. `predict_strategy` (from
    `Model.infer_predict_layout`) is checked to be the network's layouts; `name_map` renames
    checkpoint names to the network's. Returns load_param_into_net's (not loaded, not
    used), or with `return_param_dict` the merged Parameters, not loaded."""
    api = "load_distributed_checkpoint"
    if isinstance(checkpoint_filenames, str) or not checkpoint_filenames:
        raise ValueError(f"For '{api}', the 'checkpoint_filenames' should be a non-empty list "
                         f"of shard files in rank order, but got {checkpoint_filenames!r}.")
    if dec_key is not None:
        raise ValueError(f"For '{api}', encrypted checkpoints are not supported by msops, but "
                         f"got a 'dec_key' ({dec_mode}).")
    for arg, value in (("unified_safetensors_dir", unified_safetensors_dir),
                       ("dst_safetensors_dir", dst_safetensors_dir), ("rank_id", rank_id)):
        if value is not None:
            raise ValueError(f"For '{api}', the '{arg}' (the unified-safetensors flow) is not "
                             f"supported by msops: give the 'checkpoint_filenames' (or merge "
                             f"them first with transform_checkpoints), but got {value!r}.")
    resolve_format("", output_format, api)
    validator.check_positive_int(max_process_num, "max_process_num", api)
    validator.check_bool("return_param_dict", return_param_dict, api)
    if name_map is not None and not isinstance(name_map, Mapping):
        raise TypeError(f"For '{api}', the 'name_map' should be a dict of checkpoint name -> "
                        f"network name, but got {type(name_map).__name__}.")
    if predict_strategy is not None:
        _check_predict_strategy(api, network, predict_strategy)
    shards = read_shards(list(checkpoint_filenames), train_strategy_filename, api, format)
    rename = dict(name_map or {})
    merged = {}
    for name, full in merged_parameters(shards):
        to = rename.get(name, name)
        merged[to] = Parameter(Tensor(full), name=to)
    if return_param_dict:
        return merged
    return load_param_into_net(network, merged, strict_load=strict_load)
