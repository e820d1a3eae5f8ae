"""The parallel optimizer (enable_parallel_optimizer=True) on real MPI worlds: 20 training
steps equal the serial run (computed on every rank, stand-alone), each rank stores and
updates only its dim-0 shard of every replicated parameter that divides, and the per-rank
parameter + optimizer-state bytes of the compiled step fall accordingly."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)

OPTIMIZERS = {
    "sgd_momentum": lambda ps: nn.SGD(ps, learning_rate=0.02, momentum=0.9),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01),
}
STEPS = 20


def data():
    rng = np.random.default_rng(2)
    return (rng.standard_normal((16, 6)).astype(np.float32),
            rng.standard_normal((16, 3)).astype(np.float32))


def mlp():
    """dims 16 and 8 divide 2/4/8 ranks; the last layer's 3 rows do not (stay whole)."""
    ms.set_seed(1)
    return nn.SequentialCell([nn.Dense(6, 16, activation="relu"),
                              nn.Dense(16, 8, activation="relu"), nn.Dense(8, 3)])


class ReplicatedMatMuls(nn.Cell):
    """semi_auto_parallel with replicated weights: the batch split over every rank."""

    def __init__(self, n):
        super().__init__()
        ms.set_seed(1)
        self.w1 = ms.Parameter(Tensor(np.random.default_rng(4).standard_normal((6, 16))
                                      .astype(np.float32) * 0.3), "w1")
        self.w2 = ms.Parameter(Tensor(np.random.default_rng(5).standard_normal((16, 3))
                                      .astype(np.float32) * 0.3), "w2")
        self.m1 = ops.MatMul().shard(((n, 1), (1, 1)))
        self.relu = ops.ReLU().shard(((n, 1),))
        self.m2 = ops.MatMul().shard(((n, 1), (1, 1)))

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w1)), self.w2)


def train(make_net, optimizer, mode=None, **keys):
    ms.reset_auto_parallel_context()
    if mode is not None:
        ms.set_auto_parallel_context(parallel_mode=mode, device_num=get_group_size(),
                                     full_batch=True, **keys)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = make_net()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   optimizer(net.trainable_params()))
        x, y = data()
        losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(STEPS)]
        graph = step._compile_cache.last_graph()
        # the bytes this process holds for the step's Parameters (params + optimizer state)
        stored = sum(p.value.asnumpy().nbytes for p in graph.parameters)
        layouts = net.parameter_layout_dict if mode is not None else {}
        params = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
    finally:
        ms.reset_auto_parallel_context()
    return losses, params, layouts, stored, graph


