"""Checkpoints of sharded networks under real MPI: the integrated file equals the serial
network's parameters, shards hold their slices, a whole checkpoint loads into a sharded
network, and a failed write on rank 0 raises on every rank."""
import os
import tempfile

import numpy as np
import pytest
from mpi4py import MPI
from parallel_oracle import run_serial

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full
from msops.parallel.slices import place_slices
from msops.train import serialization

RANKS = (2, 4, 8)
N = get_group_size()


def data(*shape):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape))
    return rng.standard_normal(shape).astype(np.float32)


class Submodel(nn.Cell):
    """Seed 001: BatchNorm split by rows, MatMul with the weight split by columns."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(16)
        self.bn.shard(((N, 1),))
        self.matmul = ops.MatMul().shard(((1, 1), (1, N)))
        self.w = Parameter(Tensor(data(16, 32)), name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.w)


class Chain(nn.Cell):
    """Two MatMuls: w1 split by (s1's) rows and columns, w2 by s2's."""

    def __init__(self, s1, s2):
        super().__init__()
        self.m1 = ops.MatMul().shard(s1)
        self.m2 = ops.MatMul().shard(s2)
        self.w1 = Parameter(Tensor(data(32, 16)), name="w1")
        self.w2 = Parameter(Tensor(data(16, 8)), name="w2")

    def construct(self, x):
        return self.m2(self.m1(x, self.w1), self.w2)


class Batched(nn.Cell):
    def __init__(self):
        super().__init__()
        self.bmm = ops.BatchMatMul().shard(((2, 2, N // 4), (2, N // 4, 1)))
        self.w = Parameter(Tensor(data(4, 16, 8)), name="w")

    def construct(self, x):
        return self.bmm(x, self.w)


# (make_net, input): strategies of tests/ranks/test_parallel_*.py that fit N ranks
CASES = {
    "seed001": (Submodel, (16, 16)),
    "rows_split": (lambda: Chain(((1, N), (N, 1)), ((N, 1), (1, 1))), (16, 32)),
    "rows_and_cols": (lambda: Chain(((N // 2, 2), (2, 1)), ((1, 1), (1, N))), (16, 32)),
}
if N >= 4:
    CASES["both_dims"] = (lambda: Chain(((1, 2), (2, N // 2)), ((2, 1), (1, N // 2))),
                          (16, 32))
    CASES["batch_matmul"] = (Batched, (4, 8, 16))


def shared_dir():
    """One temporary folder, the same on every rank."""
    path = tempfile.mkdtemp(prefix="msops-ckpt-") if get_rank() == 0 else None
    return MPI.COMM_WORLD.bcast(path)


def serial_params(make_net):
    return {p.name: p.asnumpy().copy() for p in make_net().get_parameters()}


def sharded(make_net, shape):
    """A sharded, compiled net: its parameters hold only this rank's slices, so a checkpoint
    is right only if it gathers every rank's slice and places it by layout."""
    net = make_net()
    net.compile(Tensor(data(*shape)))
    layouts = net.parameter_layout_dict
    assert any(any(lay.layout.dim_axes) for lay in layouts.values())     # something is split
    for p in net.get_parameters():
        assert tuple(p.shape) == tuple(layouts[p.name].layout.slice_shape), p.name
    return net, layouts


@pytest.fixture
def semi():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.reset_auto_parallel_context()


@pytest.mark.parametrize("case", sorted(CASES))
def test_integrated_checkpoint_equals_serial(semi, case):
    make_net, shape = CASES[case]
    want = serial_params(make_net)
    net, _ = sharded(make_net, shape)
    path = os.path.join(shared_dir(), "net.safetensors")
    ms.save_checkpoint(net, path)
    got = ms.load_checkpoint(path)                # every rank reads rank 0's file
    assert set(got) == set(want)
    for name, w in want.items():
        np.testing.assert_array_equal(got[name].asnumpy(), w, err_msg=name)


@pytest.mark.parametrize("case", sorted(CASES))
def test_shards_hold_their_slices_and_merge(semi, case):
    make_net, shape = CASES[case]
    want = serial_params(make_net)
    net, layouts = sharded(make_net, shape)
    folder = shared_dir()
    ms.save_checkpoint(net, os.path.join(folder, f"rank{get_rank()}.safetensors"),
                       integrated_save=False)
    MPI.COMM_WORLD.Barrier()
    mine = ms.load_checkpoint(os.path.join(folder, f"rank{get_rank()}.safetensors"))
    for name, w in want.items():
        lay = layouts[name].layout
        np.testing.assert_array_equal(mine[name].asnumpy(), w[lay.slice_of(get_rank())])
        if any(lay.dim_axes):
            assert mine[name].layout == lay
    # every rank's file together rebuilds the whole parameter (placed by layout)
    shards = [ms.load_checkpoint(os.path.join(folder, f"rank{r}.safetensors"))
              for r in range(N)]
    for name, w in want.items():
        lay = layouts[name].layout
        blocks = np.stack([s[name].asnumpy() for s in shards])
        np.testing.assert_array_equal(place_slices(blocks, lay), w)


@pytest.mark.parametrize("case", sorted(CASES))
def test_whole_checkpoint_loads_into_a_sharded_net(semi, case):
    make_net, shape = CASES[case]
    x = Tensor(data(*shape))
    ms.reset_auto_parallel_context()
    want = run_serial(make_net, x)
    path = os.path.join(shared_dir(), "serial.safetensors")
    if get_rank() == 0:
        ms.save_checkpoint(make_net(), path)
    MPI.COMM_WORLD.Barrier()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = make_net()
    for p in net.get_parameters():                 # start from other weights
        p.set_data(np.zeros(p.shape, p.asnumpy().dtype))
    net(x)                                         # compiled and run once before loading
    assert ms.load_param_into_net(net, ms.load_checkpoint(path)) == ([], [])
    np.testing.assert_allclose(gather_full(net(x)).asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_rank0_write_failure_raises_on_every_rank(semi, monkeypatch):
    make_net, shape = CASES["rows_split"]
    net, _ = sharded(make_net, shape)
    folder = shared_dir()
    path = os.path.join(folder, "net.safetensors")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    if get_rank() == 0:
        monkeypatch.setattr(serialization, "write_tensors", fail)
        with pytest.raises(OSError, match="disk full"):
            ms.save_checkpoint(net, path)
    else:
        with pytest.raises(RuntimeError, match=r"rank 0 failed to write '.*net\.safetensors'"):
            ms.save_checkpoint(net, path)
    assert not os.path.exists(path)


def test_shards_load_into_another_strategy_and_stand_alone(semi):
    """Shards saved under one strategy load into the same net under another strategy on
    N ranks, and into a stand-alone net: outputs equal serial."""
    x = Tensor(data(16, 32))
    saved_as = lambda: Chain(((N // 2, 2), (2, 1)), ((1, 1), (1, N)))      # noqa: E731
    load_as = lambda: Chain(((1, N), (N, 1)), ((2, N // 2), (N // 2, 1)))  # noqa: E731
    ms.reset_auto_parallel_context()
    want = run_serial(saved_as, x)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    net, _ = sharded(saved_as, (16, 32))
    folder = shared_dir()
    files = [os.path.join(folder, f"rank{r}.safetensors") for r in range(N)]
    ms.save_checkpoint(net, files[get_rank()], integrated_save=False)
    MPI.COMM_WORLD.Barrier()
    fresh = load_as()
    for p in fresh.get_parameters():
        p.set_data(np.zeros(p.shape, np.float32))
    assert ms.load_distributed_checkpoint(fresh, files) == ([], [])
    np.testing.assert_allclose(gather_full(fresh(x)).asnumpy(), want, rtol=1e-4, atol=1e-4)
    ms.reset_auto_parallel_context()
    alone = load_as()
    ms.load_distributed_checkpoint(alone, files)
    np.testing.assert_allclose(alone(x).asnumpy(), want, rtol=1e-4, atol=1e-4)
