"""The parallel optimizer with gradient accumulation and a shard group smaller than the
replica group, on real MPI worlds, against the serial run (stand-alone on every rank).

The net is semi-auto-parallel with its weights split over an mp axis and replicated over
a dp axis (mp = 2 from 4 ranks), plus one weight replicated over every rank. Checked:
20 sharded training steps (SGD with momentum, Adam) equal serial; k mini-steps of batch b
(`grad_accumulation_step`) and micro_size micro-batches (`nn.GradAccumulationCell`) equal
one step on the whole batch, gathered by `_MiniStepAllGather` / `_MicroStepAllGather` with
the reduce-scatter once per optimizer step; `optimizer_weight_shard_size=2` stores 1/2 of
a slice, AllReducing the shard's gradient over the other replicas; a size that does not
divide the replica group is a ValueError on every rank; a weight read in two layouts is
gathered once."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4, 8)

OPTIMIZERS = {
    "sgd_momentum": lambda ps: nn.SGD(ps, learning_rate=0.02, momentum=0.9),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01),
}


def data():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((16, 8)).astype(np.float32),
            rng.standard_normal((16, 3)).astype(np.float32))


class MPNet(nn.Cell):
    """x @ w1 (cols over mp) -> relu -> @ w2 (rows over mp, partial sums) -> @ w3 (whole);
    the batch over dp = n / mp: w1 and w2 are replicated over dp, w3 over every rank."""

    def __init__(self, n):
        super().__init__()
        mp = 1 if n == 2 else 2
        dp = n // mp
        rng = np.random.default_rng(4)
        self.w1 = ms.Parameter(Tensor(rng.standard_normal((8, 16)).astype(np.float32) * .3), "w1")
        self.w2 = ms.Parameter(Tensor(rng.standard_normal((16, 8)).astype(np.float32) * .3), "w2")
        self.w3 = ms.Parameter(Tensor(rng.standard_normal((8, 3)).astype(np.float32) * .3), "w3")
        self.m1 = ops.MatMul().shard(((dp, 1), (1, mp)))
        self.relu = ops.ReLU().shard(((dp, mp),))
        self.m2 = ops.MatMul().shard(((dp, mp), (mp, 1)))
        self.m3 = ops.MatMul().shard(((dp, 1), (1, 1)))

    def construct(self, x):
        return self.m3(self.m2(self.relu(self.m1(x, self.w1)), self.w2), self.w3)


def set_mode(parallel, **keys):
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel",
                                     device_num=get_group_size(), full_batch=True,
                                     enable_parallel_optimizer=True, **keys)
    else:
        ms.set_auto_parallel_context(**keys)
    ms.set_context(mode=ms.GRAPH_MODE)


def config(shard_size):
    return {"parallel_optimizer_threshold": 0, "optimizer_weight_shard_size": shard_size}


def run(optimizer, calls, parallel, micro=1, **keys):
    """Train MPNet with `calls` (x, y) batches; (losses, params, layouts, step cell)."""
    set_mode(parallel, **keys)
    try:
        net = MPNet(get_group_size())
        loss = nn.WithLossCell(net, nn.MSELoss())
        if micro > 1:
            loss = nn.GradAccumulationCell(loss, micro)
        step = nn.TrainOneStepCell(loss, OPTIMIZERS[optimizer](net.trainable_params()),
                                   sens=1.0 / micro)
        losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for x, y in calls]
        layouts = net.parameter_layout_dict if parallel else {}
        params = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        ms.reset_auto_parallel_context()
    return losses, params, layouts, step


def check_shards(got, want, layouts, shard_size):
    """Each parameter's stored shard equals the serial run's; w1 and w2 are stored sharded
    over min(shard_size, dp) replicas (when their dim 0 slice divides), w3 over min(shard
    size, n)."""
    n, rank = get_group_size(), get_rank()
    mp = 1 if n == 2 else 2
    for name, value in want.items():
        lay = layouts[name]
        replicas = n if name == "w3" else n // mp
        parts = replicas if shard_size == -1 else min(shard_size, replicas)
        rows = value.shape[0] // (mp if name == "w2" else 1)
        if rows % parts == 0:
            assert lay.opt_shard_group, name
            assert lay.slice_shape[0] == rows // parts, (name, lay.slice_shape)
        np.testing.assert_allclose(got[name],
                                   value[lay.layout.slice_of(rank)], rtol=2e-4, atol=1e-5,
                                   err_msg=name)


def ops_of(step):
    return [nd.op for nd in step._compile_cache.last_graph().nodes]


@pytest.mark.parametrize("optimizer,shard_size", [("sgd_momentum", -1), ("adam", 2)])
def test_twenty_sharded_steps_equal_serial(optimizer, shard_size):
    calls = [data()] * 20
    want_losses, want, _, _ = run(optimizer, calls, parallel=False)
    losses, got, layouts, step = run(optimizer, calls, parallel=True,
                                     parallel_optimizer_config=config(shard_size))
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
    check_shards(got, want, layouts, shard_size)
    names = ops_of(step)
    assert "AllGather" in names and "ReduceScatter" in names
    if shard_size == 2 and get_group_size() > 2:   # w3: sharded over 2, reduced over the rest
        assert layouts["w3"].slice_shape[0] == 4
        assert "AllReduce" in names


# unfused: one gather (and reduce-scatter) per sharded weight; fused (the default
# comm_fusion): the gathers are one AllGather, the reduce-scatters one ReduceScatter
TINY = {"mode": "size", "config": 1 / 2 ** 20}
UNFUSED = {"allgather": TINY, "reducescatter": TINY}


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
def test_mini_steps_equal_one_step_on_the_whole_batch(fused):
    """grad_accumulation_step=2 on halves of the batch == one step on it (3 steps): the
    gathers are _MiniStepAllGathers (fused into one AllGather by default); only the
    applying call's graph reduce-scatters."""
    x, y = data()
    want_losses, want, _, _ = run("adam", [(x, y)] * 3, parallel=False)
    halves = [(x[:8], y[:8]), (x[8:], y[8:])] * 3
    _, got, layouts, step = run("adam", halves, parallel=True, grad_accumulation_step=2,
                                parallel_optimizer_config=config(2),
                                comm_fusion=None if fused else UNFUSED)
    check_shards(got, want, layouts, 2)
    graphs = [g for g, _ in step._compile_cache._entries.values()]
    assert len(graphs) == 2                        # an accumulating and an applying graph
    sharded = sum(bool(lay.opt_shard_group) for lay in layouts.values())
    groups = {lay.opt_shard_group for lay in layouts.values() if lay.opt_shard_group}
    for g in graphs:
        names = [nd.op for nd in g.nodes]
        applies = "Adam" in names or any(nd.op == "Assign" and nd.inputs[0].name == "w1"
                                         for nd in g.nodes)
        if fused:                  # one gather (and reduce-scatter) per shard group
            gathers = names.count("AllGather") + names.count("_MiniStepAllGather")
            assert gathers == len(groups) < sharded, names
            assert names.count("ReduceScatter") == (gathers if applies else 0), names
            continue
        gathers = names.count("_MiniStepAllGather")
        assert gathers == sharded > 0
        assert "AllGather" not in names
        assert names.count("ReduceScatter") == (gathers if applies else 0), names
    # the accumulation buffers are clear after the k-th call
    assert all(not np.any(buf.asnumpy()) for buf in step._mini.buffers)


