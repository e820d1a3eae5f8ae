"""vjp, jvp, jacrev, jacfwd and nn.Vjp / nn.Jvp / nn.ForwardValueAndGrad: MindSpore's
return structures, in PYNATIVE_MODE, GRAPH_MODE and inside ms.jit. References: the
calculus written here in numpy, and Jacobians by central differences."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops

RNG = np.random.default_rng(3)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.asnumpy() if isinstance(a, Tensor) else a, b, rtol=tol,
                               atol=tol)


def f(x, y):
    """Two outputs of two inputs: (sin(x) * y, exp(x) + y^2)."""
    return ops.sin(x) * y, ops.exp(x) + y * y


def f_np(x, y):
    return np.sin(x) * y, np.exp(x) + y * y


def numeric_jacobian(g, args, k, eps=1e-6):
    """d g(*args) / d args[k] (float64 central differences), shaped out + in."""
    x = args[k]
    out = g(*args)
    jac = np.zeros(out.shape + x.shape)
    for i in np.ndindex(x.shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[k][i] += eps
        down[k][i] -= eps
        jac[(...,) + i] = (g(*up) - g(*down)) / (2 * eps)
    return jac


def inputs(shape=(2, 3)):
    return (RNG.standard_normal(shape).astype(np.float32),
            RNG.standard_normal(shape).astype(np.float32))


def test_vjp_two_outputs_against_calculus(mode):
    x, y = inputs()
    u, w = inputs()
    out, vjp_fn = ops.vjp(f, Tensor(x), Tensor(y))
    close(out[0], np.sin(x) * y)
    close(out[1], np.exp(x) + y * y)
    gx, gy = vjp_fn(Tensor(u), Tensor(w))
    close(gx, u * np.cos(x) * y + w * np.exp(x))
    close(gy, u * np.sin(x) + w * 2 * y)


def test_vjp_weights_and_aux(mode):
    x, _ = inputs((4, 3))
    weight = RNG.standard_normal((3, 2)).astype(np.float32)
    w = Parameter(Tensor(weight), "w")

    def fn(a):
        h = ops.tanh(ops.matmul(a, w))
        return h, h * 2

    v = RNG.standard_normal((4, 2)).astype(np.float32)
    out, vjp_fn, aux = ms.vjp(fn, Tensor(x), weights=[w], has_aux=True)
    h = np.tanh(x @ weight)
    close(out, h)
    close(aux, 2 * h)                      # two outputs: aux is the second itself
    (gx,), (gw,) = vjp_fn(Tensor(v))
    dh = v * (1 - h * h)
    close(gx, dh @ weight.T)
    close(gw, x.T @ dh)


def test_jvp_against_calculus_and_aux(mode):
    x, y = inputs()
    vx, vy = inputs()
    out, prod = ms.jvp(f, (Tensor(x), Tensor(y)), (Tensor(vx), Tensor(vy)))
    close(out[0], np.sin(x) * y)
    close(prod[0], np.cos(x) * y * vx + np.sin(x) * vy)
    close(prod[1], np.exp(x) * vx + 2 * y * vy)
    out, prod, aux = ops.jvp(f, [Tensor(x), Tensor(y)], [Tensor(vx), Tensor(vy)],
                             has_aux=True)
    close(out, np.sin(x) * y)
    close(prod, np.cos(x) * y * vx + np.sin(x) * vy)
    close(aux, np.exp(x) + y * y)
    out, prod = ms.jvp(lambda a: a * a * a, Tensor(x), Tensor(vx))   # one Tensor each
    close(prod, 3 * x * x * vx)


@pytest.mark.parametrize("jac", [ms.jacrev, ms.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobians_against_finite_differences(mode, jac):
    x, y = inputs((2, 2))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    blocks = jac(f, grad_position=(0, 1))(Tensor(x), Tensor(y))
    assert len(blocks) == 2 and all(len(b) == 2 for b in blocks)   # per output, per input
    for i in range(2):
        for k in range(2):
            want = numeric_jacobian(lambda a, b: f_np(a, b)[i], [xd, yd], k)
            assert blocks[i][k].shape == (2, 2, 2, 2)
            close(blocks[i][k], want, 1e-4)
    one, aux = jac(f, grad_position=1, has_aux=True)(Tensor(x), Tensor(y))
    close(one, numeric_jacobian(lambda a, b: f_np(a, b)[0], [xd, yd], 1), 1e-4)
    close(aux, np.exp(x) + y * y)


def test_inside_jit():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x, y = inputs()
    vx, vy = inputs()

    @ms.jit
    def step(a, b, va, vb):
        _, vjp_fn = ms.vjp(f, a, b)
        _, prod = ms.jvp(f, (a, b), (va, vb))
        return vjp_fn(va, vb), prod, ms.jacrev(lambda t: ops.sin(t) * t)(a)

    (gx, gy), prod, jac = step(Tensor(x), Tensor(y), Tensor(vx), Tensor(vy))
    close(gx, vx * np.cos(x) * y + vy * np.exp(x))
    close(gy, vx * np.sin(x) + vy * 2 * y)
    close(prod[1], np.exp(x) * vx + 2 * y * vy)
    want = np.zeros((2, 3, 2, 3), np.float32)
    for i in np.ndindex(2, 3):
        want[i + i] = np.cos(x[i]) * x[i] + np.sin(x[i])
    close(jac, want)


class Cube(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.array([0.5, -1.5, 2.0], np.float32)), "w")

    def construct(self, x, y):
        return x * x * x * self.w + y


def test_nn_vjp_jvp(mode):
    x, y = inputs()
    v = RNG.standard_normal((2, 3)).astype(np.float32)
    w = Cube().w.asnumpy()
    out, (gx, gy) = nn.Vjp(Cube())(Tensor(x), Tensor(y), Tensor(v))
    close(out, x ** 3 * w + y)
    close(gx, 3 * x * x * w * v)
    close(gy, v)
    out, prod = nn.Jvp(Cube())(Tensor(x), Tensor(y), (Tensor(v), Tensor(v)))
    close(prod, 3 * x * x * w * v + v)


def test_forward_value_and_grad(mode):
    x, y = inputs()
    net = Cube()
    w = net.w.asnumpy()
    sens = RNG.standard_normal((2, 3)).astype(np.float32)
    loss, (gx, gy) = nn.ForwardValueAndGrad(net, get_all=True)(Tensor(x), Tensor(y))
    close(loss, x ** 3 * w + y)
    close(gx, 3 * x * x * w)
    close(gy, np.ones_like(y))
    weights = net.trainable_params()
    loss, ((gx, gy), (gw,)) = nn.ForwardValueAndGrad(
        net, weights, get_all=True, get_by_list=True, sens_param=True)(
        Tensor(x), Tensor(y), Tensor(sens))
    close(gx, 3 * x * x * w * sens)
    close(gw, (x ** 3 * sens).sum(0))
    loss, gx = nn.ForwardValueAndGrad(net)(Tensor(x), Tensor(y))      # the first input's
    close(gx, 3 * x * x * w)


def test_errors():
    x = Tensor(np.ones((2,), np.float32))
    with pytest.raises(TypeError, match="For 'vjp', the 'inputs' should be a Tensor"):
        ms.vjp(ops.sin, [1.0])
    _, vjp_fn = ms.vjp(ops.sin, x)
    with pytest.raises(ValueError, match=r"For 'vjp', the 'v' should match the outputs of "
                                         r"'fn': \[\[2\]\], but got \[\[3\]\]"):
        vjp_fn(Tensor(np.ones((3,), np.float32)))
    with pytest.raises(ValueError, match="For 'jvp', the 'v' should match the inputs"):
        ms.jvp(ops.sin, x, Tensor(np.ones((3,), np.float32)))
    with pytest.raises(ValueError, match="with has_aux=True the 'fn' should return more than"):
        ms.jvp(ops.sin, x, x, has_aux=True)
    with pytest.raises(TypeError, match="For 'jacrev', the 'has_aux' should be a bool"):
        ms.jacrev(ops.sin, has_aux=1)
    with pytest.raises(ValueError, match="For 'jacfwd', the 'grad_position' 2 should name a "
                                         "Tensor argument"):
        ms.jacfwd(ops.sin, grad_position=2)(x)
    with pytest.raises(TypeError, match="For 'ForwardValueAndGrad', the 'weights' should be "
                                        "given"):
        nn.ForwardValueAndGrad(ops.sin, get_by_list=True)
