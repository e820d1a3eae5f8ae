"""Resharding one destination rank at a time (MindSpore's rank_list_for_transform and
transform_checkpoint_by_rank): on a large job each new rank reads only the source files
that hold a piece of its slices, and builds its slice from the overlaps of theirs; no
whole tensor is built.

A source rank r holds slice `r mod device_num` of a parameter's layout (rank r of its
pipeline stage: MindSpore's numbering), so per-stage files work as they are.
"""
from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from msops.parallel.layout import TensorLayout
from msops.parallel.slices import is_split
from msops.train.ckpt_format import write_ckpt
from msops.train.safetensors_io import CheckpointError, write_tensors
from msops.train.serialization import layout_meta, read_checkpoint_file, resolve_format
from msops.train.transform import file_layout, rank_count, strategy_layouts

__all__ = ["rank_list_for_transform", "transform_checkpoint_by_rank", "needed_ranks",
           "reshard_rank", "rank_tensors"]

Region = tuple[slice, ...]
#: what lacks a needed source rank, as each caller's error says it
_LACKS = {"transform_checkpoint_by_rank": "'checkpoint_files_map' lacks "
                                          "(rank_list_for_transform names the ranks needed)",
          "convert_checkpoint_by_rank": "'checkpoint_files_map' lacks "
                                        "(rank_list_for_convert names the ranks needed)",
          "unified_safetensors": "'src_dir' lacks (rank_<i> folders)"}


def _region(layout: TensorLayout | None, rank: int, shape: tuple) -> Region:
    """The part of the full tensor `rank` holds (all of it when whole)."""
    if layout is None or not is_split(layout):
        return tuple(slice(0, n) for n in shape)
    return layout.slice_of(rank % layout.device_num)


def _overlap(a: Region, b: Region) -> Region | None:
    out = tuple(slice(max(x.start, y.start), min(x.stop, y.stop)) for x, y in zip(a, b))
    return None if any(s.start >= s.stop for s in out) else out


def _within(part: Region, outer: Region) -> Region:
    """`part` (full-tensor coordinates) as an index into the block `outer`."""
    return tuple(slice(p.start - o.start, p.stop - o.start) for p, o in zip(part, outer))


def _source_layout(api: str, path: str, name: str, arr: np.ndarray,
                   layout: TensorLayout | None) -> TensorLayout | None:
    """The layout `arr` was saved under: None when it is whole (a strategy file's layout
    does not apply to a tensor saved whole)."""
    if layout is None or not is_split(layout) or tuple(arr.shape) == tuple(layout.tensor_shape):
        return None
    if tuple(arr.shape) != tuple(layout.slice_shape):
        raise CheckpointError(f"For '{api}', the slice of '{name}' in '{path}' should have the "
                              f"shape {layout.slice_shape} of {layout}, but got "
                              f"{tuple(arr.shape)}.")
    return layout


def _check_rank(api: str, rank_id: object, ranks: int) -> int:
    if not isinstance(rank_id, int) or isinstance(rank_id, bool):
        raise TypeError(f"For '{api}', the 'rank_id' should be an int, but got "
                        f"{type(rank_id).__name__}.")
    if not 0 <= rank_id < ranks:
        raise ValueError(f"For '{api}', the 'rank_id' should be in [0, {ranks}) (the ranks of "
                         f"the destination strategy), but got {rank_id}.")
    return rank_id


def rank_list_for_transform(rank_id: int, src_strategy_file: str | None = None,
                            dst_strategy_file: str | None = None) -> list[int]:
    """The source ranks whose checkpoints together hold every piece of destination rank
    `rank_id`'s slices (`dst_strategy_file` None: the whole network; `src_strategy_file`
    None: an unsplit source, rank 0's file). Of ranks holding the same slice (replicas),
    one already needed is reused, else the lowest."""
    return needed_ranks("rank_list_for_transform", rank_id, src_strategy_file,
                        dst_strategy_file)


def needed_ranks(api: str, rank_id: int, src_strategy_file: str | None,
                 dst_strategy_file: str | None) -> list[int]:
    """rank_list_for_transform's work, its errors naming `api`."""
    src = strategy_layouts(src_strategy_file, api)
    dst = strategy_layouts(dst_strategy_file, api)
    rank_id = _check_rank(api, rank_id, rank_count(dst_strategy_file, dst, api))
    src_ranks = rank_count(src_strategy_file, src, api)
    chosen: list[int] = []
    for name, lay in src.items():
        if not is_split(lay):
            continue
        want = _region(dst.get(name), rank_id, lay.tensor_shape)
        holders: dict[tuple, list[int]] = {}        # a distinct slice -> its ranks
        for r in range(src_ranks):
            region = _region(lay, r, lay.tensor_shape)
            if _overlap(want, region) is not None:
                holders.setdefault(tuple((s.start, s.stop) for s in region), []).append(r)
        for ranks in holders.values():
            if not any(r in chosen for r in ranks):
                chosen.append(ranks[0])
    return sorted(chosen) or [0]


