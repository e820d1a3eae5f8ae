"""AllGatherCell, SaveOptShardCkptCell, get/destroy_allgather_cell under real MPI."""
import numpy as np

import msops as ms
from msops import Tensor
from msops.communication import create_group, create_group_partition, destroy_group, \
    get_group_size, get_rank
from msops.parallel import _cell_wrapper
from msops.parallel._cell_wrapper import (AllGatherCell, SaveOptShardCkptCell,
                                          destroy_allgather_cell, get_allgather_cell)

RANKS = (2, 4, 8)


def data_of(world_rank: int, shape=(2, 3)) -> np.ndarray:
    """A rank's distinct input: every entry encodes (rank, position)."""
    return (100 * world_rank + np.arange(np.prod(shape))).reshape(shape).astype(np.float32)


def test_allgather_cell_on_the_world():
    me, n = get_rank(), get_group_size()
    out = AllGatherCell()(Tensor(data_of(me))).asnumpy()
    np.testing.assert_array_equal(out, np.concatenate([data_of(r) for r in range(n)]))


def test_allgather_cell_runs_eagerly_in_a_parallel_graph_context():
    me, n = get_rank(), get_group_size()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        out = AllGatherCell()(Tensor(data_of(me, (1, 4)))).asnumpy()
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_array_equal(out, np.concatenate([data_of(r, (1, 4)) for r in range(n)]))


def test_allgather_cell_in_a_reversed_sub_group():
    me, n = get_rank(), get_group_size()
    members = list(range(n - 1, -1, -1))[: max(2, n // 2)]      # e.g. [7, 6, 5, 4] of 8
    create_group("ckpt_rev", members)
    if me in members:
        out = AllGatherCell("ckpt_rev")(Tensor(data_of(me))).asnumpy()
        np.testing.assert_array_equal(out, np.concatenate([data_of(r) for r in members]))
    destroy_group("ckpt_rev")


def test_save_opt_shard_cell_gathers_in_the_group_then_the_world():
    me, n = get_rank(), get_group_size()
    pairs = [[r, r + 1] for r in range(0, n, 2)]                # the optimizer-shard groups
    group = create_group_partition(pairs)
    out = SaveOptShardCkptCell(group)(Tensor(data_of(me))).asnumpy()
    # first gather: the pair's blocks; second: every rank's pair-gathered block, world order
    pair_of = {r: p for p in pairs for r in p}
    want = np.concatenate([np.concatenate([data_of(q) for q in pair_of[r]]) for r in range(n)])
    np.testing.assert_array_equal(out, want)
    assert out.shape == (2 * 2 * n, 3)


def test_get_and_destroy_allgather_cell():
    me, n = get_rank(), get_group_size()
    cell = get_allgather_cell("")
    assert isinstance(cell, AllGatherCell) and _cell_wrapper._allgather_cell is cell
    assert cell.allgather.group == ms.communication.GlobalComm.WORLD_COMM_GROUP
    np.testing.assert_array_equal(cell(Tensor(data_of(me))).asnumpy(),
                                  np.concatenate([data_of(r) for r in range(n)]))
    group = create_group_partition([[r, r + 1] for r in range(0, n, 2)])
    twice = get_allgather_cell(group, need_merge_twice=True)
    assert isinstance(twice, SaveOptShardCkptCell) and twice.allgather1.group == group
    destroy_allgather_cell()
    assert _cell_wrapper._allgather_cell is None
