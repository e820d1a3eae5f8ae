"""Precision, Recall, Fbeta / F1 and TopKCategoricalAccuracy (Top1 / Top5), as
mindspore.train: MindSpore's documented examples, several updates of random batches
against scikit-learn and numpy written here, clear(), the multilabel per-sample rule,
Model(metrics={...}) and the errors (naming the metric)."""
import numpy as np
import pytest
from sklearn import metrics as skm

import msops as ms
from msops import Tensor, nn
from msops import dataset as ds
from msops.train import (F1, Fbeta, Precision, Recall, Top1CategoricalAccuracy,
                         Top5CategoricalAccuracy, TopKCategoricalAccuracy)

X = Tensor(np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]]))
Y = Tensor(np.array([1, 0, 1]))
X5 = Tensor(np.array([[0.2, 0.5, 0.3, 0.6, 0.2], [0.1, 0.35, 0.5, 0.2, 0.],
                      [0.9, 0.6, 0.2, 0.01, 0.3]]))
Y5 = Tensor(np.array([2, 0, 1]))


def test_mindspore_documented_examples():
    cases = [(Precision(), X, Y, [0.5, 1.0]), (Recall(), X, Y, [1.0, 0.5]),
             (F1(), X, Y, [2 / 3, 2 / 3]), (Fbeta(1), X, Y, [2 / 3, 2 / 3]),
             (TopKCategoricalAccuracy(3), X5, Y5, 2 / 3),
             (Top1CategoricalAccuracy(), X5, Y5, 0.0), (Top5CategoricalAccuracy(), X5, Y5, 1.0)]
    for metric, x, y, want in cases:
        metric.clear()
        metric.update(x, y)
        np.testing.assert_allclose(metric.eval(), want, err_msg=type(metric).__name__)


def batches(seed, n=4, classes=5):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((7, classes)), rng.integers(0, classes, 7)) for _ in range(n)]


@pytest.mark.parametrize("one_hot", [False, True])
def test_accumulated_over_updates_equals_sklearn(one_hot):
    data = batches(1)
    scores = np.concatenate([s for s, _ in data])
    labels = np.concatenate([y for _, y in data])
    pred = scores.argmax(1)
    got = {k: m() for k, m in {"p": Precision, "r": Recall, "f1": F1,
                                "f2": lambda: Fbeta(2.0)}.items()}
    for m in got.values():
        m.update(Tensor(np.ones((2, 5))), Tensor(np.array([0, 1])))
        m.clear()                                    # clear forgets that batch
        for s, y in data:
            m.update(Tensor(s), Tensor(np.eye(5)[y]) if one_hot else Tensor(y))
    kw = dict(labels=range(5), average=None, zero_division=0)
    want = {"p": skm.precision_score(labels, pred, **kw),
            "r": skm.recall_score(labels, pred, **kw),
            "f1": skm.f1_score(labels, pred, **kw),
            "f2": skm.fbeta_score(labels, pred, beta=2.0, **kw)}
    for k, m in got.items():
        np.testing.assert_allclose(m.eval(), want[k], rtol=1e-12, err_msg=k)
        np.testing.assert_allclose(m.eval(average=True), want[k].mean(), rtol=1e-12)


def test_a_class_never_predicted_scores_zero():
    p = Precision()
    p.update(np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), np.array([2, 1]))
    np.testing.assert_array_equal(p.eval(), [0.0, 1.0, 0.0])


def test_multilabel_is_per_sample_as_mindspore():
    rng = np.random.default_rng(2)
    pred = [rng.integers(0, 2, (5, 4)) for _ in range(2)]
    true = [rng.integers(0, 2, (5, 4)) for _ in range(2)]
    p, r = Precision("multilabel"), Recall("multilabel")
    for a, b in zip(pred, true):
        p.update(Tensor(a), Tensor(b))
        r.update(Tensor(a), Tensor(b))
    a, b = np.concatenate(pred), np.concatenate(true)
    tp = (a * b).sum(1)
    want_p = np.where(a.sum(1) > 0, tp / np.maximum(a.sum(1), 1), 0.0)
    want_r = np.where(b.sum(1) > 0, tp / np.maximum(b.sum(1), 1), 0.0)
    np.testing.assert_allclose(p.eval(), want_p)
    np.testing.assert_allclose(r.eval(), want_r)
    assert p.eval(average=True) == pytest.approx(want_p.mean())


