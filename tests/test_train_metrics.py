"""ConfusionMatrix, Perplexity, CosineSimilarity, Dice, ROC, auc, get_metrics and names,
against numpy written here (loops over the definitions) and MindSpore's documented
examples."""
import itertools

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(9)


def test_confusion_matrix_counts_and_normalizations():
    scores = [RNG.random((7, 3)), RNG.random((5, 3))]
    labels = [RNG.integers(0, 3, 7), RNG.integers(0, 3, 5)]
    want = np.zeros((3, 3))
    for s, y in zip(scores, labels):
        for row, t in zip(s, y):
            want[t, int(np.argmax(row))] += 1
    for normalize in ("no_norm", "target", "prediction", "all"):
        m = ms.ConfusionMatrix(3, normalize=normalize)
        for s, y in zip(scores, labels):
            m.update(Tensor(s), Tensor(y))
        ref = want.copy()
        for i, j in itertools.product(range(3), range(3)):
            total = {"no_norm": 1, "target": want[i].sum(), "prediction": want[:, j].sum(),
                     "all": want.sum()}[normalize]
            ref[i, j] = want[i, j] / total if total else 0.0
        np.testing.assert_allclose(m.eval(), ref)


def test_confusion_matrix_thresholds_binary_scores_and_takes_segmentation_maps():
    m = ms.ConfusionMatrix(2, threshold=0.3)
    m.update(np.array([0.1, 0.35, 0.9, 0.2]), np.array([0, 0, 1, 1]))
    np.testing.assert_array_equal(m.eval(), [[1, 1], [1, 1]])
    seg = RNG.random((2, 3, 4, 4))                          # (N, C, H, W) scores
    truth = RNG.integers(0, 3, (2, 4, 4))
    m = ms.ConfusionMatrix(3)
    m.update(seg, truth)
    want = np.zeros((3, 3))
    for n, h, w in itertools.product(range(2), range(4), range(4)):
        want[truth[n, h, w], int(np.argmax(seg[n, :, h, w]))] += 1
    np.testing.assert_array_equal(m.eval(), want)
    m = ms.ConfusionMatrix(2)                               # MindSpore's example
    m.update(Tensor(np.array([1, 0, 1, 0])), Tensor(np.array([1, 0, 0, 1])))
    np.testing.assert_array_equal(m.eval(), [[1, 1], [1, 1]])


def test_perplexity_against_the_definition():
    probs = RNG.dirichlet(np.ones(4), size=9)
    labels = RNG.integers(0, 4, 9)
    labels[2] = 3
    m = ms.Perplexity()
    m.update(Tensor(probs[:5]), Tensor(labels[:5]))
    m.update(probs[5:], labels[5:])
    logs = [np.log(probs[i, labels[i]]) for i in range(9)]
    assert m.eval() == pytest.approx(np.exp(-np.mean(logs)))
    ignoring = ms.Perplexity(ignore_label=3)
    ignoring.update(probs, labels)
    kept = [np.log(probs[i, labels[i]]) for i in range(9) if labels[i] != 3]
    assert ignoring.eval() == pytest.approx(np.exp(-np.mean(kept)))
    doc = ms.Perplexity()
    doc.update(np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]]), np.array([1, 0, 1]))
    assert doc.eval() == pytest.approx(2.231443166940565)


