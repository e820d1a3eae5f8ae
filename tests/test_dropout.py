"""Dropout (ops.Dropout, nn.Dropout): mask statistics, counter-based draws keyed by global
element position, determinism under ms.set_seed, eval-mode identity, gradient against
finite differences with a fixed mask, in PYNATIVE and GRAPH mode."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.common.counter_rng import uniform_at


def test_uniform_at_is_keyed_by_position():
    idx = np.arange(64 * 48).reshape(64, 48)
    whole = uniform_at(7, 3, idx)
    np.testing.assert_array_equal(uniform_at(7, 3, idx[16:32, 24:]), whole[16:32, 24:])
    assert not np.array_equal(uniform_at(7, 4, idx), whole)     # the counter changes draws
    assert not np.array_equal(uniform_at(8, 3, idx), whole)     # so does the seed


def test_uniform_at_statistics():
    u = uniform_at(0, 0, np.arange(200_000))
    assert 0 <= u.min() and u.max() < 1
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    chi2 = ((counts - 20_000) ** 2 / 20_000).sum()
    assert chi2 < 30                         # 9 degrees of freedom: p ~ 4e-4
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01


@pytest.mark.parametrize("keep_prob", [0.2, 0.5, 0.9])
def test_mask_statistics_and_output(keep_prob):
    ms.set_seed(1)
    x = np.random.default_rng(0).standard_normal((300, 200)).astype(np.float32)
    out, mask = ops.Dropout(keep_prob)(Tensor(x))
    m = mask.asnumpy()
    assert m.dtype == np.float32 and set(np.unique(m)) <= {0.0, 1.0}
    n = m.size
    assert abs(m.mean() - keep_prob) < 4 * np.sqrt(keep_prob * (1 - keep_prob) / n)
    np.testing.assert_allclose(out.asnumpy(), x * m / keep_prob, rtol=1e-6)


def test_determinism_under_set_seed():
    x = Tensor(np.ones((50, 40), np.float32))
    drop = ops.Dropout(0.5)
    ms.set_seed(5)
    a1, a2 = drop(x)[1].asnumpy(), drop(x)[1].asnumpy()
    assert not np.array_equal(a1, a2)                 # each call draws anew
    ms.set_seed(5)
    np.testing.assert_array_equal(drop(x)[1].asnumpy(), a1)
    np.testing.assert_array_equal(ops.Dropout(0.5)(x)[1].asnumpy(), a2)
    ms.set_seed(6)
    assert not np.array_equal(drop(x)[1].asnumpy(), a1)


def test_explicit_seeds():
    x = Tensor(np.ones((50, 40), np.float32))
    ms.set_seed(0)
    a = ops.Dropout(0.5, Seed0=1, Seed1=2)(x)[1].asnumpy()
    ms.set_seed(0)
    assert not np.array_equal(ops.Dropout(0.5, Seed0=1, Seed1=3)(x)[1].asnumpy(), a)
    ms.set_seed(0)
    np.testing.assert_array_equal(ops.Dropout(0.5, Seed0=1, Seed1=2)(x)[1].asnumpy(), a)


def test_keep_prob_one_keeps_everything():
    x = np.arange(6, dtype=np.float32)
    out, mask = ops.Dropout(1.0)(Tensor(x))
    np.testing.assert_array_equal(out.asnumpy(), x)
    np.testing.assert_array_equal(mask.asnumpy(), np.ones(6, np.float32))


@pytest.mark.parametrize("kwargs,match", [
    (dict(keep_prob=0.0), "'keep_prob' should be in \\(0, 1\\]"),
    (dict(keep_prob=1), "'keep_prob'"),
])
def test_op_argument_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ops.Dropout(**kwargs)


def test_op_rejects_int_input():
    with pytest.raises(TypeError, match="Dropout"):
        ops.Dropout(0.5)(Tensor(np.ones(3, np.int32)))


def test_cell_arguments():
    assert nn.Dropout().keep_prob == 0.5
    assert nn.Dropout(keep_prob=0.8).keep_prob == 0.8
    assert nn.Dropout(p=0.25).keep_prob == 0.75
    with pytest.raises(ValueError, match="only one of 'keep_prob' and 'p'"):
        nn.Dropout(keep_prob=0.8, p=0.2)
    with pytest.raises(ValueError, match="'p' should be in \\[0, 1\\), but got 1.0"):
        nn.Dropout(p=1.0)


class DropNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.4)

    def construct(self, x):
        return self.drop(x)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_cell_train_and_eval(mode):
    ms.set_context(mode=mode)
    x = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    net = DropNet()
    np.testing.assert_array_equal(net(Tensor(x)).asnumpy(), x)          # eval: identity
    net.set_train()
    ms.set_seed(11)
    y1, y2 = net(Tensor(x)).asnumpy(), net(Tensor(x)).asnumpy()
    ms.set_seed(11)
    want = ops.Dropout(0.6)(Tensor(x))[0].asnumpy()
    np.testing.assert_allclose(y1, want, rtol=1e-6)
    assert not np.array_equal(y1, y2)
    net.set_train(False)
    np.testing.assert_array_equal(net(Tensor(x)).asnumpy(), x)


def test_gradient_against_finite_differences():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 7))
    w = rng.standard_normal((6, 7))
    drop = ops.Dropout(0.7)

    def loss(v):
        ms.set_seed(9)                     # the same mask at every evaluation
        return ops.ReduceSum()(drop(v)[0] * Tensor(w))

    ms.set_seed(9)
    mask = drop(Tensor(x))[1].asnumpy()
    grad = ms.grad(loss)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(grad, w * mask / 0.7, rtol=1e-12)
    eps, fd = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        fd[i] = (loss(Tensor(x + e)).asnumpy() - loss(Tensor(x - e)).asnumpy()) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
