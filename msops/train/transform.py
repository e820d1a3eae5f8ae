"""Offline resharding, folder to folder: transform_checkpoints, and the shard reading
(`merged_parameters`) that `msops ckpt merge|reshard|verify` share.

A distributed checkpoint folder holds one subfolder per rank, `rank_0`, `rank_1`, ...,
each with one checkpoint file (MindSpore's layout). A slice's layout comes from its
file (msops' safetensors shards record it) or from the strategy file of the run that
saved it; a parameter neither gives is whole in every file. Each parameter is rebuilt
whole from its slices, then cut by the destination strategy; the destination gets the
same folder layout, `rank_k/<ckpt_prefix><k>.<format>`.
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from msops.common import validator
from msops.common.tensor import contiguous
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import is_split, place_slices
from msops.parallel.strategy_ckpt import layout_from_item, read_strategy_file
from msops.train.ckpt_format import write_ckpt
from msops.train.safetensors_io import CheckpointError, write_tensors
from msops.train.serialization import layout_meta, read_checkpoint_file, resolve_format

__all__ = ["transform_checkpoints", "reshard_folder", "in_threads", "rank_files", "strategy_layouts", "read_shards",
           "file_layout", "merged_parameters", "rank_count", "Shards"]

Progress = Callable[[Iterable, int, str], Iterable]
_RANK_DIR = re.compile(r"^rank_(\d+)$")
_SUFFIXES = (".safetensors", ".ckpt")


def _no_progress(items: Iterable, total: int, desc: str) -> Iterable:
    return items


def rank_files(src_dir: str, api: str = "transform_checkpoints") -> list[str]:
    """The checkpoint file of every `rank_<i>` subfolder of `src_dir`, in rank order;
    a missing rank folder, or one without exactly one checkpoint, is named."""
    if not os.path.isdir(src_dir):
        raise FileNotFoundError(f"For '{api}', the checkpoint folder '{src_dir}' does not "
                                f"exist.")
    ranks = sorted(int(m.group(1)) for m in map(_RANK_DIR.match, os.listdir(src_dir)) if m)
    if not ranks:
        raise ValueError(f"For '{api}', the folder '{src_dir}' should hold rank_0, rank_1, "
                         f"... subfolders (one per rank), but it has none.")
    missing = sorted(set(range(ranks[-1] + 1)) - set(ranks))
    if missing:
        raise FileNotFoundError(f"For '{api}', the checkpoint of rank {missing[0]} is "
                                f"missing: '{os.path.join(src_dir, f'rank_{missing[0]}')}' "
                                f"does not exist (ranks found: {ranks}).")
    files = []
    for r in ranks:
        folder = os.path.join(src_dir, f"rank_{r}")
        found = sorted(f for f in os.listdir(folder) if f.endswith(_SUFFIXES))
        if len(found) != 1:
            raise ValueError(f"For '{api}', the folder '{folder}' should hold one checkpoint "
                             f"file (.safetensors or .ckpt), but got {found}.")
        files.append(os.path.join(folder, found[0]))
    return files


def strategy_layouts(strategy_file: str | None, api: str) -> dict[str, TensorLayout]:
    """Parameter name -> layout of a strategy file ({} without one)."""
    if not strategy_file:
        return {}
    items = read_strategy_file(strategy_file, api)["parallel_layout_item"]
    return {name: layout_from_item(name, item) for name, item in items.items()}


class Shards:
    """The files of a distributed checkpoint and each parameter's layout.

    `layouts[name]` is the layout its slices were saved under, None when every file holding
    it holds it whole; `holders[name]` the indices of the files holding it, in rank order
    (all of them, or a pipeline stage's: then one run of `device_num` files per stage
    holding it, the k-th of each run holding slice k)."""

    def __init__(self, files: list[str], layouts: dict[str, TensorLayout | None],
                 names: list[str], arrays: list[dict[str, np.ndarray]],
                 entries: list[dict], holders: dict[str, list[int]]) -> None:
        self.files, self.layouts, self.names = files, layouts, names
        self.arrays, self.entries, self.holders = arrays, entries, holders

    def first(self, name: str) -> np.ndarray:
        """`name`'s array in the first file holding it."""
        return self.arrays[self.holders[name][0]][name]

    def copies(self, name: str) -> list[tuple[int, np.ndarray]]:
        """(layout rank, array) of every file holding `name` (a whole tensor: rank 0)."""
        layout = self.layouts[name]
        n = layout.device_num if layout is not None else len(self.holders[name])
        return [(k % n if layout is not None else 0, self.arrays[i][name])
                for k, i in enumerate(self.holders[name])]

    def slices(self, name: str) -> np.ndarray:
        """The slices of a split `name`, stacked in layout-rank order."""
        n = self.layouts[name].device_num
        return np.stack([self.arrays[i][name] for i in self.holders[name][:n]])


