"""save_checkpoint, load_checkpoint, load_param_into_net (MindSpore's train.serialization).

An integrated save gathers every split parameter with `AllGatherCell` (each rank's slice,
stacked on a new dim 0) and puts each block back where its layout says; rank 0 writes
the file while the others wait for its verdict, so a failed write raises on every rank.
With `integrated_save=False` each rank writes its own slices and their layouts.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping

import numpy as np

from msops.common.tensor import Parameter, Tensor
from msops.communication import get_group_size, get_rank, is_initialized
from msops.nn.cell import Cell
from msops.parallel._cell_wrapper import destroy_allgather_cell, get_allgather_cell
from msops.parallel.context import is_parallel, parallel_device_num
from msops.parallel.layout import TensorLayout
from msops.parallel.param_layout import home_stage, on_other_stage, without_opt_shard
from msops.parallel.slices import is_split, local_slice, place_slices
from msops.parallel.stages import layout_rank, stage_num, stage_of_rank
from msops.primitives.comm_ops import Broadcast, Receive, Send
from msops.train.ckpt_format import read_ckpt, write_ckpt
from msops.train.safetensors_io import CheckpointError, read_tensors, write_tensors

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net", "CheckpointError"]


def _world() -> tuple[int, int]:
    """(rank, ranks) of a parallel run; (0, 1) stand-alone: the caller alone saves."""
    if is_parallel() and is_initialized():
        return get_rank(), get_group_size()
    return 0, 1


_FORMATS = ("safetensors", "ckpt")


def resolve_format(path: str, format: str | None, api: str) -> str:
    """The file format: `format` when given, else by suffix (`.ckpt` is MindSpore's
    protobuf file, anything else safetensors)."""
    if format is None:
        return "ckpt" if str(path).endswith(".ckpt") else "safetensors"
    if format not in _FORMATS:
        raise ValueError(f"For '{api}', the 'format' should be one of {list(_FORMATS)}, "
                         f"but got {format!r}.")
    return format


def _writer(format: str, crc_check: bool) -> Callable[[str, dict, dict], None]:
    """write(path, tensors, extra) of a format; a .ckpt keeps no layouts (MindSpore's
    strategy files hold them), so an extra entry other than a whole tensor's is refused."""
    if format == "safetensors":
        return write_tensors

    def write(path: str, tensors: dict, extra: dict) -> None:
        sliced = [n for n, e in extra.items() if e.get("slice")]
        if sliced:
            raise ValueError(f"For 'save_checkpoint', format 'ckpt' cannot record the layout "
                             f"of the slices {sliced} (integrated_save=False): use format "
                             f"'safetensors', or save integrated.")
        write_ckpt(path, tensors, crc_check=crc_check)
    return write


def read_checkpoint_file(path: str, format: str | None = None,
                         api: str = "load_checkpoint") -> tuple[dict[str, np.ndarray], dict]:
    """(name -> array, name -> msops metadata entry) of a .safetensors or .ckpt file."""
    format = resolve_format(path, format, api)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"For '{api}', the checkpoint file '{path}' does not exist.")
    if format == "ckpt":
        return read_ckpt(path, api), {}
    return read_tensors(path, api)


def _array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.asnumpy()
    if isinstance(value, (np.ndarray, int, float, bool, np.generic)):
        return np.asarray(value)
    raise TypeError(f"For 'save_checkpoint', the value of '{name}' should be a Tensor, a "
                    f"Parameter or a numpy array, but got {type(value).__name__}.")


