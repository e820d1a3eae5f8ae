"""Chosen strategies and parameter layouts of a compiled network, and strategy files.

The partition pass records the strategy it used for every primitive (the user's, or the
data-parallel default it chose) and the layout of every parameter. `get_strategies(net)`
reads them back by the op's place in the network: the dotted attribute path of the
primitive (`"dense.matmul"`, like parameter names). Strategy files use these paths too: a
path names the same op in a fresh network before it is traced, and under a wrapper
(`network._backbone.` is matched as a prefix), so a file saved from a training step
applies to the bare network.
A strategy file is JSON in the shape and spelling of MindSpore's (strategy_ckpt_save_file):

    {"current_stage": 0, "device_num": 4,
     "parallel_strategy_item": {"dense.matmul": {"op": "MatMul", "stage": 0,
                                                 "parallel_strategy": [[2, 1], [1, 2]]}},
     "parallel_layout_item": {"dense.weight": {"dev_matrix": [2, 2], "tensor_map": [0, -1],
                                              "slice_shape": [4, 8], "tensor_shape": [8, 8],
                                              "field_size": 0, "uniform_split": true,
                                              "opt_shard_group": ""}}}

Under the parallel optimizer a parameter's item is its stored shard's layout (dim 0 split
over the replica axes too) and names the real `opt_shard_group`.

With `strategy_ckpt_load_file` set, every op named in the file takes the file's strategy
before the partition pass (the file wins over a `shard()` in code, as in MindSpore); an
op the network lacks, another device number, or a parameter laid out otherwise after
compile is a ValueError naming it. This module knows networks only by duck typing
(`cells_and_names()`), so it stays below `nn`.
"""
from __future__ import annotations

import json
import os
import weakref
from typing import Any, Iterator, Mapping

from msops.parallel import context as pctx
from msops.parallel.layout import TensorLayout
from msops.parallel.param_layout import ParameterLayout, layouts_of, parameter_layout
from msops.parallel.stages import stage_of_rank
from msops.primitives.primitive import Primitive

__all__ = ["record_strategy", "record_stage", "get_strategies", "strategy_file_dict",
           "save_strategy_file",
           "read_strategy_file", "layout_from_item", "build_searched_strategy",
           "merge_pipeline_strategys", "set_op_strategy_config",
           "apply_strategy_file", "after_compile"]

_chosen: "weakref.WeakKeyDictionary[Primitive, tuple]" = weakref.WeakKeyDictionary()


def record_strategy(prim: Primitive, strategy: tuple) -> None:
    """Remember the strategy the partition pass used for `prim`."""
    _chosen[prim] = tuple(tuple(int(v) for v in s) for s in strategy)


# Primitive -> the pipeline stage its op ran on in the latest pipelined compile
_stage: "weakref.WeakKeyDictionary[Primitive, int]" = weakref.WeakKeyDictionary()


def record_stage(prim: Primitive, stage: int) -> None:
    """Remember the pipeline stage of `prim`'s op (a strategy file's "stage")."""
    _stage[prim] = stage


def _named_primitives(net: Any) -> Iterator[tuple[str, Primitive]]:
    """(dotted attribute path, primitive) of every primitive attribute of `net`'s cells."""
    seen: set[int] = set()
    for cell_name, cell in net.cells_and_names():
        for attr, value in vars(cell).items():
            if isinstance(value, Primitive) and id(value) not in seen:
                seen.add(id(value))
                yield (f"{cell_name}.{attr}" if cell_name else attr), value


def get_strategies(net: Any) -> dict[str, tuple]:
    """Op path -> the strategy the latest compile used for it (the user's or the
    data-parallel default), for each primitive of `net` a partitioned graph ran."""
    return {name: _chosen[p] for name, p in _named_primitives(net) if p in _chosen}


def _layout_item(lay: TensorLayout, opt_shard_group: str = "") -> dict:
    """A parallel_layout_item entry; under the parallel optimizer `lay` is the stored
    shard's layout (its dim 0 also split over `opt_shard_group`, the group named)."""
    return {"dev_matrix": list(lay.device_matrix),
            "tensor_map": [list(m) if isinstance(m, tuple) else m for m in lay.tensor_map],
            "slice_shape": list(lay.slice_shape), "tensor_shape": list(lay.tensor_shape),
            "field_size": 0, "uniform_split": True, "opt_shard_group": opt_shard_group}


def layout_from_item(name: str, item: Mapping[str, Any]) -> TensorLayout:
    """A TensorLayout from a parallel_layout_item entry (tensor_shape, else the full shape
    from slice_shape and the splits, as MindSpore's files give it)."""
    dm = tuple(item["dev_matrix"])
    tmap = tuple(tuple(m) if isinstance(m, list) else m for m in item["tensor_map"])
    shape = item.get("tensor_shape")
    if shape is None:
        probe = TensorLayout(dm, tmap, tuple(item["slice_shape"]))
        shape = [s * probe.dim_parts(d) for d, s in enumerate(item["slice_shape"])]
    return TensorLayout(dm, tmap, tuple(shape))


