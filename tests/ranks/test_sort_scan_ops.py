"""Sort, TopK, CumSum, BroadcastTo, Stack and Unstack sharded on 2, 4 and 8 ranks: a net
using them all, split along the rows or along the columns (each ordered or scanned axis
kept whole), equals the serial net, forward and gradients; a strategy splitting the
sorted axis is refused by name on every rank."""
import pytest
from parallel_oracle import check, data
from test_parallel_grad import check_grads

from msops import Parameter, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()


class OrderNet(nn.Cell):
    """x * w through each new op. `along`: the axis the ops order and scan along; the
    other axis is split N ways (TopK's is the last axis, so with along=0 its input is
    redistributed)."""

    def __init__(self, along, loss=False):
        super().__init__()
        split = ((N, 1),) if along == 1 else ((1, N),)
        self.loss = loss
        self.w = Parameter(data(8, 16), name="w")
        self.mul = ops.Mul().shard(split * 2)
        self.sort = ops.Sort(along, descending=True).shard(split)
        self.topk = ops.TopK().shard(((N, 1),))
        self.cumsum = ops.CumSum(exclusive=True, reverse=along == 0).shard(split)
        self.bcast = ops.BroadcastTo((3, -1, -1)).shard(split)
        self.stack = ops.Stack(1).shard(split * 2)
        self.unstack = ops.Unstack(1).shard(((split[0][0], 1, split[0][1]),))
        self.along = along

    def construct(self, x):
        h = self.mul(x, self.w)
        values, indices = self.sort(h)
        top, where = self.topk(h, 3)
        c = self.cumsum(h, self.along)
        b = self.bcast(c)
        p, q = self.unstack(self.stack((values, c)))
        if not self.loss:
            return p * q, indices, top, where, b
        r = data(3, 8, 16, seed=2)
        return ops.ReduceSum()(p * q, ()) + ops.ReduceSum()(top * top, ()) + \
            ops.ReduceSum()(b * r, ())


@pytest.mark.parametrize("along", [1, 0])
def test_sharded_order_ops_equal_the_serial_net(along):
    x = data(8, 16, seed=1)
    check(lambda: OrderNet(along), x)


@pytest.mark.parametrize("along", [1, 0])
def test_sharded_order_ops_gradients_equal_the_serial_ones(along):
    check_grads(lambda: OrderNet(along, loss=True), data(8, 16, seed=1), positions=(0,))


def test_splitting_the_sorted_axis_is_refused_on_every_rank():
    class SortNet(nn.Cell):
        def __init__(self):
            super().__init__()
            self.sort = ops.Sort().shard(((1, N),))

        def construct(self, x):
            return self.sort(x)[0]

    with pytest.raises(ValueError, match=r"For 'Sort', .*Sort orders along axis 1"):
        check(SortNet, data(8, 16))


class Buckets(nn.Cell):
    """Each value's bucket among sorted rows of edges, the values split along rows and
    columns, the edges' rows along with them."""

    def __init__(self, strategy):
        super().__init__()
        self.search = ops.SearchSorted(right=True).shard(strategy)

    def construct(self, edges, x):
        return self.search(ops.Sort()(edges)[0], x * 3.0)


@pytest.mark.parametrize("strategy", [((1, 1), (1, N)), ((N, 1), (N, 1)),
                                      ((2, 1), (2, N // 2))], ids=["cols", "rows", "both"])
def test_sharded_searchsorted_equals_the_serial_net(strategy):
    check(lambda: Buckets(strategy), data(8, 5, seed=3), data(8, 16, seed=4))