@pytest.mark.parametrize("fused", [False, True], ids=["unfused", "fused"])
def test_micro_batches_equal_one_step_on_the_whole_batch(fused):
    """GradAccumulationCell(micro_size=2) == one step on the whole batch (3 steps): one
    _MicroStepAllGather and one ReduceScatter per sharded weight a step (fused: one of
    each)."""
    calls = [data()] * 3
    _, want, _, _ = run("sgd_momentum", calls, parallel=False)
    _, got, layouts, step = run("sgd_momentum", calls, parallel=True, micro=2,
                                parallel_optimizer_config=config(-1),
                                comm_fusion=None if fused else UNFUSED)
    check_shards(got, want, layouts, -1)
    names = ops_of(step)
    sharded = sum(bool(lay.opt_shard_group) for lay in layouts.values())
    groups = {lay.opt_shard_group for lay in layouts.values() if lay.opt_shard_group}
    assert sharded > 0
    if fused:                      # one gather and one reduce-scatter per shard group
        gathers = names.count("AllGather") + names.count("_MicroStepAllGather")
        assert gathers == names.count("ReduceScatter") == len(groups) < sharded, names
        return
    assert names.count("_MicroStepAllGather") == sharded
    assert names.count("ReduceScatter") == sharded and "AllGather" not in names


def test_shard_size_must_divide_the_replica_group():
    n = get_group_size()
    if n == 2:                       # 3 >= the group: the whole group (MindSpore's maximum)
        return
    set_mode(True, parallel_optimizer_config=config(3))
    try:
        net = MPNet(n)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.SGD(net.trainable_params()))
        with pytest.raises(ValueError, match=r"the 'optimizer_weight_shard_size' should "
                                             r"divide the replica group of Parameter 'w\d' "
                                             r"\(\d ranks\), but got 3"):
            step(*map(Tensor, data()))
    finally:
        ms.reset_auto_parallel_context()


class SharedNet(nn.Cell):
    """One weight read in two layouts: whole (the batch split) and by columns (split)."""

    def __init__(self, n):
        super().__init__()
        rng = np.random.default_rng(6)
        self.w = ms.Parameter(Tensor(rng.standard_normal((8, 8)).astype(np.float32) * .3), "w")
        self.m1 = ops.MatMul().shard(((n, 1), (1, 1)))
        self.relu = ops.ReLU().shard(((n, 1),))
        self.m2 = ops.MatMul().shard(((1, 1), (1, n)))

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w)), self.w)


def test_weight_read_in_two_layouts_is_gathered_once():
    """The second consumer takes its slice of the gathered weight; with mini-steps the one
    _MiniStepAllGather's z receives both consumers' gradients."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    y = rng.standard_normal((16, 8)).astype(np.float32)

    def train(parallel, **keys):
        set_mode(parallel, **keys)
        try:
            net = SharedNet(get_group_size())
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                       nn.SGD(net.trainable_params(), 0.05, momentum=0.9))
            rows = x.shape[0] // (2 if parallel else 1)
            for _ in range(3):
                for i in range(2 if parallel else 1):
                    step(Tensor(x[i * rows:(i + 1) * rows]), Tensor(y[i * rows:(i + 1) * rows]))
            return net.w.asnumpy().copy(), net.parameter_layout_dict if parallel else {}, step
        finally:
            ms.reset_auto_parallel_context()
    want, _, _ = train(False)
    got, layouts, step = train(True, grad_accumulation_step=2,
                               parallel_optimizer_config=config(-1))
    part = layouts["w"].layout.slice_of(get_rank())
    np.testing.assert_allclose(got, want[part], rtol=1e-4, atol=1e-6)
    assert ops_of(step).count("_MiniStepAllGather") == 1
