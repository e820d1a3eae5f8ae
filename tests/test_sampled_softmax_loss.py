"""nn.SampledSoftmaxLoss: with given sampled_values, and with a draw that must be every
non-true class, the loss is the numpy softmax cross entropy of MindSpore's formula, its
gradients finite differences'; the sampler draws distinct non-true classes uniformly, from
the global seed, the same eagerly and compiled."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(8)
C, D, B = 9, 5, 4
W = RNG.standard_normal((C, D))
BIAS = RNG.standard_normal(C)
X = RNG.standard_normal((B, D))
LABELS = np.array([[1, 4], [0, 4], [2, 7], [7, 1]], np.int32)


def numpy_loss(w, b, x, labels, sampled, q_true=None, q_sampled=None):
    """-1/num_true sum over the true columns of log(softmax(row) + 1e-20) per example."""
    num_true = labels.shape[1]
    true_logits = np.einsum("bd,btd->bt", x, w[labels]) + b[labels]
    sampled_logits = x @ w[sampled].T + b[sampled]
    if q_true is not None:
        true_logits = true_logits - np.log(q_true)
        sampled_logits = sampled_logits - np.log(q_sampled)
    row = np.concatenate([true_logits, sampled_logits], 1)
    pred = np.exp(row - row.max(1, keepdims=True))
    pred /= pred.sum(1, keepdims=True)
    return -np.log(pred[:, :num_true] + 1e-20).sum(1) / num_true


def test_given_sampled_values_follow_numpy_with_gradients():
    sampled = np.array([3, 8, 1, 5], np.int32)             # 1 is a true class of some rows
    q_true, q_sampled = RNG.uniform(0.2, 0.9, (B, 2)), RNG.uniform(0.2, 0.9, 4)
    loss = nn.SampledSoftmaxLoss(4, C, num_true=2, reduction="sum", sampled_values=(
        Tensor(sampled), Tensor(q_true), Tensor(q_sampled)))
    want = numpy_loss(W, BIAS, X, LABELS, sampled, q_true, q_sampled)
    eager, compiled = eager_and_compiled(lambda w, b, x: loss(w, b, Tensor(LABELS), x),
                                         Tensor(W), Tensor(BIAS), Tensor(X))
    for got in (eager, compiled):
        np.testing.assert_allclose(got.asnumpy(), want.sum(), rtol=1e-12)
    grads = ms.grad(lambda w, b, x: loss(w, b, Tensor(LABELS), x), (0, 1, 2))(
        Tensor(W), Tensor(BIAS), Tensor(X))
    args = [W, BIAS, X]
    for k, g in enumerate(grads):
        def f(a, k=k):
            vals = list(args)
            vals[k] = a
            return numpy_loss(vals[0], vals[1], vals[2], LABELS, sampled, q_true,
                              q_sampled).sum()
        np.testing.assert_allclose(g.asnumpy(), finite_differences(f, args[k]), rtol=1e-6,
                                   atol=1e-8)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_a_draw_of_every_other_class(mode):
    """The batch's true classes are {0, 1, 2, 4, 7}: a draw of 4 with accidental hits
    removed must be {3, 5, 6, 8} (the order does not change a softmax); with 6 the sixth
    drawn is a true class and counts as none."""
    others = np.array([3, 5, 6, 8])
    for num_sampled in (4, 6):
        loss = nn.SampledSoftmaxLoss(num_sampled, C, num_true=2)
        ms.set_context(mode=mode)
        try:
            got = loss(Tensor(W), Tensor(BIAS), Tensor(LABELS), Tensor(X)).asnumpy()
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(got, numpy_loss(W, BIAS, X, LABELS, others), rtol=1e-12)


def test_the_sampler_draws_distinct_non_true_classes_uniformly():
    loss = nn.SampledSoftmaxLoss(3, C, num_true=2, seed=4)
    labels = Tensor(LABELS)
    ms.set_seed(11)
    counts = np.zeros(C)
    draws = []
    for _ in range(600):
        sampled, shift = loss._sample(labels, ms.float64)
        s = sampled.asnumpy()
        assert len(set(s.tolist())) == 3 and not set(s.tolist()) & {0, 1, 2, 4, 7}
        np.testing.assert_array_equal(shift.asnumpy(), 0.0)
        counts[s] += 1
        draws.append(s)
    # each of the 4 allowed classes is in a draw with probability 3/4: 450 of 600 expected
    assert np.all(np.abs(counts[[3, 5, 6, 8]] - 450) < 45)
    ms.set_seed(11)
    again = [loss._sample(labels, ms.float64)[0].asnumpy() for _ in range(3)]
    np.testing.assert_array_equal(np.array(again), np.array(draws[:3]))
    # without removing accidental hits every class can be drawn
    loose = nn.SampledSoftmaxLoss(3, C, remove_accidental_hits=False)
    seen = set()
    for _ in range(200):
        seen |= set(loose._sample(labels, ms.float64)[0].asnumpy().tolist())
    assert seen == set(range(C))


def test_the_global_seed_makes_a_training_loss_repeatable_eager_and_compiled():
    loss = nn.SampledSoftmaxLoss(2, C, num_true=2, reduction="mean")
    args = [Tensor(a) for a in (W, BIAS, LABELS, X)]
    ms.set_seed(5)
    first = [float(loss(*args).asnumpy()) for _ in range(3)]
    assert len(set(first)) > 1                             # a fresh draw each call
    ms.set_seed(5)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = [float(loss(*args).asnumpy()) for _ in range(3)]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, first, rtol=1e-12)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match="the 'num_sampled' and 'num_true' should be <= "
                                         "'num_classes' 5"):
        nn.SampledSoftmaxLoss(6, 5)
    with pytest.raises(ValueError, match="the 'sampled_values' should hold 3 Tensors"):
        nn.SampledSoftmaxLoss(2, 5, sampled_values=(1, 2))
    loss = nn.SampledSoftmaxLoss(2, C)
    with pytest.raises(TypeError, match="the 'labels' should be int32 or int64"):
        loss(Tensor(W), Tensor(BIAS), Tensor(LABELS.astype(np.float64)), Tensor(X))
    with pytest.raises(ValueError, match="the 'weights' should be \\(num_classes=9, dim\\)"):
        loss(Tensor(W[:4]), Tensor(BIAS), Tensor(LABELS), Tensor(X))
