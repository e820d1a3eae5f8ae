"""ms.jit: functions and Cell constructs compiled once per signature, equal to eager, composed
with grad / value_and_grad and the optimizers."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.graph.ir import GraphError

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 2)).astype(np.float32)
MODES = pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE],
                                ids=["graph", "pynative"])


def body(x, y):
    return ops.ReduceSum()(ops.ReLU()(x) * y + x * x)


@MODES
def test_a_function_compiles_once_per_signature_and_equals_eager(mode):
    ms.set_context(mode=mode)
    f = ms.jit(body)
    a, b = Tensor(X), Tensor(X * 0.5)
    for _ in range(3):
        np.testing.assert_allclose(f(a, b).asnumpy(), body(a, b).asnumpy(), rtol=1e-6)
    assert f.traces == 1
    f(Tensor(X[:3]), Tensor(X[:3]))                   # a new shape: a new graph
    assert f.traces == 2
    assert f.__name__ == "body"


@MODES
def test_decorated_construct_binds_per_instance(mode):
    ms.set_context(mode=mode)

    class Net(nn.Cell):
        def __init__(self, scale):
            super().__init__()
            self.fc = nn.Dense(4, 2)
            self.scale = scale

        @ms.jit
        def construct(self, x):
            return self.fc(x) * self.scale

    a, b = Net(2.0), Net(3.0)
    x = Tensor(X)
    for net, scale in ((a, 2.0), (b, 3.0)):
        w, bias = net.fc.weight.asnumpy(), net.fc.bias.asnumpy()
        np.testing.assert_allclose(net(x).asnumpy(), (X @ w.T + bias) * scale, rtol=1e-5)
    if mode == ms.PYNATIVE_MODE:
        assert a.construct.traces == 1 and b.construct.traces == 1


@MODES
def test_grad_of_a_jit_function_equals_grad_of_the_function(mode):
    ms.set_context(mode=mode)
    x, y = Tensor(X), Tensor(Y[:, :1] * np.ones((1, 4), np.float32))
    want = ms.grad(body, grad_position=(0, 1))(x, y)
    got = ms.grad(ms.jit(body), grad_position=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy(), w.asnumpy(), rtol=1e-6)
    relu = (X > 0).astype(np.float32)
    np.testing.assert_allclose(want[0].asnumpy(), relu * y.asnumpy() + 2 * X, rtol=1e-6)


def _mlp():
    ms.set_seed(3)
    return nn.SequentialCell([nn.Dense(4, 8, activation="relu"), nn.Dense(8, 2)])


@MODES
def test_a_jit_train_step_with_value_and_grad_and_an_optimizer_equals_eager(mode):
    """MindSpore 2.x's training idiom: forward, backward and update in one jit graph."""
    ms.set_context(mode=mode)
    results = []
    for use_jit in (True, False):
        net = _mlp()
        loss_net = nn.WithLossCell(net, nn.MSELoss())
        opt = nn.Adam(net.trainable_params(), learning_rate=[0.01, 0.005, 0.002])
        grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)

        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss
        run = ms.jit(step) if use_jit else step
        losses = [float(run(Tensor(X), Tensor(Y)).asnumpy()) for _ in range(6)]
        results.append((losses, [p.asnumpy().copy() for p in net.trainable_params()]))
        if use_jit:
            assert run.traces == 1
            assert int(opt.global_step.asnumpy()[0]) == 6
    (got_l, got_p), (want_l, want_p) = results
    np.testing.assert_allclose(got_l, want_l, rtol=1e-5)
    assert got_l[-1] < got_l[0]
    for g, w in zip(got_p, want_p):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)


def test_options_accepted_and_refused():
    f = ms.jit(body, mode="PSJit", jit_config=ms.JitConfig(jit_level="O1"), hash_args=None,
               compile_once=False)
    assert float(f(Tensor(X), Tensor(X)).asnumpy()) == pytest.approx(
        float(body(Tensor(X), Tensor(X)).asnumpy()), rel=1e-6)
    g = ms.jit(capture_mode="bytecode", jit_level="O0", backend="ms_backend")(body)
    assert g(Tensor(X), Tensor(X)).shape == ()
    with pytest.raises(NotImplementedError, match=r"For 'jit', the 'input_signature' is not "
                                                  r"supported"):
        ms.jit(body, input_signature=(Tensor(X),))
    with pytest.raises(ValueError, match=r"For 'jit', the 'backend' should be one of"):
        ms.jit(body, backend="GPU")
    with pytest.raises(ValueError, match=r"For 'jit', the 'mode' should be one of"):
        ms.jit(body, mode="fast")
    with pytest.raises(TypeError, match=r"For 'jit', the 'function' should be a function"):
        ms.jit(3)
    with pytest.raises(TypeError, match=r"For 'jit', the keyword arguments \['speed'\]"):
        ms.jit(body, speed=2)
    with pytest.raises(TypeError, match=r"should be called with positional arguments"):
        ms.jit(body)(Tensor(X), y=Tensor(X))


