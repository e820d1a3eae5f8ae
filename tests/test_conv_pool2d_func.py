"""ops.conv_transpose2d, ops.max_pool2d and ops.avg_pool2d against direct numpy loops
(the transposed convolution as a scatter of each input pixel, pools window by window),
eagerly and compiled; gradients against float64 finite differences; argument errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from compiled import compiled, eager_and_compiled
from numeric import finite_differences

RNG = np.random.default_rng(4242)


def conv_transpose_ref(x, w, b, s, p, op, g, d):
    """Each input pixel scatters its weighted kernel into the output, then the padding is cut."""
    n, cin, h, wd = x.shape
    cout_g = w.shape[1]
    kh, kw = w.shape[2:]
    full_h = (h - 1) * s[0] + d[0] * (kh - 1) + 1 + op[0]
    full_w = (wd - 1) * s[1] + d[1] * (kw - 1) + 1 + op[1]
    out = np.zeros((n, cout_g * g, full_h + p[0], full_w + p[1]))
    cin_g = cin // g
    for b_ in range(n):
        for ci in range(cin):
            grp = ci // cin_g
            for i in range(h):
                for j in range(wd):
                    for co in range(cout_g):
                        for u in range(kh):
                            for v in range(kw):
                                out[b_, grp * cout_g + co, i * s[0] + u * d[0],
                                    j * s[1] + v * d[1]] += x[b_, ci, i, j] * w[ci, co, u, v]
    oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1
    ow = (wd - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1
    y = out[:, :, p[0]:p[0] + oh, p[1]:p[1] + ow]
    return y if b is None else y + b[None, :, None, None]


@pytest.mark.parametrize("s,p,op,g,d", [((1, 1), (0, 0), (0, 0), 1, (1, 1)),
                                        ((2, 2), (1, 0), (1, 0), 1, (1, 1)),
                                        ((2, 3), (1, 1), (1, 2), 2, (2, 1))])
def test_conv_transpose2d_matches_scatter_loop(s, p, op, g, d):
    x = RNG.standard_normal((2, 4, 3, 4)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = RNG.standard_normal(3 * g).astype(np.float32)
    want = conv_transpose_ref(x.astype(np.float64), w.astype(np.float64), b, s, p, op, g, d)
    eager, compiled = eager_and_compiled(
        lambda a, k, c: ops.conv_transpose2d(a, k, c, s, p, op, g, d), x, w, b)
    for got in (eager, compiled):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
    unbatched = ops.conv_transpose2d(Tensor(x[0]), Tensor(w), None, s, p, op, g, d)
    np.testing.assert_allclose(unbatched.asnumpy(), want[0] - b[:, None, None], rtol=1e-5,
                               atol=1e-5)


def test_conv_transpose2d_gradients():
    x = RNG.standard_normal((1, 2, 3, 3))
    w = RNG.standard_normal((2, 2, 2, 2))
    args = ((2, 2), (1, 1), (1, 1), 1, (1, 1))
    dx, dw = ms.grad(lambda a, k: ops.sum(ops.conv_transpose2d(a, k, None, *args) ** 2),
                     grad_position=(0, 1))(Tensor(x), Tensor(w))
    np.testing.assert_allclose(dx.asnumpy(), finite_differences(
        lambda a: conv_transpose_ref(a, w, None, *args) ** 2, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dw.asnumpy(), finite_differences(
        lambda k: conv_transpose_ref(x, k, None, *args) ** 2, w), rtol=1e-6, atol=1e-6)


def pool_ref(x, k, s, p, d, ceil, kind, count_include_pad=True, divisor=0):
    """Window by window, PyTorch's rules: ceil_mode drops a last window starting in the end
    padding; a mean's divisor counts the padding (not ceil's extra) when count_include_pad."""
    n, c, h, w = x.shape

    def length(size, i):
        span = d[i] * (k[i] - 1) + 1
        if ceil:
            o = math.ceil((size + 2 * p[i] - span) / s[i]) + 1
            return o - 1 if (o - 1) * s[i] >= size + p[i] else o
        return (size + 2 * p[i] - span) // s[i] + 1
    oh, ow = length(h, 0), length(w, 1)
    out = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - p[0], j * s[1] - p[1]
            rows = [r0 + u * d[0] for u in range(k[0])]
            cols = [c0 + v * d[1] for v in range(k[1])]
            inside = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
            if kind == "max":
                vals = np.array([x[:, :, r, q] for r, q in inside])      # (K, n, c)
                best = vals.argmax(0)
                out[:, :, i, j] = vals.max(0)
                flat = np.array([r * w + q for r, q in inside])
                idx[:, :, i, j] = flat[best]
                continue
            total = sum(x[:, :, r, q] for r, q in inside)
            if divisor:
                out[:, :, i, j] = total / divisor
                continue
            if count_include_pad:
                hend = min(r0 + k[0], h + p[0])
                wend = min(c0 + k[1], w + p[1])
                count = (hend - r0) * (wend - c0)
            else:
                count = len(inside)
            out[:, :, i, j] = total / count
    return out, idx


MAX_CASES = [((2, 2), None, (0, 0), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), True),
             ((3, 2), (2, 1), (1, 0), (2, 1), False), ((2, 3), (2, 2), (1, 1), (1, 2), True)]


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_CASES)
def test_max_pool2d_values_and_indices(k, s, p, d, ceil):
    x = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
    want, want_idx = pool_ref(x.astype(np.float64), k, s or k, p, d, ceil, "max")
    eager, compiled = eager_and_compiled(
        lambda a: ops.max_pool2d(a, k, s, p, d, ceil_mode=ceil), x)
    for got in (eager, compiled):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    values, index = ops.max_pool2d(Tensor(x), k, s, p, d, return_indices=True, ceil_mode=ceil)
    np.testing.assert_allclose(values.asnumpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(index.asnumpy(), want_idx)
    assert index.dtype == ms.int64
    chw = ops.max_pool2d(Tensor(x[0]), k, s, p, d, ceil_mode=ceil)
    np.testing.assert_allclose(chw.asnumpy(), want[0], rtol=1e-6)
    ints = (x * 100).astype(np.int32)
    got_int, got_idx = ops.max_pool2d(Tensor(ints), k, s, p, d, True, ceil)
    want_int, want_idx = pool_ref(ints, k, s or k, p, d, ceil, "max")
    assert got_int.dtype == ms.int32
    np.testing.assert_array_equal(got_int.asnumpy(), want_int)
    np.testing.assert_array_equal(got_idx.asnumpy(), want_idx)


@pytest.mark.parametrize("return_indices", [False, True])
def test_max_pool2d_gradient(return_indices):
    x = RNG.permutation(64).reshape(1, 1, 8, 8).astype(np.float64)   # distinct: one max each
    k, s, p, d = (3, 3), (2, 2), (1, 1), (1, 1)

    def f(a):
        out = ops.max_pool2d(a, k, s, p, d, return_indices, True)
        return ops.sum((out[0] if return_indices else out) ** 2)
    got = ms.grad(f)(Tensor(x))
    want = finite_differences(lambda a: pool_ref(a, k, s, p, d, True, "max")[0] ** 2, x)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-6)


AVG_CASES = [((2, 2), (2, 2), (0, 0), False, True, 0), ((3, 3), (2, 2), (1, 1), False, False, 0),
             ((3, 3), (2, 2), (1, 1), True, True, 0), ((3, 2), (2, 2), (1, 1), True, False, 0),
             ((2, 3), (1, 2), (1, 1), False, True, 5)]


@pytest.mark.parametrize("k,s,p,ceil,include,divisor", AVG_CASES)
def test_avg_pool2d_matches_window_loop(k, s, p, ceil, include, divisor):
    x = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
    want, _ = pool_ref(x.astype(np.float64), k, s, p, (1, 1), ceil, "avg", include, divisor)
    eager, compiled = eager_and_compiled(
        lambda a: ops.avg_pool2d(a, k, s, p, ceil, include, divisor), x)
    for got in (eager, compiled):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-6)
    x64 = x[:1, :1].astype(np.float64)
    grad = ms.grad(lambda a: ops.sum(ops.avg_pool2d(a, k, s, p, ceil, include, divisor) ** 2))(
        Tensor(x64))
    np.testing.assert_allclose(grad.asnumpy(), finite_differences(
        lambda a: pool_ref(a, k, s, p, (1, 1), ceil, "avg", include, divisor)[0] ** 2, x64),
        rtol=1e-6, atol=1e-7)


def test_errors():
    x = Tensor(np.zeros((1, 2, 4, 4), np.float32))
    with pytest.raises(ValueError, match="For 'max_pool2d', the 'padding' should be at most"):
        ops.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="For 'avg_pool2d', the 'input_x' should be 4-D"):
        ops.avg_pool2d(Tensor(np.zeros((4, 4), np.float32)), 2)
    with pytest.raises(ValueError, match="For 'avg_pool2d', the 'divisor_override' should be"):
        ops.avg_pool2d(x, 2, divisor_override=-1)
    with pytest.raises(ValueError, match="'output_padding' should be smaller than the stride"):
        ops.conv_transpose2d(x, Tensor(np.zeros((2, 1, 2, 2), np.float32)), output_padding=1)
    with pytest.raises(ValueError, match="For 'conv_transpose2d', the 'weight' should be 4-D"):
        ops.conv_transpose2d(x, Tensor(np.zeros((3, 1, 2, 2), np.float32)))
    with pytest.raises(TypeError, match="For 'max_pool2d', the 'x'"):
        ops.max_pool2d(Tensor(np.zeros((1, 1, 4, 4), np.bool_)), 2)
    with pytest.raises(TypeError, match="For 'avg_pool2d', the 'input_x'"):
        ops.avg_pool2d(Tensor(np.zeros((1, 1, 4, 4), np.int32)), 2)
