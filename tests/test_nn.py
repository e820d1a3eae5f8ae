"""nn.Cell registration, traversal, modes and shard; the layers and losses against numpy."""
from collections import OrderedDict

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)
        self.bn = nn.BatchNorm1d(2)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.W = Parameter(ones(2, 2), name="w")
        self.head = nn.Dense(2, 1, has_bias=False)
        self.relu = ops.ReLU()


def test_parameters_and_names_are_prefixed():
    net = Net()
    names = [n for n, _ in net.parameters_and_names()]
    assert names == ["W", "block.dense.weight", "block.dense.bias", "block.bn.gamma",
                     "block.bn.beta", "block.bn.moving_mean", "block.bn.moving_variance",
                     "head.weight"]
    # a Parameter created with name=None takes its attribute name, prefixed by its cell path
    assert net.block.bn.gamma.name == "block.bn.gamma"
    assert net.W.name == "w"
    assert [p.name for p in net.get_parameters()][1:] == names[1:]


def test_trainable_params_and_cells_and_names():
    net = Net()
    assert [p.name for p in net.trainable_params()] == [
        "w", "block.dense.weight", "block.dense.bias", "block.bn.gamma", "block.bn.beta",
        "head.weight"]
    assert [p.name for p in net.untrainable_params()] == ["block.bn.moving_mean",
                                                          "block.bn.moving_variance"]
    assert [(n, type(c).__name__) for n, c in net.cells_and_names()] == [
        ("", "Net"), ("block", "Block"), ("block.dense", "Dense"), ("block.bn", "BatchNorm1d"),
        ("head", "Dense")]
    assert net._primitives == {"relu": net.relu}


def test_reassigning_an_attribute_unregisters_it():
    net = Net()
    net.head = None
    del net.W
    assert "head.weight" not in dict(net.parameters_and_names())
    assert "W" not in dict(net.parameters_and_names())
    assert [n for n, _ in net.cells_and_names()] == ["", "block", "block.dense", "block.bn"]


def test_attribute_before_super_init_is_an_error():
    class Broken(nn.Cell):
        def __init__(self):
            self.dense = nn.Dense(2, 2)
            super().__init__()
    with pytest.raises(AttributeError, match=r"For 'Broken', call super\(\).__init__\(\) before "
                                             r"assigning the attribute 'dense'"):
        Broken()


def test_set_train_is_recursive():
    net = Net()
    assert not any(c.training for _, c in net.cells_and_names())
    assert net.set_train() is net
    assert all(c.training for _, c in net.cells_and_names())
    net.block.set_train(False)
    assert [c.training for _, c in net.cells_and_names()] == [True, False, False, False, True]


def test_cell_shard_is_stored_and_forwarded():
    bn = nn.BatchNorm1d(8)
    assert bn.shard(((4, 1),)) is bn
    assert bn.in_strategy == ((4, 1),) and bn.out_strategy is None
    for prim in (bn.bn_train, bn.bn_infer):
        assert prim.in_strategy == ((4, 1), (1,), (1,), (1,), (1,))
    relu = nn.ReLU().shard(((2, 2),))
    assert relu.relu.in_strategy == ((2, 2),)
    dense = nn.Dense(4, 3).shard(((2, 4),))
    assert dense.matmul.in_strategy == ((2, 4), (1, 4))
    assert dense.bias_add.in_strategy == ((2, 1), (1,))
    plain = Net().shard(((1, 2),), ((2, 1),))
    assert (plain.in_strategy, plain.out_strategy) == (((1, 2),), ((2, 1),))
    with pytest.raises(TypeError, match=r"For 'BatchNorm1d', the 'in_strategy\[0\]' should be a "
                                        r"tuple of ints, but got list"):
        nn.BatchNorm1d(8).shard(([4, 1],))