def read_shards(files: list[str], strategy_file: str | None = None,
                api: str = "transform_checkpoints", format: str | None = None) -> Shards:
    """Read every rank's file (each checksum checked) and settle each parameter's layout:
    the files' own, else the strategy file's, else whole. A pipelined run's files hold
    their stage's parameters only. Files that disagree on a layout or a whole tensor, or
    hold a slice of the wrong shape, or too few of a parameter's slices, are errors naming
    them."""
    from_strategy = strategy_layouts(strategy_file, api)
    arrays, entries = [], []
    for f in files:
        a, e = read_checkpoint_file(f, format, api)
        arrays.append(a)
        entries.append(e)
    names = list(dict.fromkeys(n for a in arrays for n in a))
    holders = {name: [i for i, a in enumerate(arrays) if name in a] for name in names}
    layouts: dict[str, TensorLayout | None] = {}
    for name in names:
        held = holders[name]
        own = [file_layout(entries[i].get(name, {})) for i in held]
        layout = own[0] if own[0] is not None else from_strategy.get(name)
        if any(o != own[0] for o in own):
            raise CheckpointError(f"For '{api}', every rank's file should record the same "
                                  f"layout of '{name}', but they differ.")
        if layout is not None and is_split(layout):
            if len(held) % layout.device_num:
                which = "" if len(held) == len(files) else \
                    f" ({len(held)} of the {len(files)} rank files hold it)"
                raise CheckpointError(f"For '{api}', the layout of '{name}' ({layout}) has "
                                      f"{layout.device_num} ranks, so there should be "
                                      f"{layout.device_num} rank files, but got {len(held)}"
                                      f"{which} (a pipelined run: {layout.device_num} per "
                                      f"stage holding it).")
            for i in held:
                if tuple(arrays[i][name].shape) != layout.slice_shape:
                    raise CheckpointError(f"For '{api}', the slice of '{name}' in "
                                          f"'{files[i]}' should have the shape "
                                          f"{layout.slice_shape} of {layout}, but got "
                                          f"{tuple(arrays[i][name].shape)}.")
        else:
            layout = None
            # no layout: every rank must hold the same whole tensor (equal slices of a
            # split parameter saved without its layout would otherwise pass as whole)
            first = arrays[held[0]][name]
            for i in held[1:]:
                if arrays[i][name].shape != first.shape or \
                        not np.array_equal(arrays[i][name], first, equal_nan=True):
                    raise CheckpointError(
                        f"For '{api}', '{name}' has different shapes or values in the rank "
                        f"files ('{files[held[0]]}' and '{files[i]}') and no layout says how "
                        f"they fit: give the saving run's strategy file.")
        layouts[name] = layout
    return Shards(files, layouts, names, arrays, entries, holders)


def file_layout(entry: Mapping[str, Any]) -> TensorLayout | None:
    if not entry.get("slice"):
        return None
    return layout_from_item("", {"dev_matrix": entry["layout"]["device_matrix"],
                                 "tensor_map": entry["layout"]["tensor_map"],
                                 "tensor_shape": entry["layout"]["tensor_shape"]})


def merged_parameters(shards: Shards, progress: Progress = _no_progress,
                      ) -> Iterable[tuple[str, np.ndarray]]:
    """(name, whole array) of each parameter, one at a time, its slices put in place."""
    for name in progress(shards.names, len(shards.names), "merge"):
        layout = shards.layouts[name]
        if layout is None:
            yield name, shards.first(name)
        else:
            yield name, place_slices(shards.slices(name), layout)


def rank_count(strategy_file: str | None, layouts: Mapping[str, TensorLayout],
               api: str) -> int:
    """The ranks of the run a strategy file describes: its device_num, else its widest
    layout's (1 without a file: a whole checkpoint)."""
    if not strategy_file:
        return 1
    n = read_strategy_file(strategy_file, api).get("device_num")
    return int(n) if n else max((lay.device_num for lay in layouts.values()), default=1)


