"""Pipeline stages: which ranks hold which stage, and device groups made in every stage.

With `pipeline_stages=S` the world's ranks form S stages of `parallel_device_num()` ranks
each, stage s holding ranks s * n ... s * n + n - 1 (MindSpore's numbering). Layouts,
strategies and groups are planned over one stage's n devices: a rank slices by its
position in its stage (`layout_rank`), and the ranks at the same position of different
stages exchange the activations and gradients crossing a stage boundary
(parallel/stage_split.py). Every rank compiles every stage's part of the program, so a
group partition is created for all stages at once (`create_stage_groups`): the world-wide
split stays one SPMD call on every rank.
"""
from __future__ import annotations

from typing import Sequence

from msops.communication import GlobalComm, create_group_partition, get_rank
from msops.parallel.context import get_auto_parallel_context, is_parallel, parallel_device_num

__all__ = ["stage_num", "stage_of_rank", "layout_rank", "stage_peer", "create_stage_groups",
           "stage_group", "pipeline_scheduler", "interleaved"]


def stage_num() -> int:
    """The number of pipeline stages (1 when stand-alone or not pipelined)."""
    return get_auto_parallel_context("pipeline_stages") if is_parallel() else 1


def stage_of_rank(rank: int | None = None) -> int:
    """The stage world rank `rank` (default: this rank) belongs to."""
    rank = get_rank() if rank is None else rank
    return rank // parallel_device_num() if stage_num() > 1 else 0


def layout_rank() -> int:
    """This rank's position in its stage: the rank a layout's slice is taken for."""
    rank = get_rank()
    return rank % parallel_device_num() if stage_num() > 1 else rank


def stage_peer(stage: int) -> int:
    """The world rank at this rank's position in `stage`."""
    return stage * parallel_device_num() + layout_rank()


def create_stage_groups(parts: Sequence[Sequence[int]]) -> str | None:
    """The groups of `parts` (ranks numbered within a stage) in every stage, created in one
    world-collective split; returns the name of this rank's group (None if in none)."""
    stages = stage_num()
    if stages == 1:
        return create_group_partition(parts)
    n = parallel_device_num()
    return create_group_partition([tuple(s * n + r for r in p)
                                   for s in range(stages) for p in parts])


def stage_group() -> str:
    """The group of this rank's stage (every rank calls it alike): the world when the run
    is not pipelined."""
    if stage_num() == 1:
        return GlobalComm.WORLD_COMM_GROUP
    group = create_stage_groups([tuple(range(parallel_device_num()))])
    assert group is not None
    return group


def pipeline_scheduler() -> str:
    """The order of the micro-batches' forwards and backwards on a stage: "1f1b" (the
    default, MindSpore's) or "gpipe" (`pipeline_config`'s `pipeline_scheduler`)."""
    config = get_auto_parallel_context("pipeline_config")
    return config["pipeline_scheduler"] if config else "1f1b"


def interleaved() -> bool:
    """Whether cells may set virtual pipeline segments (`pipeline_config`'s
    `pipeline_interleave`)."""
    config = get_auto_parallel_context("pipeline_config")
    return bool(config and config["pipeline_interleave"])
