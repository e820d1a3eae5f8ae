"""Functions along an axis and order statistics: cummax, cummin, logcumsumexp, diff, trapz,
rot90, combinations, vander, logspace (sequence_func); median, nanmedian, quantile,
nanquantile, histc, cov (order_stats_func); cosine_similarity, renorm, batch_dot
(vector_func); the
windows (window_func) and mvlgamma. Values against numpy / scipy written here, eagerly and
inside a compiled Cell; gradients against finite differences; argument errors."""
import itertools
import warnings

import numpy as np
import pytest
import scipy.signal as ss
import scipy.special as sp

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(41)
A = RNG.standard_normal((4, 6)).astype(np.float32)
T = RNG.integers(-5, 5, (4, 6)).astype(np.int32)          # ties
NANS = A.copy()
NANS[1, 2] = np.nan
NANS[3, :] = np.nan


def np_cum(x, axis, better):
    """(running extreme, the latest index of it) by a plain loop."""
    x = np.moveaxis(x, axis, 0)
    v, i = x.copy(), np.zeros(x.shape, np.int64)
    for k in range(1, x.shape[0]):
        take = better(x[k], v[k - 1])
        v[k] = np.where(take, x[k], v[k - 1])
        i[k] = np.where(take, k, i[k - 1])
    return np.moveaxis(v, 0, axis), np.moveaxis(i, 0, axis)


def np_lower_median(x, axis, skip_nan):
    """(value, index) of the lower median by sorting (NaN rows: the first NaN / nan-less)."""
    x = np.moveaxis(x, axis, -1)
    values, index = np.empty(x.shape[:-1], x.dtype), np.empty(x.shape[:-1], np.int64)
    for at in np.ndindex(x.shape[:-1]):
        row = x[at]
        order = np.argsort(row, kind="stable")
        numbers = int((~np.isnan(row)).sum())
        if skip_nan:
            k = max(numbers - 1, 0) // 2
        else:
            k = (row.size - 1) // 2 if numbers == row.size else numbers
        values[at], index[at] = row[order[k]], order[k]
    return values, index


