"""The regression and binary losses, each spelled two ways (nn.<Loss> and ops.<loss>: one
body): values against numpy written here for every reduction, weights and pos_weight, eager
and compiled (GRAPH_MODE); gradients against float64 finite differences; stability for
large logits; and argument errors naming the layer or the function."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(2024)
X = RNG.standard_normal((4, 3)) * 2
Y = RNG.standard_normal((4, 3))
ROW = RNG.standard_normal((1, 3))                   # broadcasts against X
PROB_X = RNG.uniform(0.05, 0.95, (4, 3))
PROB_Y = RNG.uniform(0.0, 1.0, (4, 3))
BIN_Y = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float64)
WEIGHT = RNG.uniform(0.5, 2.0, (4, 3))
COL_WEIGHT = RNG.uniform(0.5, 2.0, (3,))            # broadcasts to (4, 3)
POS_WEIGHT = np.array([0.5, 2.0, 3.0])
LOG_P = np.log(RNG.dirichlet(np.ones(3), 4))
KL_Y = RNG.dirichlet(np.ones(3), 4)
KL_Y[0, 1] = 0.0                                     # a zero label: 0 * log 0 is 0


def reduce(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss, "batchmean":
            loss.sum() / loss.shape[0]}[reduction]


def sigmoid(x):
    return 0.5 * (1 + np.tanh(0.5 * x))


def np_smooth_l1(x, y, beta=1.0, reduction="none"):
    d = np.abs(x - y)
    return reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def np_huber(x, y, reduction="mean", delta=1.0):
    d = np.abs(x - y)
    return reduce(np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def np_bce_logits(x, y, weight=None, pos_weight=None, reduction="mean"):
    """The definition, with sigmoid written out (fine for the moderate x used here)."""
    p = sigmoid(x)
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * np.log(p) + (1 - y) * np.log(1 - p))
    return reduce(loss * (1.0 if weight is None else weight), reduction)


def np_bce(x, y, weight=None, reduction="mean"):
    loss = -(y * np.log(x + 1e-12) + (1 - y) * np.log(1 - x + 1e-12))
    return reduce(loss * (1.0 if weight is None else weight), reduction)


def np_kl(x, y, reduction="mean"):
    safe = np.where(y > 0, y, 1.0)
    return reduce(np.where(y > 0, y * (np.log(safe) - x), 0.0), reduction)


# name: (nn factory(kw), ops call(x, y, kw), numpy reference(x, y, kw), x, y, kw cases)
LOSSES = {
    "mse": (lambda kw: nn.MSELoss(**kw), lambda x, y, kw: ops.mse_loss(x, y, **kw),
            lambda x, y, kw: reduce((x - y) ** 2, kw.get("reduction", "mean")), X, ROW,
            [{}]),
    "l1": (lambda kw: nn.L1Loss(**kw), lambda x, y, kw: ops.l1_loss(x, y, **kw),
           lambda x, y, kw: reduce(np.abs(x - y), kw.get("reduction", "mean")), X, ROW,
           [{}]),
    "smooth_l1": (lambda kw: nn.SmoothL1Loss(**kw),
                  lambda x, y, kw: ops.smooth_l1_loss(x, y, **kw),
                  lambda x, y, kw: np_smooth_l1(x, y, **kw), X, Y,
                  [{}, {"beta": 0.5}, {"beta": 3.0}]),
    "huber": (lambda kw: nn.HuberLoss(**kw), lambda x, y, kw: ops.huber_loss(x, y, **kw),
              lambda x, y, kw: np_huber(x, y, **kw), X, ROW,
              [{}, {"delta": 2}, {"delta": 0.3}]),
    "bce_with_logits": (
        lambda kw: nn.BCEWithLogitsLoss(**_tensors(kw)),
        lambda x, y, kw: ops.binary_cross_entropy_with_logits(x, y, **_tensors(kw)),
        lambda x, y, kw: np_bce_logits(x, y, **kw), X, PROB_Y,
        [{}, {"weight": WEIGHT}, {"pos_weight": POS_WEIGHT},
         {"weight": COL_WEIGHT, "pos_weight": POS_WEIGHT}]),
    "bce": (lambda kw: nn.BCELoss(**_tensors(kw)),
            lambda x, y, kw: ops.binary_cross_entropy(x, y, **_tensors(kw)),
            lambda x, y, kw: np_bce(x, y, **kw), PROB_X, PROB_Y,
            [{}, {"weight": WEIGHT}, {"weight": COL_WEIGHT}]),
    "kl_div": (lambda kw: nn.KLDivLoss(**kw), lambda x, y, kw: ops.kl_div(x, y, **kw),
               lambda x, y, kw: np_kl(x, y, **kw), LOG_P, KL_Y, [{}]),
}
REDUCTIONS = {"kl_div": ("none", "mean", "sum", "batchmean")}


def _tensors(kw):
    return {k: Tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


def _cases():
    for name, (_, _, _, _, _, kws) in LOSSES.items():
        for i, kw in enumerate(kws):
            for reduction in REDUCTIONS.get(name, ("none", "mean", "sum")):
                yield pytest.param(name, {**kw, "reduction": reduction},
                                   id=f"{name}-{i}-{reduction}")


def _spellings(name, kw):
    make, call, _, _, _, _ = LOSSES[name]
    return {"nn": make(kw), "ops": lambda x, y: call(x, y, kw)}


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("name, kw", list(_cases()))
def test_loss_follows_numpy_and_finite_differences(name, kw, mode):
    """Both spellings equal the numpy reference; the gradient of the logits (and of the
    labels for the regression losses) is the reference's finite differences."""
    ms.set_context(mode=mode)
    _, _, ref, x, y, _ = LOSSES[name]
    want = ref(x, y, kw)
    for spelling, loss in _spellings(name, kw).items():
        fn = loss if spelling == "nn" else Call(loss) if mode == ms.GRAPH_MODE else loss
        got = fn(Tensor(x), Tensor(y)).asnumpy()
        assert got.shape == np.shape(want), spelling
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=spelling)
        grad = ms.grad(lambda a, b: fn(a, b), 0)(Tensor(x), Tensor(y)).asnumpy()
        np.testing.assert_allclose(grad, finite_differences(lambda a: ref(a, y, kw), x),
                                   rtol=1e-5, atol=1e-7, err_msg=spelling)


