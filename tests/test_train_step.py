"""The compiled training step: forward + backward + optimizer update as one graph (GRAPH_MODE)
and the same ops eagerly (PYNATIVE_MODE) give the same numbers."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 5)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)

OPTIMIZERS = {
    "sgd_momentum": lambda ps: nn.SGD(ps, learning_rate=0.05, momentum=0.9, dampening=0.1,
                                      weight_decay=0.01),
    "adam": lambda ps: nn.Adam(ps, learning_rate=lambda t: 0.01 * 0.9 ** t, weight_decay=0.01),
}


def _train(mode, make_optimizer, steps=20):
    ms.set_context(mode=mode)
    ms.set_seed(5)
    net = nn.SequentialCell([nn.Dense(5, 16, activation="relu"), nn.Dense(16, 3)])
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                make_optimizer(net.trainable_params()))
    losses = [float(train(Tensor(X), Tensor(Y)).asnumpy()) for _ in range(steps)]
    return train, losses, [p.asnumpy().copy() for p in net.trainable_params()]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_pynative_equals_graph_mode_for_twenty_steps(name):
    graph_train, graph_losses, graph_params = _train(ms.GRAPH_MODE, OPTIMIZERS[name])
    _, eager_losses, eager_params = _train(ms.PYNATIVE_MODE, OPTIMIZERS[name])
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for g, e in zip(graph_params, eager_params):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7)
    assert graph_losses[-1] < 0.8 * graph_losses[0]                # it learns
    assert graph_train._compile_cache.traces == 1                 # compiled once
    assert int(graph_train.optimizer.global_step.asnumpy()[0]) == 20


def test_the_step_is_one_graph_with_the_update_in_it():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.Dense(5, 3)
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    graph = train.compile(Tensor(X), Tensor(Y))
    writes = [n.inputs[0].name for n in graph.nodes if n.op == "Assign"]
    assert sorted(writes) == sorted(["weight", "bias", "moments.weight", "moments.bias",
                                     "global_step"])
    assert len(graph.outputs) == 1                                  # the loss
    order = [n.op for n in graph.nodes]
    assert order.index("Assign") > max(i for i, op in enumerate(order) if op == "MatMul")


def test_the_compiled_step_changes_the_learning_rate_every_step():
    """A per-step list: the compiled step reads the rate the host writes before each run."""
    rates = [0.1, 0.0, 0.3]
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.Dense(5, 3)
    w0 = net.weight.asnumpy().copy()
    opt = nn.SGD(net.trainable_params(), rates)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None, opt.parameters)
    want = w0
    for t in range(4):
        ms.set_context(mode=ms.PYNATIVE_MODE)
        g = grad_fn(Tensor(X), Tensor(Y))[1][0].asnumpy()
        ms.set_context(mode=ms.GRAPH_MODE)
        train(Tensor(X), Tensor(Y))
        want = want - rates[min(t, 2)] * g
        np.testing.assert_allclose(net.weight.asnumpy(), want, rtol=1e-5, atol=1e-7)
    assert train._compile_cache.traces == 1


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_an_optimizer_called_on_gradients_updates_in_place(mode):
    ms.set_context(mode=mode)
    net = nn.Dense(5, 3)
    w, b = net.weight.asnumpy(), net.bias.asnumpy()
    w0, b0 = w.copy(), b.copy()
    opt = nn.Adam(net.trainable_params(), learning_rate=0.1)
    gw, gb = RNG.standard_normal(w.shape).astype(np.float32), np.ones(3, np.float32)
    for _ in range(2):
        opt((Tensor(gw), Tensor(gb)))
    # two Adam steps on a constant gradient: m/sqrt(v) bias-corrected = sign(g) each step
    np.testing.assert_allclose(net.weight.asnumpy(), w0 - 0.2 * np.sign(gw), rtol=1e-4)
    np.testing.assert_allclose(net.bias.asnumpy(), b0 - 0.2, rtol=1e-4)
    assert net.weight.asnumpy() is w                       # written in place
    names = sorted(n for n, _ in opt.parameters_and_names())
    assert names == sorted(["global_step", "learning_rate_value", "beta1_power",
                            "beta2_power", "moment1.weight", "moment1.bias",
                            "moment2.weight", "moment2.bias"])
    if mode == ms.GRAPH_MODE:
        assert opt._compiled.traces == 1
