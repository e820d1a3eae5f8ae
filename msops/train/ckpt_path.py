"""get_ckpt_path_with_strategy (MindSpore's train.serialization): this rank's checkpoint,
or a replica's when its own is gone.

Checkpoint paths name their rank as `rank_<i>` (MindSpore's and msops's folders). A
replica of this rank is a rank of the same pipeline stage that holds the same slice of
every parameter the strategy file lays out (with the parallel optimizer, the file's
layout is the stored shard's, so optimizer-sharded ranks are not replicas): its
checkpoint holds exactly this rank's values.
"""
from __future__ import annotations

import os
import re

from msops.communication import get_rank
from msops.parallel.layout import TensorLayout
from msops.parallel.slices import is_split
from msops.train.transform import rank_count, strategy_layouts

__all__ = ["get_ckpt_path_with_strategy", "replica_ranks"]

_RANK = re.compile(r"rank_\d+")


def _region(layout: TensorLayout, rank: int) -> tuple:
    if not is_split(layout):
        return ()
    return tuple((s.start, s.stop) for s in layout.slice_of(rank % layout.device_num))


def replica_ranks(rank: int, strategy_file: str, api: str) -> list[int]:
    """`rank` and the ranks holding the same slices of every parameter of
    `strategy_file` (its replicas), ascending."""
    layouts = strategy_layouts(strategy_file, api)
    n = rank_count(strategy_file, layouts, api)
    stage = rank // n
    mine = [_region(lay, rank) for lay in layouts.values()]
    return [r for r in range(stage * n, (stage + 1) * n)
            if [_region(lay, r) for lay in layouts.values()] == mine]


def get_ckpt_path_with_strategy(cur_ckpt_path: str, cur_strategy_path: str) -> str | None:
    """`cur_ckpt_path` when it exists, else the same path with `rank_<i>` naming a replica
    of this rank (by `cur_strategy_path`, this run's strategy file) whose file exists,
    the lowest first; None when there is none. Call it after communication.init()."""
    api = "get_ckpt_path_with_strategy"
    for arg, value in (("cur_ckpt_path", cur_ckpt_path),
                       ("cur_strategy_path", cur_strategy_path)):
        if not isinstance(value, str):
            raise TypeError(f"For '{api}', the '{arg}' should be a str, but got "
                            f"{type(value).__name__}.")
    rank = get_rank()
    if os.path.isfile(cur_ckpt_path):
        return cur_ckpt_path
    if not _RANK.search(cur_ckpt_path):
        return None
    for r in replica_ranks(rank, cur_strategy_path, api):
        path = _RANK.sub(f"rank_{r}", cur_ckpt_path)
        if os.path.isfile(path):
            return path
    return None