@pytest.mark.parametrize("name", ["mse", "l1", "smooth_l1", "huber"])
def test_regression_losses_differentiate_the_labels(name):
    _, _, ref, x, y, _ = LOSSES[name]
    loss = LOSSES[name][0]({"reduction": "sum"})
    grad = ms.grad(lambda a, b: loss(a, b), 1)(Tensor(x), Tensor(y)).asnumpy()
    np.testing.assert_allclose(grad, finite_differences(
        lambda b: ref(x, b, {"reduction": "sum"}), y), rtol=1e-5, atol=1e-7)


def test_bce_with_logits_is_stable_for_large_logits():
    """|x| up to 1e4 in float32: finite losses and gradients sigmoid(x) - y, where the
    definition's log(sigmoid(x)) would give inf / NaN."""
    x = np.array([[-1e4, -50.0, 0.0, 50.0, 1e4]], np.float32)
    y = np.array([[1.0, 0.0, 0.5, 1.0, 0.0]], np.float32)
    want = np.logaddexp(0, x.astype(np.float64)) - x * y        # softplus(x) - x y
    loss = nn.BCEWithLogitsLoss(reduction="none")
    np.testing.assert_allclose(loss(Tensor(x), Tensor(y)).asnumpy(), want, rtol=1e-6)
    grad = ms.grad(lambda a: nn.BCEWithLogitsLoss(reduction="sum")(a, Tensor(y)))(Tensor(x))
    np.testing.assert_allclose(grad.asnumpy(), sigmoid(x.astype(np.float64)) - y, atol=1e-6)
    pos = ops.binary_cross_entropy_with_logits(Tensor(x), Tensor(y),
                                               pos_weight=Tensor(np.float32([2.0] * 5)))
    assert np.isfinite(pos.asnumpy())


def test_bce_is_finite_at_zero_and_one():
    x, y = np.array([0.0, 1.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0, 0.0])
    got = ops.binary_cross_entropy(Tensor(x), Tensor(y), reduction="none").asnumpy()
    np.testing.assert_allclose(got, np_bce(x, y, reduction="none"), rtol=1e-12)
    assert np.isfinite(got).all()


def test_float32_and_float16_keep_their_dtype():
    for dtype in (np.float32, np.float16):
        x, y = Tensor(X.astype(dtype)), Tensor(PROB_Y.astype(dtype))
        for loss in (nn.BCEWithLogitsLoss(), nn.SmoothL1Loss(), nn.HuberLoss(), nn.MSELoss()):
            out = loss(x, y)
            assert out.dtype == x.dtype, type(loss).__name__
        np.testing.assert_allclose(nn.BCEWithLogitsLoss()(x, y).asnumpy(),
                                   np_bce_logits(X.astype(dtype).astype(np.float64),
                                                 PROB_Y.astype(dtype).astype(np.float64)),
                                   rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_smooth_l1_trains_a_dense_layer():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.Dense(3, 3, dtype=ms.float64)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SmoothL1Loss(reduction="mean")),
                                nn.SGD(net.trainable_params(), 0.5))
    losses = [float(train(Tensor(X), Tensor(Y)).asnumpy()) for _ in range(10)]
    assert losses[-1] < losses[0]


