"""ops.gather_into_tensor, ops.scatter_tensor, ops.all_to_all_v_c (MindSpore 2.10's
ops.communication, torch-style: results written into the caller's Tensors) and
communication.get_comm_name / get_process_group_ranks, on real MPI worlds against numpy
over every rank's inputs (each rank rebuilds them from seeds); eager and in ms.jit."""
import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Tensor, ops
from msops.communication import (create_group, destroy_group, get_comm_name, get_group_size,
                                 get_process_group_ranks, get_rank)
from test_fused_comm import pair_group

RANKS = (2, 4, 8)


def world():
    return get_rank(), get_group_size()


def data(rank, shape, salt=0):
    return np.random.default_rng(1000 * salt + rank).standard_normal(shape).astype(np.float32)


def _counts(n):
    """send_count_matrix: rank i sends (i + j) % 3 rows to rank j (some none)."""
    return [(i + j) % 3 for i in range(n) for j in range(n)]


# -- gather_into_tensor, scatter_tensor ---------------------------------------------------------

def test_gather_into_tensor_fills_dst_only():
    me, n = world()
    dst = n - 1
    out = Tensor(np.full((2 * n, 3), -1, np.float32))
    assert ops.gather_into_tensor(out, Tensor(data(me, (2, 3))), dst=dst) is None
    if me == dst:
        np.testing.assert_array_equal(out.asnumpy(),
                                      np.concatenate([data(r, (2, 3)) for r in range(n)]))
    else:
        np.testing.assert_array_equal(out.asnumpy(), np.full((2 * n, 3), -1, np.float32))
    handle = ops.gather_into_tensor(out, Tensor(data(me, (2, 3))), dst=0, async_op=True)
    handle.wait()
    assert handle.is_completed()


def test_scatter_tensor_gives_each_rank_its_slice():
    me, n = world()
    src = n // 2
    out = Tensor(np.zeros((2, 3), np.float32))
    source = data(src, (2 * n, 3)) if me == src else np.zeros((2 * n, 3), np.float32)
    assert ops.scatter_tensor(out, Tensor(source), src=src) is None
    np.testing.assert_array_equal(out.asnumpy(), data(src, (2 * n, 3))[2 * me:2 * me + 2])


def test_gather_and_scatter_compiled():
    me, n = world()

    @ms.jit
    def f(x):
        gathered = x * 0
        gathered = ops.Tile()(gathered, (n, 1))
        ops.gather_into_tensor(gathered, x, dst=0)
        part = x[:1] * 0
        ops.scatter_tensor(part, ops.Tile()(x, (n, 1)), src=1)
        return gathered, part
    gathered, part = f(Tensor(data(me, (1, 4))))
    if me == 0:
        np.testing.assert_array_equal(gathered.asnumpy(),
                                      np.concatenate([data(r, (1, 4)) for r in range(n)]))
    else:
        np.testing.assert_array_equal(gathered.asnumpy(), np.zeros((n, 4), np.float32))
    np.testing.assert_array_equal(part.asnumpy(), data(1, (1, 4)))


def test_gather_and_scatter_errors():
    me, n = world()
    with pytest.raises(TypeError, match="For 'gather_into_tensor', the 'output_tensor'"):
        ops.gather_into_tensor(np.zeros(3), Tensor(data(me, (1, 3))))
    with pytest.raises(ValueError, match="For 'gather_into_tensor', the 'dst' should be a "
                                         "global rank"):
        ops.gather_into_tensor(Tensor(np.zeros((n, 3), np.float32)), Tensor(data(me, (1, 3))),
                               dst=n)
    with pytest.raises(ValueError, match="For 'scatter_tensor', the 'tensor' shape\\[0\\] "
                                         "should be divisible"):
        ops.scatter_tensor(Tensor(np.zeros((1, 3), np.float32)),
                           Tensor(np.zeros((n + 1, 3), np.float32)))
    with pytest.raises(TypeError, match="For 'scatter_tensor', the 'async_op' should be a "
                                        "bool"):
        ops.scatter_tensor(Tensor(np.zeros((1, 3), np.float32)),
                           Tensor(np.zeros((n, 3), np.float32)), async_op=1)


# -- all_to_all_v_c -----------------------------------------------------------------------------

