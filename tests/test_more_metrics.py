"""BleuScore, ConfusionMatrixMetric, HausdorffDistance, MeanSurfaceDistance,
RootMeanSquareDistance, OcclusionSensitivity and rearrange_inputs against hand counts and
brute-force numpy references (n-grams counted directly, surfaces found voxel by voxel and
distances over every pair, every occluded image scored by hand); MindSpore's documented
examples; Model's evaluation with a rearranging metric."""
import itertools
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops import dataset as ds
from msops.train import (BleuScore, ConfusionMatrixMetric, HausdorffDistance,
                         MeanSurfaceDistance, OcclusionSensitivity, RootMeanSquareDistance,
                         rearrange_inputs)

RNG = np.random.default_rng(3)


# -- BLEU ----------------------------------------------------------------------------
def grams(tokens, n):
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def direct_bleu(candidates, references, n_gram, smooth=False):
    """Clipped n-gram matches counted one n-gram at a time, the corpus brevity penalty."""
    matched, total = [0] * n_gram, [0] * n_gram
    c = r = 0
    for cand, refs in zip(candidates, references):
        c += len(cand)
        r += min((abs(len(ref) - len(cand)), k, len(ref)) for k, ref in enumerate(refs))[2]
        for n in range(1, n_gram + 1):
            mine = grams(cand, n)
            total[n - 1] += len(mine)
            for g in set(mine):
                most = max(grams(ref, n).count(g) for ref in refs)
                matched[n - 1] += min(mine.count(g), most)
    if min(matched) == 0:
        return 0.0
    p = [(m + smooth) / (t + smooth) for m, t in zip(matched, total)]
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(sum(math.log(x) for x in p) / n_gram)


CANDIDATES = [["the", "cat", "is", "on", "the", "mat"],
              ["there", "is", "a", "cat", "here", "on", "a", "mat"]]
REFERENCES = [[["the", "cat", "sat", "on", "the", "mat"], ["a", "cat", "is", "on", "the", "mat"]],
              [["a", "cat", "is", "on", "a", "mat", "here"], ["the", "cat", "is", "here"]]]


@pytest.mark.parametrize("n_gram", [1, 2, 3, 4])
@pytest.mark.parametrize("smooth", [False, True])
def test_bleu_counts_ngrams(n_gram, smooth):
    metric = BleuScore(n_gram, smooth)
    metric.update(CANDIDATES[:1], REFERENCES[:1])        # accumulates over updates
    metric.update(CANDIDATES[1:], REFERENCES[1:])
    want = direct_bleu(CANDIDATES, REFERENCES, n_gram, smooth)
    assert want > 0
    np.testing.assert_allclose(metric.eval(), want, rtol=1e-12)


def test_bleu_mindspore_example_brevity_and_zero():
    m = BleuScore()
    m.update([["i", "have", "a", "pen", "on", "my", "desk"]],
             [[["i", "have", "a", "pen", "in", "my", "desk"],
               ["there", "is", "a", "pen", "on", "the", "desk"]]])
    np.testing.assert_allclose(m.eval(), 0.5946035575013605, rtol=1e-12)
    short = BleuScore(2)(([["a", "cat"]]), [[["a", "cat", "sat", "down"]]])
    np.testing.assert_allclose(short, math.exp(1 - 4 / 2), rtol=1e-12)    # p1 = p2 = 1
    assert BleuScore(2)([["dog", "run"]], [[["a", "cat"]]]) == 0.0
    with pytest.raises(ValueError, match="For 'BleuScore', the 'n_gram' should be in"):
        BleuScore(5)
    with pytest.raises(RuntimeError, match="call 'update' before 'eval'"):
        BleuScore().eval()


# -- surface distances ---------------------------------------------------------------
def brute_surface(mask):
    """Voxels of the mask with a face neighbour outside it (or outside the image)."""
    out = np.zeros_like(mask)
    for idx in zip(*np.nonzero(mask)):
        for d in range(mask.ndim):
            for step in (-1, 1):
                j = list(idx)
                j[d] += step
                if not 0 <= j[d] < mask.shape[d] or not mask[tuple(j)]:
                    out[idx] = True
    return out


NORMS = {"euclidean": lambda v: np.sqrt((v ** 2).sum()), "chessboard": lambda v: np.abs(v).max(),
         "taxicab": lambda v: np.abs(v).sum()}