T, P = Tensor(X), Tensor(PROB_Y)
ERRORS = [
    (lambda: nn.BCEWithLogitsLoss(reduction="avg"), ValueError,
     r"For 'BCEWithLogitsLoss', the 'reduction' should be .*, but got 'avg'"),
    (lambda: nn.BCEWithLogitsLoss(reduction=1), TypeError, r"For 'BCEWithLogitsLoss', the type of 'reduction' should be str"),
    (lambda: nn.BCEWithLogitsLoss(weight=ms.Parameter(Tensor(WEIGHT), name="w")), TypeError,
     r"For 'BCEWithLogitsLoss', the 'weight' should be a Tensor, not a Parameter"),
    (lambda: nn.BCEWithLogitsLoss(pos_weight=Tensor(np.ones(3, np.int32))), TypeError,
     r"For 'BCEWithLogitsLoss', the 'pos_weight' should have a float dtype, but got Int32"),
    (lambda: nn.BCEWithLogitsLoss(pos_weight=Tensor(np.ones(2)))(T, P), ValueError,
     r"For 'BCEWithLogitsLoss', the 'pos_weight' should broadcast to the shape \[4, 3\], "
     r"but got \[2\]"),
    (lambda: nn.BCEWithLogitsLoss()(T, Tensor(PROB_Y[:2])), ValueError,
     r"For 'BCEWithLogitsLoss', the 'labels' should have the shape of 'logits' \[4, 3\], "
     r"but got \[2, 3\]"),
    (lambda: nn.BCEWithLogitsLoss()(T, Tensor(PROB_Y.astype(np.float32))), TypeError,
     r"For 'BCEWithLogitsLoss', the 'logits' and 'labels' should have the same dtype"),
    (lambda: ops.binary_cross_entropy_with_logits(T, Tensor(np.ones((4, 3), np.int32))),
     TypeError, r"For 'binary_cross_entropy_with_logits', the 'target' should have a float "
                r"dtype"),
    (lambda: ops.binary_cross_entropy_with_logits(T, 1.0), TypeError,
     r"For 'binary_cross_entropy_with_logits', the 'target' should be a Tensor, but got "
     r"float"),
    (lambda: nn.BCELoss(weight=Tensor(np.ones(5)))(Tensor(PROB_X), P), ValueError,
     r"For 'BCELoss', the 'weight' should broadcast to the shape \[4, 3\], but got \[5\]"),
    (lambda: ops.binary_cross_entropy(Tensor(PROB_X), P, reduction="max"), ValueError,
     r"For 'binary_cross_entropy', the 'reduction'"),
    (lambda: nn.SmoothL1Loss(beta=0.0), ValueError,
     r"For 'SmoothL1Loss', the 'beta' should be > 0 and finite, but got 0.0"),
    (lambda: nn.SmoothL1Loss(beta=1), TypeError, r"For 'SmoothL1Loss', the type of 'beta' should be float, but got int"),
    (lambda: nn.SmoothL1Loss()(T, Tensor(ROW)), ValueError,
     r"For 'SmoothL1Loss', the 'labels' should have the shape of 'logits' \[4, 3\], but "
     r"got \[1, 3\]"),
    (lambda: ops.smooth_l1_loss(T, T, beta=-1.0), ValueError,
     r"For 'smooth_l1_loss', the 'beta' should be > 0"),
    (lambda: nn.HuberLoss(delta=0), ValueError,
     r"For 'HuberLoss', the 'delta' should be > 0 and finite, but got 0"),
    (lambda: nn.HuberLoss(delta="1"), TypeError, r"For 'HuberLoss', the type of 'delta' should be"),
    (lambda: nn.HuberLoss()(T, Tensor(np.ones((2, 3)))), ValueError,
     r"For 'HuberLoss', the 'labels' should broadcast with the shape \[4, 3\], but got "
     r"\[2, 3\]"),
    (lambda: nn.HuberLoss(delta=float("inf")), ValueError,
     r"For 'HuberLoss', the 'delta' should be > 0 and finite, but got inf"),
    (lambda: nn.BCEWithLogitsLoss(weight=Tensor(WEIGHT.astype(np.float32)))(T, P), TypeError,
     r"For 'BCEWithLogitsLoss', the 'weight' should have the dtype of 'logits' Float64, but "
     r"got Float32"),
    (lambda: ops.huber_loss(T, T, delta=-2.0), ValueError,
     r"For 'huber_loss', the 'delta' should be > 0"),
    (lambda: ops.mse_loss(T, Tensor(np.ones((4, 3), np.int32))), TypeError,
     r"For 'mse_loss', the 'target' should have a float dtype"),
    (lambda: nn.L1Loss()(T, Tensor(np.ones((3, 3)))), ValueError,
     r"For 'L1Loss', the 'labels' should broadcast with the shape \[4, 3\]"),
    (lambda: nn.KLDivLoss(reduction="avg"), ValueError,
     r"For 'KLDivLoss', the 'reduction' should be .*batchmean.*, but got 'avg'"),
    (lambda: ops.kl_div(T, Tensor(ROW)), ValueError,
     r"For 'kl_div', the 'labels' should have the shape of 'logits' \[4, 3\]"),
]