def np_quantile(x, q, axis, skip_nan):
    """numpy's (nan)quantile, its all-NaN warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (np.nanquantile if skip_nan else np.quantile)(x, q, axis=axis)


Q = np.array([0.0, 0.25, 0.6, 1.0])
B34 = RNG.standard_normal((4, 3, 4)).astype(np.float32)
E3 = RNG.standard_normal((4, 2, 3)).astype(np.float32)
C4 = RNG.standard_normal((4, 2, 3, 5)).astype(np.float32)
D4 = RNG.standard_normal((4, 2, 5, 3)).astype(np.float32)
FW = np.array([1, 3, 2, 1, 4, 2])
AW = RNG.uniform(0.2, 1.5, 6)

FORMS = [
    ("cummax", lambda x: ops.cummax(x, 1), (T,), np_cum(T, 1, np.greater_equal)),
    ("cummin", lambda x: ops.cummin(x, 0), (A,), np_cum(A, 0, np.less_equal)),
    ("logcumsumexp", lambda x: ops.logcumsumexp(x * 300.0, 1), (A,),
     np.logaddexp.accumulate(A.astype(np.float64) * 300.0, 1).astype(np.float32)),
    ("diff", lambda x: ops.diff(x), (A,), np.diff(A)),
    ("diff_n_axis", lambda x, p: ops.diff(x, 2, 0, prepend=p), (A, A[:1]),
     np.diff(A, 2, 0, prepend=A[:1])),
    ("diff_bool", lambda x: ops.diff(x > 0, 1, 1), (A,), np.diff(A > 0, 1, 1)),
    ("trapz", lambda y: ops.trapz(y, dx=0.5), (A,), np.trapezoid(A, dx=0.5)),
    ("trapz_x", lambda y, x: ops.trapz(y, x, dim=0), (A, np.array([0.0, 1.0, 3.0, 7.0],
                                                                  np.float32)),
     np.trapezoid(A, [0.0, 1.0, 3.0, 7.0], axis=0).astype(np.float32)),
    ("rot90", lambda x: ops.rot90(x, 1, [0, 1]), (A,), np.rot90(A, 1, (0, 1))),
    ("rot90_k3", lambda x: ops.rot90(x, -1, (1, 0)), (A,), np.rot90(A, -1, (1, 0))),
    ("combinations", lambda x: ops.combinations(x, 3), (A[0],),
     A[0][np.array(list(itertools.combinations(range(6), 3)))]),
    ("combinations_repl", lambda x: ops.combinations(x, 2, True), (A[0, :3],),
     A[0, :3][np.array(list(itertools.combinations_with_replacement(range(3), 2)))]),
    ("vander", lambda x: ops.vander(x, 4), (A[0],), np.vander(A[0], 4).astype(np.float32)),
    ("median", lambda x: ops.median(x, 1), (T,), np_lower_median(T, 1, False)),
    ("median_nan", lambda x: ops.median(x, 1, True), (NANS,),
     tuple(np.expand_dims(v, 1) for v in np_lower_median(NANS, 1, False))),
    ("nanmedian", lambda x: ops.nanmedian(x, 0), (NANS,), np_lower_median(NANS, 0, True)),
    ("quantile", lambda x: ops.quantile(x, 0.3, 1), (A.astype(np.float64),),
     np.quantile(A.astype(np.float64), 0.3, 1)),
    ("quantile_q", lambda x, q: ops.quantile(x, q, 0, True), (A, Q.astype(np.float32)),
     np.quantile(A, Q, 0, keepdims=True).astype(np.float32)),
    ("quantile_all", lambda x, q: ops.quantile(x, q), (A, Q.astype(np.float32)),
     np.quantile(A, Q).astype(np.float32)),
    ("quantile_nan", lambda x: ops.quantile(x, 0.5, 1), (NANS,),
     np_quantile(NANS, 0.5, 1, False).astype(np.float32)),
    ("nanquantile", lambda x, q: ops.nanquantile(x, q, 1), (NANS, Q.astype(np.float32)),
     np_quantile(NANS, Q, 1, True).astype(np.float32)),
    ("histc", lambda x: ops.histc(x, 5), (A,),
     np.histogram(A, 5)[0].astype(np.float32)),
    ("histc_range", lambda x: ops.histc(x, 4, -1.0, 1.0), (A,),
     np.histogram(A[(A >= -1) & (A <= 1)], 4, (-1.0, 1.0))[0].astype(np.float32)),
    ("histc_int", lambda x: ops.histc(x, 3, 0, 3), (T,),
     np.histogram(T[(T >= 0) & (T <= 3)], 3, (0, 3))[0].astype(np.int32)),
    ("cov", lambda x: ops.cov(x), (A,), np.cov(A).astype(np.float32)),
    ("cov_weights", lambda x, f, a: ops.cov(x, correction=1, fweights=f, aweights=a),
     (A.astype(np.float64), FW, AW), np.cov(A.astype(np.float64), fweights=FW, aweights=AW)),
    ("cov_vector", lambda x: ops.cov(x, correction=0), (A[0],),
     np.asarray(np.cov(A[0], ddof=0), np.float32)),
    ("cosine_similarity", lambda a, b: ops.cosine_similarity(a, b), (A, T.astype(np.float32)),
     ((A * T).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(T.astype(np.float32),
                                                                    axis=1)).astype(np.float32)),
    ("renorm", lambda x: ops.renorm(x, 2, 0, 1.5), (A,),
     A * np.where(np.linalg.norm(A, axis=1, keepdims=True) > 1.5,
                  1.5 / (np.linalg.norm(A, axis=1, keepdims=True) + 1e-7), 1.0)),
    ("renorm_p1_axis1", lambda x: ops.renorm(x, 1, 1, 2.0), (A,),
     A * np.where(np.abs(A).sum(0, keepdims=True) > 2.0,
                  2.0 / (np.abs(A).sum(0, keepdims=True) + 1e-7), 1.0)),
    ("batch_dot", lambda a, b: ops.batch_dot(a, b, (-1, -2)), (E3, B34),
     np.einsum("bij,bjk->bik", E3, B34)),
    ("batch_dot_2d", lambda a, b: ops.batch_dot(a, b, (1, 2)), (A[:, :2], B34[:, :, :2]),
     np.einsum("bj,bkj->bk", A[:, :2], B34[:, :, :2])),
    ("batch_dot_default", lambda a, b: ops.batch_dot(a, b), (C4, D4),
     np.einsum("bijn,bkno->bijko", C4, D4)),
    ("batch_dot_int", lambda a, b: ops.batch_dot(a, b, 2), (C4[:, 0], D4[:, :, :, :2]),
     np.einsum("bin,bkno->biko", C4[:, 0], D4[:, :, :, :2])),
    ("batch_dot_vectors", lambda a, b: ops.batch_dot(a, b), (A, T.astype(np.float32)),
     (A * T).sum(1, keepdims=True).astype(np.float32)),
    ("mvlgamma", lambda x: ops.mvlgamma(x, 3), (np.abs(A) + 1.2,),
     np.vectorize(lambda v: sp.multigammaln(v, 3))((np.abs(A) + 1.2).astype(np.float64))
     .astype(np.float32)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    wants = want if isinstance(want, tuple) else (want,)
    for out in eager_and_compiled(fn, *[Tensor(np.asarray(v)) for v in inputs]):
        outs = out if isinstance(out, tuple) else (out,)
        assert len(outs) == len(wants)
        for o, w in zip(outs, wants):
            w = np.asarray(w)
            assert o.shape == w.shape, (o.shape, w.shape)
            assert o.dtype == ms.dtype.pytype_to_dtype(w.dtype), (o.dtype, w.dtype)
            np.testing.assert_allclose(o.asnumpy(), w, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["hann", "hamming", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("n", [0, 1, 2, 9, 16])
def test_windows_match_scipy(name, periodic, n):
    window = {"kaiser": ops.kaiser_window}.get(name) or getattr(ops, f"{name}_window")
    got = window(n, periodic, dtype=ms.float64).asnumpy()
    spec = ("kaiser", 12.0) if name == "kaiser" else name
    want = ss.get_window(spec, n, fftbins=periodic) if n > 1 else np.ones(n)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert window(n, periodic).dtype == ms.float32


def test_window_arguments():
    np.testing.assert_allclose(ops.hamming_window(8, False, 0.5, 0.5).asnumpy(),
                               np.hanning(8), atol=1e-7)
    np.testing.assert_allclose(ops.kaiser_window(7, False, 5.0).asnumpy(),
                               np.kaiser(7, 5.0), rtol=1e-6)


def np_iou(anchors, gts, mode):
    """MindSpore's IOU kernel, element by element: inclusive pixel areas, 1e-10 added."""
    out = np.zeros((len(gts), len(anchors)))
    for j, g in enumerate(gts):
        for i, a in enumerate(anchors):
            w = max(0.0, min(a[2], g[2]) - max(a[0], g[0]) + 1)
            h = max(0.0, min(a[3], g[3]) - max(a[1], g[1]) + 1)
            area_a = (a[2] - a[0] + 1) * (a[3] - a[1] + 1)
            area_g = (g[2] - g[0] + 1) * (g[3] - g[1] + 1)
            out[j, i] = w * h / ((area_a + area_g - w * h if mode == "iou" else area_g) + 1e-10)
    return out