def brute_distances(a, b, metric):
    pa, pb = np.argwhere(brute_surface(a)), np.argwhere(brute_surface(b))
    if len(pa) == 0:
        return np.zeros(0)
    if len(pb) == 0:
        return np.full(len(pa), np.inf)
    return np.array([min(NORMS[metric](p - q) for q in pb) for p in pa])


def blobs(shape, label=2):
    """Two label images of random blobs (labels 0..3), both holding `label`."""
    pred = RNG.integers(0, 4, shape)
    true = np.where(RNG.random(shape) < 0.7, pred, RNG.integers(0, 4, shape))
    return pred, true


CASES = [blobs((7, 9)), blobs((5, 6, 4)), blobs((8, 8))]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("metric", sorted(NORMS))
def test_surface_metrics_against_brute_force(case, metric):
    pred, true = CASES[case]
    a, b = pred == 2, true == 2
    fwd, back = brute_distances(a, b, metric), brute_distances(b, a, metric)
    for directed in (False, True):
        for crop in (False, True):
            hd = HausdorffDistance(metric, directed=directed, crop=crop)
            hd.update(Tensor(pred), true, 2)
            want = fwd.max() if directed else max(fwd.max(), back.max())
            np.testing.assert_allclose(hd.eval(), want, rtol=1e-12)
    hd95 = HausdorffDistance(metric, percentile=95.0)
    hd95.update(pred, true, 2)
    np.testing.assert_allclose(hd95.eval(), max(np.percentile(fwd, 95), np.percentile(back, 95)),
                               rtol=1e-12)
    for symmetric in (False, True):
        msd = MeanSurfaceDistance(symmetric, metric)
        msd.update(pred, true, 2)
        want = np.mean([fwd.mean(), back.mean()]) if symmetric else fwd.mean()
        np.testing.assert_allclose(msd.eval(), want, rtol=1e-12)
        rmsd = RootMeanSquareDistance(symmetric, metric)
        rmsd.update(pred, true, 2)
        want = np.sqrt(np.mean([np.mean(fwd ** 2), np.mean(back ** 2)]) if symmetric
                       else np.mean(fwd ** 2))
        np.testing.assert_allclose(rmsd.eval(), want, rtol=1e-12)


def test_surface_metrics_mindspore_examples_and_edge_cases():
    x = Tensor(np.array([[3, 0, 1], [1, 3, 0], [1, 0, 2]]))
    y = Tensor(np.array([[0, 2, 1], [1, 2, 1], [0, 0, 1]]))
    assert HausdorffDistance()(x, y, 0) == pytest.approx(1.4142135623730951, rel=1e-12)
    assert MeanSurfaceDistance()(x, y, 0) == pytest.approx(0.8047378541243649, rel=1e-12)
    assert RootMeanSquareDistance()(x, y, 0) == pytest.approx(1.0, rel=1e-12)
    # a one-row region: cropping keeps every voxel a surface voxel, as uncropped
    row = np.zeros((5, 6), int)
    row[2, 1:5] = 1
    other = np.zeros((5, 6), int)
    other[0, 0] = 1
    for crop in (False, True):
        got = HausdorffDistance(crop=crop, directed=True)(row, other, 1)
        assert got == pytest.approx(brute_distances(row == 1, other == 1, "euclidean").max())
    # label only in y: no predicted surface, infinite distance
    assert MeanSurfaceDistance()(np.zeros((3, 3)), np.eye(3), 1) == np.inf
    with pytest.raises(ValueError, match="the 'label_idx' 5 should occur in"):
        HausdorffDistance()(x, y, 5)
    with pytest.raises(TypeError, match="the 'label_idx' \\(inputs\\[2\\]\\) should be an int"):
        HausdorffDistance()(x, y, "0")
    with pytest.raises(ValueError, match="should be non-empty and of one shape"):
        RootMeanSquareDistance()(np.zeros((3, 3)), np.zeros((3, 4)), 0)
    with pytest.raises(ValueError, match="the 'distance_metric'"):
        MeanSurfaceDistance(distance_metric="cosine")


# -- confusion-matrix measures ---------------------------------------------------------
def counts_by_loop(pred, true):
    tp = fp = tn = fn = 0
    for p, t in zip(pred.ravel(), true.ravel()):
        tp += p == 1 and t == 1
        fp += p == 1 and t == 0
        tn += p == 0 and t == 0
        fn += p == 0 and t == 1
    return tp, fp, tn, fn


