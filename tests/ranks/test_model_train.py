"""Model.train on scikit-learn's digits under real MPI equals the serial run.

Every rank first trains the serial reference (one process, whole global batches from an
unsharded dataset), then the data-parallel run: each rank reads its shard of the same
shuffled dataset (num_shards = N, shard_id = rank), batches of 64 / N. The loss of every
step and the final parameters must match. Also: LeNet5 (2 ranks), a tuple dataset_strategy
with repeated ranks, semi_auto_parallel with Megatron-split weights and full_batch,
ModelCheckpoint in a parallel run, the shard check, and enable_alltoall both ways.
"""
import os

import numpy as np
import pytest
from sklearn.datasets import load_digits

import msops as ms
from msops import Tensor, dataset as ds, nn
from msops.communication import get_group_size, get_rank
from msops.parallel.param_layout import layouts_of
from nets import LeNet5
from parallel_oracle import assert_held
from msops.train.callback import Callback

RANKS = (2, 4)
N = get_group_size()
GLOBAL_BATCH = 64
SAMPLES = 512                   # 8 steps an epoch


def digits():
    d = load_digits()
    return (d.data[:SAMPLES] / 16.0).astype(np.float32), d.target[:SAMPLES].astype(np.int32)


class Record(Callback):
    """The loss of every step."""

    def __init__(self):
        self.losses = []

    def on_train_step_end(self, run_context):
        self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))


def train(num_shards=None, shard_id=None, epochs=2, callbacks=(), megatron=False):
    ms.set_seed(7)                                  # same weights and shuffles everywhere
    net = nn.SequentialCell([nn.Dense(64, 32, activation="relu"), nn.Dense(32, 10)])
    if megatron:        # column-split then row-split weights (y = x W^T: W is (out, in))
        net[0].matmul.shard(((1, 1), (N, 1)))
        net[1].matmul.shard(((1, N), (1, N)))
    model = ms.Model(net, nn.CrossEntropyLoss(),
                     nn.Momentum(net.trainable_params(), 1.0, 0.9), metrics={"acc"})
    x, y = digits()
    shards = num_shards or 1
    data = ds.NumpySlicesDataset((x, y), ["image", "label"], shuffle=True,
                                 num_shards=num_shards, shard_id=shard_id)
    data = data.batch(GLOBAL_BATCH // shards, drop_remainder=True)
    rec = Record()
    model.train(epochs, data, callbacks=[rec, *callbacks])
    return rec.losses, [p.asnumpy().copy() for p in net.trainable_params()], model


@pytest.fixture(scope="module")
def serial():
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    losses, params, _ = train()
    return losses, params


@pytest.fixture(autouse=True)
def _reset():
    yield
    ms.reset_auto_parallel_context()


def assert_same(got, want):
    np.testing.assert_allclose(got[0], want[0], rtol=2e-5, atol=2e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_data_parallel_model_train_equals_serial(serial):
    assert len(serial[0]) == 2 * SAMPLES // GLOBAL_BATCH
    assert serial[0][-1] < 0.6 * serial[0][0]                       # it learns
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 gradients_mean=True)
    assert ds.parallel_shard() == (N, get_rank())
    got = train(N, get_rank())
    assert_same(got[:2], serial)


def test_tuple_dataset_strategy_with_repeated_ranks_equals_serial(serial):
    """((2, 1), (2,)): 2 shards; on 4 ranks each shard is fed by 2 ranks."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 dataset_strategy=((2, 1), (2,)))
    shards, shard_id = ds.parallel_shard()
    assert (shards, shard_id) == (2, get_rank() // (N // 2))
    assert_same(train(shards, shard_id)[:2], serial)


def test_model_parallel_full_batch_model_train_equals_serial(serial):
    """semi_auto_parallel, Megatron-split Dense weights, every rank feeding the whole batch
    (full_batch: the dataset is not sharded)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    assert ds.parallel_shard() == (1, 0)
    losses, _, model = train(megatron=True)
    np.testing.assert_allclose(losses, serial[0], rtol=2e-5, atol=2e-6)
    params = model.train_network.optimizer.parameters
    layouts = layouts_of(params)
    assert layouts[params[0].name].layout.slice_shape == (32 // N, 64)   # the split is real
    for p, want in zip(params, serial[1]):
        assert_held(p, want, layouts[p.name].layout, rtol=1e-4, atol=1e-5)  # its slice only


def test_model_checkpoint_in_parallel_saves_the_whole_network(tmp_path_factory):
    folder = os.path.join(str(tmp_path_factory.getbasetemp()), "shared_ckpt")
    # every rank must name the same folder: rank 0's path goes to all
    folder = ms.ops.Broadcast(0)((Tensor(np.frombuffer(folder.encode().ljust(512), np.uint8)),))
    folder = bytes(folder[0].asnumpy()).decode().strip()
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N)
    cfg = ms.CheckpointConfig(save_checkpoint_steps=4, keep_checkpoint_max=2)
    ckpt = ms.ModelCheckpoint("dp", folder, cfg)
    _, params, model = train(N, get_rank(), epochs=1, callbacks=[ckpt])
    ms.ops.Barrier()()
    if get_rank() == 0:
        assert sorted(os.listdir(folder)) == ["dp-1_4.safetensors", "dp-1_8.safetensors"]
    loaded = ms.load_checkpoint(os.path.join(folder, "dp-1_8.safetensors"))
    names = [p.name for p in model.train_network.optimizer.parameters]
    for name, want in zip(names, params):
        np.testing.assert_array_equal(loaded[name].asnumpy(), want)


def test_unsharded_dataset_in_data_parallel_is_an_error():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N)
    with pytest.raises(ValueError, match=rf"For 'Model.train', with dataset_strategy "
                                         rf"'data_parallel' on {N} ranks, rank {get_rank()}'s "
                                         rf"dataset should be read with num_shards={N}, "
                                         rf"shard_id={get_rank()}"):
        train()


