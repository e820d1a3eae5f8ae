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
