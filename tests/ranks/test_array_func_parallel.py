"""PopulationCount split on 2/4 ranks equals the serial op with no communication;
UniqueWithPad over a vector laid out split equals the serial op (the vector is gathered
whole first); and the
array compositions (matrix_diag_part, matrix_set_diag, matrix_diag, reverse_sequence,
space_to_batch_nd, tensor_scatter_elements, slice_scatter) over an input laid out split
along a batch dim equal their serial runs, forward and gradient."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_functional_forms import Call
from test_parallel_grad import check_grads

from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
H = max(N // 2, 1)
RNG = np.random.default_rng(21)
BITS = Tensor(RNG.integers(-2 ** 15, 2 ** 15, (2 * N, 2 * N, 3)).astype(np.int16))


@pytest.mark.parametrize("strategy", [((N, 1, 1),), ((1, N, 1),), ((2, H, 1),)],
                         ids=["rows", "cols", "both"])
def test_population_count_split_equals_serial(strategy):
    graph = check(lambda: Call(ops.PopulationCount().shard(strategy)), BITS)
    assert comm_ops(graph) == []


class Pinned(nn.Cell):
    """UniqueWithPad of its input laid out split along its one dim."""

    def __init__(self):
        super().__init__()
        self.pin = ops.Identity().shard(((N,),))
        self.unique = ops.UniqueWithPad()

    def construct(self, x):
        return self.unique(self.pin(x), -7)


def test_unique_with_pad_of_a_split_vector_equals_serial():
    x = Tensor(RNG.integers(0, 3 * N, (4 * N,)).astype(np.int32))
    check(lambda: Pinned(), x)


X = Tensor(RNG.standard_normal((2 * N, 3, 4)).astype(np.float32))
D = Tensor(RNG.standard_normal((2 * N, 3, 3)).astype(np.float32))
IMG = Tensor(RNG.standard_normal((2 * N, 2, 4, 4)).astype(np.float32))
LENS = Tensor(RNG.integers(0, 4, (2 * N,)).astype(np.int32))
IDX = Tensor(RNG.integers(-4, 4, (2 * N, 3, 2)).astype(np.int64))


class Split(nn.Cell):
    """fn of its inputs, the first laid out split along dim 0 (an Identity with a strategy),
    weighted and summed so that gradients are not all ones."""

    def __init__(self, fn, rank):
        super().__init__()
        self.fn = fn
        self.pin = ops.Identity().shard(((N,) + (1,) * (rank - 1),))
        self.sum = ops.ReduceSum()

    def construct(self, x, *rest):
        out = self.fn(self.pin(x), *rest)
        return self.sum(out * out)


FNS = [
    ("matrix_diag_part", lambda x: ops.matrix_diag_part(x, (-1, 2), 0.5), (X,)),
    ("matrix_set_diag", lambda x, d: ops.matrix_set_diag(x, d, (-1, 1)), (X, D)),
    ("matrix_diag", lambda d: ops.matrix_diag(d, (-1, 1), 3, 4), (D,)),
    ("reverse_sequence", lambda x, n: ops.reverse_sequence(x, n, 2, 0), (X, LENS)),
    ("space_to_batch_nd", lambda x: ops.space_to_batch_nd(x, [2, 2], [[0, 0], [1, 1]]),
     (IMG,)),
    ("tensor_scatter_elements",
     lambda x, i: ops.tensor_scatter_elements(x, i, ops.cast(i, x.dtype) * 0.5, 2, "add"),
     (X, IDX)),
    ("slice_scatter", lambda x, d: ops.slice_scatter(x, d, 2, 0, 3), (X, D)),
]


@pytest.mark.parametrize("name,fn,inputs", FNS, ids=[f[0] for f in FNS])
def test_compositions_over_a_split_batch_equal_serial(name, fn, inputs):
    rank = len(inputs[0].shape)
    check(lambda: Split(fn, rank), *inputs)
    check_grads(lambda: Split(fn, rank), *inputs, positions=(0,))
