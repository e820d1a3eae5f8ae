"""Rules beside the ops, under real MPI on 2, 4 and 8 ranks: the sharded net equals numpy.

MatMul's two out strategies (AllReduce and ReduceScatter forms), reductions over split
axes (sum, max, mean combine their partial results differently) and Reshape keeping its
dim-0 split, each compared with numpy on the whole inputs, with the exact collectives.
"""
import numpy as np
import pytest
from nets import ReduceNet
from parallel_oracle import comm_ops, run_parallel

from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()


def data(*shape):
    """Deterministic values per shape, so every rank builds the same inputs."""
    rng = np.random.default_rng(sum(shape) * 7 + len(shape))
    return rng.standard_normal(shape).astype(np.float32)


class MatMulNet(nn.Cell):
    def __init__(self, strategy, out_strategy, w, transpose_a=False):
        super().__init__()
        self.mm = ops.MatMul(transpose_a=transpose_a).shard(strategy, out_strategy)
        self.w = Parameter(Tensor(w), name="w")

    def construct(self, x):
        return self.mm(x, self.w)


# (in_strategy, transpose_a): a split reduction dim (b > 1), with and without repeats
STRATEGIES = list(dict.fromkeys(
    [(((1, N), (N, 1)), False), (((N // 2, 2), (2, 1)), False), (((2, 1), (2, 1)), True)] +
    ([(((2, 2), (2, 2)), False), (((2, 2), (2, 1)), False), (((2, 4), (4, 1)), False)]
     if N == 8 else [])))


@pytest.mark.parametrize("strategy,transpose_a", STRATEGIES)
@pytest.mark.parametrize("form", ["plain", "rows by reduction"])
def test_matmul_out_strategy_forms_equal_numpy(strategy, transpose_a, form):
    x1, x2 = strategy
    a, b = (x1[1], x1[0]) if transpose_a else x1
    c = x2[1]
    out_strategy = ((a, c),) if form == "plain" else ((a * b, c),)
    x, w = data(*((32, 16) if transpose_a else (16, 32))), data(32, 8)
    got, graph = run_parallel(lambda: MatMulNet(strategy, out_strategy, w, transpose_a),
                              Tensor(x))
    np.testing.assert_allclose(got, (x.T if transpose_a else x) @ w, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == (["AllReduce"] if form == "plain" else ["ReduceScatter"])
    assert graph.outputs[0].shape == (16 // out_strategy[0][0], 8 // c)


def test_reduce_scattered_rows_feed_the_next_matmul():
    class Chain(nn.Cell):
        def __init__(self, w1, w2):
            super().__init__()
            self.m1 = ops.MatMul().shard(((1, N), (N, 1)), ((N, 1),))
            self.m2 = ops.MatMul().shard(((N, 1), (1, 1)))
            self.w1, self.w2 = Parameter(Tensor(w1), name="w1"), Parameter(Tensor(w2), name="w2")

        def construct(self, x):
            return self.m2(self.m1(x, self.w1), self.w2)

    x, w1, w2 = data(16, 32), data(32, 8), data(8, 4)
    got, graph = run_parallel(lambda: Chain(w1, w2), Tensor(x))
    np.testing.assert_allclose(got, x @ w1 @ w2, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == ["ReduceScatter"]       # already in m2's row layout


@pytest.mark.parametrize("prim_cls,ref", [(ops.ReduceSum, np.sum), (ops.ReduceMax, np.max),
                                          (ops.ReduceMean, np.mean)])
@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("strategy,axis", [(((1, N),), 1), (((2, N // 2),), (0, 1)),
                                           (((2, N // 2),), 0)])
def test_reduction_over_split_axes_equals_numpy(prim_cls, ref, keep_dims, strategy, axis):
    x = data(8, 16)
    got, graph = run_parallel(lambda: ReduceNet(prim_cls(keep_dims=keep_dims), strategy, axis),
                              Tensor(x))
    np.testing.assert_allclose(got, ref(x, axis=axis, keepdims=keep_dims), rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == ["AllReduce"]


class MatMulReshape(nn.Cell):
    """Rows split by a MatMul, then a Reshape without a strategy (the data-parallel default)."""

    def __init__(self, w, shape):
        super().__init__()
        self.mm = ops.MatMul().shard(((N, 1), (1, 1)))
        self.reshape = ops.Reshape()
        self.w = Parameter(Tensor(w), name="w")
        self.shape = shape

    def construct(self, x):
        return self.reshape(self.mm(x, self.w), self.shape)


@pytest.mark.parametrize("shape,comm,rows", [
    ((16, 2, 4), [], 16 // N),                # dim 0 kept: the row split carries over
    ((8, 16), [], 8 // N),                    # (16 rows) -> (8, 16): 16 rows split by N
                                              # are 8 // N of the new rows: no collective
    # dim 0 16 -> 2: a split of 2 fits both; a larger N does not: gathered, then replicated
    ((2, 64), [] if N == 2 else ["AllGather"], 1 if N == 2 else 2),
])
def test_reshape_after_split_rows_equals_numpy(shape, comm, rows):
    x, w = data(16, 32), data(32, 8)
    got, graph = run_parallel(lambda: MatMulReshape(w, shape), Tensor(x))
    np.testing.assert_allclose(got, (x @ w).reshape(shape), rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == comm
    assert graph.outputs[0].shape == (rows,) + shape[1:]


class MatMulFlatten(nn.Cell):
    """Rows split by a MatMul, reshaped to 3-D keeping dim 0, then Flatten (the
    data-parallel default): the row split carries through, no collective."""

    def __init__(self, w):
        super().__init__()
        self.mm = ops.MatMul().shard(((N, 1), (1, 1)))
        self.reshape, self.flatten = ops.Reshape(), ops.Flatten()
        self.w = Parameter(Tensor(w), name="w")

    def construct(self, x):
        return self.flatten(self.reshape(self.mm(x, self.w), (16, 2, 4)))


def test_flatten_keeps_the_dim0_split():
    x, w = data(16, 32), data(32, 8)
    got, graph = run_parallel(lambda: MatMulFlatten(w), Tensor(x))
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == []
    assert graph.outputs[0].shape == (16 // N, 8)


class SqueezeNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.squeeze = ops.Squeeze().shard(((N, 1, 1, 1),))

    def construct(self, x):
        return self.squeeze(x)


def test_squeeze_keeps_a_split_dim_whose_slice_has_one_row():
    """axis=() squeezes the dims of size 1 of the global x: dim 0, split into slices of
    one row each, stays on every rank."""
    x = data(N, 1, 3, 1)
    got, graph = run_parallel(SqueezeNet, Tensor(x))
    np.testing.assert_array_equal(got, x.reshape(N, 3))
    assert graph.outputs[0].shape == (1, 3)