def transform_checkpoint_by_rank(rank_id: int, checkpoint_files_map: Mapping[int, str],
                                 save_checkpoint_file_name: str,
                                 src_strategy_file: str | None = None,
                                 dst_strategy_file: str | None = None) -> None:
    """Write destination rank `rank_id`'s checkpoint (its slices under `dst_strategy_file`;
    None: whole) from the source files in `checkpoint_files_map` (source rank -> file;
    `rank_list_for_transform` names the ones needed). Source layouts come from the files
    (msops shards record them), else `src_strategy_file`, else whole. A destination slice
    that the given files do not cover names the missing source ranks. The format follows
    the file name's suffix; a safetensors file records each slice's layout."""
    reshard_rank("transform_checkpoint_by_rank", rank_id, checkpoint_files_map,
                 save_checkpoint_file_name, src_strategy_file, dst_strategy_file)


def reshard_rank(api: str, rank_id: int, checkpoint_files_map: Mapping[int, str],
                 save_checkpoint_file_name: str, src_strategy_file: str | None,
                 dst_strategy_file: str | None) -> None:
    """transform_checkpoint_by_rank's work, its errors naming `api`."""
    if not isinstance(checkpoint_files_map, Mapping) or not checkpoint_files_map or \
            any(not isinstance(r, int) or not isinstance(f, str)
                for r, f in checkpoint_files_map.items()):
        raise TypeError(f"For '{api}', the 'checkpoint_files_map' should be a non-empty dict "
                        f"of source rank (int) -> checkpoint file (str), but got "
                        f"{checkpoint_files_map!r:.120}.")
    if not isinstance(save_checkpoint_file_name, str):
        raise TypeError(f"For '{api}', the 'save_checkpoint_file_name' should be a str, but "
                        f"got {type(save_checkpoint_file_name).__name__}.")
    tensors, extra = rank_tensors(api, rank_id, checkpoint_files_map, src_strategy_file,
                                  dst_strategy_file)
    if os.path.dirname(save_checkpoint_file_name):
        os.makedirs(os.path.dirname(save_checkpoint_file_name), exist_ok=True)
    if resolve_format(save_checkpoint_file_name, None, api) == "ckpt":
        write_ckpt(save_checkpoint_file_name, tensors)
    else:
        write_tensors(save_checkpoint_file_name, tensors, extra)


def rank_tensors(api: str, rank_id: int, checkpoint_files_map: Mapping[int, str],
                 src_strategy_file: str | None, dst_strategy_file: str | None,
                 ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """(name -> destination rank `rank_id`'s slice, name -> its layout metadata), built
    from the overlaps of the source files' slices; a piece no given file covers is a
    ValueError naming the missing source ranks."""
    from_strategy = strategy_layouts(src_strategy_file, api)
    dst = strategy_layouts(dst_strategy_file, api)
    rank_id = _check_rank(api, rank_id, rank_count(dst_strategy_file, dst, api))
    sources = []                     # (source rank, name -> array, name -> its layout)
    for r in sorted(checkpoint_files_map):
        path = checkpoint_files_map[r]
        arrays, entries = read_checkpoint_file(path, None, api)
        layouts = {n: _source_layout(api, path, n, a, file_layout(entries.get(n, {})) or
                                     from_strategy.get(n)) for n, a in arrays.items()}
        sources.append((r, arrays, layouts))
    names = list(dict.fromkeys(n for _, arrays, _ in sources for n in arrays))
    tensors: dict[str, np.ndarray] = {}
    extra: dict[str, dict] = {}
    for name in names:
        held = [(r, arrays[name], layouts[name]) for r, arrays, layouts in sources
                if name in arrays]
        first, first_layout = held[0][1], held[0][2]
        shape = tuple(first_layout.tensor_shape) if first_layout is not None else first.shape
        target = dst.get(name)
        if target is not None and tuple(target.tensor_shape) != shape:
            raise ValueError(f"For '{api}', the parameter '{name}' should have the shape "
                             f"{tuple(target.tensor_shape)} of the destination strategy, but "
                             f"got {shape} in the source checkpoint.")
        want = _region(target, rank_id, shape)
        out = np.empty(tuple(s.stop - s.start for s in want), first.dtype)
        covered = np.zeros(out.shape, bool)
        for r, arr, lay in held:
            region = _region(lay, r, shape)
            part = _overlap(want, region)
            if part is not None:
                out[_within(part, want)] = arr[_within(part, region)]
                covered[_within(part, want)] = True
        if not covered.all():
            lay = first_layout
            missing = sorted(r for r in range(lay.device_num if lay is not None else 1)
                             if r not in checkpoint_files_map and
                             _overlap(want, _region(lay, r, shape)) is not None)
            raise ValueError(f"For '{api}', the slice of '{name}' of rank {rank_id} needs the "
                             f"checkpoints of source ranks {missing}, which "
                             f"{_LACKS.get(api, _LACKS['transform_checkpoint_by_rank'])}.")
        tensors[name] = out
        extra[name] = layout_meta(target, slice_saved=target is not None and is_split(target))
    return tensors, extra
