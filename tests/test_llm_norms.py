"""rms_norm / RmsNorm, add_rms_norm, add_layer_norm and swiglu against numpy written here,
eagerly and compiled; gradients against central finite differences; vmap of RmsNorm;
MindSpore's documented examples; errors naming the function."""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import rms_norm_ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(41)


def np_rms(x, gamma, eps):
    axes = tuple(range(x.ndim - gamma.ndim, x.ndim))
    rstd = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axis=axes, keepdims=True) + eps)
    return x * rstd * gamma, rstd


def np_layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    return (x - mean) * rstd * gamma + beta, mean, rstd


def np_swiglu(x, dim):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-a)) * b


def test_docstring_example():
    res = doctest.testmod(rms_norm_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 2 and res.failed == 0


def test_mindspore_examples():
    x = Tensor(np.array([[1, 2, 3], [1, 2, 3]], np.float32))
    y, rstd = ops.rms_norm(x, Tensor(np.ones(3, np.float32)))
    np.testing.assert_allclose(y.asnumpy(), [[0.46290997, 0.92581993, 1.3887299]] * 2, rtol=1e-6)
    np.testing.assert_allclose(rstd.asnumpy(), [[0.46290997]] * 2, rtol=1e-6)
    out = ops.swiglu(Tensor(np.array([[-0.12, 0.123, 31.122], [2.1223, 4.1212121217, 0.3123]],
                                     np.float32)), 0)
    np.testing.assert_allclose(out.asnumpy(), [[-0.11970687, 0.2690224, 9.7194]], rtol=1e-5)


@pytest.mark.parametrize("xshape,gshape", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((5,), (5,))])
def test_rms_norm_matches_numpy_eager_and_compiled(xshape, gshape):
    x = RNG.standard_normal(xshape).astype(np.float32)
    g = RNG.standard_normal(gshape).astype(np.float32)
    want_y, want_r = np_rms(x, g, 1e-4)
    for y, rstd in eager_and_compiled(lambda x, g: ops.rms_norm(x, g, 1e-4), Tensor(x), Tensor(g)):
        assert rstd.dtype == ms.float32 and rstd.shape == want_r.shape
        np.testing.assert_allclose(y.asnumpy(), want_y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rstd.asnumpy(), want_r, rtol=1e-5)


def test_float16_rms_norm_keeps_a_float32_rstd():
    x, g = RNG.standard_normal((3, 8)).astype(np.float16), np.ones(8, np.float16)
    y, rstd = ops.rms_norm(Tensor(x), Tensor(g))
    want_y, want_r = np_rms(x.astype(np.float64), g.astype(np.float64), 1e-6)
    assert y.dtype == ms.float16 and rstd.dtype == ms.float32
    np.testing.assert_allclose(y.asnumpy(), want_y, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(rstd.asnumpy(), want_r, rtol=1e-5)


def test_add_rms_norm_and_add_layer_norm_match_numpy_eager_and_compiled():
    x1, x2 = (RNG.standard_normal((3, 5)).astype(np.float32) for _ in range(2))
    g, b = RNG.standard_normal(5).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    y, r = np_rms(x1 + x2, g, 1e-6)
    for out in eager_and_compiled(lambda a, c, g: ops.add_rms_norm(a, c, g), Tensor(x1),
                                  Tensor(x2), Tensor(g)):
        for o, w in zip(out, (y, r, x1 + x2)):
            np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5, atol=1e-6)
    wants = np_layer_norm(x1 + x2, g, b, 1e-5) + (x1 + x2,)
    for out in eager_and_compiled(lambda a, c, g, b: ops.add_layer_norm(a, c, g, b, 1e-5, True),
                                  Tensor(x1), Tensor(x2), Tensor(g), Tensor(b)):
        assert [o.shape for o in out] == [(3, 5), (3, 1), (3, 1), (3, 5)]
        assert out[1].dtype == out[2].dtype == ms.float32
        for o, w in zip(out, wants):
            np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_swiglu_matches_numpy_eager_and_compiled(dim):
    x = RNG.standard_normal((4, 6, 2)).astype(np.float32)
    for out in eager_and_compiled(lambda x: ops.swiglu(x, dim), Tensor(x)):
        np.testing.assert_allclose(out.asnumpy(), np_swiglu(x, dim), rtol=1e-5, atol=1e-6)


