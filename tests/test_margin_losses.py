"""The margin and likelihood losses, each spelled two ways where MindSpore has both
(nn.<Loss> and ops.<loss>: one body): MarginRankingLoss, SoftMarginLoss, HingeEmbeddingLoss,
MultiMarginLoss, MultiLabelSoftMarginLoss, TripletMarginLoss, PoissonNLLLoss,
GaussianNLLLoss, RMSELoss, MAELoss. Values against numpy written here for every reduction,
eager and compiled (GRAPH_MODE); gradients against float64 finite differences; argument
errors naming the layer or the function."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(99)
X = RNG.standard_normal((5, 4)) * 1.5
X2 = RNG.standard_normal((5, 4))
SIGNS = np.where(RNG.standard_normal((5, 4)) > 0, 1.0, -1.0)
ROW_SIGNS = np.where(RNG.standard_normal((5, 1)) > 0, 1.0, -1.0)
BITS = (RNG.uniform(size=(5, 4)) > 0.5).astype(np.float64)
CLASSES = np.array([0, 3, 1, 3, 2], np.int32)
CLASS_W = np.array([0.5, 1.0, 2.0, 1.5])
COUNTS = RNG.integers(0, 5, (5, 4)).astype(np.float64)
VAR = RNG.uniform(0.2, 2.0, (5, 4))


def reduce(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def softplus(v):
    return np.logaddexp(0.0, v)


def np_multi_margin(x, y, p, margin, w):
    n, c = x.shape
    own = x[np.arange(n), y][:, None]
    gaps = np.maximum(0.0, margin - own + x)
    gaps[np.arange(n), y] = 0.0
    if w is not None:
        gaps = gaps * w[y][:, None]
    return (gaps ** p).sum(1) / c


def np_distance(a, b, p, eps):
    return (np.abs(a - b + eps) ** p).sum(1) ** (1.0 / p)


def np_triplet(a, pos, neg, margin, p, eps, swap):
    d_neg = np_distance(a, neg, p, eps)
    if swap:
        d_neg = np.minimum(d_neg, np_distance(pos, neg, p, eps))
    return np.maximum(np_distance(a, pos, p, eps) - d_neg + margin, 0.0)


def np_poisson(x, y, log_input, full, eps):
    loss = np.exp(x) - y * x if log_input else x - y * np.log(x + eps)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = y * np.log(y) - y + 0.5 * np.log(2 * np.pi * y)
        loss = loss + np.where(y > 1, stirling, 0.0)
    return loss


def np_gaussian(x, y, var, full, eps):
    v = np.maximum(var, eps)
    return 0.5 * (np.log(v) + (x - y) ** 2 / v) + (0.5 * math.log(2 * math.pi) if full else 0)


# (name, call on Tensors (with the reduction), inputs, numpy element-wise loss)
CASES = [
    ("margin_ranking", lambda r, a, b, t: ops.margin_ranking_loss(a, b, t, 0.3, r),
     (X, X2, SIGNS), np.maximum(0, -SIGNS * (X - X2) + 0.3)),
    ("MarginRankingLoss", lambda r, a, b, t: nn.MarginRankingLoss(0.1, r)(a, b, t),
     (X, X2, ROW_SIGNS), np.maximum(0, -ROW_SIGNS * (X - X2) + 0.1)),
    ("soft_margin", lambda r, x, y: ops.soft_margin_loss(x, y, r), (X, SIGNS),
     softplus(-SIGNS * X)),
    ("SoftMarginLoss", lambda r, x, y: nn.SoftMarginLoss(r)(x * 30.0, y), (X, SIGNS),
     softplus(-SIGNS * X * 30.0)),
    ("hinge_embedding", lambda r, x, y: ops.hinge_embedding_loss(x, y, 0.5, r), (X, SIGNS),
     np.where(SIGNS == 1, X, np.maximum(0, 0.5 - X))),
    ("HingeEmbeddingLoss", lambda r, x, y: nn.HingeEmbeddingLoss(reduction=r)(x, y),
     (X, SIGNS), np.where(SIGNS == 1, X, np.maximum(0, 1.0 - X))),
    ("multi_margin", lambda r, x: ops.multi_margin_loss(x, Tensor(CLASSES), reduction=r),
     (X,), np_multi_margin(X, CLASSES, 1, 1.0, None)),
    ("MultiMarginLoss", lambda r, x, w: nn.MultiMarginLoss(2, 0.7, r, w)(x, Tensor(CLASSES)),
     (X, CLASS_W), np_multi_margin(X, CLASSES, 2, 0.7, CLASS_W)),
    ("multilabel_soft_margin", lambda r, x, y, w: ops.multilabel_soft_margin_loss(
        x, y, w, r), (X, BITS, CLASS_W),
     (CLASS_W * (BITS * softplus(-X) + (1 - BITS) * softplus(X))).mean(-1)),
    ("MultiLabelSoftMarginLoss", lambda r, x, y: nn.MultiLabelSoftMarginLoss(reduction=r)(
        x, y), (X, BITS), (BITS * softplus(-X) + (1 - BITS) * softplus(X)).mean(-1)),
    ("triplet_margin", lambda r, a, p, n: ops.triplet_margin_loss(a, p, n, reduction=r),
     (X, X2, X * 0.5), np_triplet(X, X2, X * 0.5, 1.0, 2, 1e-6, False)),
    ("TripletMarginLoss", lambda r, a, p, n: nn.TripletMarginLoss(3, True, 1e-3, r, 0.5)(
        a, p, n), (X, X2, X * 0.5), np_triplet(X, X2, X * 0.5, 0.5, 3, 1e-3, True)),
    ("TripletMarginLoss_p1", lambda r, a, p, n: nn.TripletMarginLoss(1, reduction=r)(
        a, p, n, 2.0), (X, X2, -X), np_triplet(X, X2, -X, 2.0, 1, 1e-6, False)),
    ("PoissonNLLLoss", lambda r, x, y: nn.PoissonNLLLoss(reduction=r)(x, y), (X, COUNTS),
     np_poisson(X, COUNTS, True, False, 1e-8)),
    ("PoissonNLLLoss_full", lambda r, x, y: nn.PoissonNLLLoss(False, True, reduction=r)(
        x, y), (VAR, COUNTS), np_poisson(VAR, COUNTS, False, True, 1e-8)),
    ("gaussian_nll", lambda r, x, y, v: ops.gaussian_nll_loss(x, y, v, reduction=r),
     (X, X2, VAR), np_gaussian(X, X2, VAR, False, 1e-6)),
    ("GaussianNLLLoss_row_var", lambda r, x, y, v: nn.GaussianNLLLoss(full=True, eps=0.5,
                                                                      reduction=r)(x, y, v),
     (X, X2, VAR[:, 0]), np_gaussian(X, X2, VAR[:, :1], True, 0.5)),
    ("MAELoss", lambda r, x, y: nn.MAELoss(r)(x, y), (X, X2[0]), np.abs(X - X2[0])),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,fn,inputs,loss", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_numpy_eager_and_compiled(name, fn, inputs, loss, reduction):
    want = reduce(loss, reduction)
    for out in eager_and_compiled(lambda *xs: fn(reduction, *xs),
                                  *[Tensor(v.astype(np.float32)) for v in inputs]):
        assert out.shape == np.shape(want) and out.dtype == ms.float32
        np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-5, atol=2e-5)


def test_rmse_loss_is_the_root_of_the_mean_square():
    got = nn.RMSELoss()(Tensor(X.astype(np.float32)), Tensor(X2.astype(np.float32)))
    np.testing.assert_allclose(got.asnumpy(), np.sqrt(((X - X2) ** 2).mean()), rtol=1e-6)


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.margin_ranking_loss(x, Tensor(X2), Tensor(SIGNS), 0.3), X),
    (lambda x: ops.soft_margin_loss(x, Tensor(SIGNS), "sum"), X),
    (lambda x: ops.hinge_embedding_loss(x, Tensor(SIGNS), 0.5), X),
    (lambda x: ops.multi_margin_loss(x, Tensor(CLASSES), 2, 0.9, Tensor(CLASS_W)), X),
    (lambda x: ops.multilabel_soft_margin_loss(x, Tensor(BITS)), X),
    (lambda x: ops.triplet_margin_loss(x, Tensor(X2), Tensor(X * 0.3), 1.5, swap=True), X),
    (lambda x: nn.PoissonNLLLoss(full=True)(x, Tensor(COUNTS)), X),
    (lambda x: ops.gaussian_nll_loss(Tensor(X), Tensor(X2), x, True), VAR),
    (lambda x: nn.RMSELoss()(x, Tensor(X2)), X),
], ids=["margin_ranking", "soft_margin", "hinge", "multi_margin", "multilabel", "triplet",
        "poisson", "gaussian_var", "rmse"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(fn)(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


F = Tensor(X.astype(np.float32))


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.margin_ranking_loss(F, F, F, reduction="avg"), ValueError,
     r"For 'margin_ranking_loss', the 'reduction'"),
    (lambda: nn.MarginRankingLoss(margin="1"), TypeError,
     r"For 'MarginRankingLoss', the type of 'margin' should be"),
    (lambda: ops.soft_margin_loss(F, Tensor(X.astype(np.float16))), TypeError,
     r"For 'soft_margin_loss', the 'input' and 'target' should have the same dtype"),
    (lambda: ops.hinge_embedding_loss(F, Tensor(SIGNS.astype(np.float32).T)), ValueError,
     r"For 'hinge_embedding_loss', the 'targets' should broadcast to"),
    (lambda: ops.multi_margin_loss(F, Tensor(CLASSES[:3])), ValueError,
     r"For 'multi_margin_loss', the 'target' should be an int32/int64 Tensor of shape \[5\]"),
    (lambda: nn.MultiMarginLoss(p=3), ValueError,
     r"For 'MultiMarginLoss', the 'p' should be one of \[1, 2\]"),
    (lambda: nn.MultiMarginLoss(weight=Tensor(np.ones(3, np.float32)))(F, Tensor(CLASSES)),
     ValueError, r"For 'MultiMarginLoss', the 'weight' should have shape \[4\]"),
    (lambda: ops.triplet_margin_loss(F, F, F, eps=float("inf")), ValueError,
     r"For 'triplet_margin_loss', the 'eps' should be finite"),
    (lambda: ops.triplet_margin_loss(F, F, F, p=0), ValueError,
     r"For 'triplet_margin_loss', the 'p' should be a positive int"),
    (lambda: nn.TripletMarginLoss()(Tensor(np.ones(3, np.float32)),
                                    Tensor(np.ones(3, np.float32)),
                                    Tensor(np.ones(3, np.float32))), ValueError,
     r"For 'TripletMarginLoss', the 'x' should be at least 2-D"),
    (lambda: nn.PoissonNLLLoss(log_input=1), TypeError,
     r"For 'PoissonNLLLoss', the type of 'log_input' should be"),
    (lambda: ops.gaussian_nll_loss(F, F, Tensor(np.ones((5, 2), np.float32))), ValueError,
     r"For 'gaussian_nll_loss', the 'var' should have the shape of 'x'"),
    (lambda: nn.GaussianNLLLoss(eps=0.0), ValueError,
     r"For 'GaussianNLLLoss', the 'eps' should be > 0"),
    (lambda: nn.MAELoss()(F, Tensor(CLASSES)), TypeError, r"For 'MAELoss', the 'label'"),
])
def test_argument_errors_name_the_layer_or_function(call, err, match):
    with pytest.raises(err, match=match):
        call()
