"""Random primitives under real MPI on 2 and 4 ranks: a draw whose output dims are split
(a strategy on the shape's dims, MindSpore's UniformReal strategy form) equals the serial
draw, block for block; without a strategy every rank draws the same whole tensor.
"""
import numpy as np
import pytest
from mpi4py import MPI
from parallel_oracle import check, comm_ops

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N = get_group_size()
SHAPE = (2 * N, 6)


class Draws(nn.Cell):
    """Each random op (and functional forms), its output split by `strategy` (or data
    parallel; randperm is never split); the draws come out whole (x is unused: a graph
    input)."""

    def __init__(self, strategy=None):
        super().__init__()
        self.uniform = ops.UniformReal(seed=3)
        self.normal = ops.StandardNormal(seed=1, seed2=4)
        self.uniform_int = ops.UniformInt(seed=2)
        if strategy is not None:
            self.uniform.shard((strategy,))
            self.normal.shard((strategy,))
            self.uniform_int.shard((strategy, (), ()))

    def construct(self, x, low, high):
        return (self.uniform(SHAPE), self.normal(SHAPE),
                self.uniform_int(SHAPE, low, high), ops.randn(2 * N, 3, dtype=ms.float64),
                ops.randperm(2 * N + 1, seed=4))


def make(strategy):
    def net():
        ms.set_seed(11)                  # the serial and the parallel run draw alike
        return Draws(strategy)
    return net


ARGS = (Tensor(np.zeros(SHAPE, np.float32)), Tensor(np.int32(-7)), Tensor(np.int32(50)))


@pytest.mark.parametrize("strategy", [None, (N, 1), (1, 2), (2, N // 2) if N > 2 else (1, N)],
                         ids=str)
def test_sharded_draw_equals_serial(strategy):
    graph = check(make(strategy), *ARGS, rtol=0, atol=0)
    assert comm_ops(graph) == []                 # each rank draws its own block, no gather


def test_serial_draw_is_the_same_on_every_rank():
    ms.set_seed(5)
    mine = ops.StandardNormal(seed=9)((3, 4)).asnumpy()
    every = MPI.COMM_WORLD.allgather(mine)
    for other in every:
        np.testing.assert_array_equal(other, mine)


def test_sharding_propagation_draws_the_serial_values():
    """auto_parallel picks the draws' layouts itself; whichever it picks, the values are
    the serial ones."""
    check(make(None), *ARGS, rtol=0, atol=0, mode="auto_parallel",
          search_mode="sharding_propagation")
