"""Training in stand-alone mode: WithLossCell + TrainOneStepCell + SGD / Momentum / Adam /
AdamWeightDecay and
MSELoss, 20 steps of a small MLP against a numpy re-implementation (its own forward,
backward and update rules), in GRAPH_MODE and PYNATIVE_MODE."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(20)
X = RNG.standard_normal((8, 4))
Y = RNG.standard_normal((8, 2))
STEPS = 20


class MLP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 6, activation="relu", dtype=ms.float64)
        self.fc2 = nn.Dense(6, 2, dtype=ms.float64)

    def construct(self, x):
        return self.fc2(self.fc1(x))


def numpy_grads(p, x, y):
    """MSE loss (mean) of the MLP and its gradients, by hand."""
    h_pre = x @ p["fc1.weight"].T + p["fc1.bias"]
    h = np.maximum(h_pre, 0)
    out = h @ p["fc2.weight"].T + p["fc2.bias"]
    loss = ((out - y) ** 2).mean()
    d_out = 2 * (out - y) / out.size
    d_h = (d_out @ p["fc2.weight"]) * (h_pre > 0)
    return loss, {"fc2.weight": d_out.T @ h, "fc2.bias": d_out.sum(0),
                  "fc1.weight": d_h.T @ x, "fc1.bias": d_h.sum(0)}


def numpy_sgd(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    moments = {}

    def step(p, g):
        for k in p:
            d = g[k] + weight_decay * p[k]
            if momentum:
                moments[k] = d.copy() if k not in moments else \
                    momentum * moments[k] + (1 - dampening) * d
                d = d + momentum * moments[k] if nesterov else moments[k]
            p[k] = p[k] - lr * d
    return step


def numpy_momentum(lr, momentum, weight_decay=0.0, use_nesterov=False):
    moments = {}

    def step(p, g):
        for k in p:
            d = g[k] + weight_decay * p[k]
            moments[k] = momentum * moments.get(k, 0) + d
            p[k] = p[k] - lr * (d + momentum * moments[k] if use_nesterov else moments[k])
    return step


def numpy_adam(lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, use_nesterov=False):
    """torch/MindSpore Adam written as MindSpore's ApplyAdam (bias-corrected lr_t)."""
    m, v, t = {}, {}, [0]

    def step(p, g):
        t[0] += 1
        lr_t = lr * np.sqrt(1 - beta2 ** t[0]) / (1 - beta1 ** t[0])
        for k in p:
            d = g[k] + weight_decay * p[k]
            m[k] = beta1 * m.get(k, 0) + (1 - beta1) * d
            v[k] = beta2 * v.get(k, 0) + (1 - beta2) * d ** 2
            num = beta1 * m[k] + (1 - beta1) * d if use_nesterov else m[k]
            p[k] = p[k] - lr_t * num / (np.sqrt(v[k]) + eps)
    return step