def _dst_ranks(layouts: Mapping[str, TensorLayout], dst_strategy_file: str | None,
               api: str) -> int:
    n = rank_count(dst_strategy_file, layouts, api)
    counts = {lay.device_num for lay in layouts.values()}
    if counts - {n}:
        raise ValueError(f"For '{api}', every layout of '{dst_strategy_file}' "
                         f"should span its device_num {n} ranks, but got {sorted(counts)}.")
    return n


def transform_checkpoints(src_checkpoints_dir: str, dst_checkpoints_dir: str,
                          ckpt_prefix: str, src_strategy_file: str | None = None,
                          dst_strategy_file: str | None = None, process_num: int = 1,
                          output_format: str = "safetensors",
                          progress: Progress = _no_progress) -> None:
    """Reshard a distributed checkpoint offline: `src/rank_<i>/` (saved under
    `src_strategy_file`, or carrying their layouts; None: whole) to
    `dst/rank_<k>/<ckpt_prefix><k>.<output_format>` under `dst_strategy_file` (None: one
    whole checkpoint in rank_0). A safetensors destination records each slice's layout
    too, so `load_distributed_checkpoint` and `msops ckpt` read it without the strategy.
    `process_num` destination files are written at once (threads)."""
    reshard_folder("transform_checkpoints", src_checkpoints_dir, dst_checkpoints_dir,
                   ckpt_prefix, src_strategy_file, dst_strategy_file, process_num,
                   output_format, progress)


def reshard_folder(api: str, src_checkpoints_dir: str, dst_checkpoints_dir: str,
                   ckpt_prefix: str, src_strategy_file: str | None,
                   dst_strategy_file: str | None, process_num: int, output_format: str,
                   progress: Progress = _no_progress) -> None:
    """transform_checkpoints' work, its errors naming `api` (it has two MindSpore names)."""
    validator.check_positive_int(process_num, "process_num", api)
    if not isinstance(ckpt_prefix, str):
        raise TypeError(f"For '{api}', the 'ckpt_prefix' should be a str, but got "
                        f"{type(ckpt_prefix).__name__}.")
    output_format = resolve_format("", output_format, api)
    shards = read_shards(rank_files(src_checkpoints_dir, api), src_strategy_file, api)
    dst_layouts = strategy_layouts(dst_strategy_file, api)
    unknown = sorted(set(dst_layouts) - set(shards.names))
    if unknown:
        raise ValueError(f"For '{api}', the destination strategy '{dst_strategy_file}' lays "
                         f"out {unknown}, which the source checkpoint should hold, but it "
                         f"holds only {shards.names}.")
    n = _dst_ranks(dst_layouts, dst_strategy_file, api)
    out: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
    extra: list[dict[str, dict]] = [{} for _ in range(n)]
    for name, full in merged_parameters(shards, progress):
        layout = dst_layouts.get(name)
        if layout is not None and tuple(full.shape) != layout.tensor_shape:
            raise ValueError(f"For '{api}', the parameter '{name}' should have the shape "
                             f"{layout.tensor_shape} of the destination strategy, but got "
                             f"{tuple(full.shape)} in the source checkpoint.")
        split = layout is not None and is_split(layout)
        for r in range(n):
            out[r][name] = contiguous(full[layout.slice_of(r)]) if split else full
            extra[r][name] = layout_meta(layout, slice_saved=split)
    def write(r: int) -> None:
        folder = os.path.join(dst_checkpoints_dir, f"rank_{r}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{ckpt_prefix}{r}.{output_format}")
        if output_format == "ckpt":
            write_ckpt(path, out[r])
        else:
            write_tensors(path, out[r], extra[r])
    in_threads(write, range(n), process_num)


def in_threads(work: Callable[[Any], None], items: Iterable, workers: int) -> None:
    """`work(item)` for every item, `workers` at a time on threads (file writes and numpy
    copies release the GIL); the first error is raised once all have finished."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            work(item)
        return
    with ThreadPoolExecutor(max_workers=min(workers, len(items)),
                            thread_name_prefix="msops-ckpt") as pool:
        for future in [pool.submit(work, item) for item in items]:
            future.result()