@pytest.mark.parametrize("k", [1, 2, 5])
def test_top_k_against_numpy(k):
    data = batches(3, classes=6)
    m = TopKCategoricalAccuracy(k)
    hits = 0
    for s, y in data:
        m.update(Tensor(s), Tensor(y))
        # rank of the label's score: how many classes score strictly higher
        hits += int(((s > s[np.arange(len(y)), y][:, None]).sum(1) < k).sum())
    assert m.eval() == pytest.approx(hits / 28)


def test_model_eval_with_the_metrics_by_object_and_by_name():
    ms.set_seed(5)
    net = nn.Dense(6, 4)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 6)).astype(np.float32)
    y = rng.integers(0, 4, 24).astype(np.int32)
    data = ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(8)
    model = ms.Model(net, nn.CrossEntropyLoss(), metrics={
        "precision": Precision(), "recall": Recall(), "f1": F1(),
        "top2": TopKCategoricalAccuracy(2)})
    res = model.eval(data)
    logits = net(Tensor(x)).asnumpy()
    pred = logits.argmax(1)
    kw = dict(labels=range(4), average=None, zero_division=0)
    np.testing.assert_allclose(res["precision"], skm.precision_score(y, pred, **kw))
    np.testing.assert_allclose(res["recall"], skm.recall_score(y, pred, **kw))
    np.testing.assert_allclose(res["f1"], skm.f1_score(y, pred, **kw))
    top2 = np.argsort(-logits, 1)[:, :2]
    assert res["top2"] == pytest.approx(np.mean((top2 == y[:, None]).any(1)))
    named = ms.Model(net, nn.CrossEntropyLoss(), metrics={
        "precision", "recall", "F1", "top_1_categorical_accuracy",
        "top_5_categorical_accuracy"}).eval(data)
    np.testing.assert_allclose(named["F1"], res["f1"])
    assert named["top_1_categorical_accuracy"] == pytest.approx(np.mean(pred == y))
    assert named["top_5_categorical_accuracy"] == 1.0
    assert isinstance(ms.train.get_metric_fn("top_k_categorical_accuracy", 3),
                      TopKCategoricalAccuracy)


@pytest.mark.parametrize("make,call,err,match", [
    (lambda: Precision("binary"), None, ValueError,
     "For 'Precision', the 'eval_type' should be 'classification' or 'multilabel', but got "
     "'binary'"),
    (lambda: Fbeta(0), None, ValueError, "For 'Fbeta', the 'beta' should be > 0, but got 0"),
    (lambda: TopKCategoricalAccuracy(0), None, ValueError,
     "For 'TopKCategoricalAccuracy', the 'k' should be >= 1, but got 0"),
    (lambda: TopKCategoricalAccuracy(2.0), None, TypeError, "'k' should be an int"),
    (Recall, lambda m: m.eval(), RuntimeError,
     "For 'Recall', it can not be calculated because the number of samples is 0"),
    (F1, lambda m: m.eval(), RuntimeError, "For 'F1', it can not be calculated"),
    (Top1CategoricalAccuracy, lambda m: m.eval(), RuntimeError,
     "For 'Top1CategoricalAccuracy', it can not be calculated"),
    (Precision, lambda m: m.update(X), ValueError,
     r"For 'Precision.update', it needs 2 inputs \(the prediction and the label\), but got 1"),
    (Precision, lambda m: m.update(X, Tensor(np.array([1, 0, 2]))), ValueError,
     r"For 'Precision', the 'y' should hold class indices in \[0, 2\), but got values in "
     r"\[0, 2\]"),
    (Recall, lambda m: m.update(X, Tensor(np.array([1, 0]))), ValueError,
     r"For 'Recall', the 'y_pred' should be \(N, C\) class scores and 'y' \(N,\) class "
     r"indices or \(N, C\) one-hot, but got shapes \(3, 2\) and \(2,\)"),
    (lambda: Fbeta(1),
     lambda m: (m.update(X, Y), m.update(X5, Y5)), ValueError,
     "For 'Fbeta.update', the class number should match the earlier updates' 2, but got 5"),
    (lambda: Precision("multilabel"), lambda m: m.update(X, np.ones((3, 2))), ValueError,
     "For 'Precision', in the multilabel case 'y_pred' and 'y' should be \\(N, C\\) arrays of "
     "0 and 1"),
    (Precision, lambda m: (m.update(X, Y), m.eval(average=1)), TypeError,
     "For 'Precision', the type of 'average' should be bool"),
])
def test_errors_name_the_metric(make, call, err, match):
    with pytest.raises(err, match=match):
        metric = make()
        if call is not None:
            call(metric)