def build_searched_strategy(strategy_filename: str) -> dict[str, ParameterLayout]:
    """Parameter name -> layout of a strategy file, as `parameter_layout_dict` gives them
    (what `merge_sliced_parameter` takes to put a parameter's slices together)."""
    api = "build_searched_strategy"
    if not isinstance(strategy_filename, str):
        raise TypeError(f"For '{api}', the 'strategy_filename' should be a str, but got "
                        f"{type(strategy_filename).__name__}.")
    items = read_strategy_file(strategy_filename, api)["parallel_layout_item"]
    return {name: parameter_layout(layout_from_item(name, item),
                                   item.get("opt_shard_group", ""))
            for name, item in items.items()}


def strategy_file_dict(net: Any, device_num: int) -> dict:
    """The strategy-file content of `net` after its latest compile."""
    ops = {name: {"op": p.name, "stage": _stage.get(p, 0),
                  "parallel_strategy": [list(s) for s in _chosen[p]]}
           for name, p in _named_primitives(net) if p in _chosen}
    layouts = {name: _layout_item(pl.layout, pl.opt_shard_group)
               for name, pl in layouts_of(net.get_parameters()).items()}
    return {"current_stage": stage_of_rank(), "device_num": device_num,
            "parallel_strategy_item": ops, "parallel_layout_item": layouts}


def save_strategy_file(path: str, content: Mapping[str, Any]) -> None:
    """Write a strategy file (JSON). Every rank may write the same path at once: each
    writes its own temporary file and renames it over `path` (atomic, same content)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(content, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_strategy_file(path: str, api: str = "strategy_ckpt_load_file") -> dict:
    """A strategy file's content, checked for its two item tables."""
    try:
        with open(path) as f:
            content = json.load(f)
    except OSError as err:
        raise FileNotFoundError(f"For '{api}', the strategy file '{path}' cannot be read: "
                                f"{err.strerror}.") from None
    except ValueError as err:
        raise ValueError(f"For '{api}', the strategy file '{path}' should be JSON, but it "
                         f"does not parse: {err}.") from None
    if not isinstance(content, dict) or not isinstance(content.get("parallel_layout_item"),
                                                       dict) \
            or not isinstance(content.get("parallel_strategy_item", {}), dict):
        raise ValueError(f"For '{api}', the strategy file '{path}' should hold "
                         f"'parallel_strategy_item' and 'parallel_layout_item' tables, but "
                         f"got keys {sorted(content) if isinstance(content, dict) else content}.")
    return content


def merge_pipeline_strategys(src_strategy_dirs: str, dst_strategy_file: str) -> None:
    """One strategy file from the files in `src_strategy_dirs` (MindSpore's spelling): the
    union of their op and parameter items. A pipelined run's ranks each save one (msops's
    hold the whole network already, every stage's ops and parameters); the files must agree
    on the device number and on every item two of them hold."""
    api = "merge_pipeline_strategys"
    if not isinstance(src_strategy_dirs, str) or not os.path.isdir(src_strategy_dirs):
        raise ValueError(f"For '{api}', the 'src_strategy_dirs' should be a folder of strategy "
                         f"files, but got {src_strategy_dirs!r}.")
    files = sorted(f for f in os.listdir(src_strategy_dirs)
                   if os.path.isfile(os.path.join(src_strategy_dirs, f)))
    if not files:
        raise ValueError(f"For '{api}', the folder '{src_strategy_dirs}' should hold strategy "
                         f"files, but it holds none.")
    merged: dict[str, Any] = {"current_stage": 0, "parallel_strategy_item": {},
                              "parallel_layout_item": {}}
    seen: dict[tuple, str] = {}                 # (table, name) -> the file it came from
    for f in files:
        path = os.path.join(src_strategy_dirs, f)
        content = read_strategy_file(path, api)
        n = content.get("device_num")
        if merged.setdefault("device_num", n) != n:
            raise ValueError(f"For '{api}', every strategy file should have one device_num, "
                             f"but '{path}' has {n} and an earlier file "
                             f"{merged['device_num']}.")
        for table in ("parallel_strategy_item", "parallel_layout_item"):
            for name, item in content.get(table, {}).items():
                if name in merged[table] and merged[table][name] != item:
                    raise ValueError(f"For '{api}', the '{name}' of '{path}' should equal "
                                     f"the one of '{seen[(table, name)]}', but they differ.")
                merged[table][name] = item
                seen.setdefault((table, name), path)
    save_strategy_file(dst_strategy_file, merged)