@pytest.mark.parametrize("make, err, match", ERRORS)
def test_argument_errors_name_the_loss(make, err, match):
    with pytest.raises(err, match=match):
        make()


# -- cosine embedding -----------------------------------------------------------------------
def np_cosine_embedding(x1, x2, y, margin=0.0, reduction="mean"):
    cos = (x1 * x2).sum(1) / np.sqrt(((x1 ** 2).sum(1) + 1e-12) * ((x2 ** 2).sum(1) + 1e-12))
    loss = np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(cos - margin, 0), 0)
    return reduce(loss, reduction)


A1, A2 = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4))
B1, B2 = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 4, 2))
COS_CASES = [(A1, A2, np.array([1, -1, -1, 1, -1], np.int32), 0.0),
             (A1, A2, np.array([1.0, -1.0, 1.0, -1.0, -1.0]), -0.3),
             (B1, B2, np.array([[1, -1], [-1, -1], [1, 1]], np.int64), 0.2)]


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["eager", "graph"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", range(len(COS_CASES)), ids=["int", "float_margin", "3d"])
def test_cosine_embedding_loss_follows_numpy_and_finite_differences(case, reduction, mode):
    ms.set_context(mode=mode)
    x1, x2, y, margin = COS_CASES[case]
    want = np_cosine_embedding(x1, x2, y, margin, reduction)
    for fn in (nn.CosineEmbeddingLoss(margin, reduction),
               Call(lambda a, b, t: ops.cosine_embedding_loss(a, b, t, margin, reduction))):
        np.testing.assert_allclose(fn(Tensor(x1), Tensor(x2), Tensor(y)).asnumpy(), want,
                                   rtol=1e-10, atol=1e-12)
        d1, d2 = ms.grad(lambda a, b: fn(a, b, Tensor(y)), (0, 1))(Tensor(x1), Tensor(x2))
        np.testing.assert_allclose(d1.asnumpy(), finite_differences(
            lambda a: np_cosine_embedding(a, x2, y, margin, reduction), x1), rtol=1e-5,
            atol=1e-7)
        np.testing.assert_allclose(d2.asnumpy(), finite_differences(
            lambda b: np_cosine_embedding(x1, b, y, margin, reduction), x2), rtol=1e-5,
            atol=1e-7)


def test_cosine_embedding_loss_errors():
    y = Tensor(np.array([1, -1, 1, 1, -1], np.int32))
    with pytest.raises(ValueError, match=r"For 'CosineEmbeddingLoss', the 'margin' should be "
                                         r"in \[-1.0, 1.0\], but got 1.5"):
        nn.CosineEmbeddingLoss(1.5)
    with pytest.raises(TypeError, match=r"For 'CosineEmbeddingLoss', the type of 'margin'"):
        nn.CosineEmbeddingLoss(0)
    with pytest.raises(ValueError, match=r"For 'CosineEmbeddingLoss', the 'labels' should "
                                         r"have the shape of 'logits_x1' \[5, 4\] without dim "
                                         r"1 \(\[5\]"):
        nn.CosineEmbeddingLoss()(Tensor(A1), Tensor(A2), Tensor(np.ones((5, 4), np.int32)))
    with pytest.raises(ValueError, match=r"For 'cosine_embedding_loss', the 'input2' should "
                                         r"have the shape of 'input1' \[5, 4\]"):
        ops.cosine_embedding_loss(Tensor(A1), Tensor(A2[:, :3]), y)
    with pytest.raises(TypeError, match=r"For 'cosine_embedding_loss', the 'target' should "
                                        r"be a Tensor"):
        ops.cosine_embedding_loss(Tensor(A1), Tensor(A2), [1, -1, 1, 1, -1])
