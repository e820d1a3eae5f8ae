"""MindSpore's distributed-inference flow under real MPI: `Model.infer_predict_layout`
compiles the prediction network (its layouts, nothing run), `load_distributed_checkpoint`
loads a training run's shard files into it under that `predict_strategy`, and `predict`
equals numpy on the saved weights; `Model.infer_train_layout` and `Model.build` compile the
training step ahead, and training then equals the serial run."""
import os
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Parameter, Tensor, dataset as ds, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()


def weights():
    rng = np.random.default_rng(5)
    return (rng.standard_normal((12, 16)).astype(np.float32) * 0.3,
            rng.standard_normal((16, 4)).astype(np.float32) * 0.3)


class Chain(nn.Cell):
    """relu(x @ w1) @ w2, the MatMuls sharded by `s1` and `s2`."""

    def __init__(self, s1=None, s2=None):
        super().__init__()
        w1, w2 = weights()
        self.w1, self.w2 = Parameter(Tensor(w1), "w1"), Parameter(Tensor(w2), "w2")
        self.m1, self.m2 = ops.MatMul(), ops.MatMul()
        if s1 is not None:
            self.m1.shard(s1)
            self.m2.shard(s2)
        self.relu = ops.ReLU()

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w1)), self.w2)


MEGATRON = (((1, 1), (1, N)), ((1, N), (N, 1)))      # w1 split by columns, w2 by rows
ROWS = (((N, 1), (1, 1)), ((N, 1), (1, 1)))          # the batch split, weights whole


def semi():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)


def shared_dir():
    path = tempfile.mkdtemp(prefix="msops-layouts-") if get_rank() == 0 else None
    return MPI.COMM_WORLD.bcast(path)


def test_predict_layout_then_distributed_load():
    x = np.random.default_rng(1).standard_normal((8, 12)).astype(np.float32)
    semi()
    trained = Chain(*MEGATRON)                  # "trained": weights changed, then sharded
    for p in trained.get_parameters():
        p.set_data(p.asnumpy() * 1.5 + 0.25)
    saved = {p.name: p.asnumpy().copy() for p in trained.get_parameters()}
    trained.compile(Tensor(x))
    folder = shared_dir()
    files = [os.path.join(folder, f"rank{r}.safetensors") for r in range(N)]
    ms.save_checkpoint(trained, files[get_rank()], integrated_save=False)
    MPI.COMM_WORLD.Barrier()

    net = Chain(*ROWS)                          # inference under another strategy
    model = ms.Model(net)
    layout = model.infer_predict_layout(Tensor(x))
    assert sorted(layout) == ["w1", "w2"]
    for name, w in zip(("w1", "w2"), weights()):
        assert tuple(layout[name].slice_shape) == w.shape        # ROWS keeps weights whole
        np.testing.assert_array_equal(getattr(net, name).asnumpy(), w)   # nothing ran
    assert ms.load_distributed_checkpoint(net, files, layout) == ([], [])
    got = gather_full(model.predict(Tensor(x))).asnumpy()
    want = np.maximum(x @ saved["w1"], 0) @ saved["w2"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    other = Chain(*MEGATRON)                    # a strategy that is not the network's
    other.compile(Tensor(x))
    with pytest.raises(ValueError, match=r"the 'predict_strategy' of 'w1' should be the "
                                         r"network's compiled layout"):
        ms.load_distributed_checkpoint(net, files, other.parameter_layout_dict)


def test_train_layout_and_build_then_train_equals_serial():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 12)).astype(np.float32)
    y = rng.standard_normal((32, 4)).astype(np.float32)

    def model_of(net):
        return ms.Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.05, 0.9))

    def data():
        return ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(8)

    ms.set_context(mode=ms.GRAPH_MODE)
    serial = Chain()
    model_of(serial).train(2, data())
    semi()
    net = Chain(*MEGATRON)
    model = model_of(net)
    layout = model.infer_train_layout(data())
    assert tuple(layout["w1"].slice_shape) == (12, 16 // N)      # split by columns
    assert tuple(layout["w2"].slice_shape) == (16 // N, 4)       # split by rows
    w1, w2 = weights()
    r = get_rank()
    np.testing.assert_array_equal(net.w1.asnumpy(), w1[:, r * 16 // N:(r + 1) * 16 // N])
    np.testing.assert_array_equal(net.w2.asnumpy(), w2[r * 16 // N:(r + 1) * 16 // N])
    model.build(data())
    model.train(2, data())
    assert model.train_network._compile_cache.traces == 1       # compiled ahead, once
    for p, want in zip(net.get_parameters(), serial.get_parameters()):
        np.testing.assert_allclose(gather_full(p).asnumpy(), want.asnumpy(), rtol=1e-5,
                                   atol=1e-6)
