"""nn.Accuracy, nn.Loss, nn.MAE, nn.MSE against numpy; the Metric protocol; errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn


def test_accuracy_classification_over_batches():
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((8, 5)), rng.integers(0, 5, 8)) for _ in range(3)]
    m = nn.Accuracy()
    for scores, labels in batches:
        m.update(Tensor(scores.astype(np.float32)), Tensor(labels.astype(np.int32)))
    scores = np.concatenate([b[0] for b in batches])
    labels = np.concatenate([b[1] for b in batches])
    assert m.eval() == pytest.approx(np.mean(scores.argmax(1) == labels))
    onehot = np.eye(5)[labels]
    assert nn.Accuracy()(scores, onehot) == pytest.approx(np.mean(scores.argmax(1) == labels))
    m.clear()
    with pytest.raises(RuntimeError, match="number of samples is 0"):
        m.eval()


def test_accuracy_multilabel():
    y_pred = np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.4]])
    y = np.array([[1, 0], [1, 0], [0, 0]])
    assert nn.Accuracy("multilabel")(y_pred, y) == pytest.approx(2 / 3)


def test_loss_mae_mse():
    losses = [2.0, np.array([1.0, 3.0]), Tensor(np.float32(0.5))]
    m = nn.Loss()
    for v in losses:
        m.update(v)
    assert m.eval() == pytest.approx((2.0 + 2.0 + 0.5) / 3)
    rng = np.random.default_rng(1)
    p, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    assert nn.MAE()(p, y) == pytest.approx(np.abs(p - y).sum() / 6)
    assert nn.MSE()(p, y) == pytest.approx(((p - y) ** 2).sum() / 6)


def test_exported_where_mindspore_exports_them():
    assert ms.train.Accuracy is nn.Accuracy and ms.train.Loss is nn.Loss
    assert isinstance(nn.get_metric_fn("acc"), nn.Accuracy)
    assert nn.Accuracy().set_indexes([1, 2]).indexes == [1, 2]


@pytest.mark.parametrize("call,match", [
    (lambda: nn.Accuracy("topk"), "'eval_type' should be 'classification' or 'multilabel'"),
    (lambda: nn.Accuracy().update(np.ones((2, 3))), "needs 2 inputs"),
    (lambda: nn.Accuracy().update(np.ones((2, 3)), np.ones(3)), "'y' should be \\(2,\\) class"),
    (lambda: nn.Loss().update(np.ones((2, 2))), "scalar or 1-D"),
    (lambda: nn.get_metric_fn("f1"), "should be one of"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