def test_a_data_dependent_branch_is_a_graph_error():
    @ms.jit
    def branchy(x):
        if ops.ReduceSum()(x):
            return x
        return -x

    with pytest.raises(GraphError, match="data-dependent"):
        branchy(Tensor(X))


def test_jit_of_a_gradient_function_returns_its_gradients():
    """ms.jit(ms.grad(f)) is the gradient, compiled (a callable object's attributes must not
    replace the wrapper's: it returned f's value)."""
    def f(x, w):
        return ops.ReduceSum()(ops.tanh(x * w))

    x = np.array([0.5, -1.0, 2.0], np.float32)
    w = np.array([1.5, 0.25, -0.5], np.float32)
    dx = (1 - np.tanh(x * w) ** 2) * w
    dw = (1 - np.tanh(x * w) ** 2) * x
    got = ms.jit(ms.grad(f))(Tensor(x), Tensor(w))
    np.testing.assert_allclose(got.asnumpy(), dx, rtol=1e-6)
    both = ms.jit(ms.grad(f, (0, 1)))(Tensor(x), Tensor(w))
    np.testing.assert_allclose(both[1].asnumpy(), dw, rtol=1e-6)
    value, grad = ms.jit(ms.value_and_grad(f))(Tensor(x), Tensor(w))
    np.testing.assert_allclose(value.asnumpy(), np.tanh(x * w).sum(), rtol=1e-6)
    np.testing.assert_allclose(grad.asnumpy(), dx, rtol=1e-6)
    op = ms.jit(ops.GradOperation()(f))(Tensor(x), Tensor(w))
    np.testing.assert_allclose(op.asnumpy(), dx, rtol=1e-6)


class _Nested(nn.Cell):
    def construct(self, v):
        return v * 2, (v + 1, (v - 1,)), [v * 3]


def _assert_nested(got, x):
    assert isinstance(got, tuple) and isinstance(got[1], tuple) and isinstance(got[1][1], tuple)
    assert isinstance(got[2], list)
    np.testing.assert_allclose(got[0].asnumpy(), x * 2)
    np.testing.assert_allclose(got[1][0].asnumpy(), x + 1)
    np.testing.assert_allclose(got[1][1][0].asnumpy(), x - 1)
    np.testing.assert_allclose(got[2][0].asnumpy(), x * 3)


def test_nested_outputs_keep_their_structure_compiled():
    """A construct or jit function may return tuples of tuples (MindSpore's `(loss, grads)`
    of a value_and_grad with weights, has_aux outputs): the graph's outputs are flat, the
    result keeps the nesting, on the generated fast call too."""
    x = np.array([0.5, -1.0, 2.0], np.float32)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = _Nested()
    for _ in range(3):                                  # the third call is the fast path
        _assert_nested(net(Tensor(x)), x)
    _assert_nested(ms.jit(lambda v: _Nested()(v))(Tensor(x)), x)

    def loss_and_aux(v):
        return ops.ReduceSum()(v * v), (v * 2, v * 3)

    grad, aux = ms.jit(ms.grad(loss_and_aux, has_aux=True))(Tensor(x))
    np.testing.assert_allclose(grad.asnumpy(), 2 * x)
    np.testing.assert_allclose(aux[0][1].asnumpy(), 3 * x)
    for mode in (ms.GRAPH_MODE, ms.PYNATIVE_MODE):
        ms.set_context(mode=mode)
        (value, (a2, a3)), grad = ms.value_and_grad(loss_and_aux, has_aux=True)(Tensor(x))
        np.testing.assert_allclose(value.asnumpy(), (x * x).sum(), rtol=1e-6)
        np.testing.assert_allclose(a3.asnumpy(), 3 * x)
        np.testing.assert_allclose(grad.asnumpy(), 2 * x)
    ms.set_context(mode=ms.GRAPH_MODE)
    dense = nn.Dense(3, 2)
    value, grads = ms.jit(ms.value_and_grad(lambda v: ops.ReduceSum()(dense(v)), None,
                                            dense.trainable_params()))(Tensor(x[None]))
    np.testing.assert_allclose(grads[0].asnumpy(), np.ones((2, 1)) * x[None], rtol=1e-6)
    np.testing.assert_allclose(grads[1].asnumpy(), np.ones(2), rtol=1e-6)