def boxes(n, seed):
    corner = np.random.default_rng(seed).uniform(0, 10, (n, 2))
    size = np.random.default_rng(seed + 1).uniform(0.5, 6, (n, 2))
    return np.concatenate([corner, corner + size], 1)


@pytest.mark.parametrize("mode", ["iou", "iof"])
def test_iou_matches_the_kernel_formula(mode):
    anchors, gts = boxes(5, 1), boxes(3, 7)
    for out in eager_and_compiled(lambda a, g: ops.iou(a, g, mode), Tensor(anchors),
                                  Tensor(gts)):
        assert out.shape == (3, 5)
        np.testing.assert_allclose(out.asnumpy(), np_iou(anchors, gts, mode), rtol=1e-12)
    fn = lambda a: ops.iou(a, Tensor(gts), mode)  # noqa: E731
    grad = ms.grad(lambda a: ops.ReduceSum()(fn(a), ()))(Tensor(anchors))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), anchors)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


def test_logspace_matches_numpy():
    np.testing.assert_allclose(ops.logspace(-2, 3, 11).asnumpy(),
                               np.logspace(-2, 3, 11).astype(np.float32), rtol=1e-7)
    np.testing.assert_allclose(ops.logspace(0, 4, 5, base=2, dtype=ms.float64).asnumpy(),
                               [1, 2, 4, 8, 16])
    assert ops.logspace(0, 2, 3, dtype=ms.int32).asnumpy().tolist() == [1, 10, 100]


def test_logcumsumexp_stays_exact_where_cumsum_of_exp_would_underflow():
    x = np.array([-1000.0, 0.0, -1000.0, 1000.0])
    np.testing.assert_allclose(ops.logcumsumexp(Tensor(x), 0).asnumpy(),
                               [-1000.0, 0.0, 0.0, 1000.0])


