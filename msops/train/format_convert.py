"""ckpt_to_safetensors and safetensors_to_ckpt (MindSpore's train.serialization): a file, or
every rank's files of a distributed checkpoint folder, rewritten in the other format.

A folder is MindSpore's layout: subfolders whose names start with "rank" (rank_0, ...),
each converted into the subfolder of the same name under `save_path` (or beside its
files). Each file is read with its checksums checked (the .ckpt trailer and msops's
per-chunk crc32s; msops's or MindSpore's safetensors checksums) and written atomically
with msops's checksums (train/atomic.py), so the converted file is checked when loaded.
`processes_num` files are converted at once, on threads (reading, writing and the
checksums release the GIL; no process pool, nothing pickled).
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Mapping

import numpy as np

from msops.common import validator
from msops.train.ckpt_format import read_ckpt, write_ckpt
from msops.train.safetensors_io import read_tensors, write_tensors
from msops.train.transform import in_threads

__all__ = ["ckpt_to_safetensors", "safetensors_to_ckpt"]


def _renamed(api: str, tensors: Mapping[str, np.ndarray],
             name_map: Mapping[str, str] | None, path: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, arr in tensors.items():
        new = (name_map or {}).get(name, name)
        if new in out:
            raise ValueError(f"For '{api}', the 'name_map' should give distinct names, but "
                             f"two tensors of '{path}' would both be named '{new}'.")
        out[new] = arr
    return out


def _check_args(api: str, file_path: Any, save_path: Any, name_map: Any,
                file_name_regex: Any, processes_num: Any) -> None:
    if not isinstance(file_path, str) or not (os.path.isdir(file_path) or
                                              os.path.isfile(file_path)):
        raise ValueError(f"For '{api}', the 'file_path' should be an existing file or "
                         f"folder, but got {file_path!r}.")
    if save_path is not None and (not isinstance(save_path, str) or
                                  os.path.splitext(save_path)[1] or os.path.isfile(save_path)):
        raise ValueError(f"For '{api}', the 'save_path' should be a folder (no file "
                         f"extension), but got {save_path!r}.")
    if name_map is not None and (not isinstance(name_map, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in name_map.items())):
        raise ValueError(f"For '{api}', the 'name_map' should be a dict of str -> str, but "
                         f"got {name_map!r:.80}.")
    if file_name_regex is not None:
        if not isinstance(file_name_regex, str):
            raise TypeError(f"For '{api}', the 'file_name_regex' should be a str, but got "
                            f"{type(file_name_regex).__name__}.")
        try:
            re.compile(file_name_regex)
        except re.error as err:
            raise ValueError(f"For '{api}', the 'file_name_regex' should be a regular "
                             f"expression, but {file_name_regex!r} is not: {err}.") from None
    validator.check_positive_int(processes_num, "processes_num", api)


def _tasks(api: str, file_path: str, save_path: str | None, suffix: str,
           file_name_regex: str | None) -> list[tuple[str, str]]:
    """(source file, destination folder) of every file to convert."""
    if os.path.isfile(file_path):
        if not file_path.endswith(suffix):
            raise ValueError(f"For '{api}', the 'file_path' should be a {suffix} file, but "
                             f"got '{file_path}'.")
        if file_name_regex is not None and not re.findall(file_name_regex, file_path):
            raise ValueError(f"For '{api}', the 'file_path' should match the "
                             f"'file_name_regex' {file_name_regex!r}, but '{file_path}' "
                             f"does not.")
        return [(file_path, save_path or os.path.dirname(os.path.abspath(file_path)))]
    rank_dirs = sorted(d for d in os.listdir(file_path) if d.startswith("rank")
                       and os.path.isdir(os.path.join(file_path, d)))
    if not rank_dirs:
        raise ValueError(f"For '{api}', the folder '{file_path}' should hold rank_0, rank_1, "
                         f"... subfolders (one per rank), but it has none.")
    tasks = []
    for d in rank_dirs:
        src = os.path.join(file_path, d)
        dst = os.path.join(save_path, d) if save_path else src
        tasks += [(os.path.join(src, f), dst) for f in sorted(os.listdir(src))
                  if f.endswith(suffix) and os.path.isfile(os.path.join(src, f))
                  and (file_name_regex is None or re.findall(file_name_regex, f))]
    return tasks


def _convert(api: str, file_path: str, save_path: str | None,
             name_map: Mapping[str, str] | None, file_name_regex: str | None,
             processes_num: int, suffix: str, new_suffix: str,
             move: Callable[[str, str, Mapping[str, str] | None], None]) -> None:
    _check_args(api, file_path, save_path, name_map, file_name_regex, processes_num)
    tasks = _tasks(api, file_path, save_path, suffix, file_name_regex)

    def one(task: tuple[str, str]) -> None:
        src, folder = task
        os.makedirs(folder, exist_ok=True)
        name = os.path.basename(src)[:-len(suffix)] + new_suffix
        move(src, os.path.join(folder, name), name_map)
    in_threads(one, tasks, processes_num)


def ckpt_to_safetensors(file_path: str, save_path: str | None = None,
                        name_map: Mapping[str, str] | None = None,
                        file_name_regex: str | None = None, processes_num: int = 1) -> None:
    """Rewrite the .ckpt file `file_path` (or the .ckpt files of every `rank*` subfolder of
    the folder `file_path`) as `<name>.safetensors` in `save_path` (None: beside each
    file; a folder keeps its rank subfolders). `name_map` renames tensors (old -> new);
    `file_name_regex` keeps the files whose names it matches."""
    api = "ckpt_to_safetensors"

    def move(src: str, dst: str, names: Mapping[str, str] | None) -> None:
        write_tensors(dst, _renamed(api, read_ckpt(src, api), names, src))
    _convert(api, file_path, save_path, name_map, file_name_regex, processes_num,
             ".ckpt", ".safetensors", move)


def safetensors_to_ckpt(file_path: str, save_path: str | None = None,
                        name_map: Mapping[str, str] | None = None,
                        file_name_regex: str | None = None, processes_num: int = 1) -> None:
    """Rewrite the .safetensors file `file_path` (or those of every `rank*` subfolder of
    the folder `file_path`) as MindSpore `.ckpt` files, as ckpt_to_safetensors does the
    other way. A .ckpt holds no slice layouts: a shard's layout (msops's safetensors
    shards record it) is not kept; reshard such files with the saving run's strategy file."""
    api = "safetensors_to_ckpt"

    def move(src: str, dst: str, names: Mapping[str, str] | None) -> None:
        tensors, _ = read_tensors(src, api)
        write_ckpt(dst, _renamed(api, tensors, names, src))
    _convert(api, file_path, save_path, name_map, file_name_regex, processes_num,
             ".safetensors", ".ckpt", move)