def _entries(save_obj: Any) -> tuple[dict[str, np.ndarray], dict[str, TensorLayout],
                                    dict[str, str]]:
    """(name -> data, name -> layout of split parameters, name -> opt-shard group) of what
    to save. A Parameter holding a slice is saved by the layout it holds (its data may be
    whole again after a later serial compile: then by its recorded layout, cut here)."""
    if isinstance(save_obj, Cell):
        entries = save_obj.parameter_layout_dict
        layouts = {n: pl.layout for n, pl in entries.items()}
        groups = {n: pl.opt_shard_group for n, pl in entries.items() if pl.opt_shard_group}
        params = list(save_obj.get_parameters())
        for p in params:
            if p._layout is not None and p._layout != layouts.get(p.name):
                layouts[p.name] = p._layout          # held otherwise than last recorded
                groups.pop(p.name, None)
            elif p._layout is None:                  # whole: its group no longer applies
                groups.pop(p.name, None)
        return {p.name: p.asnumpy() for p in params}, layouts, groups
    if isinstance(save_obj, Mapping):
        return {str(k): _array(v, str(k)) for k, v in save_obj.items()}, {}, {}
    if isinstance(save_obj, (list, tuple)):
        out = {}
        for i, item in enumerate(save_obj):
            if not (isinstance(item, Mapping) and {"name", "data"} <= set(item)):
                raise TypeError(f"For 'save_checkpoint', the 'save_obj[{i}]' should be a dict "
                                f"with 'name' and 'data', but got {item!r:.80}.")
            out[str(item["name"])] = _array(item["data"], str(item["name"]))
        return out, {}, {}
    raise TypeError(f"For 'save_checkpoint', the 'save_obj' should be a Cell, a dict of "
                    f"name -> Tensor or a list of {{'name', 'data'}} dicts, but got "
                    f"{type(save_obj).__name__}.")


def layout_meta(layout: TensorLayout | None, slice_saved: bool,
                opt_shard_group: str = "") -> dict:
    """The metadata entry of a tensor saved under `layout` (`slice_saved`: only this rank's
    slice is in the file; `opt_shard_group`: the parallel optimizer's group, whose ranks'
    dim-0 blocks the layout already places), read back by load_checkpoint and the shard
    readers."""
    if layout is None:
        return {}
    meta = {"layout": {"device_matrix": list(layout.device_matrix),
                       "tensor_map": [list(m) if isinstance(m, tuple) else m
                                      for m in layout.tensor_map],
                       "tensor_shape": list(layout.tensor_shape)},
            "slice": slice_saved}
    if opt_shard_group:
        meta["layout"]["opt_shard_group"] = opt_shard_group
    return meta


def _gathered(data: np.ndarray, layout: TensorLayout, rank: int,
              opt_group: str = "") -> np.ndarray:
    """The whole parameter from every rank's slice (every rank calls it, in the same order).

    An optimizer-sharded one (MindSpore's way): its shard group's AllGather rebuilds the
    model-parallel slice (`AllGatherCell(group)`, the whole when nothing else splits it),
    a `SaveOptShardCkptCell` gathers those over the world too."""
    local = local_slice(data, layout, rank)
    if opt_group:
        mp = without_opt_shard(layout, get_group_size(opt_group))
        if not is_split(mp):
            return get_allgather_cell(opt_group)(Tensor(local)).asnumpy()
        blocks = get_allgather_cell(opt_group, need_merge_twice=True)(Tensor(local)).asnumpy()
        blocks = blocks.reshape((-1,) + tuple(mp.slice_shape))
        return place_slices(blocks[:mp.device_num], mp)
    blocks = get_allgather_cell(None)(Tensor(local[None])).asnumpy()
    return place_slices(blocks[:layout.device_num], layout)


def _write_on_root(path: str, tensors: dict, extra: dict, rank: int, size: int,
                   write: Callable[[str, dict, dict], None]) -> None:
    """Rank 0 writes; every rank learns whether it succeeded (a Broadcast is the barrier)."""
    failure: BaseException | None = None
    if rank == 0:
        try:
            write(path, tensors, extra)
        except BaseException as err:     # reported to the others, then re-raised
            failure = err
    if size > 1:
        status = Broadcast(0)((Tensor(np.array([failure is not None], np.int32)),))[0]
        if rank != 0 and status.asnumpy()[0]:
            raise RuntimeError(f"For 'save_checkpoint', rank 0 failed to write '{path}' "
                               f"(see rank 0's error).")
    if failure is not None:
        raise failure


