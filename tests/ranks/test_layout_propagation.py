"""Layout strategies and sharding propagation under real MPI: parallel == serial on 2/4/8 ranks.

Layout((2, N/2), ("dp", "mp")) strategies equal the serial net and the equivalent tuple
strategy, a dim split over both axes included; auto_parallel with strategies on a few
ops (the rest propagated) equals the serial net, forward and gradients.
"""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, run_parallel
from test_parallel_grad import check_grads

from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import Layout

RANKS = (2, 4, 8)


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 11 + len(shape) + seed)
    return Tensor(rng.standard_normal(shape).astype(np.float32))


def layout():
    n = get_group_size()
    return Layout((2, n // 2), ("dp", "mp"))


class TwoOps(nn.Cell):
    """x (16, 32) @ w (32, 16) under `s1` (and `o1`), then Mul by a (16, 16) parameter under `s2`."""

    def __init__(self, s1, s2=None, o1=None):
        super().__init__()
        self.mm = ops.MatMul().shard(s1, o1)
        self.mul = ops.Mul()
        if s2:
            self.mul.shard(s2)
        self.w = Parameter(data(32, 16), name="w")
        self.scale = Parameter(data(16, 16, seed=1), name="scale")

    def construct(self, x):
        return self.mul(self.mm(x, self.w), self.scale)


X = data(16, 32)


@pytest.mark.parametrize("aliases,mul", [
    ((("dp", "mp"), ("mp", "None")), ("dp", "None")),
    ((("dp", "None"), ("None", "mp")), ("dp", "mp")),
    ((("None", "None"), ("None", ("dp", "mp"))), ("None", ("dp", "mp"))),    # two axes
    (((("dp", "mp"), "None"), ("None", "None")), (("mp", "dp"), "None")),   # both orders
    ((("None", ("dp", "mp")), (("dp", "mp"), "None")), ("mp", "dp")),       # a 2-axis sum
])
def test_layout_strategies_equal_serial(aliases, mul):
    lay = layout()
    check(lambda: TwoOps(tuple(lay(*a) for a in aliases), (lay(*mul), lay(*mul))), X,
          rtol=1e-4, atol=1e-4)


def test_layout_equals_the_tuple_strategy():
    n = get_group_size()
    lay = layout()
    by_layout, g1 = run_parallel(lambda: TwoOps((lay("dp", "mp"), lay("mp", "None"))), X)
    by_tuple, g2 = run_parallel(lambda: TwoOps(((2, n // 2), (n // 2, 1))), X)
    np.testing.assert_array_equal(by_layout, by_tuple)
    assert comm_ops(g1) == comm_ops(g2)


def test_out_layout_reduce_scatter_equals_serial():
    lay = layout()
    graph = check(lambda: TwoOps((lay("dp", "mp"), lay("mp", "None")), None,
                                 (lay(("dp", "mp"), "None"),)), X, rtol=1e-4, atol=1e-4)
    # on 2 ranks "mp" has size 1: nothing is reduced, so nothing is scattered
    assert comm_ops(graph)[:1] == (["ReduceScatter"] if get_group_size() > 2 else [])


class Mlp(nn.Cell):
    """x (4, 64) @ w1 -> ReLU -> @ w2 (64, 8) -> ReduceMean of the square; strategies on
    the first MatMul only (or none)."""

    def __init__(self, s1=None, loss=False):
        super().__init__()
        self.m1 = ops.MatMul()
        if s1:
            self.m1.shard(s1)
        self.relu = ops.ReLU()
        self.m2 = ops.MatMul()
        self.loss = loss
        self.mean = ops.ReduceMean()
        self.w1 = Parameter(data(64, 64), name="w1")
        self.w2 = Parameter(data(64, 8, seed=2), name="w2")

    def construct(self, x):
        y = self.m2(self.relu(self.m1(x, self.w1)), self.w2)
        return self.mean(y * y) if self.loss else y


@pytest.mark.parametrize("search_mode", ["sharding_propagation", "recursive_programming"])
def test_propagated_megatron_mlp_equals_serial(search_mode):
    n = get_group_size()
    graph = check(lambda: Mlp(((1, 1), (1, n))), data(4, 64), mode="auto_parallel",
                  search_mode=search_mode, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == ["AllReduce"]          # the row-split MatMul's, as Megatron


def test_propagation_from_a_layout_equals_serial():
    lay = layout()
    check(lambda: TwoOps((lay("dp", "mp"), lay("mp", "None"))), X, mode="auto_parallel",
          search_mode="sharding_propagation", rtol=1e-4, atol=1e-4)


def test_propagation_without_strategies_equals_serial():
    check(lambda: Mlp(), data(8, 64), mode="auto_parallel",
          search_mode="sharding_propagation", rtol=1e-4, atol=1e-4)


def test_propagated_gradients_equal_serial():
    n = get_group_size()
    check_grads(lambda: Mlp(((1, 1), (1, n)), loss=True), data(4, 64), mode="auto_parallel",
                search_mode="sharding_propagation", positions=(0,))


def test_layout_gradients_equal_serial():
    lay = layout()
    check_grads(lambda: TwoOps((lay(("dp", "mp"), "None"), lay("None", "None")),
                               (lay("dp", "mp"), lay("dp", "mp"))), X, positions=(0,))


class Classifier(nn.Cell):
    """Dense (column split set) -> BatchNorm1d -> ReLU -> Dense -> softmax cross-entropy:
    the rest propagated, through the expansions (split BatchNorm, split loss) too."""

    def __init__(self, n):
        super().__init__()
        self.d1 = nn.Dense(32, 64, weight_init=data(64, 32))
        self.d1.matmul.shard(((1, 1), (n, 1)))
        self.bn = nn.BatchNorm1d(64)
        self.act = nn.ReLU()
        self.d2 = nn.Dense(64, 16, weight_init=data(16, 64, seed=3))
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=False, reduction="mean")
        self.labels = Tensor(np.eye(16, dtype=np.float32)[np.arange(16) % 16])

    def construct(self, x):
        return self.loss(self.d2(self.act(self.bn(self.d1(x)))), self.labels)


def test_propagated_classifier_training_gradients_equal_serial():
    n = get_group_size()
    check_grads(lambda: Classifier(n), data(16, 32), train=True, mode="auto_parallel",
                search_mode="sharding_propagation", positions=(0,))
