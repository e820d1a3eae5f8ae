"""nn.CrossEntropyLoss and nn.L1Loss against numpy re-implementations (torch's definitions),
in GRAPH_MODE and PYNATIVE_MODE, and their gradients (from the primitives' rules) against
central finite differences in float64."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(15)
N, C = 5, 4
LOGITS = RNG.standard_normal((N, C)) * 2
INDICES = np.array([0, 3, 1, 3, 2], np.int32)
PROBS = RNG.dirichlet(np.ones(C), N)
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])


def numpy_log_softmax(x):
    s = x - x.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def numpy_cross_entropy(x, y, weight=None, ignore_index=-100, reduction="mean", s=0.0):
    """torch.nn.functional.cross_entropy, written out."""
    logp, c = numpy_log_softmax(x), x.shape[1]
    w = np.ones(c) if weight is None else weight
    if y.dtype.kind == "f":
        loss = -(w * ((1 - s) * y + s / c) * logp).sum(1)
        return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]
    keep = y != ignore_index
    yk = np.where(keep, y, 0)
    nll = np.where(keep, -w[yk] * logp[np.arange(len(y)), yk], 0.0)
    smooth = np.where(keep, -(w * logp).sum(1), 0.0)
    loss = (1 - s) * nll + s / c * smooth
    if reduction == "mean":
        return loss.sum() / np.where(keep, w[yk], 0.0).sum()
    return {"sum": loss.sum(), "none": loss}[reduction]


CASES = {   # name: (labels, loss kwargs)
    "indices": (INDICES, {}),
    "indices_weight_sum": (INDICES, {"weight": WEIGHT, "reduction": "sum"}),
    "indices_weight_ignore": (INDICES, {"weight": WEIGHT, "ignore_index": 3}),
    "indices_smoothing_ignore_none": (INDICES, {"ignore_index": 1, "reduction": "none",
                                                "label_smoothing": 0.2}),
    "indices_weight_smoothing": (INDICES, {"weight": WEIGHT, "label_smoothing": 0.1}),
    "probabilities": (PROBS, {}),
    "probabilities_weight_smoothing_sum": (PROBS, {"weight": WEIGHT, "label_smoothing": 0.3,
                                                   "reduction": "sum"}),
}


def _loss(kwargs):
    kw = dict(kwargs)
    if "weight" in kw:
        kw["weight"] = Tensor(kw["weight"])
    return nn.CrossEntropyLoss(**kw)


def _numpy_kwargs(kwargs):
    return {{"label_smoothing": "s"}.get(k, k): v for k, v in kwargs.items()}


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("case", list(CASES))
def test_cross_entropy_follows_numpy(case, mode):
    ms.set_context(mode=mode)
    labels, kwargs = CASES[case]
    got = _loss(kwargs)(Tensor(LOGITS), Tensor(labels)).asnumpy()
    want = numpy_cross_entropy(LOGITS, labels, **_numpy_kwargs(kwargs))
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("case", list(CASES))
def test_cross_entropy_gradient_matches_finite_differences(case, mode):
    ms.set_context(mode=mode)
    labels, kwargs = CASES[case]
    loss = _loss(kwargs)
    got = ms.grad(lambda x, y: loss(x, y), 0)(Tensor(LOGITS), Tensor(labels)).asnumpy()
    want = finite_differences(
        lambda x: numpy_cross_entropy(x, labels, **_numpy_kwargs(kwargs)), LOGITS)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


# (N, C, d1, ..., dK) logits: class dim 1
LOGITS_3D = RNG.standard_normal((3, C, 5)) * 2
LOGITS_4D = RNG.standard_normal((2, C, 3, 2)) * 2
INDICES_3D = RNG.integers(0, C, (3, 5)).astype(np.int32)
INDICES_4D = RNG.integers(0, C, (2, 3, 2)).astype(np.int64)
PROBS_3D = np.moveaxis(RNG.dirichlet(np.ones(C), (3, 5)), -1, 1)
ND_CASES = {   # name: (logits, labels, loss kwargs)
    "3d_indices": (LOGITS_3D, INDICES_3D, {}),
    "3d_indices_weight_ignore_smoothing": (LOGITS_3D, INDICES_3D, {
        "weight": WEIGHT, "ignore_index": 2, "label_smoothing": 0.2}),
    "3d_indices_none": (LOGITS_3D, INDICES_3D, {"weight": WEIGHT, "reduction": "none"}),
    "4d_indices_weight_sum": (LOGITS_4D, INDICES_4D, {"weight": WEIGHT, "reduction": "sum"}),
    "4d_indices_ignore_none": (LOGITS_4D, INDICES_4D, {"ignore_index": 0, "reduction": "none"}),
    "3d_probabilities": (LOGITS_3D, PROBS_3D, {}),
    "3d_probabilities_weight_smoothing_none": (LOGITS_3D, PROBS_3D, {
        "weight": WEIGHT, "label_smoothing": 0.3, "reduction": "none"}),
}


def numpy_cross_entropy_nd(x, y, reduction="mean", **kwargs):
    """The (N, C, d1, ...) loss as torch defines it: every position of d1.. is a sample."""
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    labels = y.reshape(-1) if y.dtype.kind in "iu" else np.moveaxis(y, 1, -1).reshape(rows.shape)
    loss = numpy_cross_entropy(rows, labels, reduction=reduction, **kwargs)
    return loss.reshape(x.shape[:1] + x.shape[2:]) if reduction == "none" else loss


def test_numpy_nd_reference_is_the_2d_loss_per_position():
    """The reference itself: position (n, j) of a 3-D input is the 2-D loss of row n of
    logits[:, :, j]."""
    got = numpy_cross_entropy_nd(LOGITS_3D, INDICES_3D, reduction="none")
    for j in range(LOGITS_3D.shape[2]):
        np.testing.assert_allclose(got[:, j], numpy_cross_entropy(
            LOGITS_3D[:, :, j], INDICES_3D[:, j], reduction="none"), rtol=1e-12)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("case", list(ND_CASES))
def test_cross_entropy_nd_follows_numpy_and_finite_differences(case, mode):
    ms.set_context(mode=mode)
    logits, labels, kwargs = ND_CASES[case]
    loss = _loss(kwargs)
    reference = lambda x: numpy_cross_entropy_nd(x, labels, **_numpy_kwargs(kwargs))
    got = loss(Tensor(logits), Tensor(labels)).asnumpy()
    np.testing.assert_allclose(got, reference(logits), rtol=1e-12)
    grad = ms.grad(lambda x, y: loss(x, y), 0)(Tensor(logits), Tensor(labels)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(reference, logits), rtol=1e-6,
                               atol=1e-9)


def numpy_nll(x, y, weight=None, ignore_index=-100, reduction="mean"):
    rows = np.moveaxis(x, 1, -1).reshape(-1, x.shape[1])
    labels = y.reshape(-1)
    w = np.ones(x.shape[1]) if weight is None else weight
    keep = labels != ignore_index
    yk = np.where(keep, labels, 0)
    loss = np.where(keep, -w[yk] * rows[np.arange(len(labels)), yk], 0.0)
    if reduction == "mean":
        return loss.sum() / np.where(keep, w[yk], 0.0).sum()
    return loss.sum() if reduction == "sum" else loss.reshape(y.shape)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("logits, labels, kwargs", [
    (LOGITS, INDICES, {}),
    (LOGITS, INDICES, {"weight": WEIGHT, "ignore_index": 3}),
    (LOGITS_3D, INDICES_3D, {"weight": WEIGHT, "reduction": "none"}),
    (LOGITS_4D, INDICES_4D, {"ignore_index": 1, "reduction": "sum"}),
], ids=["2d", "2d_weight_ignore", "3d_weight_none", "4d_ignore_sum"])
def test_nll_loss_follows_numpy_and_finite_differences(logits, labels, kwargs, mode):
    """nn.NLLLoss on log-probabilities; also equals CrossEntropyLoss after log_softmax."""
    ms.set_context(mode=mode)
    kw = dict(kwargs)
    if "weight" in kw:
        kw["weight"] = Tensor(kw["weight"])
    loss = nn.NLLLoss(**kw)
    logp = np.moveaxis(numpy_log_softmax(np.moveaxis(logits, 1, -1)), -1, 1)
    got = loss(Tensor(logp), Tensor(labels)).asnumpy()
    np.testing.assert_allclose(got, numpy_nll(logp, labels, **kwargs), rtol=1e-12)
    np.testing.assert_allclose(got, nn.CrossEntropyLoss(**kw)(Tensor(logits), Tensor(labels))
                               .asnumpy(), rtol=1e-10)
    grad = ms.grad(lambda x, y: loss(x, y), 0)(Tensor(logp), Tensor(labels)).asnumpy()
    want = finite_differences(lambda x: numpy_nll(x, labels, **kwargs), logp)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-9)


def test_cross_entropy_trains_a_dense_layer():
    """The loss behind WithLossCell + TrainOneStepCell: it goes down."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.Dense(3, C, dtype=ms.float64)
    x = RNG.standard_normal((N, 3))
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.CrossEntropyLoss()),
                                nn.SGD(net.trainable_params(), 0.5))
    losses = [float(train(Tensor(x), Tensor(INDICES)).asnumpy()) for _ in range(10)]
    assert losses[-1] < losses[0]


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the 'label_smoothing' "
                                         r"should be in \[0, 1\], but got 1.5"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the class-index 'labels' "
                                         r"should have shape \[5\], but got \[5, 1\]"):
        nn.CrossEntropyLoss()(Tensor(LOGITS), Tensor(INDICES.reshape(5, 1)))
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the 'logits' should be "
                                         r"\(N, C\) or \(N, C, d1, ..., dK\), but got shape \[4\]"):
        nn.CrossEntropyLoss()(Tensor(LOGITS[0]), Tensor(INDICES[:1]))
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the class-index 'labels' "
                                         r"should have shape \[5, 2\], but got \[5, 3\]"):
        nn.CrossEntropyLoss()(Tensor(np.zeros((5, 4, 2))), Tensor(np.zeros((5, 3), np.int32)))
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the probability 'labels' "
                                         r"should have shape \[5, 4, 2\], but got \[5, 2, 4\]"):
        nn.CrossEntropyLoss()(Tensor(np.zeros((5, 4, 2))), Tensor(np.zeros((5, 2, 4))))
    with pytest.raises(ValueError, match=r"For 'CrossEntropyLoss', the 'weight' should have "
                                         r"shape \[C\] for the 4 classes of 'logits': \[4\], "
                                         r"but got \[3\]"):
        nn.CrossEntropyLoss(Tensor(np.ones(3)))(Tensor(LOGITS), Tensor(INDICES))
    with pytest.raises(TypeError, match=r"For 'NLLLoss', the 'labels' should be class indices"):
        nn.NLLLoss()(Tensor(LOGITS), Tensor(PROBS))


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_loss_and_its_gradient(reduction, mode):
    ms.set_context(mode=mode)
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((1, 4))
    want = {"mean": np.abs(a - b).mean(), "sum": np.abs(a - b).sum(), "none": np.abs(a - b)}
    loss = nn.L1Loss(reduction)
    np.testing.assert_allclose(loss(Tensor(a), Tensor(b)).asnumpy(), want[reduction],
                               rtol=1e-12)
    got = ms.grad(lambda x, y: loss(x, y), 0)(Tensor(a), Tensor(b)).asnumpy()
    scale = {"mean": 1 / a.size, "sum": 1.0, "none": 1.0}[reduction]
    np.testing.assert_allclose(got, np.sign(a - b) * scale, rtol=1e-12)
    np.testing.assert_allclose(got, finite_differences(
        lambda x: {"mean": np.abs(x - b).mean(), "sum": np.abs(x - b).sum(),
                   "none": np.abs(x - b)}[reduction], a), rtol=1e-6)


