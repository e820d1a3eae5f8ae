"""Custom on 2/4 ranks: whole by default (its inputs gathered in front), or batch-split
where shard declares dim 0 a batch dim; either way output and gradient equal serial."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_parallel_grad import check_grads

from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
X = Tensor(np.random.default_rng(5).standard_normal((2 * N, 3)).astype(np.float32))
W = Tensor(np.random.default_rng(6).standard_normal((3, 3)).astype(np.float32))


def row_softmax(x):
    """A per-row kernel: each batch slice maps alone."""
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def softmax_bprop(x, out, dout):
    return ((dout - (dout * out).sum(axis=1, keepdims=True)) * out,)


class Head(nn.Cell):
    """MatMul split by rows, then the Custom op, weighted and summed."""

    def __init__(self, strategy):
        super().__init__()
        self.mm = ops.MatMul().shard(((N, 1), (1, 1)))
        self.op = ops.Custom(row_softmax, lambda s: s, lambda d: d, bprop=softmax_bprop)
        if strategy is not None:
            self.op.shard(strategy)
        self.weight = W

    def construct(self, x):
        return self.op(self.mm(x, self.weight)) * x


@pytest.mark.parametrize("strategy", [None, ((N, 1),)], ids=["whole", "batch"])
def test_custom_equals_serial(strategy):
    graph = check(lambda: Head(strategy), X)
    gathers = [op for op in comm_ops(graph) if op == "AllGather"]
    assert (gathers != []) == (strategy is None)
    check_grads(lambda: Head(strategy), X, positions=(0,))
