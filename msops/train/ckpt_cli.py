"""`msops ckpt show|verify|merge|reshard`: inspect, check, merge and reshard checkpoints.

    msops ckpt show net.safetensors            # names, shapes, dtypes, layouts
    msops ckpt show ckpt_dir/                  # a distributed checkpoint (rank_<i>/ folders)
    msops ckpt verify ckpt_dir/ [--strategy s.json]
    msops ckpt merge ckpt_dir/ whole.safetensors [--strategy s.json]
    msops ckpt reshard src_dir/ dst_dir/ --dst-strategy dst.json [--src-strategy src.json]

(also `python -m msops ckpt ...`). A PATH is a checkpoint file (.safetensors or
MindSpore's .ckpt) or a folder of rank_<i> subfolders. `verify` reads every file
(every checksum), checks that every rank's slices fit their layouts, that every element
of every parameter is covered exactly once by the distinct slices and that replicas agree;
it exits 1 naming the file, the rank or the tensor at fault. Long work shows a tqdm
progress bar when tqdm is installed (`pip install msops[progress]`) and stderr is a terminal.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Iterable, Sequence

import numpy as np

from msops.train.ckpt_format import write_ckpt
from msops.train.safetensors_io import CheckpointError, write_tensors
from msops.train.serialization import read_checkpoint_file, resolve_format
from msops.train.transform import (Shards, merged_parameters, rank_files, read_shards,
                                   transform_checkpoints)

__all__ = ["main"]


def _progress(items: Iterable, total: int, desc: str) -> Iterable:
    """tqdm's bar over `items` when tqdm is installed (shown only on a terminal)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, total=total, desc=desc, unit="tensor", disable=None, leave=False)


def _layout_text(layout) -> str:
    if layout is None:
        return "whole"
    tmap = [list(m) if isinstance(m, tuple) else m for m in layout.tensor_map]
    return f"dev_matrix={list(layout.device_matrix)} tensor_map={tmap}"


def _shards(path: str, strategy: str | None) -> Shards:
    return read_shards(rank_files(path, "msops ckpt"), strategy, "msops ckpt")


def _show(ns: argparse.Namespace) -> int:
    if os.path.isdir(ns.path):
        sh = _shards(ns.path, ns.strategy)
        print(f"{ns.path}: {len(sh.files)} rank files")
        for name in sh.names:
            arr, lay = sh.first(name), sh.layouts[name]
            shape = lay.tensor_shape if lay is not None else arr.shape
            extra = f" slice={list(lay.slice_shape)}" if lay is not None else ""
            print(f"  {name}  {list(shape)}  {arr.dtype.name}  {_layout_text(lay)}{extra}")
        return 0
    arrays, entries = read_checkpoint_file(ns.path, None, "msops ckpt")
    fmt = resolve_format(ns.path, None, "msops ckpt")
    print(f"{ns.path}: {len(arrays)} tensors ({fmt})")
    for name, arr in arrays.items():
        entry = entries.get(name, {})
        lay = entry.get("layout")
        text = "whole" if lay is None else \
            f"dev_matrix={lay['device_matrix']} tensor_map={lay['tensor_map']}" + \
            (f" slice of {lay['tensor_shape']}" if entry.get("slice") else "") + \
            (f" opt_shard_group={lay['opt_shard_group']}" if lay.get("opt_shard_group") else "")
        print(f"  {name}  {list(arr.shape)}  {arr.dtype.name}  {text}")
    return 0


def _coverage(sh: Shards, name: str) -> None:
    """Every element of `name` covered exactly once by the distinct slices; files that hold
    the same slice (replicas, or the same slice in several pipeline stages) hold the same
    values."""
    lay = sh.layouts[name]
    seen: dict[tuple, tuple[int, np.ndarray]] = {}
    count = np.zeros(lay.tensor_shape if lay is not None else (), np.uint8)
    for i, (r, arr) in zip(sh.holders[name], sh.copies(name)):
        index = lay.slice_of(r) if lay is not None else ()
        key = tuple((s.start, s.stop) for s in index)
        if key in seen:
            other, first = seen[key]
            if not np.array_equal(arr, first, equal_nan=True):
                what = "the same slice of" if lay is not None else "the same whole tensor"
                raise CheckpointError(f"For 'msops ckpt verify', rank {i} ('{sh.files[i]}') "
                                      f"and rank {other} should hold {what} '{name}' "
                                      f"(replicas), but their values differ.")
            continue
        seen[key] = (i, arr)
        count[index] += 1
    if count.min() != 1 or count.max() != 1:
        raise CheckpointError(f"For 'msops ckpt verify', every element of '{name}' should be "
                              f"covered exactly once by the slices of {lay}, but "
                              f"{int((count == 0).sum())} are missing and "
                              f"{int((count > 1).sum())} covered twice.")


