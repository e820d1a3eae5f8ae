"""ReduceAll / ReduceAny, CumProd, the statistics of msops.ops.stats_func and the
element-wise composites of pointwise_func sharded on 2 and 4 ranks: a split reduced axis of
ReduceAll / ReduceAny is combined by a logical-and / logical-or AllReduce and equals
numpy's all / any and the serial net; nets of cumprod, var, std_mean, logsumexp, all and
nansum, and of logaddexp, xlogy, sinc, fmax, copysign, heaviside, hypot, lerp, over a
row-split input equal the serial nets, forward and gradients."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, data, run_parallel, run_serial
from test_parallel_grad import check_grads

from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()


def _values():
    """(8, 16) floats in [-2, 2] but for three 3s in column 5 (rows 0, 3, 6); column 3 and
    row 7 positive throughout: x > 0 and x > 2.5 are all- / any-true along some lines only."""
    x = np.clip(np.random.default_rng(5).standard_normal((8, 16)), -1.9, 1.9)
    x[:, 3] = np.abs(x[:, 3]) + 0.1
    x[7] = np.abs(x[7]) + 0.1
    x[[0, 3, 6], 5] = 3.0
    return x.astype(np.float32)


class LogicalNet(nn.Cell):
    """x > 0 reduced by ReduceAll and x > 2.5 by ReduceAny, each along a split axis (a
    logical AllReduce) and along a whole one (no communication)."""

    def __init__(self):
        super().__init__()
        self.gt = ops.Greater().shard(((N, 1), ()))
        self.all_split = ops.ReduceAll().shard(((N, 1),))
        self.any_split = ops.ReduceAny(keep_dims=True).shard(((1, N),))
        self.all_whole = ops.ReduceAll().shard(((N, 1),))
        self.any_whole = ops.ReduceAny().shard(((1, N),))

    def construct(self, x):
        positive, large = self.gt(x, 0.0), self.gt(x, 2.5)
        return (self.all_split(positive, 0), self.any_split(large, 1),
                self.all_whole(positive, 1), self.any_whole(large, 0))


def test_logical_reductions_over_a_split_axis_equal_numpy_and_the_serial_net():
    x = _values()
    positive, large = x > 0, x > 2.5
    want = [positive.all(0), large.any(1, keepdims=True), positive.all(1), large.any(0)]
    assert all(w.any() and not w.all() for w in want)          # the data can tell
    serial = run_serial(LogicalNet, Tensor(x))
    got, graph = run_parallel(LogicalNet, Tensor(x))
    for g, s, w in zip(got, serial, want):
        assert g.dtype == np.bool_ and g.shape == w.shape
        np.testing.assert_array_equal(s, w)
        np.testing.assert_array_equal(g, w)
    reduce_ops = [n.prim.op for n in graph.nodes if n.op == "AllReduce"]
    assert "land" in reduce_ops and "lor" in reduce_ops, comm_ops(graph)


class StatsNet(nn.Cell):
    """x * w split by rows, then the functional statistics (their primitives' default
    strategies) and a row-split CumProd along the columns."""

    def __init__(self, loss=False):
        super().__init__()
        self.loss = loss
        self.w = Parameter(data(8, 16, seed=3), name="w")
        self.mul = ops.Mul().shard(((N, 1), (N, 1)))
        self.cumprod = ops.CumProd(reverse=True).shard(((N, 1),))

    def construct(self, x):
        h = self.mul(x, self.w)
        c = self.cumprod(h * 0.5, 1)
        v = ops.var(h, 0, 1)
        s, m = ops.std_mean(h, 1, 0, True)
        lse = ops.logsumexp(h, 0)
        both = ops.cast(ops.all(h > -3.0, 1), h.dtype) + ops.nansum(h, 1)
        if not self.loss:
            return c, v, s, m, lse, both
        return (ops.ReduceSum()(c * c, ()) + ops.ReduceSum()(v, ()) + ops.ReduceSum()(s * m, ())
                + ops.ReduceSum()(lse, ()) + ops.ReduceSum()(both, ()))


def test_sharded_statistics_equal_the_serial_net():
    check(StatsNet, data(8, 16, seed=1))


def test_sharded_statistics_gradients_equal_the_serial_ones():
    check_grads(lambda: StatsNet(loss=True), data(8, 16, seed=1), positions=(0,))


def test_splitting_the_cumprod_axis_is_refused_on_every_rank():
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.cumprod = ops.CumProd().shard(((1, N),))

        def construct(self, x):
            return self.cumprod(x, 1)

    with pytest.raises(ValueError, match=r"For 'CumProd', .*CumProd scans"):
        check(Net, data(8, 16))


class PointwiseNet(nn.Cell):
    """x * w split by rows, then the element-wise composites (their primitives' default
    strategies) and the new element-wise primitives split like x."""

    def __init__(self, loss=False):
        super().__init__()
        self.loss = loss
        self.w = Parameter(data(8, 16, seed=4), name="w")
        self.mul = ops.Mul().shard(((N, 1), (N, 1)))
        self.hypot = ops.Hypot().shard(((N, 1), (N, 1)))
        self.asinh = ops.Asinh().shard(((1, N),))

    def construct(self, x):
        h = self.mul(x, self.w)
        y = ops.logaddexp(h, x) + ops.xlogy(h, ops.abs(x) + 0.5) + ops.sinc(h)
        y = y + ops.fmax(h, x) + ops.copysign(h, x) + ops.heaviside(h, x) * x
        y = y + self.hypot(h, x) + self.asinh(ops.lerp(h, x, 0.25)) + ops.nan_to_num(h)
        return ops.ReduceSum()(y * y, ()) if self.loss else y


def test_sharded_pointwise_composites_equal_the_serial_net():
    check(PointwiseNet, data(8, 16, seed=2))


def test_sharded_pointwise_composites_gradients_equal_the_serial_ones():
    check_grads(lambda: PointwiseNet(loss=True), data(8, 16, seed=2), positions=(0,))