def test_all_to_all_v_c_moves_the_counted_rows():
    me, n = world()
    counts = _counts(n)
    sends = [counts[me * n + j] for j in range(n)]
    recvs = [counts[q * n + me] for q in range(n)]
    x = data(me, (sum(sends), 2, 3))
    out = Tensor(np.full((sum(recvs), 2, 3), -1, np.float32))
    assert ops.all_to_all_v_c(out, Tensor(x), counts) is None
    pieces = []
    for q in range(n):      # rank q's rows for this rank, rebuilt from q's seed
        q_sends = [counts[q * n + j] for j in range(n)]
        start = sum(q_sends[:me])
        pieces.append(data(q, (sum(q_sends), 2, 3))[start:start + q_sends[me]])
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(pieces))


def test_all_to_all_v_c_mindspore_example_and_tensor_counts():
    """MindSpore's example on two ranks of a pair group: rank 0 sends its 3 elements to
    rank 1, rank 1 its 3 to rank 0; the matrix may be an int Tensor."""
    me, n = world()
    with pair_group("a2avc_pair") as (group, mine):
        out = Tensor(np.zeros(3, np.float32))
        tensor = Tensor(np.array([0, 1, 2], np.float32) * me)
        ops.all_to_all_v_c(out, tensor, Tensor(np.array([0, 3, 3, 0])), group=group)
        other = mine[1 - mine.index(me)]
        np.testing.assert_array_equal(out.asnumpy(), np.array([0, 1, 2], np.float32) * other)


def test_all_to_all_v_c_compiled():
    me, n = world()
    counts = [1] * (n * n)

    @ms.jit
    def f(x):
        out = x * 0
        ops.all_to_all_v_c(out, x, counts)
        return out
    got = f(Tensor(data(me, (n, 2))))
    np.testing.assert_array_equal(got.asnumpy(), np.stack([data(q, (n, 2))[me] for q in range(n)]))


def test_all_to_all_v_c_errors():
    me, n = world()
    x = Tensor(data(me, (n, 2)))
    with pytest.raises(ValueError, match=rf"For 'all_to_all_v_c', the 'send_count_matrix' "
                                         rf"should be {n * n} non-negative ints"):
        ops.all_to_all_v_c(x * 0, x, [1] * n)
    with pytest.raises(TypeError, match="For 'all_to_all_v_c', the 'send_count_matrix' should "
                                        "be a list of ints"):
        ops.all_to_all_v_c(x * 0, x, 3)
    with pytest.raises(ValueError, match=rf"For 'all_to_all_v_c', the 'input' dim 0 should be "
                                         rf"the sum of 'send_count_matrix' row {me}"):
        ops.all_to_all_v_c(x * 0, x, [2] * (n * n))
    with pytest.raises(TypeError, match="For 'all_to_all_v_c', the 'output' should be a Tensor"):
        ops.all_to_all_v_c(None, x, [1] * (n * n))


def test_all_to_all_v_c_ranks_whose_matrices_disagree_raise_everywhere():
    me, n = world()
    counts = [1] * (n * n)
    if me == 0:          # rank 0 claims it receives 2 rows from rank 1, which sends 1
        counts[1 * n + 0] = 2
    rows = sum(counts[q * n + me] for q in range(n))
    with pytest.raises(ValueError) as err:
        ops.all_to_all_v_c(Tensor(np.zeros((rows, 2), np.float32)),
                           Tensor(data(me, (sum(counts[me * n:(me + 1) * n]), 2))), counts)
    msg = str(err.value)
    assert MPI.COMM_WORLD.allgather(msg) == [msg] * n
    ok = Tensor(np.zeros((n, 2), np.float32))      # still in step
    ops.all_to_all_v_c(ok, Tensor(data(me, (n, 2))), [1] * (n * n))
    np.testing.assert_array_equal(ok.asnumpy(), np.stack([data(q, (n, 2))[me] for q in range(n)]))


# -- communication: get_comm_name, get_process_group_ranks ----------------------------------------

def test_comm_names_and_group_ranks():
    me, n = world()
    assert get_process_group_ranks() == list(range(n))
    assert get_process_group_ranks("hccl_world_group") == list(range(n))
    assert get_comm_name() == "MPI_COMM_WORLD"
    evens = list(range(0, n, 2))
    create_group("names_evens", evens)
    try:
        assert get_process_group_ranks("names_evens") == evens
        if me in evens:
            assert get_comm_name("names_evens") == "names_evens"
        else:
            with pytest.raises(ValueError, match="not a member of group 'names_evens'"):
                get_comm_name("names_evens")
    finally:
        destroy_group("names_evens")
    with pytest.raises(ValueError, match="For 'get_process_group_ranks', the 'group' should be "
                                         "a created group"):
        get_process_group_ranks("nope")
    with pytest.raises(TypeError, match="For 'get_comm_name', the type of 'group' should be str"):
        get_comm_name(3)