@pytest.mark.parametrize("similarity", ["cosine", "dot"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_cosine_similarity_against_pairwise_loops(similarity, reduction):
    x = RNG.standard_normal((4, 6))
    m = ms.CosineSimilarity(similarity=similarity, reduction=reduction)
    m.update(Tensor(x))
    want = np.zeros((4, 4))
    for i, j in itertools.product(range(4), range(4)):
        dot = sum(x[i, k] * x[j, k] for k in range(6))
        scale = np.sqrt(sum(x[i] ** 2) * sum(x[j] ** 2)) if similarity == "cosine" else 1.0
        want[i, j] = 0.0 if i == j else dot / scale
    want = {"none": want, "sum": want.sum(1), "mean": want.mean(1)}[reduction]
    np.testing.assert_allclose(m.eval(), want, rtol=1e-12)


def test_cosine_similarity_documented_example_and_diagonal():
    m = ms.CosineSimilarity(zero_diagonal=False)
    m.update(np.array([[1, 3, 4, 7], [2, 4, 2, 5], [3, 1, 5, 8]]))
    np.testing.assert_allclose(m.eval(), [[1, 0.94025615, 0.95162452],
                                          [0.94025615, 1, 0.86146098],
                                          [0.95162452, 0.86146098, 1]], rtol=1e-7)


def test_dice_is_the_mean_over_updates():
    batches = [(RNG.random((2, 5)), RNG.integers(0, 2, (2, 5))) for _ in range(3)]
    m = ms.Dice(smooth=1e-3)
    for p, y in batches:
        m.update(Tensor(p), Tensor(y))
    coeffs = []
    for p, y in batches:
        inter = sum(a * b for a, b in zip(p.ravel(), y.ravel()))
        union = sum(a * a for a in p.ravel()) + sum(b * b for b in y.ravel())
        coeffs.append(2 * inter / (union + 1e-3))
    assert m.eval() == pytest.approx(np.mean(coeffs))


def _roc_by_definition(scores, positive):
    """tpr/fpr at every distinct score as a threshold (>=), highest first, after (0, 0)."""
    thresholds = sorted(set(scores.tolist()), reverse=True)
    fpr, tpr = [0.0], [0.0]
    for t in thresholds:
        fpr.append(np.mean(scores[~positive] >= t))
        tpr.append(np.mean(scores[positive] >= t))
    return np.array(fpr), np.array(tpr), np.array([thresholds[0] + 1] + thresholds)


def test_binary_roc_and_its_auc_against_the_definitions():
    scores = np.round(RNG.random(30), 1)                     # ties on purpose
    labels = RNG.integers(0, 2, 30)
    m = ms.ROC()
    m.update(Tensor(scores[:10]), Tensor(labels[:10]))
    m.update(scores[10:], labels[10:])
    fpr, tpr, thresholds = m.eval()
    want = _roc_by_definition(scores, labels == 1)
    for got, ref in zip((fpr, tpr, thresholds), want):
        np.testing.assert_allclose(got, ref)
    # the area is the probability that a positive outscores a negative (ties count 1/2)
    pos, neg = scores[labels == 1], scores[labels == 0]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    assert ms.auc(fpr, tpr) == pytest.approx(np.mean(pairs))


def test_multiclass_roc_is_one_vs_rest_and_matches_mindsporess_example():
    x = np.array([[0.28, 0.55, 0.15, 0.05], [0.10, 0.20, 0.05, 0.05],
                  [0.20, 0.05, 0.15, 0.05], [0.05, 0.05, 0.05, 0.75]])
    m = ms.ROC(class_num=4)
    m.update(x, np.eye(4)[[0, 1, 2, 3]])                    # one-hot labels
    fpr, tpr, thresholds = m.eval()
    for c in range(4):
        want = _roc_by_definition(x[:, c], np.arange(4) == c)
        for got, ref in zip((fpr[c], tpr[c], thresholds[c]), want):
            np.testing.assert_allclose(got, ref)
    np.testing.assert_allclose(thresholds[0], [1.28, 0.28, 0.2, 0.1, 0.05])
    binary = ms.ROC(pos_label=2)
    binary.update(np.array([0.28, 0.55, 0.15, 0.05]), np.array([0, 1, 2, 3]))
    np.testing.assert_allclose(binary.eval()[0], [0, 1 / 3, 2 / 3, 2 / 3, 1])


def test_auc_trapezoids_direction_and_reorder():
    assert ms.auc(np.array([0, 1, 2]), np.array([0, 1, 0])) == pytest.approx(1.0)
    assert ms.auc([2, 1, 0], [0, 2, 0]) == pytest.approx(2.0)          # decreasing x
    # sorted: (0, 0), (1, 1), (2, 1): 0.5 + 1
    assert ms.auc([1, 0, 2], [1, 0, 1], reorder=True) == pytest.approx(1.5)
    with pytest.raises(ValueError, match=r"For 'auc', the 'x' should be monotonic"):
        ms.auc([1, 0, 2], [1, 0, 1])
    with pytest.raises(ValueError, match=r"at least 2 points, but got 1 and 1"):
        ms.auc([1], [1])


def test_get_metrics_and_names():
    assert ms.names() == sorted(ms.names())
    assert {"confusion_matrix", "perplexity", "cosine_similarity", "dice", "roc", "acc",
            "F1"} <= set(ms.names())
    got = nn.get_metrics({"roc", "dice", "perplexity"})
    assert {k: type(v) for k, v in got.items()} == {"roc": ms.ROC, "dice": ms.Dice,
                                                   "perplexity": ms.Perplexity}
    mine = {"cm": ms.ConfusionMatrix(3)}
    assert nn.get_metrics(mine) == mine and nn.get_metrics(None) is None
    assert isinstance(ms.train.get_metric_fn("confusion_matrix", num_classes=3),
                      ms.ConfusionMatrix)
    with pytest.raises(TypeError, match=r"For 'get_metrics', every 'metrics' value should be "
                                        r"a Metric, but 'cm' is int"):
        nn.get_metrics({"cm": 3})
    with pytest.raises(TypeError, match=r"For 'get_metrics', the 'metrics' should be a set"):
        nn.get_metrics("acc")


def test_model_eval_with_a_confusion_matrix():
    ms.set_seed(2)
    net = nn.Dense(4, 3)
    x = RNG.standard_normal((12, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 12).astype(np.int32)
    model = ms.Model(net, nn.CrossEntropyLoss(), metrics={"cm": ms.ConfusionMatrix(3)})
    data = ms.dataset.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(5)
    got = model.eval(data)["cm"]
    pred = net(Tensor(x)).asnumpy().argmax(1)
    want = np.zeros((3, 3))
    for t, p in zip(y, pred):
        want[t, p] += 1
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ms.ConfusionMatrix(0), ValueError,
     r"For 'ConfusionMatrix', the 'num_classes' should be a positive int, but got 0"),
    (lambda: ms.ConfusionMatrix(2, normalize="rows"), ValueError,
     r"For 'ConfusionMatrix', the 'normalize' should be one of \['no_norm', 'target', "
     r"'prediction', 'all'\], but got 'rows'"),
    (lambda: ms.ConfusionMatrix(2).update([0, 3], [0, 1]), ValueError,
     r"For 'ConfusionMatrix', the 'y_pred' classes should be ints in \[0, 2\), but got "
     r"values in \[0, 3\]"),
    (lambda: ms.ConfusionMatrix(2).eval(), RuntimeError,
     r"For 'ConfusionMatrix', call 'update' before 'eval'"),
    (lambda: ms.Perplexity().update([[0.5, 0.5]], [0, 1]), RuntimeError,
     r"For 'Perplexity', the 'labels' should hold one class per row of 'preds'"),
    (lambda: ms.Perplexity().eval(), RuntimeError,
     r"For 'Perplexity', the number of samples can not be 0"),
    (lambda: ms.CosineSimilarity(reduction="max"), ValueError,
     r"For 'CosineSimilarity', the 'reduction' should be one of \['none', 'sum', 'mean'\]"),
    (lambda: ms.CosineSimilarity().update([[0.0, 0.0], [1.0, 2.0]]), ValueError,
     r"For 'CosineSimilarity', every row should be non-zero to have a cosine, but row 0"),
    (lambda: ms.Dice(smooth=0), ValueError, r"For 'Dice', the 'smooth' should be > 0"),
    (lambda: ms.Dice().update([1, 0], [1, 0, 1]), ValueError,
     r"For 'Dice', the 'y_pred' and 'y' should have one shape, but got 2 and 3 elements"),
    (lambda: ms.ROC(class_num=3).update(np.ones((2, 2)), [0, 1]), ValueError,
     r"For 'ROC', the 'y_pred' should be \(N, 3\) scores"),
    (lambda: ms.ROC(class_num=3, pos_label=1).update(np.ones((2, 3)), [0, 1]), ValueError,
     r"For 'ROC', the 'pos_label' should be None with 3 classes"),
    (lambda: ms.ROC().eval(), RuntimeError, r"For 'ROC', call 'update' before 'eval'"),
])
def test_bad_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()