def _verify(ns: argparse.Namespace) -> int:
    if os.path.isdir(ns.path):
        sh = _shards(ns.path, ns.strategy)          # every file's checksums, shapes, layouts
        for name in _progress(sh.names, len(sh.names), "verify"):
            _coverage(sh, name)
        print(f"OK: {ns.path}: {len(sh.names)} parameters over {len(sh.files)} rank files; "
              f"every checksum matches and every element is covered exactly once.")
        return 0
    arrays, entries = read_checkpoint_file(ns.path, None, "msops ckpt")
    if resolve_format(ns.path, None, "msops ckpt") == "ckpt":
        checked = "every crc32 it holds matches (per chunk, and the crc_num trailer if any)"
    elif entries:
        checked = "every checksum matches"
    else:
        checked = "it reads whole (a safetensors file without msops checksums)"
    print(f"OK: {ns.path}: {len(arrays)} tensors; {checked}.")
    return 0


def _merge(ns: argparse.Namespace) -> int:
    sh = _shards(ns.src, ns.strategy)
    whole = dict(merged_parameters(sh, _progress))
    fmt = resolve_format(ns.out, ns.format, "msops ckpt merge")
    if fmt == "ckpt":
        write_ckpt(ns.out, whole, crc_check=True)
    else:
        write_tensors(ns.out, whole)
    print(f"merged {len(whole)} parameters from {len(sh.files)} rank files into {ns.out}")
    return 0


def _reshard(ns: argparse.Namespace) -> int:
    transform_checkpoints(ns.src, ns.dst, ns.prefix, ns.src_strategy, ns.dst_strategy,
                          output_format=ns.format or "safetensors", progress=_progress)
    print(f"resharded {ns.src} into {ns.dst}")
    return 0


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Inspect, verify, merge and reshard "
                                "checkpoints (.safetensors, MindSpore .ckpt).")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("show", help="names, shapes, dtypes and layouts")
    s.add_argument("path", help="a checkpoint file or a folder of rank_<i>/ subfolders")
    s.add_argument("--strategy", help="the saving run's strategy file (JSON)")
    s.set_defaults(run=_show)
    s = sub.add_parser("verify", help="checksums, and every element covered exactly once")
    s.add_argument("path", help="a checkpoint file or a folder of rank_<i>/ subfolders")
    s.add_argument("--strategy", help="the saving run's strategy file (JSON)")
    s.set_defaults(run=_verify)
    s = sub.add_parser("merge", help="one whole checkpoint from a distributed one")
    s.add_argument("src", help="a folder of rank_<i>/ subfolders")
    s.add_argument("out", help="the whole checkpoint file to write")
    s.add_argument("--strategy", help="the saving run's strategy file (JSON)")
    s.add_argument("--format", choices=["safetensors", "ckpt"], help="default: by suffix")
    s.set_defaults(run=_merge)
    s = sub.add_parser("reshard", help="a distributed checkpoint under another strategy")
    s.add_argument("src", help="a folder of rank_<i>/ subfolders")
    s.add_argument("dst", help="the folder to write rank_<k>/ subfolders into")
    s.add_argument("--prefix", default="checkpoint_", help="file name prefix (+ rank)")
    s.add_argument("--src-strategy", help="the saving run's strategy file (JSON)")
    s.add_argument("--dst-strategy", help="the destination strategy file (JSON); none: "
                   "one whole checkpoint in rank_0")
    s.add_argument("--format", choices=["safetensors", "ckpt"], help="default: safetensors")
    s.set_defaults(run=_reshard)
    return p


def main(argv: Sequence[str] | None = None, prog: str = "msops ckpt") -> int:
    """Run one `msops ckpt` command; a checkpoint or strategy problem prints its message
    and returns 1."""
    ns = _parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return ns.run(ns)
    except (CheckpointError, FileNotFoundError, ValueError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