def _from_stages(tensors: dict[str, np.ndarray], params: Mapping[str, Parameter],
                 homes: Mapping[str, int], rank: int) -> dict[str, np.ndarray]:
    """Rank 0's tensors in `params`' order: each Parameter whose first holding stage is
    another is sent whole by that stage's first rank (one message each, in one order on
    every rank, so the stages' sends queue behind one another without crossing)."""
    n = parallel_device_num()
    out = {}
    for name, p in params.items():
        home = homes[name]
        if home == 0:
            if name in tensors:
                out[name] = tensors[name]
        elif rank == 0:
            out[name] = Receive(0, home * n, tuple(p._full_shape), p.dtype)().asnumpy()
        elif rank == home * n:
            Send(0, 0)(Tensor(tensors[name]))
    out.update((k, v) for k, v in tensors.items() if k not in params)
    return out


def save_checkpoint(save_obj: Any, ckpt_file_name: str, integrated_save: bool = True,
                    append_dict: Mapping[str, Any] | None = None,
                    choice_func: Callable[[str], bool] | None = None,
                    format: str | None = None, crc_check: bool = False) -> None:
    """Save a Cell's parameters (or a dict / list of {'name', 'data'}) to `ckpt_file_name`.

    In a parallel run (a parallel_mode other than stand_alone) every rank calls it:
    `integrated_save=True` gathers each split parameter and rank 0 writes the whole
    network while the others wait; `False` makes each rank write its own slices (give
    every rank its own file name). Stand-alone, the caller writes. `choice_func(name)` keeps a
    parameter when true; `append_dict` adds entries (saved whole). `format` "safetensors"
    or "ckpt" (MindSpore's protobuf file; with `crc_check`, its crc32 trailer); None: by
    the file's suffix. With pipeline stages, an integrated save gathers each Parameter on
    the first stage holding it and sends it to rank 0; `integrated_save=False` writes the
    rank's own stage's Parameters (its slices)."""
    write = _writer(resolve_format(ckpt_file_name, format, "save_checkpoint"), crc_check)
    data, layouts, groups = _entries(save_obj)
    if choice_func is not None:
        data = {n: v for n, v in data.items() if choice_func(n)}
    rank, size = _world()
    position = layout_rank() if size > 1 else rank    # the rank a layout slices for
    homes: dict[str, int] = {}                 # a pipelined Parameter -> its saving stage
    if stage_num() > 1 and isinstance(save_obj, Cell):
        params = {p.name: p for p in save_obj.get_parameters() if p.name in data}
        if integrated_save:
            homes = {n: home_stage(p) for n, p in params.items()}
        else:
            data = {n: v for n, v in data.items()
                    if n not in params or not on_other_stage(params[n])}
    me = stage_of_rank() if homes else 0
    tensors, extra = {}, {}
    for name, arr in data.items():
        if homes.get(name, me) != me:         # another stage gathers it
            continue
        layout = layouts.get(name)
        if layout is None or not is_split(layout):
            tensors[name] = arr
        elif integrated_save:
            tensors[name] = _gathered(arr, layout, position, groups.get(name, "")) \
                if size > 1 else arr
        else:
            tensors[name] = local_slice(arr, layout, position)
        split = layout is not None and is_split(layout)
        extra[name] = layout_meta(layout, slice_saved=split and not integrated_save,
                                  opt_shard_group=groups.get(name, "") if split else "")
    if homes:
        tensors = _from_stages(tensors, params, homes, rank)
    destroy_allgather_cell()
    for name, value in (append_dict or {}).items():
        tensors[str(name)] = _array(value, str(name))
    if integrated_save:
        _write_on_root(ckpt_file_name, tensors, extra, rank, size, write)
    else:
        write(ckpt_file_name, tensors, extra)


def load_checkpoint(ckpt_file_name: str, net: Cell | None = None, strict_load: bool = False,
                    choice_func: Callable[[str], bool] | None = None,
                    format: str | None = None) -> dict[str, Parameter]:
    """name -> Parameter of a checkpoint file, every checksum verified (and loaded into
    `net` when given). A slice saved with `integrated_save=False` carries `.layout`.
    `format` "safetensors" (msops' or MindSpore's) or "ckpt" (MindSpore's protobuf
    file); None: by the file's suffix. Loading no parameter is a ValueError, as in
    MindSpore."""
    out = checkpoint_parameters(ckpt_file_name, choice_func, format)
    if not out:                                  # as MindSpore: loading nothing is an error
        raise ValueError(f"For 'load_checkpoint', no parameter was loaded from "
                         f"'{ckpt_file_name}': {_why_none(ckpt_file_name, format)}.")
    if net is not None:
        load_param_into_net(net, out, strict_load=strict_load)
    return out


