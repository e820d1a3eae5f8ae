"""Parameters hold only their slice after a parallel compile, and checkpoints of an
optimizer-sharded training step (Adam) under real MPI.

* the held slices: per-rank resident bytes of parameters + Adam's moments; a later
  compile with another layout, or a serial one, reshards them (gathering to whole);
* (a) an integrated save of the optimizer-sharded TrainOneStepCell equals the serial run's
  parameters and optimizer state after the same steps;
* (b) that checkpoint loads into a fresh run (stand-alone: another rank count; N ranks
  without the parallel optimizer; N ranks with it) and training continues equal to the
  uninterrupted serial run;
* (c) `integrated_save=False` shards carry `opt_shard_group` in their layout,
  `msops ckpt verify` / `merge` handle them, and the strategy file names the real group.
"""
import json
import os
import tempfile

import numpy as np
import pytest
from mpi4py import MPI
from parallel_oracle import assert_held

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full
from msops.train import ckpt_cli
from msops.train.safetensors_io import read_tensors

RANKS = (2, 4)
N = get_group_size()
STEPS = 3


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(np.float32)


X, Y = Tensor(data(16, 8, seed=1)), Tensor(data(16, 3, seed=2))


class Net(nn.Cell):
    """MatMul -> ReLU -> MatMul + bias. `mp`: w1's columns split over 2 ranks (replicated
    over the other N/2, so on 4 ranks it is optimizer-sharded on top: SaveOptShardCkptCell),
    w2 replicated; else data parallel. b (3,) never divides: it stays whole."""

    def __init__(self, mp=False):
        super().__init__()
        self.m1 = ops.MatMul()
        self.act = ops.ReLU()
        self.m2 = ops.MatMul()
        self.add = ops.Add()
        if mp:
            self.m1.shard(((1, 1), (1, 2)))
            self.act.shard(((1, 2),))
            self.m2.shard(((N, 1), (1, 1)))
        self.w1 = Parameter(Tensor(data(8, 16) * 0.5), name="w1")
        self.w2 = Parameter(Tensor(data(16, 3, seed=3) * 0.5), name="w2")
        self.b = Parameter(Tensor(data(3, seed=4)), name="b")

    def construct(self, x):
        return self.add(self.m2(self.act(self.m1(x, self.w1)), self.w2), self.b)


def train_step(mp=False):
    net = Net(mp)
    return nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Adam(net.trainable_params(), learning_rate=0.01))


def run(step, steps=STEPS):
    return [float(step(X, Y).asnumpy()) for _ in range(steps)]


def state(step):
    return {p.name: p.asnumpy().copy() for p in step.get_parameters()}


CONTEXTS = {   # case -> (parallel_mode, Net(mp))
    "data_parallel": ("data_parallel", False),
    "semi_auto_mp": ("semi_auto_parallel", True),
}


def parallel(case, optimizer=True, **keys):
    mode, _ = CONTEXTS[case]
    ms.set_auto_parallel_context(parallel_mode=mode, device_num=N, full_batch=True,
                                 enable_parallel_optimizer=optimizer,
                                 parallel_optimizer_config={"parallel_optimizer_threshold": 0},
                                 **keys)
    ms.set_context(mode=ms.GRAPH_MODE)


def shared_dir():
    path = tempfile.mkdtemp(prefix="msops-optckpt-") if get_rank() == 0 else None
    return MPI.COMM_WORLD.bcast(path)


@pytest.fixture(scope="module")
def serial():
    """The uninterrupted serial run: (losses of 2*STEPS steps, state after STEPS, after 2*STEPS)."""
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    step = train_step()
    losses = run(step)
    half = state(step)
    losses += run(step)
    return losses, half, state(step)


@pytest.fixture(autouse=True)
def _reset():
    yield
    ms.reset_auto_parallel_context()


