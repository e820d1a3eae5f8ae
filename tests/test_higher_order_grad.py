"""Higher-order gradients (`grad` of a function calling a `grad` function), in both modes,
against calculus and central finite differences in float64.

GRAPH_MODE traces the inner gradient into the outer graph; PYNATIVE_MODE runs the inner
gradient's graph op by op through the primitives, recorded by the outer gradient's tape."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.GRAPH_MODE)


def test_second_and_third_derivatives(mode):
    """f = sum(x^3 + x sin x): f' = 3x^2 + sin x + x cos x, f'' = 6x + 2cos x - x sin x,
    f''' = 6 - 3 sin x - x cos x."""
    x = np.array([-1.5, 0.25, 2.0], np.float64)

    def f(t):
        return (t * t * t + t * ops.sin(t)).sum()
    d1 = ms.grad(f)
    d2 = ms.grad(lambda t: d1(t).sum())
    d3 = ms.grad(lambda t: d2(t).sum())
    np.testing.assert_allclose(d1(Tensor(x)).asnumpy(), 3 * x**2 + np.sin(x) + x * np.cos(x),
                               rtol=1e-12)
    np.testing.assert_allclose(d2(Tensor(x)).asnumpy(),
                               6 * x + 2 * np.cos(x) - x * np.sin(x), rtol=1e-12)
    np.testing.assert_allclose(d3(Tensor(x)).asnumpy(), 6 - 3 * np.sin(x) - x * np.cos(x),
                               rtol=1e-12)


class Critic(nn.Cell):
    """tanh(x W1) W2, float64."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(4)
        self.w1 = Parameter(Tensor(rng.standard_normal((3, 5)) * 0.5), "w1")
        self.w2 = Parameter(Tensor(rng.standard_normal((5, 1)) * 0.5), "w2")
        self.mm = ops.MatMul()
        self.tanh = ops.Tanh()

    def construct(self, x):
        return self.mm(self.tanh(self.mm(x, self.w1)), self.w2)


def test_gradient_penalty_weights_gradient_equals_finite_differences(mode):
    """WGAN-GP's loss: mean(critic(x)) + 10 * mean((|d critic / d x| - 1)^2), whose weight
    gradient differentiates the input gradient."""
    x = Tensor(np.random.default_rng(5).standard_normal((4, 3)))
    net = Critic()
    input_grad = ms.grad(lambda v: net(v).sum(), 0)

    def loss(v):
        g = input_grad(v)
        norm = ops.sqrt((g * g).sum(axis=1))
        return net(v).mean() + 10.0 * ((norm - 1.0) ** 2).mean()
    got = ms.grad(loss, None, net.trainable_params())(x)

    def value() -> float:
        v = x.asnumpy()
        w1, w2 = net.w1.asnumpy(), net.w2.asnumpy()
        h = np.tanh(v @ w1)
        g = ((1 - h**2) * w2[:, 0]) @ w1.T                   # d critic / d x, per row
        norm = np.sqrt((g * g).sum(axis=1))
        return float((h @ w2).mean() + 10.0 * ((norm - 1.0) ** 2).mean())
    for p, grad in zip(net.trainable_params(), got):
        base = p.asnumpy().copy()
        want = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                shifted = base.copy()
                shifted[idx] += sign * 1e-6
                p.set_data(shifted)
                want[idx] += sign * value() / 2e-6
        p.set_data(base)
        np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8, err_msg=p.name)


def test_hessian_vector_product(mode):
    """d/dx (grad f(x) . v) = H v; f = sum(exp(A x)) has H = A^T diag(exp(A x)) A."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 3)) * 0.5
    x, v = rng.standard_normal(3), rng.standard_normal(3)
    mm = ops.MatMul()

    def f(t):
        return ops.exp(mm(Tensor(a), t.reshape((3, 1)))).sum()
    g = ms.grad(f)
    hv = ms.grad(lambda t: (g(t) * Tensor(v)).sum())(Tensor(x)).asnumpy()
    want = a.T @ (np.exp(a @ x) * (a @ v))
    np.testing.assert_allclose(hv, want, rtol=1e-12)
