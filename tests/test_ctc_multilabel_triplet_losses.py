"""ops.ctc_loss / nn.CTCLoss against a brute-force sum over every alignment, its gradient
against finite differences; ops.multilabel_margin_loss / nn.MultilabelMarginLoss and
nn.TripletMarginWithDistanceLoss against numpy loops, with their gradients; eager and
compiled; errors name the argument."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(21)


def log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def brute_ctc(lp, target, length, blank):
    """-log of the summed probability of every frame labelling (C**length of them) whose
    collapse (repeats merged, blanks dropped) is the target."""
    total = -np.inf
    for path in itertools.product(range(lp.shape[1]), repeat=length):
        collapsed, prev = [], None
        for c in path:
            if c != prev and c != blank:
                collapsed.append(c)
            prev = c
        if collapsed == list(target):
            total = np.logaddexp(total, sum(lp[t, c] for t, c in enumerate(path)))
    return -total


T, N, C, S = 6, 5, 4, 3
LP = log_softmax(RNG.standard_normal((T, N, C)))
TARGETS = np.array([[1, 2, 2], [3, 0, 0], [2, 1, 0], [1, 1, 3], [2, 0, 0]], np.int32)
INPUT_LENGTHS = np.array([6, 5, 4, 6, 3], np.int32)
TARGET_LENGTHS = np.array([3, 1, 2, 3, 0], np.int32)   # an empty target


def want_ctc(lp, blank=0, targets=TARGETS):
    return np.array([brute_ctc(lp[:, n], targets[n, :TARGET_LENGTHS[n]], INPUT_LENGTHS[n],
                               blank) for n in range(N)])


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_ctc_loss_is_the_sum_over_alignments(reduction):
    per = want_ctc(LP)
    want = {"none": per, "sum": per.sum(), "mean": (per / np.maximum(TARGET_LENGTHS, 1)).mean()}[reduction]

    def fn(lp, tg, il, tl):
        return ops.ctc_loss(lp, tg, il, tl, reduction=reduction)

    eager, compiled = eager_and_compiled(fn, Tensor(LP), Tensor(TARGETS),
                                         Tensor(INPUT_LENGTHS), Tensor(TARGET_LENGTHS))
    for loss, log_alpha in (eager, compiled):
        np.testing.assert_allclose(loss.asnumpy(), want, rtol=1e-10)
        assert log_alpha.shape == (N, T, 2 * S + 1)
        # the last frame's alpha: its end places (the last label, the final blank) sum to
        # the likelihood; past the extended target (2L + 1 places) it is -inf
        la = log_alpha.asnumpy()
        for n in range(N):
            last = 2 * TARGET_LENGTHS[n]
            ends = la[n, INPUT_LENGTHS[n] - 1, max(last - 1, 0):last + 1]
            np.testing.assert_allclose(-np.logaddexp.reduce(ends), per[n], rtol=1e-10)
            assert np.all(la[n, :, last + 1:] == -np.inf)
            assert np.all(la[n, INPUT_LENGTHS[n]:] == -np.inf)


def test_ctc_loss_with_another_blank_and_float32():
    targets = np.where(TARGETS == 2, 0, TARGETS)          # labels 0, 1, 3; blank 2
    loss = nn.CTCLoss(blank=2, reduction="none")(Tensor(LP.astype(np.float32)),
                                                 Tensor(targets), tuple(INPUT_LENGTHS.tolist()),
                                                 tuple(TARGET_LENGTHS.tolist()))
    assert loss.dtype == ms.float32
    np.testing.assert_allclose(loss.asnumpy(), want_ctc(LP, 2, targets), rtol=1e-5)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_ctc_gradient_matches_finite_differences(reduction):
    """The exact gradient with respect to log_probs (any reals, not only normalised ones),
    eager and compiled; 0 past each input length."""
    x = RNG.standard_normal((T, N, C))
    args = [Tensor(a) for a in (TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)]

    def loss(lp):
        return ops.ctc_loss(lp, *args, reduction=reduction)[0]

    want = finite_differences(lambda a: loss(Tensor(a)).asnumpy(), x)
    eager = ms.grad(loss)(Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = ms.grad(loss)(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for got in (eager, compiled):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    assert np.all(eager[5:, 1] == 0) and np.all(eager[4:, 2] == 0)


def test_ctc_training_through_log_softmax_gives_softmax_minus_posterior():
    """Through a log_softmax the gradient of the logits is the familiar softmax minus the
    alignment posterior: it sums to 0 over the classes of every frame in the input."""
    logits = RNG.standard_normal((T, N, C))
    args = [Tensor(a) for a in (TARGETS, INPUT_LENGTHS, TARGET_LENGTHS)]
    grad = ms.grad(lambda z: ops.ctc_loss(ops.log_softmax(z, -1), *args,
                                          reduction="sum")[0])(Tensor(logits)).asnumpy()
    np.testing.assert_allclose(grad[:4].sum(-1), 0, atol=1e-12)
    want = finite_differences(lambda z: ops.ctc_loss(Tensor(log_softmax(z)), *args,
                                                     reduction="sum")[0].asnumpy(), logits)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)


def test_ctc_infinite_loss_and_zero_infinity():
    """3 labels cannot fit in 2 frames: the loss is inf, or 0 (and its gradient 0) with
    zero_infinity; a repeated label needs a blank between, so [1, 1] needs 3 frames."""
    lp = Tensor(LP[:, :2])
    targets, lengths = Tensor(np.array([[1, 2, 3], [1, 1, 0]], np.int32)), (2, 2)
    loss = ops.ctc_loss(lp, targets, lengths, (3, 2), reduction="none")[0].asnumpy()
    assert np.isinf(loss).all() and (loss > 0).all()
    fn = nn.CTCLoss(reduction="sum", zero_infinity=True)
    assert float(fn(lp, targets, lengths, (3, 2)).asnumpy()) == 0.0
    grad = ms.grad(lambda x: fn(x, targets, lengths, (3, 2)))(lp).asnumpy()
    np.testing.assert_array_equal(grad, 0)
    # with 3 frames [1, 1] fits (1, blank, 1) and counts
    three = nn.CTCLoss(reduction="none")(lp, targets, (3, 3), (3, 2)).asnumpy()
    np.testing.assert_allclose(three[1], brute_ctc(LP[:, 1], [1, 1], 3, 0), rtol=1e-10)


def test_ctc_one_sequence():
    lp = LP[:, 0]
    loss = nn.CTCLoss(reduction="none")(Tensor(lp), Tensor(TARGETS[0]), (6,), (3,))
    assert loss.shape == ()
    np.testing.assert_allclose(loss.asnumpy(), brute_ctc(lp, TARGETS[0], 6, 0), rtol=1e-10)


def test_ctc_errors_name_the_argument():
    lp, tg = Tensor(LP), Tensor(TARGETS)
    il, tl = Tensor(INPUT_LENGTHS), Tensor(TARGET_LENGTHS)
    with pytest.raises(ValueError, match="For 'CTCLossV2', the 'blank' should be in"):
        ops.ctc_loss(lp, tg, il, tl, blank=4)
    with pytest.raises(ValueError, match="every 'input_lengths' should be in \\[0, 6\\]"):
        ops.ctc_loss(lp, tg, (7, 1, 1, 1, 1), tl)
    with pytest.raises(ValueError, match="every 'target_lengths' should be in \\[0, 3\\]"):
        ops.ctc_loss(lp, tg, il, (4, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="the 'targets' of sample 0 should be class indices"):
        ops.ctc_loss(lp, Tensor(np.zeros((N, S), np.int32)), il, tl)
    with pytest.raises(TypeError, match="should have the same dtype"):
        ops.ctc_loss(lp, tg, Tensor(INPUT_LENGTHS.astype(np.int64)), tl)
    with pytest.raises(ValueError, match="For 'CTCLoss', the 'targets' should be 1-D"):
        nn.CTCLoss()(Tensor(LP[:, 0]), tg, (6,), (3,))
    with pytest.raises(ValueError, match="For 'ctc_loss', the 'reduction'"):
        ops.ctc_loss(lp, tg, il, tl, reduction="batchmean")


# -- multilabel margin ------------------------------------------------------------------
def want_multilabel(x, y):
    out = []
    for row, tg in zip(np.atleast_2d(x), np.atleast_2d(y)):
        targets = []
        for j in tg:
            if j == -1:
                break
            targets.append(j)
        others = [i for i in range(len(row)) if i not in targets]
        out.append(sum(max(0.0, 1 - (row[j] - row[i])) for j in targets for i in others)
                   / len(row))
    return np.array(out)


X = RNG.standard_normal((5, 4)) * 0.7
Y = np.array([[1, 2, -1, 3], [3, -1, 0, 0], [0, 1, 2, 3], [-1, 0, 1, 2], [2, 2, -1, 0]],
             np.int32)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_multilabel_margin_loss_follows_the_loops(reduction):
    per = want_multilabel(X, Y)
    want = {"none": per, "sum": per.sum(), "mean": per.mean()}[reduction]
    eager, compiled = eager_and_compiled(
        lambda x, y: ops.multilabel_margin_loss(x, y, reduction), Tensor(X), Tensor(Y))
    for got in (eager, compiled):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    layer = nn.MultilabelMarginLoss(reduction)(Tensor(X.astype(np.float32)), Tensor(Y))
    np.testing.assert_allclose(layer.asnumpy(), want, rtol=1e-5)
    # MindSpore's example
    ex = nn.MultilabelMarginLoss()(Tensor(np.array([[0.1, 0.2, 0.4, 0.8], [0.2, 0.3, 0.5, 0.7]],
                                                   np.float32)),
                                   Tensor(np.array([[1, 2, 0, 3], [2, 3, -1, 1]], np.int32)))
    np.testing.assert_allclose(ex.asnumpy(), 0.325, rtol=1e-6)


def test_multilabel_margin_one_sample_and_gradient():
    one = ops.multilabel_margin_loss(Tensor(X[0]), Tensor(Y[0]), "none")
    assert one.shape == ()
    np.testing.assert_allclose(one.asnumpy(), want_multilabel(X[0], Y[0])[0], rtol=1e-12)
    loss = lambda x: ops.multilabel_margin_loss(x, Tensor(Y), "sum")   # noqa: E731
    want = finite_differences(lambda a: want_multilabel(a, Y).sum(), X)
    np.testing.assert_allclose(ms.grad(loss)(Tensor(X)).asnumpy(), want, rtol=1e-6,
                               atol=1e-8)
    with pytest.raises(ValueError, match="For 'MultilabelMarginLoss', the 'target' should be "
                                         "an int32 Tensor of shape \\[5, 4\\]"):
        nn.MultilabelMarginLoss()(Tensor(X), Tensor(Y.astype(np.int64)))


# -- triplet margin with a distance function -------------------------------------------------
A, P, NEG = (RNG.standard_normal((6, 5)) for _ in range(3))


def want_triplet(dist, swap, margin):
    d_neg = dist(A, NEG)
    if swap:
        d_neg = np.minimum(d_neg, dist(P, NEG))
    return np.maximum(dist(A, P) - d_neg + margin, 0.0)


def l2(a, b):
    return np.sqrt(((a - b) ** 2).sum(-1))


def l1(a, b):
    return np.abs(a - b).sum(-1)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("custom", [False, True], ids=["euclidean", "l1_function"])
def test_triplet_margin_with_distance_follows_numpy(swap, custom):
    fn = (lambda a, b: ops.abs(a - b).sum(-1)) if custom else None
    loss = nn.TripletMarginWithDistanceLoss(fn, swap=swap, margin=0.5, reduction="none")
    want = want_triplet(l1 if custom else l2, swap, 0.5)
    eager, compiled = eager_and_compiled(loss, Tensor(A), Tensor(P), Tensor(NEG))
    for got in (eager, compiled):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-12)
    assert 0 < (want > 0).sum() < len(want)                  # both sides of the hinge
    mean = nn.TripletMarginWithDistanceLoss(fn, swap=swap, margin=0.5)
    grad = ms.grad(mean)(Tensor(A), Tensor(P), Tensor(NEG)).asnumpy()
    fd = finite_differences(lambda a: want_triplet_for(a, custom, swap), A)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def want_triplet_for(a, custom, swap):
    dist = l1 if custom else l2
    d_neg = dist(a, NEG)
    if swap:
        d_neg = np.minimum(d_neg, dist(P, NEG))
    return np.maximum(dist(a, P) - d_neg + 0.5, 0.0).mean()


def test_triplet_euclidean_gradient_at_zero_distance_is_zero():
    loss = nn.TripletMarginWithDistanceLoss(margin=5.0, reduction="sum")
    grad = ms.grad(loss, (0, 1))(Tensor(A), Tensor(A), Tensor(NEG))
    for g in grad:
        assert np.isfinite(g.asnumpy()).all()
    # d(a, p) = 0 contributes nothing; only -d(a, neg) moves a
    want = -(A - NEG) / l2(A, NEG)[:, None]
    np.testing.assert_allclose(grad[0].asnumpy(), want, rtol=1e-10)
    with pytest.raises(ValueError, match="For 'TripletMarginWithDistanceLoss', the 'margin' "
                                         "should be >= 0"):
        nn.TripletMarginWithDistanceLoss(margin=-1.0)
    with pytest.raises(TypeError, match="the 'distance_function' should be None or a callable"):
        nn.TripletMarginWithDistanceLoss(distance_function=3)
