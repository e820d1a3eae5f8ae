"""Tril / Triu with their matrix dims split on 2/4/8 ranks equal the serial op (each rank
shifts the diagonal by its block's offset), forward and gradient, with no communication."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_functional_forms import Call
from test_parallel_grad import check_grads

from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
H = max(N // 2, 1)
X = Tensor(np.random.default_rng(8).standard_normal((2, 2 * N, 2 * N)).astype(np.float32))


class Weighted(nn.Cell):
    def __init__(self, op):
        super().__init__()
        self.op, self.sum = op, ops.ReduceSum()
        self.w = Tensor(np.random.default_rng(9).standard_normal(X.shape).astype(np.float32))

    def construct(self, x):
        return self.sum(self.op(x) * self.w)


@pytest.mark.parametrize("strategy", [((1, N, 1),), ((1, 1, N),), ((1, 2, H),),
                                      ((2, H, 1),)], ids=["rows", "cols", "both", "batch"])
@pytest.mark.parametrize("make", [lambda: ops.Tril(), lambda: ops.Tril(-3),
                                  lambda: ops.Triu(1), lambda: ops.Triu(-2)],
                         ids=["tril", "tril-3", "triu1", "triu-2"])
def test_split_matrix_equals_serial(make, strategy):
    graph = check(lambda: Call(make().shard(strategy)), X)
    assert comm_ops(graph) == []
    check_grads(lambda: Weighted(make().shard(strategy)), X, positions=(0,))
