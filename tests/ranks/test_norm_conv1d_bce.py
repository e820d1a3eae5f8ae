"""Small nets with nn.Conv1d, nn.GroupNorm, nn.Conv2dTranspose and nn.BCEWithLogitsLoss
(pos_weight) trained a few Momentum steps on 2 and 4 ranks equal the serial run:
data_parallel (each rank fed its batch slice, and full_batch) and semi_auto_parallel with
the convolutions split by strategies (the functions' primitives take the data-parallel
default). Losses and every parameter agree (each held whole where nothing splits it)."""
import numpy as np
import pytest
from parallel_oracle import assert_held, data

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
BATCH, STEPS = 8, 4


class Net(nn.Cell):
    """Conv1d(4 -> 8, k=3, bias) -> GroupNorm(2, 8) -> ReLU -> Flatten -> Dense(8 * 6, 3)."""

    def __init__(self, conv_strategy=None):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, has_bias=True, weight_init=data(8, 4, 1, 3),
                              bias_init=data(8, seed=1))
        if conv_strategy is not None:
            self.conv.shard(conv_strategy)
        self.norm = nn.GroupNorm(2, 8, gamma_init=data(8, seed=2), beta_init=data(8, seed=3))
        self.act, self.flatten = nn.ReLU(), nn.Flatten()
        self.head = nn.Dense(8 * 6, 3, weight_init=data(3, 48, seed=4) * 0.2)

    def construct(self, x):
        return self.head(self.flatten(self.act(self.norm(self.conv(x)))))


X = data(BATCH, 4, 6, seed=5)
LABELS = Tensor((np.random.default_rng(6).uniform(size=(BATCH, 3)) > 0.5).astype(np.float32))
POS_WEIGHT = Tensor(np.array([0.5, 1.0, 2.0], np.float32))


class TransposeNet(nn.Cell):
    """Conv2dTranspose(4 -> 8, k=3, stride 2, bias) -> Flatten -> Dense(8 * 6 * 6, 3)."""

    def __init__(self, conv_strategy=None):
        super().__init__()
        self.deconv = nn.Conv2dTranspose(4, 8, 3, stride=2, has_bias=True,
                                         weight_init=data(4, 8, 3, 3, seed=7) * 0.3,
                                         bias_init=data(8, seed=8))
        if conv_strategy is not None:
            self.deconv.shard(conv_strategy)
        self.flatten = nn.Flatten()
        self.head = nn.Dense(8 * 6 * 6, 3, weight_init=data(3, 288, seed=9) * 0.05)

    def construct(self, x):
        return self.head(self.flatten(self.deconv(x)))


IMAGES = data(BATCH, 4, 3, 3, seed=10)


def _train(x, y, parallel=None, conv_strategy=None, make=Net, **context):
    """STEPS of TrainOneStepCell in GRAPH_MODE: (losses, {name: parameter})."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net = make(conv_strategy)
        loss = nn.BCEWithLogitsLoss(pos_weight=POS_WEIGHT)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss),
                                   nn.Momentum(net.trainable_params(), 0.1, 0.9))
        losses = [float(step(x, y).asnumpy()) for _ in range(STEPS)]
        layouts = net.parameter_layout_dict if parallel else {}
    finally:
        ms.reset_auto_parallel_context()
    return np.array(losses), {p.name: (p, layouts[p.name].layout if p.name in layouts else None)
                              for p in net.trainable_params()}


def _local(t):
    b = t.shape[0] // N
    return Tensor(t.asnumpy()[R * b:(R + 1) * b])


def _assert_same(got, want, whole=True):
    """The losses agree and each parameter holds the serial value: all of it (`whole`), or
    this rank's slice of its layout."""
    (got_losses, got_params), (want_losses, want_params) = got, want
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)
    assert got_params.keys() == want_params.keys()
    for name, (param, layout) in got_params.items():
        value = want_params[name][0].asnumpy()
        if whole:
            assert tuple(param.shape) == value.shape, (name, param.shape)
        assert_held(param, value, layout, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.fixture(scope="module")
def serial():
    losses, params = _train(X, LABELS)
    assert losses[-1] < losses[0]
    return losses, params


@pytest.mark.parametrize("full_batch", [False, True])
def test_data_parallel_training_equals_serial(serial, full_batch):
    fed = (X, LABELS) if full_batch else (_local(X), _local(LABELS))
    _assert_same(_train(*fed, "data_parallel", gradients_mean=True, full_batch=full_batch),
                 serial)


def test_semi_auto_parallel_with_a_batch_split_conv_equals_serial(serial):
    strategy = ((N, 1, 1), (1, 1, 1))
    _assert_same(_train(X, LABELS, "semi_auto_parallel", conv_strategy=strategy,
                        full_batch=True), serial, whole=False)


@pytest.fixture(scope="module")
def serial_transpose():
    losses, params = _train(IMAGES, LABELS, make=TransposeNet)
    assert losses[-1] < losses[0]
    return losses, params


def test_conv2d_transpose_data_parallel_equals_serial(serial_transpose):
    _assert_same(_train(_local(IMAGES), _local(LABELS), "data_parallel", make=TransposeNet),
                 serial_transpose)


@pytest.mark.parametrize("strategy", [
    ((N, 1, 1, 1), (1, 1, 1, 1)),                 # batch
    ((1, N, 1, 1), (N, 1, 1, 1)),                 # input channels: partial sums, AllReduced
    ((1, 1, 1, 1), (1, N, 1, 1)),                 # output channels
    ((2, N // 2, 1, 1), (N // 2, 1, 1, 1)),       # batch x input channels
], ids=["batch", "in_channels", "out_channels", "batch_x_in"])
def test_conv2d_transpose_sharded_training_equals_serial(serial_transpose, strategy):
    _assert_same(_train(IMAGES, LABELS, "semi_auto_parallel", conv_strategy=strategy,
                        make=TransposeNet, full_batch=True), serial_transpose, whole=False)