def numpy_adam_weight_decay(lr, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
    """MindSpore's AdamWeightDecay: no bias correction, decay added to the update."""
    m, v = {}, {}

    def step(p, g):
        for k in p:
            m[k] = beta1 * m.get(k, 0) + (1 - beta1) * g[k]
            v[k] = beta2 * v.get(k, 0) + (1 - beta2) * g[k] ** 2
            p[k] = p[k] - lr * (m[k] / (np.sqrt(v[k]) + eps) + weight_decay * p[k])
    return step


OPTIMIZERS = {
    "SGD": (lambda ps: nn.SGD(ps, 0.1), lambda: numpy_sgd(0.1)),
    "SGD_momentum": (lambda ps: nn.SGD(ps, 0.1, momentum=0.9, dampening=0.1,
                                       weight_decay=0.01),
                     lambda: numpy_sgd(0.1, 0.9, 0.1, 0.01)),
    "SGD_nesterov": (lambda ps: nn.SGD(ps, 0.1, momentum=0.9, nesterov=True),
                     lambda: numpy_sgd(0.1, 0.9, nesterov=True)),
    "Momentum": (lambda ps: nn.Momentum(ps, 0.1, 0.9, weight_decay=0.01),
                 lambda: numpy_momentum(0.1, 0.9, 0.01)),
    "Momentum_nesterov": (lambda ps: nn.Momentum(ps, 0.1, 0.9, use_nesterov=True),
                          lambda: numpy_momentum(0.1, 0.9, use_nesterov=True)),
    "Adam": (lambda ps: nn.Adam(ps, 0.01, weight_decay=0.01),
             lambda: numpy_adam(0.01, weight_decay=0.01)),
    "Adam_nesterov": (lambda ps: nn.Adam(ps, 0.01, beta1=0.8, beta2=0.99, eps=1e-6,
                                         use_nesterov=True),
                      lambda: numpy_adam(0.01, 0.8, 0.99, 1e-6, use_nesterov=True)),
    "AdamWeightDecay": (lambda ps: nn.AdamWeightDecay(ps, 0.01, weight_decay=0.1),
                        lambda: numpy_adam_weight_decay(0.01, weight_decay=0.1)),
}


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_twenty_training_steps_follow_numpy(name, mode):
    ms.set_context(mode=mode)
    make_optimizer, make_numpy_step = OPTIMIZERS[name]
    numpy_step = make_numpy_step()
    net = MLP()
    params = {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                make_optimizer(net.trainable_params()))
    losses = []
    for _ in range(STEPS):
        losses.append(float(train(Tensor(X), Tensor(Y)).asnumpy()))
        want, grads = numpy_grads(params, X, Y)
        np.testing.assert_allclose(losses[-1], want, rtol=1e-10)
        numpy_step(params, grads)
    for n, p in net.parameters_and_names():
        np.testing.assert_allclose(p.asnumpy(), params[n], rtol=1e-9, atol=1e-12)
    assert losses[-1] < losses[0]                             # it learns
    if mode == ms.GRAPH_MODE:
        assert train._compile_cache.traces == 1       # compiled once


def test_sens_scales_the_gradients():
    net = MLP()
    params = {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                nn.SGD(net.trainable_params(), 0.1), sens=0.5)
    train(Tensor(X), Tensor(Y))
    _, grads = numpy_grads(params, X, Y)
    for n, p in net.parameters_and_names():
        np.testing.assert_allclose(p.asnumpy(), params[n] - 0.1 * 0.5 * grads[n], rtol=1e-12)


def test_mse_loss_reductions():
    a, b = RNG.standard_normal((3, 2)), RNG.standard_normal((1, 2))
    for reduction, want in (("mean", ((a - b) ** 2).mean()), ("sum", ((a - b) ** 2).sum()),
                            ("none", (a - b) ** 2)):
        got = nn.MSELoss(reduction)(Tensor(a), Tensor(b)).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_optimizer_errors():
    net = MLP()
    with pytest.raises(TypeError, match=r"For 'SGD', the 'parameters' should be a non-empty "
                                        r"list of Parameters"):
        nn.SGD([], 0.1)
    with pytest.raises(ValueError, match=r"For 'SGD', the 'momentum' should be >= 0 \(> 0 with "
                                         r"zero dampening for nesterov\)"):
        nn.SGD(net.trainable_params(), 0.1, nesterov=True)
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    with pytest.raises(ValueError, match=r"For 'Momentum', the number of gradients should be "
                                         r"the number of parameters: 4, but got 1"):
        opt((Tensor(np.zeros(1)),))


def numpy_sgd_lr(lrs):
    """Plain SGD whose learning rate at step t is lrs(t)."""
    t = [0]

    def step(p, g):
        for k in p:
            p[k] = p[k] - lrs(t[0]) * g[k]
        t[0] += 1
    return step


@pytest.mark.parametrize("kind", ["list", "schedule", "tensor_schedule"])
def test_learning_rate_list_and_schedule(kind):
    """A list gives one rate per step (the last repeated); a schedule is called with the
    global step (0 first), returning a number or a Tensor."""
    rates = [0.1, 0.05, 0.02]
    want_lr = lambda t: rates[min(t, 2)] if kind == "list" else 0.1 * 0.9 ** t
    learning_rate = {"list": rates, "schedule": lambda t: 0.1 * 0.9 ** t,
                     "tensor_schedule": lambda t: Tensor(np.array(0.1 * 0.9 ** t))}[kind]
    net = MLP()
    params = {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}
    opt = nn.SGD(net.trainable_params(), learning_rate)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    numpy_step = numpy_sgd_lr(want_lr)
    for _ in range(6):
        train(Tensor(X), Tensor(Y))
        numpy_step(params, numpy_grads(params, X, Y)[1])
    assert int(opt.global_step.asnumpy()[0]) == 6 and np.isclose(opt.get_lr(), want_lr(6))
    for n, p in net.parameters_and_names():
        np.testing.assert_allclose(p.asnumpy(), params[n], rtol=1e-10, atol=1e-12)


def test_adam_errors():
    ps = MLP().trainable_params()
    with pytest.raises(ValueError, match=r"For 'Adam', the 'beta1' and 'beta2' should be in "
                                         r"\[0, 1\) and 'eps' > 0, but got beta1=1.0"):
        nn.Adam(ps, beta1=1.0)
    with pytest.raises(TypeError, match=r"For 'AdamWeightDecay', the 'learning_rate' should be "
                                        r"a number >= 0, a non-empty list/tuple"):
        nn.AdamWeightDecay(ps, learning_rate=[])
    with pytest.raises(ValueError, match=r"For 'SGD', the 'weight_decay' should be >= 0, but "
                                         r"got -1"):
        nn.SGD(ps, 0.1, weight_decay=-1)
