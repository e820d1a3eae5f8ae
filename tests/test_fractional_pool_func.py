"""ops.fractional_max_pool2d against a loop of PyTorch's interval rule written here
(window starts floor((i + u) a) - floor(u a), the last at L - k), values and indices,
eagerly and compiled; its gradient against float64 finite differences; the default draw
seeded by the global seed; argument errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from compiled import compiled
from numeric import finite_differences

RNG = np.random.default_rng(2718)


def starts(size, k, out, u):
    if out == 1:
        return [size - k]
    alpha = (size - k) / (out - 1)
    return [math.floor((i + u) * alpha) - math.floor(u * alpha) for i in range(out - 1)] + \
        [size - k]


def frac_ref(x, k, out, samples):
    n, c, h, w = x.shape
    y = np.zeros((n, c) + out)
    idx = np.zeros((n, c) + out, np.int64)
    for b in range(n):
        for ch in range(c):
            rs = starts(h, k[0], out[0], samples[b, ch, 1])
            cs = starts(w, k[1], out[1], samples[b, ch, 0])
            for i, r in enumerate(rs):
                for j, q in enumerate(cs):
                    win = x[b, ch, r:r + k[0], q:q + k[1]]
                    a = int(np.argmax(win))
                    y[b, ch, i, j] = win.flat[a]
                    idx[b, ch, i, j] = (r + a // k[1]) * w + q + a % k[1]
    return y, idx


@pytest.mark.parametrize("k,size,ratio", [((2, 2), (4, 3), None), ((3, 2), None, (0.5, 0.6)),
                                          ((2, 3), (1, 5), None), ((1, 1), (9, 7), None)])
def test_matches_interval_loop_eager_and_compiled(k, size, ratio):
    x = RNG.standard_normal((2, 3, 9, 8)).astype(np.float32)
    samples = RNG.random((2, 3, 2)).astype(np.float32)
    out = size or (int(9 * ratio[0]), int(8 * ratio[1]))
    want, want_idx = frac_ref(x, k, out, samples.astype(np.float64))

    def fn(a, s):
        return ops.fractional_max_pool2d(a, k, size, ratio, True, s)
    (y, idx) = fn(Tensor(x), Tensor(samples))
    np.testing.assert_array_equal(y.asnumpy(), want)
    np.testing.assert_array_equal(idx.asnumpy(), want_idx)
    assert idx.dtype == ms.int64
    cy, cidx = compiled(fn, Tensor(x), Tensor(samples))
    np.testing.assert_array_equal(cy.asnumpy(), want)
    np.testing.assert_array_equal(cidx.asnumpy(), want_idx)


def test_unbatched_int_input_and_gradient():
    x = RNG.permutation(3 * 7 * 7).reshape(3, 7, 7)
    samples = RNG.random((1, 3, 2))
    got = ops.fractional_max_pool2d(Tensor(x.astype(np.int32)), 3, 3,
                                    _random_samples=Tensor(samples))
    assert got.dtype == ms.int32 and got.shape == (3, 3, 3)
    np.testing.assert_array_equal(got.asnumpy(), frac_ref(x[None], (3, 3), (3, 3), samples)[0][0])
    xf = x[None].astype(np.float64)                     # distinct values: one maximum each
    k = RNG.standard_normal((1, 3, 3, 3))
    g = ms.grad(lambda a: ops.sum(ops.fractional_max_pool2d(
        a, 3, 3, _random_samples=Tensor(samples)) * Tensor(k)))(Tensor(xf))
    want = finite_differences(lambda a: frac_ref(a, (3, 3), (3, 3), samples)[0] * k, xf)
    np.testing.assert_allclose(g.asnumpy(), want, atol=1e-6)


def test_default_samples_follow_the_global_seed():
    x = Tensor(RNG.standard_normal((2, 2, 10, 10)).astype(np.float32))
    ms.set_seed(4)
    first = ops.fractional_max_pool2d(x, 2, output_ratio=0.5).asnumpy()
    ms.set_seed(4)
    again = ops.fractional_max_pool2d(x, 2, output_ratio=0.5).asnumpy()
    np.testing.assert_array_equal(first, again)
    assert first.shape == (2, 2, 5, 5)


def test_errors():
    x = Tensor(np.zeros((1, 1, 5, 5), np.float32))
    with pytest.raises(ValueError, match="exactly one of 'output_size' and 'output_ratio'"):
        ops.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="each output size plus kernel_size - 1"):
        ops.fractional_max_pool2d(x, 3, 4)
    with pytest.raises(ValueError, match="the 'output_ratio' should be"):
        ops.fractional_max_pool2d(x, 2, output_ratio=1.5)
    with pytest.raises(ValueError, match="the '_random_samples' should have shape"):
        ops.fractional_max_pool2d(x, 2, 2, _random_samples=Tensor(np.zeros((1, 2, 2))))
    with pytest.raises(TypeError, match="For 'fractional_max_pool2d', the 'input'"):
        ops.fractional_max_pool2d(Tensor(np.zeros((1, 1, 5, 5), np.bool_)), 2, 2)
