"""The issue's strategy chains on 8 ranks: sharded == serial, with the expected collectives."""
import numpy as np
from parallel_oracle import check, comm_ops

from msops import Parameter, Tensor, nn, ops

RANKS = (8,)

def data(*shape):
    """Deterministic values per shape, so the serial and the sharded net get the same weights."""
    rng = np.random.default_rng(sum(shape) * 7 + len(shape))
    return Tensor(rng.standard_normal(shape).astype(np.float32))


class Chain(nn.Cell):
    """x @ w1 (strategy s1, out strategy o1) then a second op on the result."""

    def __init__(self, s1, s2, o1=None, second="matmul", ta=False, tb=False):
        super().__init__()
        self.m1 = ops.MatMul(transpose_a=ta).shard(s1, o1)
        self.second = second
        self.m2 = ops.MatMul(transpose_b=tb).shard(s2) if second == "matmul" else \
            ops.Mul().shard(s2)
        self.w1 = Parameter(data(32, 16), name="w1")
        self.w2 = Parameter(data(8, 16) if tb else data(16, 8) if second == "matmul"
                            else data(16, 16), name="w2")

    def construct(self, x):
        return self.m2(self.m1(x, self.w1), self.w2)


def test_two_matmuls_with_different_device_matrices():
    graph = check(lambda: Chain(((4, 2), (2, 1)), ((2, 4), (4, 1))), data(16, 32),
                  rtol=1e-4, atol=1e-4)
    ops_ = comm_ops(graph)
    assert ops_[0] == "AllReduce" and ops_.count("AllReduce") == 2
    assert "AllGather" not in ops_               # the move between matrices is all-to-all/slice


def test_pure_data_parallel_8_ranks_no_communication():
    graph = check(lambda: Chain(((8, 1), (1, 1)), ((8, 1), (1, 1))), data(16, 32))
    assert comm_ops(graph) == []


def test_reduce_scatter_out_strategy_then_mul():
    graph = check(lambda: Chain(((2, 2), (2, 2)), ((4, 2), (4, 2)), o1=((4, 2),),
                                second="mul"), data(16, 32), rtol=1e-4, atol=1e-4)
    assert comm_ops(graph)[0] == "ReduceScatter"
    assert "AllReduce" not in comm_ops(graph)


def test_transposed_matmuls():
    x = data(32, 16)                              # used as x^T: (16, 32)
    check(lambda: Chain(((2, 4), (2, 1)), ((4, 1), (2, 1)), ta=True, tb=True), x,
          rtol=1e-4, atol=1e-4)


def test_batch_matmul():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bmm = ops.BatchMatMul().shard(((2, 2, 2), (2, 2, 1)))
            self.w = Parameter(data(4, 16, 8), name="w")

        def construct(self, x):
            return self.bmm(x, self.w)

    graph = check(Net, data(4, 8, 16), rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == ["AllReduce"]


def test_sharded_plain_cell_lays_out_its_inputs():
    class Block(nn.Cell):
        def __init__(self):
            super().__init__()
            self.relu = ops.ReLU()

        def construct(self, x):
            return self.relu(x)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mm = ops.MatMul().shard(((8, 1), (1, 1)))          # rows split
            self.block = Block().shard(((1, 8),))                   # columns split inside
            self.w = Parameter(data(32, 16), name="w")

        def construct(self, x):
            return self.block(self.mm(x, self.w))

    graph = check(Net, data(16, 32))
    identity = [n for n in graph.nodes if n.op == "Identity"][0]
    assert identity.layout.tensor_map == (-1, 0)                   # the Cell's strategy
    assert "AlltoAll" in comm_ops(graph)                           # rows -> columns
