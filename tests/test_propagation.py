"""Sharding propagation (auto_parallel): the strategies chosen for small nets on a simulated
world of 8, against expectations derived by hand from the cost model
(msops/parallel/propagation.py: bytes sent per rank, then local bytes, then order)."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel import Layout, get_shard_strategy


@pytest.fixture
def auto(sim):
    def make(search_mode="sharding_propagation", full_batch=True, n=8):
        sim(n, rank=3)
        ms.set_auto_parallel_context(parallel_mode="auto_parallel", device_num=n,
                                     full_batch=full_batch, search_mode=search_mode)
        ms.set_context(mode=ms.GRAPH_MODE)
    yield make
    ms.reset_auto_parallel_context()


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


class Mlp(nn.Cell):
    """x (4, 64) @ w1 (64, 64) -> ReLU -> @ w2 (64, 2): Megatron's column then row split."""

    def __init__(self, s1=None, s2=None):
        super().__init__()
        self.m1 = ops.MatMul()
        self.relu = ops.ReLU()
        self.m2 = ops.MatMul()
        if s1:
            self.m1.shard(s1)
        if s2:
            self.m2.shard(s2)
        self.w1 = Parameter(ones(64, 64), name="w1")
        self.w2 = Parameter(ones(64, 2), name="w2")

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w1)), self.w2)


def comm(graph):
    return [n.op for n in graph.nodes if n.is_communication]


def test_column_split_propagates_forward_to_a_row_split(auto):
    # m1's output is (4, 64) split by columns over 8. For m2, keeping that split as the
    # reduction split costs an AllReduce of the (4, 2) output: 2*7/8*32 = 56 bytes; moving
    # the split to the rows instead is an AlltoAll of the (4, 8) slice: 7/8*128 = 112.
    auto()
    net = Mlp(s1=((1, 1), (1, 8)))
    graph = net.compile(ones(4, 64))
    assert get_shard_strategy(net) == {"Mlp/MatMul-op0": ((1, 1), (1, 8)),
                                       "Mlp/ReLU-op1": ((1, 8),),
                                       "Mlp/MatMul-op2": ((1, 8), (8, 1))}
    assert comm(graph) == ["AllReduce"]


def test_row_split_propagates_backward_to_a_column_split(auto):
    auto()
    net = Mlp(s2=((1, 8), (8, 1)))
    graph = net.compile(ones(4, 64))
    assert get_shard_strategy(net) == {"Mlp/MatMul-op0": ((1, 1), (1, 8)),
                                       "Mlp/ReLU-op1": ((1, 8),),
                                       "Mlp/MatMul-op2": ((1, 8), (8, 1))}
    assert comm(graph) == ["AllReduce"]


def test_a_layout_seeds_propagation(auto):
    auto()
    mp = Layout((8,), ("mp",))
    net = Mlp(s1=(mp("None", "None"), mp("None", "mp")))
    net.compile(ones(4, 64))
    chosen = get_shard_strategy(net)
    assert chosen["Mlp/ReLU-op1"] == ((1, 8),)
    assert chosen["Mlp/MatMul-op2"] == ((1, 8), (8, 1))


class SplitThenElementwise(nn.Cell):
    """A (2, 4)-split MatMul output then ReLU and Mul by a parameter: both keep its layout."""

    def __init__(self):
        super().__init__()
        self.mm = ops.MatMul().shard(((2, 1), (1, 4)))
        self.relu = ops.ReLU()
        self.mul = ops.Mul()
        self.w = Parameter(ones(32, 16), name="w")
        self.scale = Parameter(ones(16, 16), name="scale")

    def construct(self, x):
        return self.mul(self.relu(self.mm(x, self.w)), self.scale)


def test_elementwise_ops_keep_the_matmul_layout(auto):
    auto()
    net = SplitThenElementwise()
    graph = net.compile(ones(16, 32))
    chosen = get_shard_strategy(net)
    assert chosen["SplitThenElementwise/ReLU-op1"] == ((2, 4),)
    assert chosen["SplitThenElementwise/Mul-op2"] == ((2, 4), (2, 4))
    assert comm(graph) == []
    assert graph.outputs[0].layout == next(n for n in graph.nodes if n.op == "MatMul").layout


def test_without_any_strategy_the_first_op_is_data_parallel_and_the_rest_follow(auto):
    auto()
    net = Mlp()
    graph = net.compile(ones(16, 64))
    assert set(get_shard_strategy(net).values()) == {((8, 1), (1, 1)), ((8, 1),)}
    assert comm(graph) == []


def test_per_rank_batches_pull_the_first_op_to_the_batch_split(auto):
    auto(full_batch=False)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.relu = ops.ReLU()
            self.mm = ops.MatMul().shard(((1, 1), (1, 8)))
            self.w = Parameter(ones(64, 64), name="w")

        def construct(self, x):
            return self.mm(self.relu(x), self.w)

    net = Net()
    net.compile(ones(2, 64))                 # a rank's slice of the (16, 64) batch
    # ReLU: its batch-split input is free; gathering before or after it costs the same
    # bytes, and the split ReLU holds less
    assert get_shard_strategy(net)["Net/ReLU-op0"] == ((8, 1),)


@pytest.mark.parametrize("mode", ["recursive_programming", "dynamic_programming"])
def test_other_search_modes_find_the_same_strategies_here(auto, mode):
    auto(search_mode=mode)
    net = Mlp(s1=((1, 1), (1, 8)))
    graph = net.compile(ones(4, 64))
    assert get_shard_strategy(net)["Mlp/MatMul-op2"] == ((1, 8), (8, 1))
    assert comm(graph) == ["AllReduce"]


def test_a_configured_strategy_error_names_the_op_and_line(auto):
    auto()
    net = Mlp(s1=((1, 3), (3, 1)))
    with pytest.raises(ValueError, match=r"For 'MatMul', .*\n  In .*test_propagation.py"):
        net.compile(ones(4, 64))


def test_semi_auto_read_out_shows_the_defaults(sim):
    sim(8)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = Mlp(s1=((1, 1), (1, 8)))
        net.compile(ones(8, 64))
        assert get_shard_strategy(net)["Mlp/MatMul-op2"] == ((8, 1), (1, 1))
    finally:
        ms.reset_auto_parallel_context()


def test_read_out_argument_error():
    with pytest.raises(TypeError, match=r"'net' should be a Cell or a compiled Graph"):
        get_shard_strategy(3)
