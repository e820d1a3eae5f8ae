"""unified_safetensors (MindSpore's parallel.transform_safetensors): a distributed
safetensors checkpoint merged into whole parameters, in MindSpore's unified layout:

    dst_dir/part0.safetensors, part1.safetensors, ...   the strategy's parameters, whole,
                                                        grouped in parts of about 3 GiB
    dst_dir/param_name_map.json   {"metadata": {"total_size": bytes},
                                   "weight_map": {name: "part<k>.safetensors"}}
    dst_dir/hyper_param.safetensors   rank 0's tensors the strategy does not lay out

Each parameter is assembled from the overlaps of the rank files' slices
(transform_rank.rank_tensors, destination: one whole rank), so files saved without
redundancy (a replica's slice kept by one rank) merge as well; a piece no file holds
names the missing ranks. Every file read is checked; every file written is atomic.
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Callable

from msops.common import validator
from msops.train.atomic import atomic_write
from msops.train.safetensors_io import write_tensors
from msops.train.transform import in_threads, strategy_layouts
from msops.train.transform_rank import rank_tensors

__all__ = ["unified_safetensors"]

_API = "unified_safetensors"
_PART_BYTES = 3 * 2 ** 30             # MindSpore's size of one part
_RANK_DIR = re.compile(r"^rank_(\d+)$")


def _latest(files: list[str]) -> str:
    """Of several checkpoints in a rank folder, the latest: the highest trailing numbers
    (MindSpore's `<prefix>-<epoch>_<step>` names), then the name."""
    def key(path: str) -> tuple:
        nums = [int(n) for n in re.findall(r"\d+", os.path.basename(path))][-2:]
        return nums, os.path.basename(path)
    return max(files, key=key)


def _rank_files(src_dir: str, file_suffix: str | None) -> dict[int, str]:
    """Rank -> the safetensors file of each `rank_<i>` folder of `src_dir`."""
    out: dict[int, str] = {}
    ckpts = []
    for entry in sorted(os.listdir(src_dir)):
        m = _RANK_DIR.match(entry)
        folder = os.path.join(src_dir, entry)
        if not m or not os.path.isdir(folder):
            continue
        names = os.listdir(folder)
        ckpts += [n for n in names if n.endswith(".ckpt")]
        end = f"{file_suffix or ''}.safetensors"
        found = [os.path.join(folder, n) for n in names if n.endswith(end)]
        if found:
            out[int(m.group(1))] = _latest(found)
        elif file_suffix is not None:
            raise ValueError(f"For '{_API}', the folder '{folder}' should hold a safetensors "
                             f"file ending with '{end}', but it holds none.")
    if out and ckpts:
        raise ValueError(f"For '{_API}', the 'src_dir' should not hold both .ckpt and "
                         f".safetensors files, but got {ckpts[:3]} beside safetensors files.")
    if not out:
        raise ValueError(f"For '{_API}', the 'src_dir' '{src_dir}' should hold rank_0, "
                         f"rank_1, ... subfolders of safetensors files, but it has none.")
    return out


def _groups(sizes: dict[str, int], count: int) -> list[list[str]]:
    """The names in `count` groups of near-equal bytes (largest first, each to the
    lightest group), as MindSpore splits its parts."""
    groups: list[list[str]] = [[] for _ in range(count)]
    totals = [0] * count
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        k = totals.index(min(totals))
        groups[k].append(name)
        totals[k] += size
    return groups


def _check(src_dir: Any, src_strategy_file: Any, dst_dir: Any, merge_with_redundancy: Any,
           file_suffix: Any, max_process_num: Any, choice_func: Any,
           split_dst_file: Any) -> tuple[int, int] | None:
    for arg, value in (("src_dir", src_dir), ("src_strategy_file", src_strategy_file),
                       ("dst_dir", dst_dir)):
        if not isinstance(value, str):
            raise TypeError(f"For '{_API}', the '{arg}' should be a str, but got "
                            f"{type(value).__name__}.")
    if not os.path.isdir(src_dir):
        raise ValueError(f"For '{_API}', the 'src_dir' should be an existing folder, but got "
                         f"'{src_dir}'.")
    if not os.path.isfile(src_strategy_file):
        raise ValueError(f"For '{_API}', the 'src_strategy_file' should be an existing "
                         f"strategy file, but got '{src_strategy_file}'.")
    if os.path.isfile(dst_dir):
        raise ValueError(f"For '{_API}', the 'dst_dir' should be a folder, but '{dst_dir}' "
                         f"is a file.")
    validator.check_bool("merge_with_redundancy", merge_with_redundancy, _API)
    if file_suffix is not None and not isinstance(file_suffix, str):
        raise TypeError(f"For '{_API}', the 'file_suffix' should be a str, but got "
                        f"{type(file_suffix).__name__}.")
    validator.check_positive_int(max_process_num, "max_process_num", _API)
    if choice_func is not None and not callable(choice_func):
        raise TypeError(f"For '{_API}', the 'choice_func' should be a function of the "
                        f"parameter name, but got {type(choice_func).__name__}.")
    if split_dst_file == ():
        return None
    if not (isinstance(split_dst_file, tuple) and len(split_dst_file) == 2 and
            all(isinstance(v, int) and not isinstance(v, bool) for v in split_dst_file) and
            1 <= split_dst_file[0] <= split_dst_file[1]):
        raise ValueError(f"For '{_API}', the 'split_dst_file' should be () or (k, n) with "
                         f"1 <= k <= n (this subtask and the number of subtasks), but got "
                         f"{split_dst_file!r}.")
    return split_dst_file


def unified_safetensors(src_dir: str, src_strategy_file: str, dst_dir: str,
                        merge_with_redundancy: bool = True, file_suffix: str | None = None,
                        max_process_num: int = 64,
                        choice_func: Callable[[str], bool | str] | None = None,
                        split_dst_file: tuple = ()) -> None:
    """Merge the distributed safetensors checkpoint `src_dir/rank_<i>/` (saved under
    `src_strategy_file`) into whole parameters in `dst_dir` (layout in the module doc).
    `file_suffix` picks each rank's file ending with `<file_suffix>.safetensors` (None:
    its one file, or the latest of several); `choice_func(name)` drops a parameter
    (False) or renames it (a str); `split_dst_file=(k, n)` writes only the k-th of n
    equal shares of the parts (the map and hyper-parameters with k = 1), to spread the
    work over machines; `max_process_num` parts are written at once (threads).
    `merge_with_redundancy` says whether each rank saved its whole slice (True) or the
    replicas' slices once (False); both merge alike here, every piece being checked."""
    split = _check(src_dir, src_strategy_file, dst_dir, merge_with_redundancy, file_suffix,
                   max_process_num, choice_func, split_dst_file)
    files = _rank_files(src_dir, file_suffix)
    laid_out = strategy_layouts(src_strategy_file, _API)
    tensors, _ = rank_tensors(_API, 0, files, src_strategy_file, None)
    names: dict[str, str] = {}                      # name in the files -> name saved
    for name in tensors:
        if name not in laid_out:
            continue
        chosen = name if choice_func is None else choice_func(name)
        if not isinstance(chosen, (bool, str)):
            raise ValueError(f"For '{_API}', the 'choice_func' should return a bool or a "
                             f"str, but got {type(chosen).__name__} for '{name}'.")
        if chosen is True:
            chosen = name
        if chosen is not False:
            if chosen in names.values():
                raise ValueError(f"For '{_API}', the 'choice_func' should give distinct "
                                 f"names, but got '{chosen}' twice.")
            names[name] = chosen
    sizes = {name: tensors[name].nbytes for name in names}
    total = sum(sizes.values())
    count = max(1, min(math.ceil(total / _PART_BYTES), len(names)))
    parts = _groups(sizes, count) if names else []
    mine = range(len(parts))
    if split is not None:
        k, n = split
        share, extra = divmod(len(parts), n)
        start = share * (k - 1) + min(k - 1, extra)
        mine = range(start, start + share + (1 if k <= extra else 0))
    os.makedirs(dst_dir, exist_ok=True)

    def write_part(i: int) -> None:
        write_tensors(os.path.join(dst_dir, f"part{i}.safetensors"),
                      {names[n]: tensors[n] for n in parts[i]})
    in_threads(write_part, mine, max_process_num)
    if split is not None and split[0] != 1:
        return
    weight_map = {names[n]: f"part{i}.safetensors" for i, group in enumerate(parts)
                  for n in group}
    content = json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map},
                         indent=4)

    def write_map(tmp: str) -> None:
        with open(tmp, "w") as f:
            f.write(content)
    atomic_write(os.path.join(dst_dir, "param_name_map.json"), write_map)
    hyper = {n: a for n, a in tensors.items() if n not in laid_out}
    if hyper:
        write_tensors(os.path.join(dst_dir, "hyper_param.safetensors"), hyper)