def test_construct_missing_is_an_error():
    with pytest.raises(NotImplementedError, match="For 'Cell', construct"):
        nn.Cell()(ones(1))


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_dense_against_numpy(mode):
    ms.set_context(mode=mode)
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    dense = nn.Dense(3, 5, weight_init=Tensor(w), bias_init=b, activation="relu")
    np.testing.assert_allclose(dense(Tensor(x)).asnumpy(), np.maximum(x @ w.T + b, 0), rtol=1e-6)
    no_bias = nn.Dense(3, 5, weight_init=w, has_bias=False)
    np.testing.assert_allclose(no_bias(Tensor(x)).asnumpy(), x @ w.T, rtol=1e-6)
    assert "bias" not in dict(no_bias.parameters_and_names())


def test_dense_initializers():
    nn.set_seed(5)
    d = nn.Dense(64, 32)
    w = d.weight.asnumpy()
    assert w.shape == (32, 64) and w.dtype == np.float32
    assert abs(w.std() - 0.01) < 0.001 and abs(w.mean()) < 0.001
    np.testing.assert_array_equal(d.bias.asnumpy(), np.zeros(32))
    nn.set_seed(5)
    np.testing.assert_array_equal(nn.Dense(64, 32).weight.asnumpy(), w)     # seeded
    np.testing.assert_array_equal(nn.Dense(2, 3, "ones", "ones").weight.asnumpy(), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"For 'Dense', the shape of 'weight_init' should be "
                                         r"\[3, 2\], but got \[2, 3\]"):
        nn.Dense(2, 3, weight_init=np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"For 'Dense', the 'bias_init' should be .*but got 'he'"):
        nn.Dense(2, 3, bias_init="he")
    with pytest.raises(ValueError, match=r"For 'Dense', the 'activation' should be one of "
                                         r"\['elu', 'fast_gelu', 'gelu', 'hardtanh', "
                                         r"'hshrink', 'hsigmoid', 'hswish', 'leakyrelu', "
                                         r"'logsigmoid', 'logsoftmax', 'mish', 'relu', 'relu6', "
                                         r"'rrelu', 'sigmoid', 'silu', 'softmax', 'softmax2d', "
                                         r"'softmin', 'softshrink', 'softsign', 'tanh', "
                                         r"'tanhshrink'\].*but got "
                                         r"'prelu'"):
        nn.Dense(2, 3, activation="prelu")
    with pytest.raises(ValueError, match="For 'Dense', the 'in_channels' should be"):
        nn.Dense(0, 3)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_batchnorm1d_against_numpy(mode):
    ms.set_context(mode=mode)
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((6, 3)) * 2 + 5).astype(np.float32)
    g, b = np.array([1.0, 2.0, 0.5], np.float32), np.array([0.0, -1.0, 3.0], np.float32)
    bn = nn.BatchNorm1d(3, eps=1e-3, gamma_init=g, beta_init=b,
                        moving_mean_init=np.full(3, 4.0, np.float32),
                        moving_var_init=np.full(3, 2.0, np.float32))
    infer = bn(Tensor(x)).asnumpy()
    np.testing.assert_allclose(infer, (x - 4.0) / np.sqrt(2.0 + 1e-3) * g + b, rtol=1e-5)
    train = bn.set_train()(Tensor(x)).asnumpy()
    np.testing.assert_allclose(train, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3) * g + b,
                               rtol=1e-4, atol=1e-5)
    forced = nn.BatchNorm1d(3, use_batch_statistics=True)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(forced, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    assert bn.bn_train.momentum == pytest.approx(0.1)        # MindSpore's 1 - momentum
    with pytest.raises(ValueError, match=r"For 'BatchNorm1d', the 'momentum' should be in "
                                         r"\[0, 1\], but got 1.5"):
        nn.BatchNorm1d(3, momentum=1.5)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_sequential_cell(mode):
    ms.set_context(mode=mode)
    w1 = np.array([[1.0, -1.0], [2.0, 0.5]], np.float32)
    seq = nn.SequentialCell([nn.Dense(2, 2, weight_init=w1), nn.ReLU()])
    seq.append(nn.Dense(2, 1, weight_init="ones"))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU)
    assert [n for n, _ in seq.parameters_and_names()] == ["0.weight", "0.bias", "2.weight",
                                                          "2.bias"]
    x = np.array([[1.0, 2.0], [-3.0, 1.0]], np.float32)
    np.testing.assert_allclose(seq(Tensor(x)).asnumpy(),
                               np.maximum(x @ w1.T, 0).sum(1, keepdims=True), rtol=1e-6)
    named = nn.SequentialCell(OrderedDict([("fc", nn.Dense(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.cells_and_names()] == ["", "fc", "act"]
    with pytest.raises(TypeError, match=r"For 'SequentialCell', the cell 1 should be a Cell, "
                                        r"but got int"):
        nn.SequentialCell([nn.ReLU(), 3])


def _log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_softmax_cross_entropy_dense_labels(mode):
    ms.set_context(mode=mode)
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((5, 3)).astype(np.float32)
    labels = rng.dirichlet(np.ones(3), 5).astype(np.float32)
    ref = -(labels * _log_softmax(logits)).sum(1)
    for reduction, expected in (("none", ref), ("mean", ref.mean()), ("sum", ref.sum())):
        loss = nn.SoftmaxCrossEntropyWithLogits(reduction=reduction)
        out = loss(Tensor(logits), Tensor(labels))
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5)
    with pytest.raises(ValueError, match=r"For 'SoftmaxCrossEntropyWithLogits', the 'reduction'"):
        nn.SoftmaxCrossEntropyWithLogits(reduction="avg")


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("shape", [(4,), (2, 5, 4), (2, 1, 3, 4)])
def test_dense_takes_any_leading_dims_and_differentiates(mode, shape):
    """nn.Dense on (*, in_channels), as MindSpore's: rows of the last dim, the leading dims
    kept; the weight's gradient is numpy's."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape)
    layer = nn.Dense(4, 3, weight_init=Tensor(rng.standard_normal((3, 4))),
                     bias_init=Tensor(rng.standard_normal(3)), activation="relu",
                     dtype=ms.float64)
    w, b = layer.weight.asnumpy(), layer.bias.asnumpy()
    pre = x @ w.T + b
    ms.set_context(mode=mode)
    try:
        np.testing.assert_allclose(layer(Tensor(x)).asnumpy(), np.maximum(pre, 0), rtol=1e-12)
        grad = ms.grad(lambda v: ms.ops.ReduceSum()(layer(v), ()), None,
                       [layer.weight])(Tensor(x))[0]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    rows = (pre > 0).reshape(-1, 3).astype(float)
    np.testing.assert_allclose(grad.asnumpy(), rows.T @ x.reshape(-1, 4), rtol=1e-12)
    with pytest.raises(ValueError, match=r"For 'Dense', 'x' should have shape \(\*, 4\), but "
                                         r"got a 0-d Tensor"):
        layer(Tensor(np.float64(1.0)))


def test_linear_is_mindspore_2s_dense_with_its_defaults():
    """nn.Linear(in_features, out_features, bias=True, weight_init=None, bias_init=None,
    dtype=None): weight U(+-1/sqrt(in)) (HeUniform(sqrt(5)): gain sqrt(2/6), bound
    gain * sqrt(3/in)), bias U(+-1/sqrt(in)), float32."""
    ms.set_seed(3)
    layer = nn.Linear(400, 300)
    w, b = layer.weight.asnumpy(), layer.bias.asnumpy()
    assert w.shape == (300, 400) and b.shape == (300,) and w.dtype == np.float32
    bound = 1 / np.sqrt(400)
    assert np.abs(w).max() <= bound * (1 + 1e-6) and np.abs(w).max() > 0.99 * bound
    np.testing.assert_allclose(w.std(), bound / np.sqrt(3), rtol=0.02)
    assert np.abs(b).max() <= bound * (1 + 1e-6)
    assert nn.Linear(3, 2, bias=False, dtype=ms.float64).trainable_params()[0].dtype == ms.float64
    assert len(nn.Linear(3, 2, bias=False).trainable_params()) == 1
    with pytest.raises(ValueError, match=r"For 'Linear'.*in_features"):
        nn.Linear(0, 2)
