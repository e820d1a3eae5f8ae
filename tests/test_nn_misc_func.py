"""ops.prelu, pdist, mirror_pad, intopk, fliplr, flipud, msort, is_floating_point and the
aliases soft_shrink / mse_loss_ext against numpy written here, eagerly and compiled;
gradients of the differentiable ones against float64 finite differences; argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from compiled import compiled
from numeric import finite_differences

RNG = np.random.default_rng(9090)
A = RNG.standard_normal((3, 4, 2)).astype(np.float32)
W = np.array([0.1, -0.5, 2.0, 0.3], np.float32)
ROWS = RNG.standard_normal((2, 4, 3)).astype(np.float32)


def pdist_ref(x, p):
    n = x.shape[-2]
    out = []
    for i in range(n):
        for j in range(i + 1, n):
            d = np.abs(x[..., i, :] - x[..., j, :])
            out.append((d != 0).sum(-1) if p == 0 else d.max(-1) if p == np.inf
                       else (d ** p).sum(-1) ** (1 / p))
    return np.stack(out, -1)


def mirror_ref(x, pads, mode):
    return np.pad(x, pads, "reflect" if mode == "REFLECT" else "symmetric")


def intopk_ref(x, t, k):
    target = x[np.arange(len(t)), t]
    return ((x > target[:, None]).sum(1) < k) & np.isfinite(target)


SCORES = np.array([[1, 8, 5, 2, 7], [4, 9, 1, 3, 5], [2, 2, 2, 1, 0], [np.nan, 1, 0, 3, 3]],
                  np.float32)
LABELS = np.array([1, 3, 0, 0], np.int32)
PADS = np.array([[1, 2], [0, 3], [1, 1]], np.int64)

FORMS = [
    ("prelu", lambda x: ops.prelu(x, Tensor(W)), (A,),
     np.where(A > 0, A, A * W[None, :, None])),
    ("pdist2", lambda x: ops.pdist(x), (ROWS,), pdist_ref(ROWS.astype(np.float64), 2.0)),
    ("pdist1", lambda x: ops.pdist(x, 1.0), (ROWS,), pdist_ref(ROWS.astype(np.float64), 1.0)),
    ("pdist3", lambda x: ops.pdist(x, 3.0), (ROWS,), pdist_ref(ROWS.astype(np.float64), 3.0)),
    ("pdist0", lambda x: ops.pdist(x, 0.0), (np.round(ROWS),), pdist_ref(np.round(ROWS), 0)),
    ("pdist_inf", lambda x: ops.pdist(x, float("inf")), (ROWS,),
     pdist_ref(ROWS.astype(np.float64), np.inf)),
    ("mirror_reflect", lambda x: ops.mirror_pad(x, Tensor(PADS), "REFLECT"), (A,),
     mirror_ref(A, PADS, "REFLECT")),
    ("mirror_symmetric", lambda x: ops.mirror_pad(x, Tensor(PADS), "SYMMETRIC"), (A,),
     mirror_ref(A, PADS, "SYMMETRIC")),
    ("intopk3", lambda x, t: ops.intopk(x, t, 3), (SCORES, LABELS), intopk_ref(SCORES, LABELS, 3)),
    ("intopk1", lambda x, t: ops.intopk(x, t, 1), (SCORES, LABELS), intopk_ref(SCORES, LABELS, 1)),
    ("fliplr", lambda x: ops.fliplr(x), (A,), A[:, ::-1]),
    ("flipud", lambda x: ops.flipud(x), (A,), A[::-1]),
    ("msort", lambda x: ops.msort(x), (A,), np.sort(A, 0)),
    ("soft_shrink", lambda x: ops.soft_shrink(x, 0.3), (A,),
     np.where(A > 0.3, A - 0.3, np.where(A < -0.3, A + 0.3, 0))),
    ("mse_loss_ext", lambda x, y: ops.mse_loss_ext(x, y, "sum"), (A, A[0]),
     ((A - A[0]) ** 2).sum()),
    ("adaptive_avg_pool2d_ext", lambda x: ops.adaptive_avg_pool2d_ext(x, (2, None)), (A,),
     np.stack([A[:, :2].mean(1), A[:, 2:].mean(1)], 1)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    tensors = [Tensor(v) for v in inputs]
    out = fn(*tensors)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(compiled(fn, *tensors).asnumpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,ref", [
    (lambda x: ops.pdist(x, 2.0), lambda x: pdist_ref(x, 2.0)),
    (lambda x: ops.pdist(x, 1.5), lambda x: pdist_ref(x, 1.5)),
    (lambda x: ops.mirror_pad(x, Tensor(PADS), "REFLECT"),
     lambda x: mirror_ref(x, PADS, "REFLECT")),
    (lambda x: ops.prelu(x, Tensor(W.astype(np.float64))),
     lambda x: np.where(x > 0, x, x * W[None, :, None])),
])
def test_gradients_match_finite_differences(fn, ref):
    x = RNG.standard_normal((3, 4, 2))
    k = RNG.standard_normal(np.shape(ref(x)))
    got = ms.grad(lambda a: ops.sum(fn(a) * Tensor(k)))(Tensor(x))
    np.testing.assert_allclose(got.asnumpy(), finite_differences(lambda a: ref(a) * k, x),
                               rtol=1e-6, atol=1e-7)


def test_is_floating_point_and_dtypes():
    for dtype, want in ((ms.float16, True), (ms.bfloat16, True), (ms.float32, True),
                        (ms.float64, True), (ms.int32, False), (ms.bool_, False),
                        (ms.complex64, False)):
        assert ops.is_floating_point(ops.zeros((2,), dtype)) is want
    assert ops.intopk(Tensor(SCORES), Tensor(LABELS), 2).dtype == ms.bool_
    assert ops.pdist(Tensor(ROWS[:, :1])).shape == (2, 0)


def test_errors():
    with pytest.raises(ValueError, match="For 'mirror_pad', the 'mode'"):
        ops.mirror_pad(Tensor(A), Tensor(PADS), "CONSTANT")
    with pytest.raises(ValueError, match="For 'mirror_pad', a 'reflect' padding should be"):
        ops.mirror_pad(Tensor(A), Tensor(np.array([[3, 0], [0, 0], [0, 0]])), "REFLECT")
    with pytest.raises(ValueError, match="the 'paddings' should be 3 x 2"):
        ops.mirror_pad(Tensor(A), Tensor(np.array([[1, 1]])), "REFLECT")
    with pytest.raises(TypeError, match="For 'intopk', the 'x2'"):
        ops.intopk(Tensor(SCORES), Tensor(LABELS.astype(np.int64)), 1)
    with pytest.raises(ValueError, match="For 'pdist', the 'p' should be >= 0"):
        ops.pdist(Tensor(ROWS), -1.0)
    with pytest.raises(ValueError, match="For 'fliplr', the 'input' should have rank >= 2"):
        ops.fliplr(Tensor(W))
    with pytest.raises(ValueError, match="For 'PReLU', the 'weight shape'"):
        ops.prelu(Tensor(A), Tensor(W[:3]))
