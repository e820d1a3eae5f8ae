"""AllGatherV / ReduceScatterV and their functional forms on real MPI, against numpy.

Every rank builds every rank's data and the (random, shared) split sizes from seeds, so
the reference is numpy over all ranks' inputs, written here. Gradients of the loss summed
over ranks, sum_q sum(op(x_q) * W_q), are written out in numpy too: the gather's
gradient on rank r is sum_q W_q cut at r's piece, the reduce-scatter's the
concatenation of every rank's W_q.
"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from test_desync import raises_everywhere, still_in_step

RANKS = (2, 4, 8)


def world():
    return get_rank(), get_group_size()


def split_sizes(n, seed, high=4):
    """Random piece sizes, the same on every rank, with at least one empty piece."""
    sizes = np.random.default_rng(seed).integers(0, high, n)
    sizes[seed % n] = 0
    return [int(s) for s in sizes]


def data(rank, shape, salt=0, dtype=np.float64):
    return np.random.default_rng(1000 * salt + rank).standard_normal(shape).astype(dtype)


def offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Gather(nn.Cell):
    def __init__(self, sizes):
        super().__init__()
        self.op, self.sizes = ops.AllGatherV(), sizes

    def construct(self, x):
        return self.op(x, self.sizes)


class ReduceScatter(nn.Cell):
    def __init__(self, sizes, op="sum"):
        super().__init__()
        self.op, self.sizes = ops.ReduceScatterV(op), sizes

    def construct(self, x):
        return self.op(x, self.sizes)


class Loss(nn.Cell):
    """sum(inner(x) * w): its gradient is inner's transpose applied to w."""

    def __init__(self, inner, w):
        super().__init__()
        self.inner, self.w = inner, Tensor(w)

    def construct(self, x):
        return ops.ReduceSum()(self.inner(x) * self.w, ())


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_allgatherv_concatenates_every_ranks_piece(mode, seed, dtype):
    rank, n = world()
    sizes = split_sizes(n, seed)
    xs = [data(r, (sizes[r],), seed, dtype) for r in range(n)]
    got = Gather(sizes)(Tensor(xs[rank])).asnumpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.concatenate(xs))


@pytest.mark.parametrize("op,reduce", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_reduce_scatterv_keeps_this_ranks_piece_of_the_reduction(mode, op, reduce):
    rank, n = world()
    sizes = split_sizes(n, 3)
    xs = [data(r, (sum(sizes),), 3) for r in range(n)]
    got = ReduceScatter(sizes, op)(Tensor(xs[rank])).asnumpy()
    at = offsets(sizes)
    np.testing.assert_allclose(got, reduce(xs, axis=0)[at[rank]:at[rank + 1]], rtol=1e-12)


def test_reduce_scatterv_float16_sums_in_float32():
    rank, n = world()
    sizes = [2] * n
    x = np.full(2 * n, 1024 + rank, np.float16)     # float16 partial sums would round
    got = ops.ReduceScatterV()(Tensor(x), sizes).asnumpy()
    assert got.dtype == np.float16
    want = np.float16(sum(1024 + r for r in range(n)))
    np.testing.assert_array_equal(got, np.full(2, want, np.float16))


def test_allgatherv_of_empty_pieces_only():
    rank, n = world()
    got = ops.AllGatherV()(Tensor(np.zeros(0, np.float32)), [0] * n).asnumpy()
    assert got.shape == (0,)


def test_allgatherv_gradient_is_the_reduce_scatter_of_the_weights(mode):
    rank, n = world()
    sizes = split_sizes(n, 4)
    at = offsets(sizes)
    weights = [data(r, (sum(sizes),), 5) for r in range(n)]
    x = Tensor(data(rank, (sizes[rank],), 4))
    got = ms.grad(Loss(Gather(sizes), weights[rank]))(x).asnumpy()
    np.testing.assert_allclose(got, np.sum(weights, axis=0)[at[rank]:at[rank + 1]],
                               rtol=1e-12)


def test_reduce_scatterv_gradient_is_the_gather_of_the_weights(mode):
    rank, n = world()
    sizes = split_sizes(n, 6)
    weights = [data(r, (sizes[r],), 7) for r in range(n)]
    x = Tensor(data(rank, (sum(sizes),), 6))
    got = ms.grad(Loss(ReduceScatter(sizes), weights[rank]))(x).asnumpy()
    np.testing.assert_allclose(got, np.concatenate(weights), rtol=1e-12)


# -- the functional forms ------------------------------------------------------------------------

def test_all_gather_into_tensor_uneven_writes_the_rows():
    rank, n = world()
    sizes = split_sizes(n, 8)
    xs = [data(r, (sizes[r], 3), 8, np.float32) for r in range(n)]
    out = Tensor(np.zeros((sum(sizes), 3), np.float32))
    assert ops.all_gather_into_tensor_uneven(out, Tensor(xs[rank]), sizes) is None
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(xs))
    even = Tensor(np.zeros((2 * n, 3), np.float32))            # no sizes: even pieces
    handle = ops.all_gather_into_tensor_uneven(even, Tensor(np.full((2, 3), rank, np.float32)),
                                               async_op=True)
    handle.wait()
    np.testing.assert_array_equal(even.asnumpy(), np.repeat(np.arange(n), 2)[:, None] *
                                  np.ones((1, 3)))


