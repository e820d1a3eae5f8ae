"""The random draws of msops.ops.distribution_func under real MPI on 2 and 4 ranks: the
quantile ops (GammaQuantile, PoissonQuantile) sharded with their uniform draw, and the
functional draws (gamma, poisson, laplace, normal, multinomial, shuffle, choice_with_mask,
the candidate samplers)
under semi_auto_parallel's default layouts, equal the serial run's numbers exactly."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size
from msops.primitives.quantile_ops import GammaQuantile, PoissonQuantile
from msops.primitives.random_ops import UniformRealOf

RANKS = (2, 4)
N = get_group_size()
SHAPE = (2 * N, 6)


class Quantiles(nn.Cell):
    """The uniform draw and its quantile maps, split by `strategy` (rows, columns or both)."""

    def __init__(self, strategy):
        super().__init__()
        self.u = UniformRealOf(seed=3, dtype=ms.float64).shard((strategy,))
        self.gamma = GammaQuantile().shard((strategy, strategy))
        self.poisson = PoissonQuantile().shard((strategy, strategy))

    def construct(self, alpha, rate):
        u = self.u(SHAPE)
        return self.gamma(u, alpha), self.poisson(u, rate)


def make_quantiles(strategy):
    def net():
        ms.set_seed(21)
        return Quantiles(strategy)
    return net


PARAMS = (Tensor(np.linspace(0.2, 9.0, 12 * N).reshape(SHAPE)),
          Tensor(np.linspace(0.5, 40.0, 12 * N).reshape(SHAPE)))


@pytest.mark.parametrize("strategy", [(N, 1), (1, 2), (2, N // 2) if N > 2 else (1, N)],
                         ids=str)
def test_sharded_quantiles_equal_serial(strategy):
    graph = check(make_quantiles(strategy), *PARAMS, rtol=0, atol=0)
    assert comm_ops(graph) == []                 # each rank maps its own block of draws


class Draws(nn.Cell):
    def construct(self, alpha, mean, weights, x, mask, true_classes):
        return (ops.uniform_candidate_sampler(true_classes, 2, 4, True, 40, 2, True)[0],
                ops.log_uniform_candidate_sampler(true_classes, 2, 3, False, 20)[2],
                ops.gamma((2 * N, 3), alpha, mean, seed=1), ops.poisson((2 * N, 3), mean),
                ops.laplace((2 * N, 3), mean, alpha, seed=2),
                ops.normal((2 * N, 3), mean, alpha), ops.multinomial(weights, 5, seed=4),
                ops.multinomial(weights, 3, False), ops.shuffle(x, seed=3),
                ops.choice_with_mask(mask, 6, seed=1)[0])


def make_draws():
    ms.set_seed(33)
    return Draws()


def test_functional_draws_equal_serial():
    rng = np.random.default_rng(0)
    args = (Tensor(rng.uniform(0.5, 3, (2 * N, 3)).astype(np.float32)),
            Tensor(rng.uniform(1, 5, (2 * N, 3)).astype(np.float32)),
            Tensor(rng.uniform(0, 1, (2 * N, 4)).astype(np.float32)),
            Tensor(np.arange(6 * N, dtype=np.float32).reshape(2 * N, 3)),
            Tensor(rng.random((2 * N, 3)) < 0.5),
            Tensor(rng.integers(0, 9, (2 * N, 2)).astype(np.int64)))
    check(make_draws, *args, rtol=0, atol=0)
