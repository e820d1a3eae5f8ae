"""ops.batch_norm and ops.embedding against numpy written here: batch_norm's output and its
running statistics (training and inference, eager and inside a compiled Cell), its gradient
against finite differences; embedding's rows, padding_idx's missing gradient, max_norm's
rescaled output, in-place Parameter update and unscaled gradient, scale_grad_by_freq."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from numeric import finite_differences

RNG = np.random.default_rng(5150)


def bn_ref(x, mean, var, w, b, training, momentum, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training:
        m, v = x.mean(axes), x.var(axes)
        new_mean = (1 - momentum) * mean + momentum * m
        new_var = (1 - momentum) * var + momentum * v
    else:
        m, v, new_mean, new_var = mean, var, mean, var
    y = (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps)
    y = y * w.reshape(shape) + b.reshape(shape)
    return y, new_mean, new_var


class BN(nn.Cell):
    def __init__(self, mean, var, training):
        super().__init__()
        self.mean = Parameter(Tensor(mean), name="mean", requires_grad=False)
        self.var = Parameter(Tensor(var), name="var", requires_grad=False)
        self.training_ = training

    def construct(self, x, w, b):
        return ops.batch_norm(x, self.mean, self.var, w, b, self.training_, 0.2, 1e-3)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 2, 2), (2, 3, 2, 1, 2)])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("compiled", [False, True])
def test_batch_norm_matches_numpy(shape, training, compiled):
    x = RNG.standard_normal(shape).astype(np.float32)
    c = shape[1]
    mean, var = RNG.standard_normal(c).astype(np.float32), RNG.uniform(0.5, 2, c).astype(np.float32)
    w, b = RNG.standard_normal(c).astype(np.float32), RNG.standard_normal(c).astype(np.float32)
    want, want_mean, want_var = bn_ref(x.astype(np.float64), mean, var, w, b, training, 0.2, 1e-3)
    net = BN(mean, var, training)
    if compiled:
        ms.set_context(mode=ms.GRAPH_MODE)
    try:
        got = net(Tensor(x), Tensor(w), Tensor(b))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net.mean.asnumpy(), want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.var.asnumpy(), want_var, rtol=1e-5, atol=1e-6)


def test_batch_norm_gradient_matches_finite_differences():
    x = RNG.standard_normal((3, 2, 4))
    mean, var = np.zeros(2), np.ones(2)
    w, b = RNG.standard_normal(2), RNG.standard_normal(2)
    k = RNG.standard_normal((3, 2, 4))
    rm = Parameter(Tensor(mean), name="rm", requires_grad=False)
    rv = Parameter(Tensor(var), name="rv", requires_grad=False)
    grads = ms.grad(lambda a, g, h: ops.sum(ops.batch_norm(a, rm, rv, g, h, True) * Tensor(k)),
                    grad_position=(0, 1, 2))(Tensor(x), Tensor(w), Tensor(b))
    refs = [finite_differences(lambda a: bn_ref(a, mean, var, w, b, True, 0.1, 1e-5)[0] * k, x),
            finite_differences(lambda g: bn_ref(x, mean, var, g, b, True, 0.1, 1e-5)[0] * k, w),
            finite_differences(lambda h: bn_ref(x, mean, var, w, h, True, 0.1, 1e-5)[0] * k, b)]
    for got, want in zip(grads, refs):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_batch_norm_errors():
    x = Tensor(np.zeros((2, 3), np.float32))
    c = Tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError,
                       match="For 'batch_norm', the 'running_mean' should be a Parameter"):
        ops.batch_norm(x, c, c, c, c, training=True)
    with pytest.raises(ValueError, match="the 'weight' should have shape \\[C\\] = \\[3\\]"):
        ops.batch_norm(x, c, c, Tensor(np.ones(2, np.float32)), c)
    with pytest.raises(ValueError, match="the 'momentum' should be in \\[0, 1\\]"):
        ops.batch_norm(x, c, c, c, c, momentum=1.5)


IDX = np.array([[0, 3, 3], [1, 0, 4]], np.int32)


def test_embedding_rows_and_padding_idx_gradient():
    w = RNG.standard_normal((5, 3))
    rows = ops.embedding(Tensor(IDX), Tensor(w))
    np.testing.assert_array_equal(rows.asnumpy(), w[IDX])
    k = RNG.standard_normal((2, 3, 3))
    g = ms.grad(lambda t: ops.sum(ops.embedding(Tensor(IDX), t, padding_idx=-2) * Tensor(k)))(
        Tensor(w))
    want = np.zeros_like(w)
    np.add.at(want, IDX, k)
    want[3] = 0                                      # padding_idx -2 is row 3
    np.testing.assert_allclose(g.asnumpy(), want, atol=1e-12)


def renorm_ref(w, idx, max_norm, p):
    w = w.copy()
    for r in np.unique(idx):
        norm = np.sum(np.abs(w[r]) ** p) ** (1 / p)
        if norm > max_norm:
            w[r] *= max_norm / (norm + 1e-7)
    return w


class Emb(nn.Cell):
    def __init__(self, w):
        super().__init__()
        self.w = Parameter(Tensor(w), name="w")

    def construct(self, i):
        return ops.embedding(i, self.w, max_norm=1.5, norm_type=1.0)


@pytest.mark.parametrize("compiled", [False, True])
def test_embedding_max_norm_rescales_output_and_parameter(compiled):
    w = RNG.standard_normal((5, 3)).astype(np.float32)
    want_w = renorm_ref(w.astype(np.float64), IDX, 1.5, 1.0)
    net = Emb(w)
    if compiled:
        ms.set_context(mode=ms.GRAPH_MODE)
    try:
        out = net(Tensor(IDX))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(out.asnumpy(), want_w[IDX], rtol=1e-6)
    np.testing.assert_allclose(net.w.asnumpy(), want_w, rtol=1e-6)  # row 2 not looked up: kept
    assert np.abs(want_w[IDX]).sum(-1).max() <= 1.5 + 1e-6


def test_embedding_max_norm_gradient_passes_unscaled():
    w = RNG.standard_normal((5, 3)) * 3
    k = RNG.standard_normal((2, 3, 3))
    g = ms.grad(lambda t: ops.sum(ops.embedding(Tensor(IDX), t, max_norm=1.0) * Tensor(k)))(
        Tensor(w))
    want = np.zeros_like(w)
    np.add.at(want, IDX, k)
    np.testing.assert_allclose(g.asnumpy(), want, atol=1e-12)


def test_embedding_scale_grad_by_freq():
    w = RNG.standard_normal((5, 3))
    k = RNG.standard_normal((2, 3, 3))
    out, g = ms.value_and_grad(lambda t: ops.sum(
        ops.embedding(Tensor(IDX), t, scale_grad_by_freq=True) * Tensor(k)))(Tensor(w))
    np.testing.assert_allclose(out.asnumpy(), np.sum(w[IDX] * k))
    want = np.zeros_like(w)
    np.add.at(want, IDX, k)
    counts = np.bincount(IDX.ravel(), minlength=5)
    want /= np.maximum(counts, 1)[:, None]
    np.testing.assert_allclose(g.asnumpy(), want, atol=1e-12)


def test_embedding_errors():
    w = Tensor(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="For 'embedding', the 'padding_idx' should be an int in"):
        ops.embedding(Tensor(IDX), w, padding_idx=3)
    with pytest.raises(TypeError, match="the 'input' should have an int dtype"):
        ops.embedding(Tensor(np.zeros(2, np.float32)), w)
    with pytest.raises(ValueError, match="the 'weight' should be 2-D"):
        ops.embedding(Tensor(IDX), Tensor(np.zeros(3, np.float32)))