def by_hand(name, tp, fp, tn, fn):
    p, n = tp + fn, fp + tn
    tpr, tnr = tp / p, tn / n
    ppv, npv = tp / (tp + fp), tn / (tn + fn)
    return {"sensitivity": tpr, "specificity": tnr, "precision": ppv,
            "negative predictive value": npv, "miss rate": fn / p, "fall out": fp / n,
            "false discovery rate": fp / (fp + tp), "false omission rate": fn / (fn + tn),
            "prevalence threshold": (math.sqrt(tpr * (1 - tnr)) + tnr - 1) / (tpr + tnr - 1),
            "threat score": tp / (tp + fn + fp), "accuracy": (tp + tn) / (p + n),
            "balanced accuracy": (tpr + tnr) / 2, "f1 score": 2 * tp / (2 * tp + fn + fp),
            "matthews correlation coefficient":
                (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)),
            "fowlkes mallows index": math.sqrt(ppv * tpr), "informedness": tpr + tnr - 1,
            "markedness": ppv + npv - 1}[name]


NAMES = ["sensitivity", "specificity", "precision", "negative predictive value", "miss rate",
         "fall out", "false discovery rate", "false omission rate", "prevalence threshold",
         "threat score", "accuracy", "balanced accuracy", "f1 score",
         "matthews correlation coefficient", "fowlkes mallows index", "informedness",
         "markedness"]


def one_hot(labels, classes):
    return np.moveaxis(np.eye(classes, dtype=int)[labels], -1, 1)


@pytest.mark.parametrize("name", NAMES)
def test_confusion_measures_of_summed_counts(name):
    batches = [(one_hot(RNG.integers(0, 3, (4, 5)), 3), one_hot(RNG.integers(0, 3, (4, 5)), 3))
               for _ in range(2)]
    for skip_channel in (True, False):
        metric = ConfusionMatrixMetric(skip_channel, name)
        for pred, true in batches:
            metric.update(Tensor(pred), true)
        keep = slice(None) if skip_channel else slice(1, None)
        counts = np.sum([counts_by_loop(p[:, keep], t[:, keep]) for p, t in batches], axis=0)
        got = metric.eval()
        assert got.shape == (1,)
        np.testing.assert_allclose(got[0], by_hand(name, *counts), rtol=1e-12)


def test_confusion_measures_per_sample_and_decrease():
    pred = one_hot(RNG.integers(0, 3, (5, 4, 4)), 3)
    true = one_hot(RNG.integers(0, 3, (5, 4, 4)), 3)
    true[1, 2] = 0                          # no positives: sample 1's channel-2 tpr is undefined
    pred[1, 2] = 0
    chart = np.full((5, 3), np.nan)
    for b, c in itertools.product(range(5), range(3)):
        tp, fp, tn, fn = counts_by_loop(pred[b, c], true[b, c])
        if tp + fn:
            chart[b, c] = tp / (tp + fn)
    defined = ~np.isnan(chart)
    zeroed = np.where(defined, chart, 0)
    per_sample = zeroed.sum(1) / defined.sum(1)
    want = {"mean": per_sample.mean(), "sum": zeroed.sum(), "none": zeroed,
            "mean_batch": zeroed.sum(0) / defined.sum(0), "sum_batch": zeroed.sum(0),
            "mean_channel": per_sample, "sum_channel": zeroed.sum(1)}
    for how, value in want.items():
        metric = ConfusionMatrixMetric(metric_name="TPR", calculation_method=True, decrease=how)
        metric.update(pred[:2], true[:2])
        metric.update(pred[2:], true[2:])
        np.testing.assert_allclose(metric.eval(), value, rtol=1e-12, err_msg=how)
    # MindSpore's example
    m = ConfusionMatrixMetric(skip_channel=True, metric_name="tpr", calculation_method=False)
    m.update(Tensor(np.array([[[0], [1]], [[1], [0]]])), Tensor(np.array([[[0], [1]], [[0], [1]]])))
    np.testing.assert_allclose(m.eval(), [0.5])
    with pytest.raises(ValueError, match="the 'metric_name' should be one of"):
        ConfusionMatrixMetric(metric_name="auc")
    with pytest.raises(ValueError, match="the 'y' should be binarized"):
        ConfusionMatrixMetric().update(pred, true * 2)