def test_reduce_scatter_tensor_uneven_writes_this_ranks_rows():
    rank, n = world()
    sizes = split_sizes(n, 9)
    xs = [data(r, (sum(sizes), 2), 9) for r in range(n)]
    out = Tensor(np.zeros((sizes[rank], 2)))
    assert ops.reduce_scatter_tensor_uneven(out, Tensor(xs[rank]), sizes, op="max") is None
    at = offsets(sizes)
    np.testing.assert_array_equal(out.asnumpy(), np.max(xs, axis=0)[at[rank]:at[rank + 1]])


def test_uneven_forms_compiled():
    """In ms.jit the outputs, computed in the function, are rebound to the results."""
    rank, n = world()
    sizes = split_sizes(n, 10)
    xs = [data(r, (sizes[r], 2), 10) for r in range(n)]

    @ms.jit
    def step(x):
        zero = ops.ReduceSum()(x, ()) * 0
        gathered = ops.zeros((sum(sizes), 2), ms.float64) + zero
        ops.all_gather_into_tensor_uneven(gathered, x, sizes)
        mine = ops.zeros((sizes[rank], 2), ms.float64) + zero
        ops.reduce_scatter_tensor_uneven(mine, gathered * 2, sizes)
        return gathered, mine
    gathered, mine = step(Tensor(xs[rank]))
    np.testing.assert_array_equal(gathered.asnumpy(), np.concatenate(xs))
    np.testing.assert_allclose(mine.asnumpy(), 2 * n * xs[rank], rtol=1e-12)


def test_ops_communication_is_the_torch_style_family():
    from msops.ops import communication
    assert ops.all_reduce is communication.all_reduce is ms.mint.distributed.all_reduce
    assert ops.gather is not communication.gather          # ops.gather stays the array op
    t = Tensor(np.full(2, get_rank() + 1.0))
    assert ops.all_reduce(t) is None                        # in place, as MindSpore 2.10
    n = get_group_size()
    np.testing.assert_array_equal(t.asnumpy(), np.full(2, n * (n + 1) / 2))


# -- mismatches: the same error on every rank ----------------------------------------------------

def test_different_split_sizes_are_caught_on_every_rank():
    rank, n = world()
    sizes = [1] * n
    if rank == n - 1:                    # rank n-1 thinks rank 0 sends two elements
        sizes = [2] + [1] * (n - 1)
    x = Tensor(np.ones(1, np.float32))
    raises_everywhere(lambda: ops.AllGatherV()(x, sizes), f"{[1] * n}",
                      f"{[2] + [1] * (n - 1)}")
    raises_everywhere(lambda: ops.ReduceScatterV()(Tensor(np.ones(sum(sizes), np.float32)),
                                                   sizes), "ReduceScatterV(op='sum')")
    still_in_step()


def test_one_ranks_bad_input_is_reported_on_every_rank():
    rank, n = world()
    x = Tensor(np.ones(3 if rank == 1 else 1, np.float32))
    raises_everywhere(lambda: ops.AllGatherV()(x, [1] * n),
                      "rank 1: #", "AllGatherV refused: For 'AllGatherV', the 'input_x' should "
                      "have output_split_sizes[1] = 1 elements (this rank's piece), but got 3")
    still_in_step()
    out = Tensor(np.zeros((n + (rank == 0), 2), np.float32))
    raises_everywhere(lambda: ops.all_gather_into_tensor_uneven(
        out, Tensor(np.ones((1, 2), np.float32)), [1] * n),
        "rank 0: #", "refused: For 'all_gather_into_tensor_uneven', the sum of "
        "'output_split_sizes' should be the dim 0 size")
    still_in_step()


def test_every_rank_refusing_differently_raises_one_error():
    rank, n = world()
    x = Tensor(np.ones(rank, np.float32))          # never the n elements the sizes sum to
    raises_everywhere(lambda: ops.ReduceScatterV()(x, [1] * n),
                      "rank 0: #", f"rank {n - 1}: #",
                      f"the 'input_x' length: {n - 1}, but got")
    still_in_step()


def test_the_same_bad_arguments_everywhere_raise_their_own_error():
    n = get_group_size()
    with pytest.raises(ValueError, match=r"^For 'ReduceScatterV', the length of "
                                         r"'input_split_sizes' should be == rank_size"):
        ops.ReduceScatterV()(Tensor(np.ones(4, np.float32)), [4] + [0] * n)
    still_in_step()
