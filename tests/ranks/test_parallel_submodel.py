"""Seed 001 and strategies that scale with the world: sharded == serial on 2, 4 and 8 ranks."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4, 8)

def data(*shape):
    """Deterministic values per shape, so the serial and the sharded net get the same weights."""
    rng = np.random.default_rng(sum(shape) * 7 + len(shape))
    return Tensor(rng.standard_normal(shape).astype(np.float32))


class Submodel(nn.Cell):
    """Seed 001: BatchNorm split by rows, then MatMul with the weight split by columns."""

    def __init__(self, shape, n):
        super().__init__()
        self.bn = nn.BatchNorm1d(shape[0])
        self.bn.shard(((n, 1),))
        self.matmul = ops.MatMul().shard(((1, 1), (1, n)))
        w = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 100
        self.W = Parameter(Tensor(w), name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.W)


@pytest.mark.parametrize("train", [False, True])
def test_seed001_submodel(train):
    n = get_group_size()
    x = data(16, 16)
    graph = check(lambda: Submodel((16, 32), n), x, train=train, rtol=1e-4, atol=1e-4)
    # the BatchNorm output (rows split) is redistributed to the replicated MatMul input
    # by exactly one AllGather along dim 0 (training adds the two statistics AllReduces)
    expected = ["AllReduce", "AllReduce", "AllGather"] if train else ["AllGather"]
    assert comm_ops(graph) == expected
    assert graph.nodes[-1].shape == (16, 32 // n)


def test_output_is_this_ranks_slice():
    n, r = get_group_size(), get_rank()
    x = data(8, 16)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Submodel((16, 32), n)
        out = net(x).asnumpy()
    finally:
        ms.reset_auto_parallel_context()
    bn = x.asnumpy() / np.sqrt(1 + 1e-5)            # inference BatchNorm, fresh statistics
    w = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 100
    full = bn @ w
    cols = 32 // n
    # the weight holds only this rank's columns after the compile
    np.testing.assert_array_equal(net.W.asnumpy(), w[:, r * cols:(r + 1) * cols])
    np.testing.assert_allclose(out, full[:, r * cols:(r + 1) * cols], rtol=1e-5, atol=1e-5)


class TwoMatMul(nn.Cell):
    def __init__(self, s1, s2, out1=None, ta=False, tb=False):
        super().__init__()
        self.m1 = ops.MatMul(transpose_a=ta).shard(s1, out1) if out1 else \
            ops.MatMul(transpose_a=ta).shard(s1)
        self.m2 = ops.MatMul(transpose_b=tb).shard(s2)
        self.w1 = Parameter(data(*((32, 16) if not ta else (32, 16))), name="w1")
        self.w2 = Parameter(data(*((16, 8) if not tb else (8, 16))), name="w2")

    def construct(self, x):
        return self.m2(self.m1(x, self.w1), self.w2)


def test_pure_data_parallel_chain_has_no_communication():
    n = get_group_size()
    graph = check(lambda: TwoMatMul(((n, 1), (1, 1)), ((n, 1), (1, 1))), data(16, 32))
    assert comm_ops(graph) == []


def test_model_parallel_chain_reduction_split():
    n = get_group_size()
    # m1 splits the reduction dim (AllReduce), m2 splits its weight by columns
    graph = check(lambda: TwoMatMul(((1, n), (n, 1)), ((1, 1), (1, n))), data(16, 32),
                  rtol=1e-4, atol=1e-4)
    assert comm_ops(graph).count("AllReduce") == 1


def test_relu_add_with_strategies_unlike_their_producer():
    n = get_group_size()

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mm = ops.MatMul().shard(((n, 1), (1, 1)))      # rows split
            self.relu = ops.ReLU().shard(((1, n),))              # columns split: all-to-all
            self.add = ops.Add().shard(((1, 1), (1, 1)))         # replicated: all-gather
            self.mul = ops.Mul().shard(((n, 1), (n, 1)))         # rows split again: slice
            self.w = Parameter(data(32, 16), name="w")
            self.b = Parameter(data(1, 16), name="b")

        def construct(self, x):
            y = self.relu(self.mm(x, self.w))
            z = self.add(y, self.b)
            return self.mul(z, z)

    graph = check(Net, data(16, 32))
    assert comm_ops(graph) == ["AlltoAll", "AllGather"]


def test_data_parallel_mode_batch_split_parameters_replicated():
    class MLP(nn.Cell):
        def __init__(self):
            super().__init__()
            self.d1 = nn.Dense(32, 16, weight_init=data(16, 32))
            self.act = nn.ReLU()
            self.d2 = nn.Dense(16, 8, weight_init=data(8, 16))

        def construct(self, x):
            return self.d2(self.act(self.d1(x)))

    graph = check(MLP, data(16, 32), mode="data_parallel", rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == []
    n = get_group_size()
    assert graph.inputs[0].shape == (16 // n, 32)


def test_full_batch_false_each_rank_feeds_its_slice():
    n, r = get_group_size(), get_rank()
    full = data(16, 32)
    mine = Tensor(full.asnumpy()[r * 16 // n:(r + 1) * 16 // n])
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=False)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = TwoMatMul(((n, 1), (1, 1)), ((1, 1), (1, n)))
        out = ms.parallel.gather_full(net(mine)).asnumpy()
    finally:
        ms.reset_auto_parallel_context()
    want = full.asnumpy() @ data(32, 16).asnumpy() @ data(16, 8).asnumpy()   # whole weights
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("split", ["class", "batch"])
def test_softmax_cross_entropy_split_class_or_batch(split):
    n = get_group_size()
    s = (1, n) if split == "class" else (n, 1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mm = ops.MatMul()
            self.ce = ops.SoftmaxCrossEntropyWithLogits().shard((s, s))
            self.w = Parameter(data(16, 8), name="w")

        def construct(self, x, labels):
            return self.ce(self.mm(x, self.w), labels)

    labels = Tensor(np.eye(8, dtype=np.float32)[np.arange(16) % 8])
    graph = check(Net, data(16, 16), labels, rtol=1e-4, atol=1e-5)
    if split == "class":         # the row max, the exp-sum and the label dot, across classes
        assert comm_ops(graph).count("AllReduce") == 3


def test_ranks_fed_different_shapes_fail_alike_before_any_collective():
    n, r = get_group_size(), get_rank()
    rows = 16 if r == 0 else 8                      # rank 0 disagrees with the others
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=r"For 'Submodel.compile', every rank should "
                                             r"compile the same program .* but line \d+ differs: ") as err:
            Submodel((16, 32), n)(data(rows, 16))
    finally:
        ms.reset_auto_parallel_context()
    assert f"[{rows}, 16] Float32" in str(err.value)


def test_training_batchnorm_float16_input_batch_split():
    n = get_group_size()

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(8)
            self.bn.shard(((n, 1),))

        def construct(self, x):
            return self.bn(x)

    x = Tensor((np.arange(16 * 8).reshape(16, 8) % 13).astype(np.float16))
    graph = check(Net, x, train=True, rtol=2e-3, atol=2e-3)
    assert graph.outputs[0].dtype == ms.float16
    assert comm_ops(graph) == ["AllReduce", "AllReduce"]       # global mean, then variance
