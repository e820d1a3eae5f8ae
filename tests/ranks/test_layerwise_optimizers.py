"""Lamb and LARS in parallel steps: their per-parameter norms (the trust ratio) are
reductions over a Parameter's slice on each rank, which the step's tail completes over the
ranks holding the other slices. A few training steps equal the serial run (computed on
every rank, stand-alone) for model-parallel split weights (semi_auto_parallel; in the
training cell's graph, in an ms.jit step, or in the optimizer's own graph fed with
value_and_grad's sliced gradients) and for the parallel optimizer's dim-0 shards (data_parallel and
semi_auto_parallel), and the graph holds the AllReduces that complete the norms."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
STEPS = 4

OPTIMIZERS = {   # LARS's ratios stay < 1 after the clip: the norms decide every update
    "lamb": lambda ps: nn.Lamb(ps, 0.02, weight_decay=0.05),
    "lars": lambda ps: nn.LARS(nn.Momentum(ps, 0.1, 0.9, weight_decay=0.01, loss_scale=2.0),
                               coefficient=0.5),
    "lars_clip": lambda ps: nn.LARS(nn.Momentum(ps, 0.5, 0.9, weight_decay=0.01),
                                    coefficient=0.01, use_clip=True),
}


def data():
    rng = np.random.default_rng(2)
    return (rng.standard_normal((16, 8)).astype(np.float32),
            rng.standard_normal((16, 4)).astype(np.float32))


def weight(shape, seed):
    return Tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.3)


class Megatron(nn.Cell):
    """d1's weight split by rows (its output columns), d2's by columns; d2's bias whole."""

    def __init__(self):
        super().__init__()
        n = get_group_size()
        self.d1 = nn.Dense(8, 16, weight_init=weight((16, 8), 4))
        self.d1.matmul.shard(((1, 1), (n, 1)))
        self.d1.bias_add.shard(((1, n), (n,)))
        self.act = nn.ReLU()
        self.act.relu.shard(((1, n),))
        self.d2 = nn.Dense(16, 4, weight_init=weight((4, 16), 5))
        self.d2.matmul.shard(((1, n), (1, n)))

    def construct(self, x):
        return self.d2(self.act(self.d1(x)))


def mlp():
    ms.set_seed(1)
    return nn.SequentialCell([nn.Dense(8, 16, activation="relu"), nn.Dense(16, 4)])


CASES = {   # (net, parallel mode, extra context)
    "megatron": (Megatron, "semi_auto_parallel", {}),
    "megatron_opt_shard": (Megatron, "semi_auto_parallel", {"enable_parallel_optimizer": True}),
    "data_parallel_opt_shard": (mlp, "data_parallel", {"enable_parallel_optimizer": True}),
    "megatron_update_outside": (Megatron, "semi_auto_parallel", {"how": "outside"}),
    "megatron_jit_step": (Megatron, "semi_auto_parallel", {"how": "jit"}),
}


def train(make_net, optimizer, mode=None, how="cell", **keys):
    """STEPS of TrainOneStepCell ("cell"); of value_and_grad's compiled gradients (this
    rank's slices) then the optimizer's own compiled update ("outside"); or of
    value_and_grad + the optimizer in one ms.jit step (PYNATIVE_MODE, "jit")."""
    ms.reset_auto_parallel_context()
    if mode is not None:
        if keys.get("enable_parallel_optimizer"):
            keys["parallel_optimizer_config"] = {"parallel_optimizer_threshold": 0}
        ms.set_auto_parallel_context(parallel_mode=mode, device_num=get_group_size(),
                                     full_batch=True, **keys)
    ms.set_context(mode=ms.PYNATIVE_MODE if how == "jit" else ms.GRAPH_MODE)
    try:
        net = make_net()
        opt = optimizer(net.trainable_params())
        x, y = data()
        if how == "jit":
            grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                        opt.parameters)

            def step(x, y):
                loss, grads = grad_fn(x, y)
                opt(grads)
                return loss
            run = ms.jit(step)
            losses = [float(run(Tensor(x), Tensor(y)).asnumpy()) for _ in range(STEPS)]
            graph = run._cache.last_graph()
        elif how == "outside":
            grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                        opt.parameters)
            losses = []
            for _ in range(STEPS):
                loss, grads = grad_fn(Tensor(x), Tensor(y))
                opt(grads)
                losses.append(float(loss.asnumpy()))
            graph = opt._compiled.last_graph()
        else:
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
            losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(STEPS)]
            graph = step._compile_cache.last_graph()
        layouts = {id(p.value): p.layout for p in graph.parameters}
        params = {p.name: (p.asnumpy().copy(), layouts.get(id(p)))
                  for p in net.trainable_params()}
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.GRAPH_MODE)
    return losses, params, graph


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_layerwise_optimizer_equals_serial(case, name):
    make_net, mode, keys = CASES[case]
    want_losses, want, _ = train(make_net, OPTIMIZERS[name], how=keys.get("how", "cell"))
    losses, got, graph = train(make_net, OPTIMIZERS[name], mode, **keys)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-4, atol=1e-6)
    rank = get_rank()
    held = 0
    for pname, (value, _) in want.items():
        mine, layout = got[pname]
        where = layout.slice_of(rank) if layout is not None else ...
        held += mine.shape != value.shape
        np.testing.assert_allclose(mine, value[where], rtol=1e-4, atol=1e-5, err_msg=pname)
    assert held >= 2                                      # slices, not whole copies
    # the trust ratios' norms of sliced parameters are completed across the ranks
    assert "AllReduce" in [nd.op for nd in graph.nodes]
