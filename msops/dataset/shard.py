"""Which part of the data each rank reads: the dataset's shards against dataset_strategy.

    "full_batch"     every rank feeds the whole batch     num_shards=1, shard_id=0
    "data_parallel"  each rank feeds its dim-0 slice      num_shards=N, shard_id=rank
    ((s0, ...), ...) ranks are laid as (s0, ..., repeat)  num_shards=s0,
                     (msops.parallel.partition), so       shard_id=rank // (N // s0)
                     the dim-0 block of rank r is r // (N // s0)
"""
from __future__ import annotations

from msops.communication import get_group_size, get_rank
from msops.dataset.engine import Dataset
from msops.parallel.context import get_auto_parallel_context, is_parallel

__all__ = ["parallel_shard", "dataset_shards"]


def parallel_shard() -> tuple[int, int]:
    """(num_shards, shard_id) this rank's dataset should be read with under the current
    parallel context (dataset_strategy); (1, 0) stand-alone."""
    if not is_parallel():
        return 1, 0
    strategy = get_auto_parallel_context("dataset_strategy")
    n, rank = get_group_size(), get_rank()
    if strategy == "full_batch":
        return 1, 0
    if strategy == "data_parallel":
        return n, rank
    s0 = strategy[0][0]
    return s0, rank // (n // s0)


def dataset_shards(dataset: Dataset) -> tuple[int, int]:
    """(num_shards, shard_id) of the source under a pipeline (1, 0 when unsharded)."""
    node = dataset
    while hasattr(node, "child"):
        node = node.child
    return getattr(node, "num_shards", 1), getattr(node, "shard_id", 0)
