"""MindSpore 2.6+'s parallel API under real MPI: a network wrapped in
`parallel.auto_parallel.AutoParallel` (configured by its methods, not by
set_auto_parallel_context) trains as the serial network does, through Model.train and
through a functional step; `parallel.nn.Pipeline` splits it over stages.

Every rank first trains the serial reference on whole batches, then the wrapped network on
its dataset shard (AutoParallel feeds data-parallel by default); losses and parameters
must match.
"""
import numpy as np
import pytest
from sklearn.datasets import load_digits

import msops as ms
from msops import dataset as ds, nn
from msops.communication import get_group_size, get_rank
from msops.parallel.auto_parallel import AutoParallel
from msops.parallel.nn import Pipeline
from msops.parallel.param_layout import layouts_of
from msops.train.callback import Callback
from parallel_oracle import assert_held

RANKS = (2, 4)
N = get_group_size()
GLOBAL_BATCH = 32
SAMPLES = 128                   # 4 steps an epoch


class Record(Callback):
    def __init__(self):
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(64, 32, activation="relu")
        self.fc2 = nn.Dense(32, 10)

    def construct(self, x):
        return self.fc2(self.fc1(x))


def digits(num_shards=None, shard_id=None):
    d = load_digits()
    x, y = (d.data[:SAMPLES] / 16.0).astype(np.float32), d.target[:SAMPLES].astype(np.int32)
    data = ds.NumpySlicesDataset((x, y), ["image", "label"], shuffle=False,
                                 num_shards=num_shards, shard_id=shard_id)
    return data.batch(GLOBAL_BATCH // (num_shards or 1), drop_remainder=True)


def model_train(configure=None, shard=None, mode="semi_auto"):
    """Losses and parameters after one epoch of Model.train; `configure(net)` shards the
    network's ops and `configure` the AutoParallel wrapper (None: serial)."""
    ms.set_seed(3)
    net = Net()
    loss_net = nn.WithLossCell(net, nn.CrossEntropyLoss())
    if configure is not None:
        shard(net)
        loss_net = AutoParallel(loss_net, parallel_mode=mode)
        configure(loss_net)
    opt = nn.Momentum(net.trainable_params(), 0.5, 0.9)
    rec = Record()
    ms.Model(loss_net, optimizer=opt).train(1, digits(*ds.parallel_shard()), callbacks=[rec])
    return rec.losses, opt.parameters


@pytest.fixture(scope="module")
def serial():
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    losses, params = model_train()
    return losses, [p.asnumpy().copy() for p in params]


@pytest.fixture(autouse=True)
def _reset():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.reset_auto_parallel_context()


def megatron(net):
    net.fc1.matmul.shard(((1, 1), (N, 1)))
    net.fc2.matmul.shard(((1, N), (1, N)))


def assert_trained_as_serial(got, serial):
    losses, params = got
    assert len(losses) == SAMPLES // GLOBAL_BATCH
    np.testing.assert_allclose(losses, serial[0], rtol=2e-5, atol=2e-6)
    layouts = layouts_of(params)
    for p, want in zip(params, serial[1]):
        assert_held(p, want, layouts[p.name].layout, rtol=1e-4, atol=1e-5)


def test_autoparallel_sets_the_context_it_stands_for():
    AutoParallel(nn.Dense(2, 2))
    assert ms.get_auto_parallel_context("parallel_mode") == "semi_auto_parallel"
    assert ms.get_auto_parallel_context("device_num") == N
    assert ds.parallel_shard() == (N, get_rank())       # data-parallel feeding by default
    net = AutoParallel(nn.Dense(2, 2), parallel_mode="sharding_propagation")
    assert ms.get_auto_parallel_context("search_mode") == "sharding_propagation"
    net.dataset_strategy("full_batch")
    assert ds.parallel_shard() == (1, 0)


def test_semi_auto_model_train_equals_serial(serial):
    got = model_train(lambda net: net.enable_gradients_mean(), megatron)
    assert_trained_as_serial(got, serial)
    # the split is real: fc1's weight is held by rows
    assert layouts_of(got[1])[got[1][0].name].layout.slice_shape == (32 // N, 64)


def test_sharding_propagation_from_one_strategy_equals_serial(serial):
    def shard_first(net):
        net.fc1.matmul.shard(((1, 1), (N, 1)))
    got = model_train(lambda net: net.enable_gradients_mean(), shard_first,
                      mode="sharding_propagation")
    assert_trained_as_serial(got, serial)


def test_hsdp_shards_the_optimizer_and_equals_serial(serial):
    def configure(net):
        net.enable_gradients_mean()
        net.hsdp(threshold=0)
    got = model_train(configure, lambda net: None)
    assert ms.get_auto_parallel_context("enable_parallel_optimizer") is True
    assert_trained_as_serial(got, serial)
    # each rank holds 1/N of fc1's weight rows (the data-parallel replicas share the update)
    assert layouts_of(got[1])[got[1][0].name].layout.slice_shape == (32 // N, 64)


def test_functional_step_with_autoparallel_equals_serial():
    def run(parallel):
        ms.set_seed(5)
        net = Net()
        loss_net = nn.WithLossCell(net, nn.CrossEntropyLoss())
        if parallel:
            megatron(net)
            loss_net = AutoParallel(loss_net)
            loss_net.dataset_strategy("full_batch")
        opt = nn.SGD(net.trainable_params(), 0.5)
        grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)

        @ms.jit
        def step(x, y):
            loss, grads = grad_fn(x, y)
            opt(grads)
            return loss

        losses = [float(step(ms.Tensor(x), ms.Tensor(y)).asnumpy())
                  for x, y in digits().create_tuple_iterator(output_numpy=True)]
        return losses, opt.parameters

    ms.reset_auto_parallel_context()
    want_losses, want_params = run(False)
    want_params = [p.asnumpy().copy() for p in want_params]
    got = run(True)
    assert_trained_as_serial(got, (want_losses, want_params))


def test_pipeline_with_autoparallel_equals_serial():
    """Pipeline(..., 4) over 2 stages configured by AutoParallel.pipeline trains as the
    same Pipeline cell run stand-alone (its loss: the sum over its 4 micro-batches)."""
    def run(parallel):
        ms.set_seed(3)
        net = Net()
        loss_net = Pipeline(nn.WithLossCell(net, nn.CrossEntropyLoss()), 4,
                            stage_config={"_backbone.fc1": 0, "_backbone.fc2": 1})
        if parallel:
            loss_net = AutoParallel(loss_net)
            loss_net.pipeline(stages=2, scheduler="gpipe")
            loss_net.dataset_strategy("full_batch")
        rec = Record()
        opt = nn.Momentum(net.trainable_params(), 0.02, 0.9)
        ms.Model(loss_net, optimizer=opt).train(1, digits(), callbacks=[rec])
        return rec.losses

    ms.reset_auto_parallel_context()
    want = run(False)
    got = run(True)
    assert ms.get_auto_parallel_context("pipeline_stages") == 2
    assert ms.get_auto_parallel_context("pipeline_config")["pipeline_scheduler"] == "gpipe"
    assert len(got) == len(want) == SAMPLES // GLOBAL_BATCH
    assert len(set(np.round(want, 5))) == len(want)      # the weights change every step
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