def _match(key: str, names: list[str]) -> str | None:
    """The network op for a file key: the same path, else the one path that equals it
    after a wrapper's prefix (`network._backbone.dense.matmul` ~ `dense.matmul`)."""
    if key in names:
        return key
    hits = [n for n in names if n.endswith("." + key) or key.endswith("." + n)]
    return hits[0] if len(hits) == 1 else None


def _op_config(mode: str) -> str:
    """The file set_op_strategy_config gave for `mode`, when the context is one it acts in
    (auto_parallel with sharding propagation, as MindSpore's), else ""."""
    config = pctx.internal("ops_strategy_json_config")
    if config is None or config[0] != mode:
        return ""
    if pctx.get_auto_parallel_context("parallel_mode") != pctx.ParallelMode.AUTO_PARALLEL or \
            pctx.get_auto_parallel_context("search_mode") != "sharding_propagation":
        return ""
    return config[1]


def set_op_strategy_config(mode: str = "SAVE", path: str = "") -> None:
    """Save (`mode="SAVE"`) every op's strategy after each compile to the JSON file `path`
    (an absolute path ending in .json), or load them (`"LOAD"`) into the ops before the
    search, as fixed strategies. It acts when parallel_mode is "auto_parallel" with
    search_mode "sharding_propagation" (MindSpore's condition); the file is a strategy
    file holding op strategies only (`parallel_strategy_item`)."""
    api = "set_op_strategy_config"
    if not isinstance(path, str) or not os.path.isabs(path):
        raise KeyError(f"For '{api}', the 'path' should be an absolute path, but got "
                       f"{path!r}.")
    if os.path.splitext(path)[1] != ".json":
        raise KeyError(f"For '{api}', the 'path' should end with '.json', but got '{path}'.")
    if mode not in ("SAVE", "LOAD"):
        raise KeyError(f"For '{api}', the 'mode' should be 'SAVE' or 'LOAD', but got "
                       f"{mode!r}.")
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    pctx.set_internal("ops_strategy_json_config", (mode, path))


def apply_strategy_file(net: Any) -> None:
    """With strategy_ckpt_load_file set, give `net`'s ops the file's strategies; likewise
    with set_op_strategy_config("LOAD", path)."""
    if not hasattr(net, "cells_and_names"):
        return
    for api, path in (("strategy_ckpt_load_file",
                       pctx.get_auto_parallel_context("strategy_ckpt_load_file")),
                      ("set_op_strategy_config", _op_config("LOAD"))):
        if path:
            _apply_ops(net, path, api)


def _apply_ops(net: Any, path: str, api: str) -> None:
    """Give `net`'s ops the strategies of the strategy file `path`."""
    content = read_strategy_file(path, api)
    want = content.get("device_num")
    have = pctx.parallel_device_num()
    if want is not None and want != have:
        raise ValueError(f"For '{api}', the strategy file '{path}' was saved for device_num "
                         f"{want}, which should equal this run's {have}, but it does not.")
    prims = dict(_named_primitives(net))
    for key, item in content.get("parallel_strategy_item", {}).items():
        name = _match(key, list(prims))
        if name is None:
            raise ValueError(f"For '{api}', the strategy file '{path}' names the op '{key}', "
                             f"which the network should have, but it has only "
                             f"{sorted(prims)}.")
        prim = prims[name]
        if item.get("op", prim.name) != prim.name:
            raise ValueError(f"For '{api}', the op '{key}' in '{path}' should be a "
                             f"{prim.name} (the network's '{name}'), but got {item['op']}.")
        try:
            prim.shard(tuple(tuple(s) for s in item["parallel_strategy"]), prim.out_strategy)
        except (TypeError, ValueError) as err:
            raise ValueError(f"For '{api}', the strategy of '{key}' in '{path}' does not fit "
                             f"the network's {prim.name}: {err}") from None


def after_compile(net: Any) -> None:
    """After a partition: check the parameter layouts against a loaded strategy file and
    write strategy_ckpt_save_file when set."""
    if not hasattr(net, "cells_and_names"):
        return
    load = pctx.get_auto_parallel_context("strategy_ckpt_load_file")
    if load:
        items = read_strategy_file(load)["parallel_layout_item"]
        for name, pl in layouts_of(net.get_parameters()).items():
            key = _match(name, list(items))
            if key is not None and layout_from_item(key, items[key]) != pl.layout:
                raise ValueError(f"For 'strategy_ckpt_load_file', the layout of parameter "
                                 f"'{name}' should be the file's {items[key]} ('{load}'), but "
                                 f"the compiled network has {_layout_item(pl.layout)}.")
    save = pctx.get_auto_parallel_context("strategy_ckpt_save_file")
    if save:
        save_strategy_file(save, strategy_file_dict(net, pctx.parallel_device_num()))
    ops_file = _op_config("SAVE")
    if ops_file:
        content = strategy_file_dict(net, pctx.parallel_device_num())
        content["parallel_layout_item"] = {}
        save_strategy_file(ops_file, content)