# -- occlusion sensitivity -------------------------------------------------------------
class Linear(nn.Cell):
    """Scores (n, 3) of images (n, 2, 4, 5): fixed weights over every pixel."""

    def __init__(self, w):
        super().__init__()
        self.w = Tensor(w)
        self.matmul = ms.ops.MatMul()

    def construct(self, x):
        return self.matmul(x.reshape(x.shape[0], -1), self.w)


@pytest.mark.parametrize("margin,b_box,n_batch", [(1, None, 7), ([0, 2, 1], [0, 1, 1, 3, -1, 3], 4),
                                                  (2, None, 128)])
def test_occlusion_sensitivity_scores_every_occluded_image(margin, b_box, n_batch):
    image = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    w = RNG.standard_normal((40, 3)).astype(np.float32)
    metric = OcclusionSensitivity(pad_val=0.5, margin=margin, n_batch=n_batch, b_box=b_box)
    metric.update(Linear(w), image, np.array([2], np.int32))
    got = metric.eval()
    margins = np.broadcast_to(margin, (3,))
    low = [0, 0, 0] if b_box is None else [max(v, 0) for v in b_box[::2]]
    high = [1, 3, 4] if b_box is None else [s - 1 if v < 0 else v
                                            for v, s in zip(b_box[1::2], (2, 4, 5))]
    base = float(image.reshape(-1) @ w[:, 2])
    want = np.zeros([h - lo + 1 for lo, h in zip(low, high)])
    for idx in itertools.product(*[range(lo, h + 1) for lo, h in zip(low, high)]):
        hidden = image.copy()
        block = tuple(slice(max(0, i - m), min(s, i + m)) for i, m, s in
                      zip(idx, margins, (2, 4, 5)))
        hidden[(0,) + block] = 0.5
        want[tuple(np.subtract(idx, low))] = base - float(hidden.reshape(-1) @ w[:, 2])
    np.testing.assert_allclose(got, np.squeeze(want), rtol=1e-4, atol=1e-4)


def test_occlusion_sensitivity_mindspore_example():
    w = np.array([[0.1, 0.8, 0.1, 0.1], [1, 1, 1, 1]], np.float32)
    model = nn.Dense(4, 2, weight_init=Tensor(w), bias_init=Tensor(np.array([0.3, 0.6],
                                                                            np.float32)))
    metric = OcclusionSensitivity()
    metric.update(model, np.array([[0.1, 0.2, 0.3, 0.4]], np.float32), np.array(1, np.int32))
    np.testing.assert_allclose(metric.eval(), [0.3, 0.6, 1.0, 0.9], rtol=1e-5)
    with pytest.raises(ValueError, match="the 'y_pred' should be one image"):
        metric.update(model, np.ones((2, 4), np.float32), 1)
    with pytest.raises(TypeError, match="the 'model' \\(inputs\\[0\\]\\) should be a Cell"):
        metric.update(lambda x: x, np.ones((1, 4), np.float32), 1)


# -- rearrange_inputs -----------------------------------------------------------------
class PickFirst(ms.train.Metric):
    def clear(self):
        self.seen = []

    @rearrange_inputs
    def update(self, *inputs):
        self.seen.append(tuple(float(np.asarray(self._convert_data(x)).sum()) for x in inputs))

    def eval(self):
        return self.seen


def test_rearrange_inputs_reorders_and_model_passes_every_output():
    m = PickFirst()
    m.clear()
    m.set_indexes([2, 0]).update(1, 2, 3)
    assert m.seen == [(3.0, 1.0)]
    # MindSpore's docstring example; no indexes: the inputs as given
    doc = PickFirst().set_indexes([1, 0])
    doc.clear()
    doc.update(5, 9)
    plain = PickFirst()
    plain.clear()
    plain.update(5, 9)
    assert doc.seen == [(9.0, 5.0)] and plain.seen == [(5.0, 9.0)]
    # in Model.eval the metric's own update picks the outputs (once)
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    y = np.ones((4, 1), np.float32)
    net = nn.Dense(2, 1, weight_init="ones", bias_init="zeros")
    picker = PickFirst().set_indexes([2, 1])
    picker.clear()
    model = ms.Model(net, nn.MSELoss(), metrics={"pick": picker})
    model.eval(ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(4))
    assert picker.seen == [(4.0, float(x.sum()))]       # (label, prediction)
    hd = HausdorffDistance().set_indexes([1, 2, 0])
    hd.update(0, np.eye(3), np.eye(3)[::-1])
    assert hd.eval() == pytest.approx(HausdorffDistance()(np.eye(3), np.eye(3)[::-1], 0))