# -- gradients -----------------------------------------------------------------------------
def grads_both(loss, args):
    f = ms.grad(loss, tuple(range(len(args))))
    eager = f(*[Tensor(a) for a in args])
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = f(*[Tensor(a) for a in args])
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return eager, compiled


def check_grads(loss, ref, args):
    eager, compiled = grads_both(loss, args)
    for i, (e, c) in enumerate(zip(eager, compiled)):
        want = finite_differences(lambda a: ref(*args[:i], a, *args[i + 1:]), args[i])
        np.testing.assert_allclose(e.asnumpy(), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(c.asnumpy(), e.asnumpy(), rtol=1e-12, atol=1e-14)


def test_gradients_match_finite_differences():
    x1, x2 = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    g, b = RNG.standard_normal(4), RNG.standard_normal(4)
    w = [RNG.standard_normal(s) for s in ((3, 4), (3, 1), (3, 1), (3, 4))]
    wt = [Tensor(a) for a in w]

    def add_rms(a, c, g):
        y, r, x = ops.add_rms_norm(a, c, g)
        return (y * wt[0]).sum() + (r * wt[1]).sum() + (x * wt[3]).sum()

    def add_rms_ref(a, c, g):
        y, r = np_rms(a + c, g, 1e-6)
        return (y * w[0]).sum() + (r * w[1]).sum() + ((a + c) * w[3]).sum()
    check_grads(add_rms, add_rms_ref, [x1, x2, g])

    def add_ln(a, c, g, b):
        return sum((o * t).sum() for o, t in zip(ops.add_layer_norm(a, c, g, b), wt))

    def add_ln_ref(a, c, g, b):
        outs = np_layer_norm(a + c, g, b, 1e-5) + (a + c,)
        return sum((o * t).sum() for o, t in zip(outs, w))
    check_grads(add_ln, add_ln_ref, [x1, x2, g, b])
    x = RNG.standard_normal((3, 4))
    check_grads(lambda x: (ops.swiglu(x, 1) * Tensor(w[0][:, :2])).sum(),
                lambda x: (np_swiglu(x, 1) * w[0][:, :2]).sum(), [x])


# -- vmap ----------------------------------------------------------------------------------
@pytest.mark.parametrize("in_axes", [(0, None), (1, None), (0, 0)])
def test_vmap_of_rms_norm_is_the_loop(in_axes):
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    g = RNG.standard_normal((4, 5) if in_axes[1] == 0 else (5,)).astype(np.float32)
    xs = np.moveaxis(x, 0, in_axes[0])
    fn = ms.vmap(lambda x, g: ops.rms_norm(x, g), in_axes)
    for y, r in eager_and_compiled(fn, Tensor(xs), Tensor(g)):
        for i in range(4):
            wy, wr = np_rms(x[i], g[i] if in_axes[1] == 0 else g, 1e-6)
            np.testing.assert_allclose(y.asnumpy()[i], wy, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(r.asnumpy()[i], wr, rtol=1e-5)


# -- errors --------------------------------------------------------------------------------
def test_errors_name_the_function():
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="For 'RmsNorm', the 'gamma shape'"):
        ops.rms_norm(x, Tensor(np.ones(2, np.float32)))
    with pytest.raises(ValueError, match="For 'RmsNorm', the 'epsilon' should be in"):
        ops.RmsNorm(0.0)
    with pytest.raises(TypeError, match="For 'RmsNorm'"):
        ops.rms_norm(x, Tensor(np.ones(3, np.float16)))
    with pytest.raises(ValueError, match="For 'swiglu', the size of 'input' along 'dim'"):
        ops.swiglu(x)
    with pytest.raises(ValueError, match="For 'add_layer_norm', the 'gamma' shape"):
        ops.add_layer_norm(x, x, Tensor(np.ones(2, np.float32)), Tensor(np.ones(3, np.float32)))
