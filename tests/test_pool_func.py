"""1-D and adaptive pooling (ops.avg_pool1d, max_pool1d, adaptive_avg/max_pool1d/2d; nn.AvgPool1d,
MaxPool1d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d) against numpy loops written here,
eager and compiled; gradients against finite differences; their errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import Call

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


def run(fn, mode, x):
    ms.set_context(mode=mode)
    try:
        return Call(fn)(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def pool1d_np(x, k, s, kind, left=0, right=0, count_pad=True):
    """Windows of k every s along the last dim of x padded by left/right (zeros for a mean,
    counted when count_pad; never the max)."""
    n = x.shape[-1]
    out = []
    for start in range(-left, n + right - k + 1, s):
        idx = [i for i in range(start, start + k) if 0 <= i < n]
        vals = x[..., idx]
        if kind == "max":
            out.append(vals.max(axis=-1))
        else:
            out.append(vals.sum(axis=-1) / (k if count_pad else len(idx)))
    return np.stack(out, axis=-1)


def same_pads(n, k, s):
    total = max((math.ceil(n / s) - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def adaptive_np(x, sizes, kind):
    """Bin i of a dim of size L: [floor(i L / out), ceil((i + 1) L / out))."""
    f = np.max if kind == "max" else np.mean
    for k, out in enumerate(sizes):
        axis = x.ndim - len(sizes) + k
        n = x.shape[axis]
        parts = [f(np.take(x, range(i * n // out, -(-(i + 1) * n // out)), axis=axis),
                   axis=axis, keepdims=True) for i in range(out)]
        x = np.concatenate(parts, axis=axis)
    return x


X = np.random.default_rng(0).standard_normal((2, 3, 9)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((2, 3, 7, 5)).astype(np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_pool1d(mode):
    cases = [
        (lambda t: nn.MaxPool1d(3, 2)(t), X, pool1d_np(X, 3, 2, "max")),
        (lambda t: nn.AvgPool1d(4, 1)(t), X[0], pool1d_np(X[0], 4, 1, "avg")),
        (lambda t: nn.MaxPool1d(3, 2, "pad", 1)(t), X, pool1d_np(X, 3, 2, "max", 1, 1)),
        (lambda t: nn.AvgPool1d(3, 2, "PAD", 1)(t), X, pool1d_np(X, 3, 2, "avg", 1, 1)),
        (lambda t: nn.AvgPool1d(3, 2, "pad", 1, count_include_pad=False)(t), X,
         pool1d_np(X, 3, 2, "avg", 1, 1, False)),
        (lambda t: nn.AvgPool1d(4, 2, "same")(t), X,
         pool1d_np(X, 4, 2, "avg", *same_pads(9, 4, 2), count_pad=False)),
        (lambda t: nn.MaxPool1d(4, 3, "same")(t), X, pool1d_np(X, 4, 3, "max",
                                                                *same_pads(9, 4, 3))),
        (lambda t: ops.avg_pool1d(t, 3, 3, 1), X, pool1d_np(X, 3, 3, "avg", 1, 1)),
        (lambda t: ops.avg_pool1d(t, (2,), (2,), 1, False, False), X,
         pool1d_np(X, 2, 2, "avg", 1, 1, False)),
        (lambda t: ops.max_pool1d(t, 2, 3), X, pool1d_np(X, 2, 3, "max")),
    ]
    for fn, x, want in cases:
        np.testing.assert_allclose(run(fn, mode, x), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_adaptive_pools(mode):
    cases = [
        (lambda t: ops.adaptive_avg_pool1d(t, 4), X, adaptive_np(X, (4,), "avg")),
        (lambda t: ops.adaptive_max_pool1d(t, 4), X, adaptive_np(X, (4,), "max")),
        (lambda t: nn.AdaptiveAvgPool1d(3)(t), X[0], adaptive_np(X[0], (3,), "avg")),
        (lambda t: nn.AdaptiveMaxPool1d(12)(t), X, adaptive_np(X, (12,), "max")),
        (lambda t: nn.AdaptiveAvgPool2d((3, 2))(t), Y, adaptive_np(Y, (3, 2), "avg")),
        (lambda t: nn.AdaptiveAvgPool2d((None, 4))(t), Y[0], adaptive_np(Y[0], (7, 4), "avg")),
        (lambda t: nn.AdaptiveMaxPool2d(3)(t), Y, adaptive_np(Y, (3, 3), "max")),
        (lambda t: ops.adaptive_max_pool2d(t, (1, None)), Y, adaptive_np(Y, (1, 5), "max")),
        (lambda t: ops.adaptive_avg_pool2d(t, 1), Y, Y.mean(axis=(2, 3), keepdims=True)),
    ]
    for fn, x, want in cases:
        got = run(fn, mode, x)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_pool_gradients(mode):
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 7))
    xs = x[0]
    cases = [(lambda t: ops.adaptive_avg_pool2d(t, (3, 4)), x,
              lambda v: adaptive_np(v, (3, 4), "avg")),
             (lambda t: ops.adaptive_max_pool2d(t, (2, 3)), x,
              lambda v: adaptive_np(v, (2, 3), "max")),
             (lambda t: nn.AvgPool1d(3, 2, "pad", 1, count_include_pad=False)(t), xs,
              lambda v: pool1d_np(v, 3, 2, "avg", 1, 1, False)),
             (lambda t: nn.MaxPool1d(2, 2, "pad", 1)(t), xs,
              lambda v: pool1d_np(v, 2, 2, "max", 1, 1))]
    for fn, v, ref in cases:
        w = np.random.default_rng(3).standard_normal(ref(v).shape)
        ms.set_context(mode=mode)
        try:
            dx = ms.grad(lambda t: (fn(t) * Tensor(w)).sum())(Tensor(v)).asnumpy()
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(dx, finite_differences(lambda u: ref(u) * w, v),
                                   rtol=1e-6, atol=1e-8)


def test_pool_errors():
    with pytest.raises(ValueError, match=r"For 'MaxPool1d', the 'padding' should be 0 unless "
                                         r"pad_mode is 'pad'"):
        nn.MaxPool1d(3, 1, "same", 1)
    with pytest.raises(ValueError, match=r"For 'AvgPool1d', the 'ceil_mode' should be False"):
        nn.AvgPool1d(2, ceil_mode=True)
    with pytest.raises(ValueError, match=r"For 'MaxPool1d', the 'dilation' should be 1"):
        nn.MaxPool1d(2, dilation=2)
    with pytest.raises(ValueError, match=r"For 'AvgPool1d'.*'pad_mode'"):
        nn.AvgPool1d(2, pad_mode="full")
    with pytest.raises(TypeError, match=r"For 'AvgPool1d'.*'kernel_size'"):
        nn.AvgPool1d(2.0)
    with pytest.raises(ValueError, match=r"For 'AvgPool1d', the 'input' should be 2 or 3-D"):
        nn.AvgPool1d(2)(Tensor(Y))
    with pytest.raises(ValueError, match=r"For 'avg_pool1d', the 'padding' should be at most "
                                         r"half the kernel_size 2"):
        ops.avg_pool1d(Tensor(X), 2, 1, 2)
    with pytest.raises(ValueError, match=r"For 'adaptive_avg_pool2d', the 'output_size' should "
                                         r"be >= 1"):
        ops.adaptive_avg_pool2d(Tensor(Y), (0, 2))
    with pytest.raises(TypeError, match=r"For 'adaptive_max_pool2d', the 'output_size' should "
                                        r"be an int or a tuple of 2"):
        ops.adaptive_max_pool2d(Tensor(Y), (1, 2, 3))
    with pytest.raises(ValueError, match=r"For 'AdaptiveMaxPool2d', the 'return_indices'"):
        nn.AdaptiveMaxPool2d(2, True)
    with pytest.raises(TypeError, match=r"For 'adaptive_avg_pool1d', the 'input' should have a "
                                        r"float dtype"):
        ops.adaptive_avg_pool1d(Tensor(np.ones((1, 2, 3), np.int32)), 2)
    with pytest.raises(ValueError, match=r"For 'adaptive_max_pool1d', the 'input' should be "
                                         r"non-empty"):
        ops.adaptive_max_pool1d(Tensor(np.ones((1, 2, 0), np.float32)), 2)