def _why_none(path: str, format: str | None) -> str:
    n = len(read_checkpoint_file(path, format)[0])
    return f"choice_func kept none of its {n}" if n else "it holds none"


def checkpoint_parameters(ckpt_file_name: str, choice_func: Callable[[str], bool] | None = None,
                          format: str | None = None, api: str = "load_checkpoint",
                          ) -> dict[str, Parameter]:
    """name -> Parameter of the entries of a checkpoint file `choice_func` keeps (maybe
    none), every checksum verified; a slice saved with its layout carries `.layout`."""
    arrays, entries = read_checkpoint_file(ckpt_file_name, format, api)
    out = {}
    for name, arr in arrays.items():
        if choice_func is not None and not choice_func(name):
            continue
        param = Parameter._adopt(arr, name)          # the array was just read: no copy
        meta = entries.get(name, {})
        if meta.get("slice"):
            lay = meta["layout"]
            param.layout = TensorLayout(tuple(lay["device_matrix"]),
                                        tuple(tuple(m) if isinstance(m, list) else m
                                              for m in lay["tensor_map"]),
                                        tuple(lay["tensor_shape"]))
        out[name] = param
    return out


def load_param_into_net(net: Cell, parameter_dict: Mapping[str, Any],
                        strict_load: bool = False) -> tuple[list[str], list[str]]:
    """Set each parameter of `net` found by name in `parameter_dict`; returns
    (net parameters not loaded, checkpoint entries not used), as MindSpore 2.x.

    A Parameter holding its slice after a parallel compile takes this rank's slice of a
    whole value (or a slice saved under its very layout). A shape or dtype that does not
    fit is a ValueError naming the parameter."""
    if not isinstance(net, Cell):
        raise TypeError(f"For 'load_param_into_net', the 'net' should be a Cell, but got "
                        f"{type(net).__name__}.")
    if not isinstance(parameter_dict, Mapping):
        raise TypeError(f"For 'load_param_into_net', the 'parameter_dict' should be a dict, "
                        f"but got {type(parameter_dict).__name__}.")
    not_loaded, used = [], set()
    for param in net.get_parameters():
        value = parameter_dict.get(param.name)
        if value is None:
            not_loaded.append(param.name)
            continue
        new = value if isinstance(value, Tensor) else Tensor(np.asarray(value))
        # a slice's layout: a loaded shard's `.layout`, a sharded net's Parameter's `_layout`
        new_layout = getattr(new, "layout", None) or getattr(new, "_layout", None)
        full = tuple(param._full_shape)
        whole = tuple(new.shape) == full and \
            (new_layout is None or tuple(new_layout.slice_shape) == full)
        own_slice = param._layout is not None and new_layout == param._layout
        if not (whole or own_slice):
            hint = f" (a slice of {new_layout}, saved with integrated_save=False)" \
                if new_layout is not None else ""
            raise ValueError(f"For 'load_param_into_net', the shape of parameter "
                             f"'{param.name}' should be {full}, but got "
                             f"{tuple(new.shape)} in the checkpoint{hint}.")
        if new.dtype != param.dtype:
            raise ValueError(f"For 'load_param_into_net', the dtype of parameter "
                             f"'{param.name}' should be {param.dtype}, but got {new.dtype} "
                             f"in the checkpoint.")
        param.set_data(new.asnumpy())               # set_data copies (the Parameter owns it)
        used.add(param.name)
    if strict_load and not_loaded:
        raise ValueError(f"For 'load_param_into_net', with strict_load=True every parameter "
                         f"should be in the checkpoint, but got none for {not_loaded}.")
    return not_loaded, [n for n in parameter_dict if n not in used]