# -- the functions: ops.cross_entropy / ops.nll_loss are the layers' bodies -----------------
def _functional_kwargs(kwargs):
    return {k: Tensor(v) if k == "weight" else v for k, v in kwargs.items()}


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("case", list(CASES) + list(ND_CASES))
def test_ops_cross_entropy_follows_numpy_and_finite_differences(case, mode):
    ms.set_context(mode=mode)
    logits, labels, kwargs = ND_CASES[case] if case in ND_CASES else (LOGITS, *CASES[case])
    kw = _functional_kwargs(kwargs)
    fn = Call(lambda x, y: ops.cross_entropy(x, y, **kw))
    reference = lambda x: numpy_cross_entropy_nd(x, labels, **_numpy_kwargs(kwargs))
    np.testing.assert_allclose(fn(Tensor(logits), Tensor(labels)).asnumpy(),
                               reference(logits), rtol=1e-12)
    grad = ms.grad(lambda x, y: fn(x, y), 0)(Tensor(logits), Tensor(labels)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(reference, logits), rtol=1e-6,
                               atol=1e-9)


def numpy_nll_smoothed(x, y, weight=None, ignore_index=-100, reduction="mean", s=0.0):
    """MindSpore's nll_loss with label smoothing: (1 - s) * nll + s / C * the weighted sum of
    -x over the classes, each reduced alike ('mean' over the summed weights kept)."""
    w = np.ones(x.shape[1]) if weight is None else weight
    keep = y != ignore_index
    yk = np.where(keep, y, 0)
    nll = np.where(keep, -w[yk] * x[np.arange(len(y)), yk], 0.0)
    smooth = np.where(keep, -(w * x).sum(1), 0.0)
    loss = (1 - s) * nll + s / x.shape[1] * smooth
    if reduction == "mean":
        return loss.sum() / np.where(keep, w[yk], 0.0).sum()
    return {"sum": loss.sum(), "none": loss}[reduction]


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
@pytest.mark.parametrize("kwargs", [
    {}, {"weight": WEIGHT, "ignore_index": 3, "reduction": "sum"},
    {"label_smoothing": 0.2, "ignore_index": 1, "reduction": "none"},
    {"weight": WEIGHT, "label_smoothing": 0.1}], ids=["plain", "weight_ignore_sum",
                                                       "smoothing_none", "weight_smoothing"])
