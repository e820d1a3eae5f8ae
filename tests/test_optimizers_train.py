"""RMSProp, Adagrad, AdaMax, Lamb, LARS, Adadelta, ProximalAdagrad, FTRL and LazyAdam in
training: a float32 network trained by
TrainOneStepCell (eager and compiled: the update traced into the step's graph) and by
Model.train gives the parameters of the numpy rules of tests/test_optimizer_groups.py
applied to the step's own gradients; the state carries MindSpore's names; Lamb's and
LARS's trust ratio is 1 on an all-zero layer (no NaN)."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn
from msops import dataset as ds

MAKERS = {
    "RMSProp": lambda ps: nn.RMSProp(ps, 0.01, momentum=0.5, centered=True, loss_scale=4.0,
                                     weight_decay=0.01),
    "Adagrad": lambda ps: nn.Adagrad(ps, learning_rate=0.1, weight_decay=0.01),
    "AdaMax": lambda ps: nn.AdaMax(ps, 0.01, loss_scale=2.0),
    "Lamb": lambda ps: nn.Lamb(ps, 0.01, weight_decay=0.01),
    "LARS": lambda ps: nn.LARS(nn.Momentum(ps, 0.1, 0.9, weight_decay=0.01, loss_scale=2.0),
                               coefficient=0.1, use_clip=True),
    "Adadelta": lambda ps: nn.Adadelta(ps, 1.0, weight_decay=0.01),
    "ProximalAdagrad": lambda ps: nn.ProximalAdagrad(ps, learning_rate=0.05, l1=1e-4, l2=1e-3),
    "FTRL": lambda ps: nn.FTRL(ps, learning_rate=0.1, l2=1e-3),
    "LazyAdam": lambda ps: nn.LazyAdam(ps, 0.01, loss_scale=2.0),
}
STATE = {"RMSProp": ["mean_grad", "mean_square", "moment"], "Adagrad": ["accum"],
         "AdaMax": ["moment1", "moment2"], "Lamb": ["lamb_m", "lamb_v"], "LARS": ["moments"],
         "Adadelta": ["accum", "accum_update"], "ProximalAdagrad": ["accum"],
         "FTRL": ["moments", "linear"], "LazyAdam": ["moment1", "moment2"]}


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 6)).astype(np.float32)
    return x, (x[:, :2] * 0.5).astype(np.float32)


def net():
    ms.set_seed(3)
    return nn.SequentialCell([nn.Dense(6, 8, activation="relu"), nn.Dense(8, 2)])


def train_steps(kind, mode, steps=4):
    ms.set_context(mode=mode)
    try:
        model = net()
        opt = MAKERS[kind](model.trainable_params())
        step = nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()), opt)
        x, y = data()
        losses = [float(step(Tensor(x[i:i + 8]), Tensor(y[i:i + 8])).asnumpy())
                  for i in (0, 8, 16, 0)[:steps]]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return model, opt, losses


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_compiled_step_equals_eager_and_learns(kind):
    eager, opt, eager_losses = train_steps(kind, ms.PYNATIVE_MODE)
    graph, _, graph_losses = train_steps(kind, ms.GRAPH_MODE)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for a, b in zip(eager.trainable_params(), graph.trainable_params()):
        assert a.dtype == ms.float32
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-6)
    assert graph_losses[-1] < graph_losses[0]
    names = {p.name for p in opt.get_parameters()}
    for p in eager.trainable_params():
        for state in STATE[kind]:
            assert f"{state}.{p.name}" in names, (state, p.name)
    assert int(opt.global_step.asnumpy()[0]) == 4


def _grads(model, x, y):
    loss = nn.WithLossCell(model, nn.MSELoss())
    fn = ms.value_and_grad(loss, None, model.trainable_params())
    return [g.asnumpy().astype(np.float64) for g in fn(Tensor(x), Tensor(y))[1]]


def test_lamb_step_matches_numpy_on_the_steps_own_gradients():
    """One float32 Lamb step of a Dense net: the gradients from value_and_grad, then the
    documented rule (bias correction t = 1, decoupled decay, trust ratio)."""
    model = net()
    x, y = data()
    start = [p.asnumpy().astype(np.float64) for p in model.trainable_params()]
    grads = _grads(model, x[:8], y[:8])
    step = nn.TrainOneStepCell(nn.WithLossCell(model, nn.MSELoss()),
                               nn.Lamb(model.trainable_params(), 0.1, weight_decay=0.1))
    step(Tensor(x[:8]), Tensor(y[:8]))
    for p, w, g in zip(model.trainable_params(), start, grads):
        u = (0.1 * g / 0.1) / (np.sqrt(0.001 * g * g / 0.001) + 1e-6) + 0.1 * w
        ratio = np.linalg.norm(w) / np.linalg.norm(u) if np.linalg.norm(w) > 0 else 1.0
        want = w - 0.1 * ratio * u                           # zero biases: ratio 1
        np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-4, atol=1e-6, err_msg=p.name)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_trust_ratio_is_one_on_an_all_zero_layer(mode):
    ms.set_context(mode=mode)
    try:
        w = Parameter(Tensor(np.zeros((2, 3), np.float32)), "w")
        lamb = nn.Lamb([w], 0.1)
        lamb((Tensor(np.ones((2, 3), np.float32)),))
        # ||w|| = 0: ratio 1, u = m_hat / (sqrt(v_hat) + eps) = 1 / (1 + 1e-6)
        np.testing.assert_allclose(w.asnumpy(), -0.1 / (1 + 1e-6), rtol=1e-6)
        v = Parameter(Tensor(np.ones(3, np.float32)), "v")
        lars = nn.LARS(nn.SGD([v], 0.5))
        lars((Tensor(np.zeros(3, np.float32)),))           # ||g|| = 0: g passes as 0
        np.testing.assert_array_equal(v.asnumpy(), 1.0)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("kind", ["Lamb", "LARS"])
def test_model_train_equals_the_training_cell(kind):
    want, _, _ = train_steps(kind, ms.GRAPH_MODE, steps=3)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        model = net()
        x, y = data()
        dataset = ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(8)
        ms.Model(model, nn.MSELoss(), MAKERS[kind](model.trainable_params())).train(1, dataset)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for a, b in zip(want.trainable_params(), model.trainable_params()):
        np.testing.assert_allclose(b.asnumpy(), a.asnumpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["Lamb", "LARS"])
def test_an_eager_update_of_sliced_gradients_is_refused(kind):
    """A parallel step's gradient slice (it carries a split layout): the per-parameter norm
    of an eager update would be this rank's part only, so it is refused by name; an
    element-wise optimizer (Adam) updates the slice."""
    from msops.parallel.layout import TensorLayout
    w = Parameter(Tensor(np.ones((2, 3), np.float32)), "w")
    g = Tensor(np.ones((2, 3), np.float32))
    g.layout = TensorLayout((2,), (0, -1), (4, 3))
    with pytest.raises(NotImplementedError, match=f"For '{kind}', the gradient of 'w' is this "
                                                  f"rank's slice"):
        MAKERS[kind]([w])((g,))
    nn.Adam([w], 0.1)((g,))
    np.testing.assert_allclose(w.asnumpy(), 0.9, rtol=1e-5)
