"""The running extremes Cummax / Cummin, CumulativeLogsumexp and the composites over an axis
(median, quantile, cosine_similarity, renorm, diff, cov) sharded on 2 and 4 ranks: a net
split by rows, the scanned / ordered axis whole, equals the serial net, forward and
gradients; splitting a scanned axis is refused by name."""
import numpy as np
import pytest
from parallel_oracle import check, data
from test_parallel_grad import check_grads

from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()


class AxisNet(nn.Cell):
    """x * w split by rows; the scans and order statistics along the whole columns axis."""

    def __init__(self, loss=False):
        super().__init__()
        self.loss = loss
        self.w = Parameter(data(8, 16, seed=9), name="w")
        self.mul = ops.Mul().shard(((N, 1), (N, 1)))
        self.cummax = ops.Cummax(1).shard(((N, 1),))
        self.cummin = ops.Cummin(1).shard(((N, 1),))
        self.lcse = ops.CumulativeLogsumexp(reverse=True).shard(((N, 1),))

    def construct(self, x):
        h = self.mul(x, self.w)
        y = self.cummax(h)[0] + self.cummin(h)[0] * 0.5 + self.lcse(h, 1)
        y = y + ops.renorm(h, 2, 0, 1.0) + ops.mvlgamma(ops.abs(h) + 2.0, 2)
        stats = ops.median(h, 1)[0] + ops.quantile(h, 0.3, 1) + ops.cosine_similarity(h, x)
        stats = stats + ops.ReduceSum()(ops.diff(h, 1, 1), 1)
        c = ops.cov(h)
        if not self.loss:
            return y, stats, c
        return ops.ReduceSum()(y * y, ()) + ops.ReduceSum()(stats, ()) + ops.ReduceSum()(c, ())


def test_sharded_axis_functions_equal_the_serial_net():
    check(AxisNet, data(8, 16, seed=4))


def test_sharded_axis_functions_gradients_equal_the_serial_ones():
    check_grads(lambda: AxisNet(loss=True), data(8, 16, seed=4), positions=(0,))


def test_cummax_indices_sharded_equal_numpy():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cummax = ops.Cummax(0).shard(((1, N),))

        def construct(self, x):
            return self.cummax(x)

    x = np.random.default_rng(2).integers(-4, 4, (6, 8)).astype(np.float32)
    check(Net, Tensor(x))


def test_splitting_the_scanned_axis_is_refused():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cummin = ops.Cummin(1).shard(((1, N),))

        def construct(self, x):
            return self.cummin(x)[0]

    with pytest.raises(ValueError, match=r"For 'Cummin', .*Cummin scans"):
        check(Net, data(8, 16))
