"""ops.celu / glu / softmin / threshold / rrelu / lrn (msops.ops.activation_func) and nn.CELU,
GLU, Softmin, Softmax2d, Threshold, RReLU, LRN (msops.nn.activation_ext): values against
numpy references written here, eagerly and compiled; gradients against finite
differences; RReLU's slopes (training: drawn in [lower, upper); evaluation: their mean);
argument and input errors in MindSpore's form."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(77)
X = (2 * RNG.standard_normal((2, 6, 3, 4))).astype(np.float32)
X64 = RNG.standard_normal((2, 4, 3, 2))


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_celu(x, alpha=1.0):
    return np.maximum(0, x) + np.minimum(0, alpha * (np.exp(x / alpha) - 1))


def np_glu(x, axis=-1):
    a, b = np.split(x, 2, axis=axis)
    return a / (1 + np.exp(-b))


def np_lrn(x, r=5, bias=1.0, alpha=1.0, beta=0.5):
    """Direct loops over the channel window (TensorFlow's definition, channels NCHW)."""
    out = np.empty_like(x, dtype=np.float64)
    c = x.shape[1]
    for k in range(c):
        lo, hi = max(0, k - r), min(c, k + r + 1)
        s = (x[:, lo:hi].astype(np.float64) ** 2).sum(axis=1)
        out[:, k] = x[:, k] / (bias + alpha * s) ** beta
    return out


FORMS = [
    ("celu", lambda x: ops.celu(x), lambda x: np_celu(x)),
    ("celu_alpha", lambda x: ops.celu(x, 0.5), lambda x: np_celu(x, 0.5)),
    ("celu_negative_alpha", lambda x: ops.celu(x, -2.0), lambda x: np_celu(x, -2.0)),
    ("glu", lambda x: ops.glu(x), lambda x: np_glu(x, -1)),
    ("glu_axis1", lambda x: ops.glu(x, axis=1), lambda x: np_glu(x, 1)),
    ("softmin", lambda x: ops.softmin(x), lambda x: np_softmax(-x, -1)),
    ("softmin_axis", lambda x: ops.softmin(x, 1), lambda x: np_softmax(-x, 1)),
    ("softmin_dtype", lambda x: ops.softmin(x, dtype=ms.float64), lambda x: np_softmax(-x, -1)),
    ("threshold", lambda x: ops.threshold(x, 0.5, -7.0), lambda x: np.where(x > 0.5, x, -7.0)),
    ("lrn", lambda x: ops.lrn(x), lambda x: np_lrn(x)),
    ("lrn_args", lambda x: ops.lrn(x, 1, 2.0, 0.1, 0.75), lambda x: np_lrn(x, 1, 2.0, 0.1, 0.75)),
    ("lrn_radius0", lambda x: ops.lrn(x, 0), lambda x: np_lrn(x, 0)),
]


@pytest.mark.parametrize("name,fn,ref", FORMS, ids=[f[0] for f in FORMS])
def test_functional_forms_match_numpy_eager_and_compiled(name, fn, ref):
    for out in eager_and_compiled(fn, Tensor(X)):
        assert out.dtype == (ms.float64 if name == "softmin_dtype" else ms.float32)
        np.testing.assert_allclose(out.asnumpy(), ref(X.astype(np.float64)), rtol=2e-5,
                                   atol=2e-6)


LAYERS = [
    ("CELU", lambda: nn.CELU(), lambda x: np_celu(x)),
    ("CELU_alpha", lambda: nn.CELU(2.0), lambda x: np_celu(x, 2.0)),
    ("GLU", lambda: nn.GLU(), lambda x: np_glu(x, -1)),
    ("GLU_axis", lambda: nn.GLU(axis=1), lambda x: np_glu(x, 1)),
    ("Softmin", lambda: nn.Softmin(), lambda x: np_softmax(-x, -1)),
    ("Softmax2d", lambda: nn.Softmax2d(), lambda x: np_softmax(x, -3)),
    ("Threshold", lambda: nn.Threshold(0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0)),
    ("RReLU_eval", lambda: nn.RReLU(), lambda x: np.where(x >= 0, x, x * (1 / 8 + 1 / 3) / 2)),
    ("LRN", lambda: nn.LRN(), lambda x: np_lrn(x)),
    ("LRN_args", lambda: nn.LRN(2, 1.5, 0.3, 0.6), lambda x: np_lrn(x, 2, 1.5, 0.3, 0.6)),
]


@pytest.mark.parametrize("name,make,ref", LAYERS, ids=[f[0] for f in LAYERS])
def test_layers_match_numpy_eager_and_compiled(name, make, ref):
    want = ref(X.astype(np.float64))
    np.testing.assert_allclose(make()(Tensor(X)).asnumpy(), want, rtol=2e-5, atol=2e-6)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        np.testing.assert_allclose(make()(Tensor(X)).asnumpy(), want, rtol=2e-5, atol=2e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_softmax2d_takes_3d_input():
    x = X[0]
    np.testing.assert_allclose(nn.Softmax2d()(Tensor(x)).asnumpy(),
                               np_softmax(x.astype(np.float64), 0), rtol=2e-6, atol=1e-7)


GRADS = [
    ("celu", lambda x: ops.celu(x, 0.7)),
    ("celu_negative_alpha", lambda x: ops.celu(x, -1.5)),
    ("glu", lambda x: ops.glu(x, 1)),
    ("softmin", lambda x: ops.softmin(x, 2) * ops.arange(2.0, 5.0, dtype=ms.float64)[:, None]),
    ("threshold", lambda x: ops.threshold(x, 0.3, 2.0)),
    ("lrn", lambda x: ops.lrn(x, 1, 1.0, 0.5, 0.75)),
    ("rrelu_eval", lambda x: nn.RReLU(0.1, 0.3)(x)),
    ("softmax2d", lambda x: nn.Softmax2d()(x) * ops.arange(1.0, 5.0, dtype=ms.float64)[
        :, None, None]),
]


@pytest.mark.parametrize("name,fn", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_finite_differences(name, fn):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x), ()))(Tensor(X64))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), X64)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_rrelu_training_draws_slopes_in_range_and_eval_uses_their_mean():
    x = -np.abs(RNG.standard_normal((200, 50)).astype(np.float32)) - 0.1
    layer = nn.RReLU(0.2, 0.6)
    layer.set_train(True)
    ms.set_seed(5)
    first = layer(Tensor(x)).asnumpy() / x
    assert first.min() >= 0.2 and first.max() < 0.6 + 1e-6
    assert abs(first.mean() - 0.4) < 0.01 and first.std() > 0.1      # U(0.2, 0.6): std 0.115
    second = layer(Tensor(x)).asnumpy() / x
    assert not np.allclose(first, second)                             # a new draw per call
    pos = np.abs(x)
    np.testing.assert_array_equal(layer(Tensor(pos)).asnumpy(), pos)  # x >= 0 unchanged
    layer.set_train(False)
    np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), 0.4 * x, rtol=1e-6)
    slopes = ops.rrelu(Tensor(x), 0.25, 0.5).asnumpy() / x
    assert slopes.min() >= 0.25 and slopes.max() < 0.5 + 1e-6