def train_lenet(num_shards=None, shard_id=None):
    """LeNet5 (tests/nets.py) on digits upsampled 8x8 -> 32x32 by the dataset's map."""
    ms.set_seed(7)
    net = LeNet5()
    model = ms.Model(net, nn.CrossEntropyLoss(), nn.Momentum(net.trainable_params(), 0.05, 0.9))
    x, y = digits()
    data = ds.NumpySlicesDataset((x[:128], y[:128]), ["image", "label"], shuffle=True,
                                 num_shards=num_shards, shard_id=shard_id)
    data = data.map(lambda img: np.kron(img.reshape(8, 8), np.ones((4, 4), np.float32))[None],
                    "image").batch(32 // (num_shards or 1), drop_remainder=True)
    rec = Record()
    model.train(1, data, callbacks=[rec])
    return rec.losses, [p.asnumpy().copy() for p in net.trainable_params()]


@pytest.mark.ranks(2)          # numpy convolutions are slow: 2 ranks only
def test_lenet_data_parallel_model_train_equals_serial():
    """The issue's LeNet on 2 ranks (the convolutions split by batch): 4 steps == serial."""
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = train_lenet()
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N)
    got = train_lenet(N, get_rank())
    assert len(got[0]) == 4
    assert_same(got, want)


class TwoRelu(nn.Cell):
    """ReLU split by rows, then by columns: a permute between them."""

    def __init__(self):
        super().__init__()
        self.a = ms.ops.ReLU().shard(((N, 1),))
        self.b = ms.ops.ReLU().shard(((1, N),))

    def construct(self, x):
        return self.b(self.a(x) - 0.5)


@pytest.mark.parametrize("alltoall,comm", [(True, "AlltoAll"), (False, "AllGather")])
def test_enable_alltoall_both_ways_equal_numpy(alltoall, comm):
    x = np.random.default_rng(2).standard_normal((2 * N, 2 * N)).astype(np.float32)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True, enable_alltoall=alltoall)
    net = TwoRelu()
    graph = net.compile(Tensor(x))
    assert [n.op for n in graph.nodes if n.is_communication] == [comm]
    got = ms.parallel.gather_full(net(Tensor(x))).asnumpy()
    np.testing.assert_allclose(got, np.maximum(np.maximum(x, 0) - 0.5, 0), rtol=1e-6)


def test_early_stopping_stops_every_rank_at_the_epoch_of_the_world_mean():
    """Each rank's eval value differs (data-parallel eval is per rank): at epoch 3 the even
    ranks improve (1.0) and the odd ones do not (3.0); alone, an even rank would stop at
    epoch 4, an odd one at 3; the world mean (2.0, no better than epoch 2's) stops every
    rank at 3 (patience 1)."""
    from msops.train.callback import CallbackParam, RunContext
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N)
    try:
        values = [3.0, 2.0, 1.0 if get_rank() % 2 == 0 else 3.0, 1.0]
        net = nn.Dense(2, 1)
        cb = CallbackParam(train_network=net, cur_epoch_num=0, net_outputs=None)
        ctx = RunContext(cb)
        stopper = ms.EarlyStopping(patience=1)
        stopper.on_train_begin(ctx)
        stopped = 0
        for epoch, value in enumerate(values, 1):
            cb.cur_epoch_num, cb.eval_results = epoch, {"eval_loss": value}
            stopper.on_train_epoch_end(ctx)
            if ctx.get_stop_requested():
                stopped = epoch
                break
        assert stopped == 3
        assert stopper.best == pytest.approx(2.0)
    finally:
        ms.reset_auto_parallel_context()