def test_ops_nll_loss_follows_numpy_and_finite_differences(kwargs, mode):
    ms.set_context(mode=mode)
    logp = numpy_log_softmax(LOGITS)
    kw = _functional_kwargs(kwargs)
    fn = Call(lambda x, y: ops.nll_loss(x, y, **kw))
    reference = lambda x: numpy_nll_smoothed(x, INDICES, **_numpy_kwargs(kwargs))
    np.testing.assert_allclose(fn(Tensor(logp), Tensor(INDICES)).asnumpy(), reference(logp),
                               rtol=1e-12)
    grad = ms.grad(lambda x, y: fn(x, y), 0)(Tensor(logp), Tensor(INDICES)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(reference, logp), rtol=1e-6,
                               atol=1e-9)
    if not kwargs.get("label_smoothing"):                     # nn.NLLLoss: the same body
        layer = nn.NLLLoss(**kw)
        np.testing.assert_allclose(layer(Tensor(logp), Tensor(INDICES)).asnumpy(),
                                   reference(logp), rtol=1e-12)


def test_ops_class_loss_errors_name_the_function_and_its_arguments():
    with pytest.raises(ValueError, match=r"For 'cross_entropy', the class-index 'target' "
                                         r"should have shape \[5\], but got \[4\]"):
        ops.cross_entropy(Tensor(LOGITS), Tensor(INDICES[:4]))
    with pytest.raises(ValueError, match=r"For 'cross_entropy', the 'input' should be \(N, C\)"):
        ops.cross_entropy(Tensor(LOGITS[0]), Tensor(INDICES[:1]))
    with pytest.raises(ValueError, match=r"For 'cross_entropy', the 'label_smoothing' should "
                                         r"be in \[0, 1\], but got -0.1"):
        ops.cross_entropy(Tensor(LOGITS), Tensor(INDICES), label_smoothing=-0.1)
    with pytest.raises(ValueError, match=r"For 'cross_entropy', the 'reduction'"):
        ops.cross_entropy(Tensor(LOGITS), Tensor(INDICES), reduction="avg")
    with pytest.raises(TypeError, match=r"For 'cross_entropy', the probability 'target' "
                                        r"should have the dtype of 'input'"):
        ops.cross_entropy(Tensor(LOGITS), Tensor(PROBS.astype(np.float32)))
    with pytest.raises(ValueError, match=r"For 'nll_loss', the 'weight' should be 1-D"):
        ops.nll_loss(Tensor(LOGITS), Tensor(INDICES), weight=Tensor(np.ones((4, 1))))
    with pytest.raises(TypeError, match=r"For 'nll_loss', the 'target' should be class "
                                        r"indices"):
        ops.nll_loss(Tensor(LOGITS), Tensor(PROBS))
    with pytest.raises(TypeError, match=r"For 'nll_loss', the type of 'ignore_index'"):
        ops.nll_loss(Tensor(LOGITS), Tensor(INDICES), ignore_index=1.5)
    with pytest.raises(TypeError, match=r"For 'NLLLoss', the 'weight' should have a float "
                                        r"dtype"):
        nn.NLLLoss(weight=Tensor(np.ones(4, np.int32)))
