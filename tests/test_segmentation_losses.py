"""nn.FocalLoss, nn.DiceLoss and nn.MultiClassDiceLoss: values against numpy written here
(and the examples of MindSpore's documentation), eager and compiled; gradients against
finite differences; argument errors naming the layer."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(5)


def softmax(x, axis=1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_focal(logits, labels, weight, gamma, reduction):
    p = softmax(logits)
    picked = np.moveaxis(np.eye(logits.shape[1])[labels], -1, 1)
    w = 1.0 if weight is None else weight.reshape((-1,) + (1,) * (logits.ndim - 2))
    loss = -(picked * w * (1 - p) ** gamma * np.log(p)).sum(1)
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def np_dice(x, y, smooth=1e-5):
    return 1 - 2 * (x * y).sum() / ((x * x).sum() + (y * y).sum() + smooth)


def np_multi_dice(x, y, weights, ignore, activation):
    if activation == "softmax":
        x = softmax(x)
    elif activation == "sigmoid":
        x = 1 / (1 + np.exp(-x))
    total = sum(np_dice(x[:, i], y[:, i]) * (1.0 if weights is None else weights[i])
                for i in range(x.shape[1]) if i != ignore)
    return total / x.shape[1]


def run(cell, *arrays):
    eager, compiled = eager_and_compiled(cell, *[Tensor(a) for a in arrays])
    np.testing.assert_allclose(compiled.asnumpy(), eager.asnumpy(), rtol=1e-6)
    return eager


def test_documented_examples():
    logits = np.array([[0.8, 1.4], [0.5, 0.9], [1.2, 0.9]], np.float32)
    focal = run(nn.FocalLoss(weight=Tensor(np.array([1.0, 2.0], np.float32))), logits,
                np.array([[1], [1], [0]], np.int32))
    np.testing.assert_allclose(focal.asnumpy(), 0.12516622, rtol=1e-6)
    dice = run(nn.DiceLoss(), np.array([[0.2, 0.5], [0.3, 0.1], [0.9, 0.6]], np.float32),
               np.array([[0, 1], [1, 0], [0, 1]], np.float32))
    np.testing.assert_allclose(dice.asnumpy(), 0.38596618, rtol=1e-6)
    multi = run(nn.MultiClassDiceLoss(), np.array([[0.2, 0.5, 0.7], [0.3, 0.1, 0.5],
                                                   [0.9, 0.6, 0.3]], np.float32),
                np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]], np.float32))
    np.testing.assert_allclose(multi.asnumpy(), 0.54958105, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape,labels_shape,weight", [
    ((4, 3), (4,), None), ((2, 3, 5), (2, 1, 5), np.array([0.5, 1.0, 2.0])),
    ((2, 4, 3, 2), (2, 3, 2), np.array([1.0, 0.2, 3.0, 1.5]))])
def test_focal_loss_matches_numpy(shape, labels_shape, weight, reduction):
    logits = RNG.standard_normal(shape).astype(np.float32)
    labels = RNG.integers(0, shape[1], labels_shape).astype(np.int32)
    cell = nn.FocalLoss(None if weight is None else Tensor(weight.astype(np.float32)), 1.5,
                        reduction)
    got = run(cell, logits, labels)
    flat = labels.reshape((shape[0],) + shape[2:])
    np.testing.assert_allclose(got.asnumpy(), np_focal(logits, flat, weight, 1.5, reduction),
                               rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("weights,ignore,activation", [
    (None, None, "softmax"), (np.array([0.5, 2.0, 1.0]), 1, "sigmoid"), (None, 0, None)])
def test_multi_class_dice_loss_matches_numpy(weights, ignore, activation):
    x = RNG.uniform(0, 1, (4, 3, 2)).astype(np.float32)
    y = np.moveaxis(np.eye(3)[RNG.integers(0, 3, (4, 2))], -1, 1).astype(np.float32)
    cell = nn.MultiClassDiceLoss(None if weights is None else Tensor(weights.astype(np.float32)),
                                 ignore, activation)
    got = run(cell, x, y)
    np.testing.assert_allclose(got.asnumpy(), np_multi_dice(x.astype(np.float64), y, weights,
                                                            ignore, activation), rtol=1e-5)


@pytest.mark.parametrize("make,labels", [
    (lambda: nn.FocalLoss(Tensor(np.array([0.5, 1.0, 2.0])), 2.0),
     np.array([2, 0, 1, 1], np.int32)),
    (lambda: nn.DiceLoss(0.1), RNG.uniform(0, 1, (4, 3))),
    (lambda: nn.MultiClassDiceLoss(), np.eye(3)[[0, 2, 1, 1]]),
], ids=["focal", "dice", "multi_class_dice"])
def test_gradients_match_finite_differences(make, labels):
    x = RNG.standard_normal((4, 3)) * 0.5 + 0.5
    cell = make()
    grad = ms.grad(lambda t: cell(t, Tensor(labels)))(Tensor(x))
    want = finite_differences(lambda a: cell(Tensor(a), Tensor(labels)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


F32 = Tensor(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("call,err,match", [
    (lambda: nn.FocalLoss(gamma=2), TypeError, r"For 'FocalLoss', the type of 'gamma'"),
    (lambda: nn.FocalLoss(gamma=float("nan")), ValueError,
     r"For 'FocalLoss', the 'gamma' should be finite"),
    (lambda: nn.FocalLoss()(F32, Tensor(np.zeros((2, 3), np.int32))), ValueError,
     r"For 'FocalLoss', the 'labels' should have the shape of 'logits' \[2, 3\] without dim 1"),
    (lambda: nn.FocalLoss()(F32, Tensor(np.zeros(2, np.float32))), TypeError,
     r"For 'FocalLoss', the 'labels' should be int32 or int64"),
    (lambda: nn.FocalLoss(Tensor(np.ones(2, np.float32)))(F32, Tensor(np.zeros(2, np.int32))),
     ValueError, r"For 'FocalLoss', the 'weight' should have 3 values"),
    (lambda: nn.DiceLoss(0.0), ValueError, r"For 'DiceLoss', the 'smooth' should be > 0"),
    (lambda: nn.DiceLoss()(F32, Tensor(np.ones((3, 2), np.float32))), ValueError,
     r"For 'DiceLoss', the 'labels' should have the shape of 'logits'"),
    (lambda: nn.MultiClassDiceLoss(activation="relu"), ValueError,
     r"For 'MultiClassDiceLoss', the 'activation' should be 'softmax', 'sigmoid'"),
    (lambda: nn.MultiClassDiceLoss(Tensor(np.ones(2, np.float32)))(F32, F32), ValueError,
     r"For 'MultiClassDiceLoss', the 'weights' should have 3 values"),
])
def test_argument_errors_name_the_layer(call, err, match):
    with pytest.raises(err, match=match):
        call()