CASES = {
    "data_parallel": (mlp, "data_parallel"),
    "semi_auto_replicated": (lambda: ReplicatedMatMuls(get_group_size()),
                             "semi_auto_parallel"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_sharded_training_equals_serial(case, name):
    n = get_group_size()
    make_net, mode = CASES[case]
    want_losses, want, _, _, _ = train(make_net, OPTIMIZERS[name])
    _, _, _, replicated_bytes, _ = train(make_net, OPTIMIZERS[name], mode)
    losses, got, layouts, sharded_bytes, graph = train(
        make_net, OPTIMIZERS[name], mode, enable_parallel_optimizer=True,
        parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    assert losses[-1] < losses[0]
    rank = ms.communication.get_rank()
    for pname, value in want.items():
        lay = layouts[pname]
        sharded = value.shape[0] % n == 0
        assert bool(lay.opt_shard_group) == sharded, pname
        assert lay.slice_shape[0] == (value.shape[0] // n if sharded else value.shape[0])
        # the Parameter holds only this rank's shard: compare it with the serial one's
        assert got[pname].shape == tuple(lay.slice_shape), pname
        np.testing.assert_allclose(got[pname], value[lay.layout.slice_of(rank)], rtol=1e-4,
                                   atol=1e-5, err_msg=pname)
    # bytes of parameters + optimizer state the step reads/writes on this rank
    whole = sum(v.nbytes for k, v in want.items() if v.shape[0] % n)
    print(f"[{case}/{name}] n={n}: per-rank param+state bytes {sharded_bytes} vs "
          f"replicated {replicated_bytes}")
    assert sharded_bytes < replicated_bytes
    if case == "data_parallel":
        # everything that divides falls to 1/n; the 3-row layer (and scalars) stay whole
        states = 2 if name == "adam" else 1
        assert sharded_bytes <= replicated_bytes / n + (1 + states) * whole + 64
    assert "AllGather" in [nd.op for nd in graph.nodes]
    assert "ReduceScatter" in [nd.op for nd in graph.nodes]


def grouped_momentum(ps):
    """MindSpore's groups: weights with their own schedule and weight decay, biases with a
    per-step list, the update in reverse order, gradients scaled by 2."""
    weights = [p for p in ps if p.name.endswith("weight")]
    biases = [p for p in ps if not p.name.endswith("weight")]
    return nn.Momentum([{"params": weights, "weight_decay": 0.01, "lr": lambda t: 0.05 / (1 + t)},
                        {"params": biases, "lr": [0.02, 0.01]},
                        {"order_params": ps[::-1]}], 0.02, 0.9, loss_scale=2.0)


@pytest.mark.parametrize("sharded", [False, True], ids=["replicated", "opt_sharded"])
def test_grouped_optimizer_equals_serial(sharded):
    keys = dict(enable_parallel_optimizer=True,
                parallel_optimizer_config={"parallel_optimizer_threshold": 0}) if sharded else {}
    want_losses, want, _, _, _ = train(mlp, grouped_momentum)
    losses, got, layouts, _, _ = train(mlp, grouped_momentum, "data_parallel", **keys)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    rank = ms.communication.get_rank()
    for pname, value in want.items():
        where = layouts[pname].layout.slice_of(rank) if sharded else ...
        np.testing.assert_allclose(got[pname], value[where], rtol=1e-4, atol=1e-5,
                                   err_msg=pname)


# -- communication fusion (graph/fusion.py) -------------------------------------------------
TINY = {"mode": "size", "config": 1e-6}        # every bucket one collective: nothing fuses
FUSION = {
    "auto": None,                                                   # one bucket of each
    "split": {"allgather": {"mode": "size", "config": 600 / 2 ** 20},
              "reducescatter": {"mode": "size", "config": 600 / 2 ** 20}},
    "unfused": {"allgather": TINY, "reducescatter": TINY},
}


@pytest.mark.ranks(2, 4)       # the fused cases (8 ranks: minutes on 2 cores)
@pytest.mark.parametrize("fusion", sorted(FUSION))
def test_fused_gathers_and_reduce_scatters_equal_serial(fusion):
    """The opt-sharded data-parallel MLP with its gathers and reduce-scatters fused into one
    bucket each (auto), into buckets of 600 bytes (several) and not at all: the same
    losses and shards as the serial run, with the expected number of collectives."""
    n = get_group_size()
    opt = OPTIMIZERS["adam"]
    want_losses, want, _, _, _ = train(mlp, opt)
    losses, got, layouts, _, graph = train(
        mlp, opt, "data_parallel", enable_parallel_optimizer=True, comm_fusion=FUSION[fusion],
        parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    rank = ms.communication.get_rank()
    for pname, value in want.items():
        where = layouts[pname].layout.slice_of(rank)
        np.testing.assert_allclose(got[pname], value[where], rtol=1e-4, atol=1e-5,
                                   err_msg=pname)
    sharded = [v for v in want.values() if v.shape[0] % n == 0]     # 2 weights + 2 biases
    ops_ = [nd.op for nd in graph.nodes]
    gathers, scatters = ops_.count("AllGather"), ops_.count("ReduceScatter")
    if fusion == "auto":
        assert gathers == scatters == 1
        first = min(k for k, nd in enumerate(graph.nodes) if nd.op == "MatMul")
        assert ops_.index("AllGather") < first          # issued before any compute
    elif fusion == "unfused":
        assert gathers == scatters == len(sharded)
    else:   # shards (<= 496 bytes a rank) fit one bucket; the 992 gradient bytes take two
        assert (gathers, scatters) == (1, 2)


class Collectives(nn.Cell):
    """Explicit collectives with fusion ids, compiled stand-alone (the user's own
    communication): gathers and reduce-scatters of mixed shapes and dtypes, an all-reduce
    pair, a gather of a gathered value (cannot join its producer's bucket), and one with
    fusion id 0 (never fused)."""

    def __init__(self, fused):
        super().__init__()
        f = 1 if fused else 0
        self.ag = [ops.AllGather().add_prim_attr("fusion", f) for _ in range(4)]
        self.ag0 = ops.AllGather()
        self.rs = [ops.ReduceScatter().add_prim_attr("fusion", f) for _ in range(3)]
        self.ar = [ops.AllReduce().add_prim_attr("fusion", f) for _ in range(2)]

    def construct(self, a, b, c, d):
        g0, g1, g2 = self.ag[0](a), self.ag[1](b), self.ag[2](c)
        g3 = self.ag[3](g0 * 2.0)
        r0, r1, r2 = self.rs[0](g1), self.rs[1](d), self.rs[2](g2)
        s0, s1 = self.ar[0](a), self.ar[1](d * 3.0)
        return g0, g1, g2, g3, self.ag0(a), r0, r1, r2, s0, s1


@pytest.mark.ranks(2, 4)
def test_explicit_fused_collectives_equal_unfused_and_numpy():
    n = get_group_size()
    rank = ms.communication.get_rank()
    rng = np.random.default_rng(7)
    every = [(rng.standard_normal((2, 3)).astype(np.float32),
              rng.integers(-9, 9, (1, 2, 2)).astype(np.int32),
              rng.standard_normal((3,)).astype(np.float32),
              rng.standard_normal((2 * n, 5)).astype(np.float32)) for _ in range(n)]
    mine = [Tensor(v) for v in every[rank]]
    ms.set_context(mode=ms.GRAPH_MODE)
    outs = {}
    for fused in (True, False):
        net = Collectives(fused)
        outs[fused] = [o.asnumpy() for o in net(*mine)]
        graph = net._compile_cache.last_graph()
        comm = [nd.op for nd in graph.nodes if nd.is_communication]
        if fused:   # gathers {a, c}, b (int32), g3 (of g0), ag0; scatters {d, g2}, g1
            assert sorted(comm) == sorted(["AllGather"] * 4 + ["ReduceScatter"] * 2 +
                                          ["AllReduce"]), comm
    cat = lambda k: np.concatenate([e[k] for e in every])                 # noqa: E731
    g0 = cat(0)
    want = [g0, cat(1), cat(2), np.concatenate([g0 * 2] * n), g0]
    rows = lambda x: x[rank * (len(x) // n):(rank + 1) * (len(x) // n)]   # noqa: E731
    want += [rows(n * cat(1)), rows(sum(e[3] for e in every)), rows(n * cat(2)),
             sum(e[0] for e in every), sum(e[3] * 3 for e in every)]
    for k, (f, u, w) in enumerate(zip(outs[True], outs[False], want)):
        np.testing.assert_array_equal(f, u, err_msg=f"output {k}")
        np.testing.assert_allclose(f, w, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")