def test_parameters_hold_their_slices_and_reshard_for_another_compile():
    """After a Megatron compile each rank holds only its slice; a compile with another
    strategy reshards it (an all-to-all / gather), a serial one gathers it whole; the
    outputs equal serial throughout."""
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(data(4, 8, seed=5))

    def make(s1, s2):
        net = Net()
        net.m1.shard(s1)
        net.m2.shard(s2)
        return net
    ms.reset_auto_parallel_context()
    serial = Net()
    want = serial(x).asnumpy()
    whole = {p.name: p.asnumpy().copy() for p in serial.get_parameters()}
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    net = make(((1, 1), (1, N)), ((1, N), (N, 1)))              # w1 by columns, w2 by rows
    np.testing.assert_allclose(gather_full(net(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    layouts = net.parameter_layout_dict
    assert net.w1.shape == (8, 16 // N) and net.w2.shape == (16 // N, 3)
    for p in net.get_parameters():
        assert_held(p, whole[p.name], layouts[p.name].layout)
        np.testing.assert_array_equal(gather_full(p).asnumpy(), whole[p.name])   # by _layout
    # another net with other strategies on the same Parameters: resharded at its compile
    # (w1 by rows now), and back when the first net's cached executor runs again
    other = make(((1, N), (N, 1)), ((1, 1), (1, 1)))
    other.w1, other.w2, other.b = net.w1, net.w2, net.b
    np.testing.assert_allclose(gather_full(other(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert net.w1.shape == (8 // N, 16) and net.w2.shape == (16, 3)
    assert_held(net.w1, whole["w1"], other.parameter_layout_dict["w1"].layout)
    np.testing.assert_allclose(gather_full(net(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert net.w1.shape == (8, 16 // N) and net.w2.shape == (16 // N, 3)
    # a serial compile after the parallel ones: every rank gathers the whole arrays back
    ms.reset_auto_parallel_context()
    np.testing.assert_allclose(net(x).asnumpy(), want, rtol=1e-5, atol=1e-6)
    for p in net.get_parameters():
        np.testing.assert_array_equal(p.asnumpy(), whole[p.name], err_msg=p.name)
        assert p._layout is None


@pytest.mark.parametrize("case", sorted(CONTEXTS))
def test_integrated_save_equals_serial_params_and_state_and_resumes(serial, case):
    want_losses, half, final = serial
    folder = shared_dir()
    strategy_file = os.path.join(folder, "strategy.json")     # every rank writes it alike
    parallel(case, strategy_ckpt_save_file=strategy_file)
    step = train_step(CONTEXTS[case][1])
    losses = run(step)
    np.testing.assert_allclose(losses, want_losses[:STEPS], rtol=1e-5, atol=1e-6)
    layouts = step.parameter_layout_dict
    sharded = sorted(n for n, lay in layouts.items() if lay.opt_shard_group)
    # w1 split over 2 ranks by columns has replicas to shard over only on 4 ranks
    weights = ["w2"] + (["w1"] if case == "data_parallel" or N >= 4 else [])
    want_sharded = {f"{pre}{w}" for w in weights for pre in ("", "moment1.", "moment2.")}
    assert set(sharded) == want_sharded, sharded                      # b: 3 never divides
    # resident bytes: every Parameter and moment holds 1/N of the whole (w1 on 2 ranks:
    # its model-parallel half), so the rank's total is the replicated run's / N + b's
    held = {p.name: p.asnumpy().nbytes for p in step.get_parameters()}
    for name in want_sharded | {"w1", "moment1.w1", "moment2.w1"}:
        assert held[name] * N == half[name].nbytes, (name, held[name])
    for p in step.get_parameters():
        assert_held(p, half[p.name], layouts[p.name].layout if p.name in layouts else None,
                    rtol=1e-5, atol=1e-6)

    # (a) the integrated checkpoint: the serial run's parameters and Adam state
    path = os.path.join(folder, "step.safetensors")
    ms.save_checkpoint(step, path)
    saved = ms.load_checkpoint(path)
    assert set(saved) == set(half)
    for name, w in half.items():
        np.testing.assert_allclose(saved[name].asnumpy(), w, rtol=1e-5, atol=1e-6,
                                   err_msg=name)

    # (c) shards: their layout names the opt-shard group; verify and merge handle them
    shard = os.path.join(folder, f"rank_{get_rank()}", f"step_{get_rank()}.safetensors")
    os.makedirs(os.path.dirname(shard), exist_ok=True)
    ms.save_checkpoint(step, shard, integrated_save=False)
    _, meta = read_tensors(shard)
    for name in sharded:
        assert meta[name]["layout"]["opt_shard_group"] == layouts[name].opt_shard_group
        assert meta[name]["slice"]
    assert "opt_shard_group" not in meta["b"].get("layout", {})
    items = json.load(open(strategy_file))["parallel_layout_item"]
    # the real group (every rank writes the file: a group of the same partition as ours)
    for name in ("w1", "w2"):
        group = items[name]["opt_shard_group"]
        assert bool(group) == (name in sharded)
        assert len(group.split(",")) == len(layouts[name].opt_shard_group.split(","))
    MPI.COMM_WORLD.Barrier()
    if get_rank() == 0:
        assert ckpt_cli.main(["verify", folder]) == 0
        merged = os.path.join(folder, "merged.safetensors")
        assert ckpt_cli.main(["merge", folder, merged]) == 0
        for name, arr in ms.load_checkpoint(merged).items():
            np.testing.assert_allclose(arr.asnumpy(), half[name], rtol=1e-5, atol=1e-6,
                                       err_msg=name)
    MPI.COMM_WORLD.Barrier()

    # (b) resume from the integrated checkpoint, equal to the uninterrupted serial run
    def resume(setup):
        setup()
        fresh = train_step(CONTEXTS[case][1])
        assert ms.load_param_into_net(fresh, ms.load_checkpoint(path)) == ([], [])
        got = run(fresh)
        np.testing.assert_allclose(got, want_losses[STEPS:], rtol=1e-5, atol=1e-6)
        layouts = fresh.parameter_layout_dict
        for p in fresh.get_parameters():
            lay = layouts[p.name].layout if p.name in layouts else None
            assert_held(p, final[p.name], lay, rtol=1e-4, atol=1e-6)
        ms.reset_auto_parallel_context()
        return fresh

    resume(lambda: (ms.reset_auto_parallel_context(),
                    ms.set_context(mode=ms.GRAPH_MODE)))       # stand-alone: 1 rank
    resume(lambda: parallel(case, optimizer=False))            # N ranks, no optimizer sharding
    again = resume(lambda: parallel(case))                     # N ranks, sharded again
    # a whole checkpoint loaded into the compiled, optimizer-sharded step: each rank's slice
    parallel(case)
    ms.load_param_into_net(again, ms.load_checkpoint(path))
    layouts = again.parameter_layout_dict
    for p in again.get_parameters():
        assert_held(p, half[p.name], layouts[p.name].layout if p.name in layouts else None,
                    rtol=1e-5, atol=1e-6)
