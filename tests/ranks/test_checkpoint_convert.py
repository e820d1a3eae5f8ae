"""Checkpoint conversions of a real sharded run under MPI: each rank saves its shards
(`rank_<r>/` folders, MindSpore's layout), then the files are converted to .ckpt and back,
resharded rank by rank and folder to folder (convert_*), merged by unified_safetensors,
and a lost file is replaced by a replica's (get_ckpt_path_with_strategy). Every result
is compared with the serial network's parameters cut by numpy."""
import os
import shutil

import numpy as np
import pytest
from mpi4py import MPI
from safetensors.numpy import load_file

import msops as ms
from msops import Tensor
from msops.communication import get_group_size, get_rank
from msops.parallel.layout import TensorLayout
from msops.parallel.strategy_ckpt import save_strategy_file
from test_checkpoint_save import Chain, data, shared_dir   # its sharded nets and folder

RANKS = (2, 4)
N = get_group_size()
COMM = MPI.COMM_WORLD


SERIAL = {"w1": data(32, 16), "w2": data(16, 8)}
#: the destination of the resharding: w1 by columns, w2 by rows, over all N ranks
DST = {"w1": TensorLayout((N,), (-1, 0), (32, 16)), "w2": TensorLayout((N,), (0, -1), (16, 8))}


def numpy_block(arr, lay, rank):
    """`rank`'s block of `arr` under a one-axis layout, cut by numpy."""
    (d,) = [i for i, m in enumerate(lay.tensor_map) if m != -1]
    step = arr.shape[d] // N
    index = [slice(None)] * arr.ndim
    index[d] = slice(rank * step, (rank + 1) * step)
    return arr[tuple(index)]


@pytest.fixture
def saved():
    """(folder, strategy file, net's layouts): every rank's shards in folder/shards/rank_<r>/."""
    folder = shared_dir()
    strategy = os.path.join(folder, "strategy.json")
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True, strategy_ckpt_save_file=strategy)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Chain(((N // 2, 2), (2, 1)), ((1, 1), (1, N)))
    net.compile(Tensor(data(16, 32)))
    layouts = {n: pl.layout for n, pl in net.parameter_layout_dict.items()}
    assert all(any(lay.dim_axes) for lay in layouts.values())        # both are split
    mine = os.path.join(folder, "shards", f"rank_{get_rank()}")
    os.makedirs(mine)
    ms.save_checkpoint(net, os.path.join(mine, "net.safetensors"), integrated_save=False)
    ms.reset_auto_parallel_context()
    COMM.Barrier()
    yield folder, strategy, layouts
    COMM.Barrier()
    if get_rank() == 0:
        shutil.rmtree(folder)


def test_format_round_trip_and_reshard_by_rank(saved):
    folder, strategy, layouts = saved
    me = get_rank()
    if me == 0:
        ms.safetensors_to_ckpt(os.path.join(folder, "shards"), os.path.join(folder, "ckpt"),
                               processes_num=2)
    COMM.Barrier()
    own = ms.load_checkpoint(os.path.join(folder, "ckpt", f"rank_{me}", "net.ckpt"))
    for name, lay in layouts.items():
        np.testing.assert_array_equal(own[name].asnumpy(), SERIAL[name][lay.slice_of(me)])
    # the .ckpt shards hold no layouts: the strategy file of the saving run places them
    dst = os.path.join(folder, "dst.json")
    if me == 0:
        save_strategy_file(dst, {"device_num": N, "parallel_strategy_item": {},
                                 "parallel_layout_item": {n: {
                                     "dev_matrix": list(l.device_matrix),
                                     "tensor_map": list(l.tensor_map),
                                     "tensor_shape": list(l.tensor_shape)}
                                     for n, l in DST.items()}})
    COMM.Barrier()
    needed = ms.parallel.rank_list_for_convert(me, strategy, dst)
    files = {r: os.path.join(folder, "ckpt", f"rank_{r}", "net.ckpt") for r in needed}
    out = os.path.join(folder, "by_rank", f"rank_{me}", "net.ckpt")
    ms.parallel.convert_checkpoint_by_rank(me, files, out, strategy, dst)
    got = ms.load_checkpoint(out)
    for name in SERIAL:
        np.testing.assert_array_equal(got[name].asnumpy(),
                                      numpy_block(SERIAL[name], DST[name], me))
    COMM.Barrier()
    # and the whole folder at once, back to safetensors
    if me == 0:
        ms.ckpt_to_safetensors(os.path.join(folder, "by_rank"), os.path.join(folder, "st"))
        ms.parallel.convert_checkpoints(os.path.join(folder, "st"), os.path.join(folder, "whole"),
                                        "net_", dst, None, process_num=2)
    COMM.Barrier()
    st = load_file(os.path.join(folder, "st", f"rank_{me}", "net.safetensors"))
    for name in SERIAL:
        np.testing.assert_array_equal(st[name], numpy_block(SERIAL[name], DST[name], me))
    whole = load_file(os.path.join(folder, "whole", "rank_0", "net_0.safetensors"))
    for name in SERIAL:
        np.testing.assert_array_equal(whole[name], SERIAL[name])


def test_unified_safetensors_of_a_real_run(saved):
    folder, strategy, _ = saved
    out = os.path.join(folder, "unified")
    if get_rank() == 0:
        ms.parallel.unified_safetensors(os.path.join(folder, "shards"), strategy, out,
                                        max_process_num=2)
    COMM.Barrier()
    got = {}
    for f in sorted(os.listdir(out)):
        if f.startswith("part"):
            got.update(load_file(os.path.join(out, f)))
    assert sorted(got) == sorted(SERIAL)
    for name, want in SERIAL.items():
        np.testing.assert_array_equal(got[name], want)


@pytest.mark.ranks(4)
def test_lost_file_is_replaced_by_a_replicas(tmp_path):
    """w1 and w2 are both replicated over the first device axis: each rank has one
    replica. After rank 3's file is lost, the path found for rank 3 holds its slices."""
    folder = shared_dir()
    strategy = os.path.join(folder, "strategy.json")
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True, strategy_ckpt_save_file=strategy)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Chain(((2, 1), (1, 2)), ((2, 2), (2, 1)))
    net.compile(Tensor(data(16, 32)))
    layouts = {n: pl.layout for n, pl in net.parameter_layout_dict.items()}
    me = get_rank()
    path = os.path.join(folder, f"rank_{me}", "net.safetensors")
    os.makedirs(os.path.dirname(path))
    ms.save_checkpoint(net, path, integrated_save=False)
    ms.reset_auto_parallel_context()
    COMM.Barrier()
    if me == 0:
        os.remove(os.path.join(folder, f"rank_{N - 1}", "net.safetensors"))
    COMM.Barrier()
    found = ms.get_ckpt_path_with_strategy(path, strategy)
    if me != N - 1:
        assert found == path
    else:
        assert found is not None and found != path
        got = load_file(found)
        for name, lay in layouts.items():
            np.testing.assert_array_equal(got[name], SERIAL[name][lay.slice_of(me)])
    COMM.Barrier()
    if me == 0:
        shutil.rmtree(folder)