X = RNG.standard_normal((3, 5))
W = RNG.standard_normal((3, 5))
W3 = RNG.standard_normal((3, 2, 5))


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.cummax(x, 1)[0], X),
    (lambda x: ops.cummin(x, 0)[0], X),
    (lambda x: ops.logcumsumexp(x, 1) * Tensor(W), X),
    (lambda x: ops.diff(x, 2, 1), X),
    (lambda x: ops.trapz(x, Tensor(np.array([0.0, 0.5, 2.0, 2.5, 4.0])), dim=1), X),
    (lambda x: ops.rot90(x, 1, [0, 1]) * Tensor(W.T), X),
    (lambda x: ops.combinations(x[0], 2) * 1.5, X),
    (lambda x: ops.vander(x[0], 4), X),
    (lambda x: ops.median(x, 1)[0], X),
    (lambda x: ops.nanmedian(x, 0)[0], X),
    (lambda x: ops.quantile(x, Tensor(np.array([0.2, 0.9])), 1), X),
    (lambda x: ops.nanquantile(x, 0.4), X),
    (lambda x: ops.cov(x, fweights=Tensor(np.array([1, 2, 1, 3, 1]))), X),
    (lambda x: ops.cosine_similarity(x, Tensor(W)), X),
    (lambda x: ops.renorm(x, 2, 0, 1.0), X),
    (lambda x: ops.mvlgamma(x, 2), np.abs(X) + 1.0),
    (lambda x: ops.batch_dot(x, Tensor(W3), (1, 2)), X),
], ids=["cummax", "cummin", "logcumsumexp", "diff", "trapz", "rot90", "combinations",
        "vander", "median", "nanmedian", "quantile", "nanquantile", "cov", "cosine",
        "renorm", "mvlgamma", "batch_dot"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.cummax(Tensor(A), 2), ValueError, r"For 'cummax', the 'axis' should be in"),
    (lambda: ops.Cummin(0)(Tensor(A > 0)), TypeError, r"For 'Cummin', the 'input'"),
    (lambda: ops.diff(Tensor(A), -1), ValueError, r"For 'diff', the 'n' should be >= 0"),
    (lambda: ops.rot90(Tensor(A), 1, [0, 0]), ValueError,
     r"For 'rot90', the 'dims' should be two different dims"),
    (lambda: ops.combinations(Tensor(A), 2), ValueError,
     r"For 'combinations', the 'input' should be 1-D"),
    (lambda: ops.quantile(Tensor(A), 1.5), ValueError,
     r"For 'quantile', the 'q' should be in \[0, 1\]"),
    (lambda: ops.quantile(Tensor(T), 0.5), TypeError, r"For 'quantile', the 'input'"),
    (lambda: ops.histc(Tensor(A), 0), ValueError, r"For 'histc', the 'bins' should be > 0"),
    (lambda: ops.histc(Tensor(A), 4, 2.0, 1.0), ValueError,
     r"For 'histc', the 'min' should be <= 'max'"),
    (lambda: ops.cov(Tensor(A[None])), ValueError, r"For 'cov', the 'input' should be 1-D"),
    (lambda: ops.cov(Tensor(A), fweights=Tensor(AW)), TypeError, r"For 'cov', the 'fweights'"),
    (lambda: ops.cosine_similarity(Tensor(A), Tensor(A[:2])), ValueError,
     r"For 'cosine_similarity', the 'x1' and 'x2' should have one shape"),
    (lambda: ops.renorm(Tensor(A), 0, 0, 1.0), ValueError, r"For 'renorm', the 'p'"),
    (lambda: ops.hann_window(-1), ValueError, r"For 'hann_window', the 'window_length'"),
    (lambda: ops.kaiser_window(4, dtype=ms.int32), TypeError,
     r"For 'kaiser_window', the 'dtype' should be a float dtype"),
    (lambda: ops.batch_dot(Tensor(A), Tensor(A), (0, 1)), ValueError,
     r"For 'batch_dot', the 'axes' should not name the batch dim 0"),
    (lambda: ops.batch_dot(Tensor(A), Tensor(B34), (1, 1)), ValueError,
     r"For 'batch_dot', the contracted dims should have one size"),
    (lambda: ops.batch_dot(Tensor(A[:2]), Tensor(A), (1, 1)), ValueError,
     r"For 'batch_dot', the batch dims should agree"),
    (lambda: ops.iou(Tensor(A), Tensor(A)), ValueError,
     r"For 'iou', the 'anchor_boxes' should be of shape \(N, 4\)"),
    (lambda: ops.iou(Tensor(A[:, :4]), Tensor(A[:, :4]), "giou"), KeyError,
     r"For 'iou', the 'mode' should be 'iou' or 'iof'"),
    (lambda: ops.mvlgamma(Tensor(np.array([0.9])), 3), ValueError,
     r"For 'Mvlgamma', every element of 'x' should be > \(p - 1\) / 2 = 1.0, but got 0.9"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