def test_rrelu_training_draws_alike_eager_and_compiled():
    x = Tensor(-np.abs(RNG.standard_normal((4, 5)).astype(np.float32)))
    layer = nn.RReLU()
    layer.set_train(True)
    ms.set_seed(9)
    eager = layer(x).asnumpy()
    ms.set_seed(9)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = nn.RReLU().set_train(True)(x).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6)


ERRORS = [
    (lambda: nn.CELU(0.0), ValueError, r"For 'CELU', the 'alpha' should not be 0"),
    (lambda: ops.celu(Tensor(X), 0), ValueError, r"For 'celu', the 'alpha' should not be 0"),
    (lambda: ops.glu(Tensor(X), 2), ValueError,
     r"For 'glu', the size of 'x' along 'axis' 2 should be even, but got shape \[2, 6, 3, 4\]"),
    (lambda: ops.glu(Tensor(X), 4), ValueError, r"For 'glu', the 'axis'"),
    (lambda: nn.Threshold("1", 0.0), TypeError, r"For 'Threshold', the type of 'threshold'"),
    (lambda: nn.RReLU(0.5, 0.2), ValueError, r"For 'RReLU', the 'lower' should be <= 'upper'"),
    (lambda: nn.LRN(norm_region="WITHIN"), ValueError,
     r"For 'LRN', the 'norm_region' should be 'ACROSS_CHANNELS'"),
    (lambda: nn.LRN(-1), ValueError, r"For 'LRN', the 'depth_radius'"),
    (lambda: nn.LRN(bias=1), TypeError, r"For 'LRN', the type of 'bias'"),
    (lambda: ops.lrn(Tensor(X[0])), ValueError, r"For 'lrn', the 'x' should be 4-D"),
    (lambda: nn.Softmax2d()(Tensor(X[0, 0])), ValueError,
     r"For 'Softmax2d', the 'x' should be 3-D \(C, H, W\) or 4-D"),
    (lambda: ops.softmin(Tensor(np.arange(3, dtype=np.int32))), TypeError,
     r"For 'softmin', the 'x' should have a float dtype"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors_name_the_op_and_argument(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_functional_forms_are_in_ops_and_layers_show_their_arguments():
    for name in ("celu", "glu", "softmin", "threshold", "rrelu", "lrn", "unfold", "fold",
                 "channel_shuffle"):
        assert name in ops.__all__
        assert getattr(ms.ops.functional, name) is getattr(ops, name)
    assert "alpha=2.0" in repr(nn.CELU(2.0))
    assert "threshold=0.1, value=20.0" in repr(nn.Threshold(0.1, 20.0))
    assert "lower=0.1, upper=0.2" in repr(nn.RReLU(0.1, 0.2))
    assert "depth_radius=5" in repr(nn.LRN())


def test_get_activation_takes_their_names():
    for name, cls in (("softmin", nn.Softmin), ("Softmax2d", nn.Softmax2d), ("rrelu", nn.RReLU)):
        assert type(nn.get_activation(name)) is cls
        assert isinstance(nn.Dense(4, 2, activation=name).activation, cls)
