"""comm_func and mint.distributed on real MPI worlds, against numpy.

Every rank builds every rank's input (`data`), so each reference is computed from the
inputs alone. Sub-groups, in-place writes (the caller's Tensor changes, nothing else),
async handles, graph mode, and errors: a mismatch between ranks raises the same error on
every rank (`same_everywhere`).
"""
import gc

import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Tensor
from msops.communication import comm_func, create_group, get_group_size, get_rank
from msops.mint import distributed as dist

RANKS = (2, 4)

NP_OP = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


def world():
    return get_rank(), get_group_size()


def data(r: int, shape=(4, 3), dtype=np.float32) -> np.ndarray:
    """Rank r's input: small rank-dependent values (exact in every dtype used here)."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 3 + r * 5) % 7 - 3 + r).reshape(shape).astype(dtype)


def everyone(shape=(4, 3), dtype=np.float32, ranks=None) -> list:
    return [data(r, shape, dtype) for r in (ranks if ranks is not None else
                                           range(get_group_size()))]


def same_everywhere(exc: type, call) -> str:
    """`call` raises `exc` on every rank, with one message; returns it."""
    with pytest.raises(exc) as info:
        call()
    messages = MPI.COMM_WORLD.allgather(str(info.value))
    assert len(set(messages)) == 1, messages
    return messages[0]


# -- comm_func ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=["f32", "i32"])
def test_all_reduce(op, dtype):
    me, n = world()
    out, h = comm_func.all_reduce(Tensor(data(me, dtype=dtype)), op)
    assert h is None
    np.testing.assert_array_equal(out.asnumpy(), NP_OP[op].reduce(everyone(dtype=dtype)))


def test_gather_scatter_family():
    me, n = world()
    x = Tensor(data(me))
    out, h = comm_func.all_gather_into_tensor(x, async_op=True)
    assert h.wait() is None
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()))
    rows = data(me, (2 * n, 3))
    out, _ = comm_func.reduce_scatter_tensor(Tensor(rows))
    total = np.sum([data(r, (2 * n, 3)) for r in range(n)], axis=0)
    np.testing.assert_array_equal(out.asnumpy(), total[2 * me:2 * me + 2])
    dst = n - 1
    out = comm_func.reduce(x, dst, "max")
    if me == dst:
        np.testing.assert_array_equal(out.asnumpy(), np.max(everyone(), axis=0))
    else:
        np.testing.assert_array_equal(out.asnumpy(), np.zeros(1, np.float32))
    np.testing.assert_array_equal(comm_func.broadcast(x, 1).asnumpy(), data(1))
    out = comm_func.gather_into_tensor(x, dst=1)
    if me == 1:
        np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()))
    else:
        assert out.shape == (1,)
    out = comm_func.scatter_tensor(Tensor(data(me, (2 * n, 3))), src=1)
    np.testing.assert_array_equal(out.asnumpy(), data(1, (2 * n, 3))[2 * me:2 * me + 2])
    assert comm_func.barrier() is None


def test_send_recv_pairs():
    me, n = world()
    peer = me ^ 1                                  # pairs (0, 1), (2, 3)
    x = Tensor(data(me, (3, 5)))
    if me % 2 == 0:
        assert comm_func.send(x, peer) is None
        got, h = comm_func.irecv(Tensor(np.zeros((3, 5), np.float32)), peer, tag=7)
        assert h.wait() is None
    else:
        got = comm_func.recv(Tensor(np.zeros((3, 5), np.float32)), peer)
        assert comm_func.isend(x, peer, tag=7).wait() is None
    np.testing.assert_array_equal(got.asnumpy(), data(peer, (3, 5)))


def rows_between(src: int, dst: int) -> int:
    """How many rows rank src sends rank dst in the uneven all-to-alls (0 included)."""
    return (src + 2 * dst) % 3


def block(src: int, dst: int, width: int = 2) -> np.ndarray:
    k = rows_between(src, dst)
    return (1000 * src + 100 * dst + np.arange(k * width)).reshape(k, width).astype(np.float32)


def test_all_to_all_single_uneven():
    me, n = world()
    send = np.concatenate([block(me, j) for j in range(n)])
    expected = np.concatenate([block(r, me) for r in range(n)])
    out, _ = comm_func.all_to_all_single_with_output_shape(
        expected.shape, Tensor(send), [rows_between(r, me) for r in range(n)],
        [rows_between(me, j) for j in range(n)])
    np.testing.assert_array_equal(out.asnumpy(), expected)
    even = data(me, (2 * n, 3))
    out, _ = comm_func.all_to_all_single_with_output_shape(Tensor(even), Tensor(even))
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(
        [data(r, (2 * n, 3))[2 * me:2 * me + 2] for r in range(n)]))


def test_all_to_all_with_output_shape():
    me, n = world()
    sends = [Tensor(np.full((me + 1, j + 1), 10 * me + j, np.int64)) for j in range(n)]
    outs, h = comm_func.all_to_all_with_output_shape([(r + 1, me + 1) for r in range(n)], sends,
                                                     async_op=True)
    assert h.wait() is None and len(outs) == n
    for r, t in enumerate(outs):
        np.testing.assert_array_equal(t.asnumpy(), np.full((r + 1, me + 1), 10 * r + me))


@pytest.mark.parametrize("size", [3, 1 << 20], ids=["small", "4MB"])
def test_batch_isend_irecv_ring_both_ways(size):
    """Every rank sends to both neighbours and receives from both: blocking sends in list
    order would deadlock on large messages; the pair order cannot."""
    me, n = world()
    nxt, prv = (me + 1) % n, (me - 1) % n
    mine = np.arange(size, dtype=np.float32) + me
    ops_ = [comm_func.P2POp("isend", Tensor(mine), nxt),
            comm_func.P2POp(comm_func.irecv, (size,), prv, recv_dtype=ms.float32),
            comm_func.P2POp(comm_func.isend, Tensor(mine * 2), prv),
            comm_func.P2POp("irecv", Tensor(np.zeros(size, np.float32)), nxt)]
    got = comm_func.batch_isend_irecv(ops_)
    assert got[0].shape == () and got[2].shape == ()
    np.testing.assert_array_equal(got[1].asnumpy(), np.arange(size, dtype=np.float32) + prv)
    np.testing.assert_array_equal(got[3].asnumpy(), (np.arange(size, dtype=np.float32) + nxt) * 2)


def test_sub_groups_use_global_ranks():
    me, n = world()
    create_group("cf_reversed", list(range(n))[::-1])          # group rank i = world n-1-i
    x = Tensor(data(me))
    out, _ = comm_func.all_gather_into_tensor(x, "cf_reversed")
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()[::-1]))
    np.testing.assert_array_equal(comm_func.broadcast(x, 0, "cf_reversed").asnumpy(), data(0))
    out = comm_func.gather_into_tensor(x, dst=0, group="cf_reversed")
    if me == 0:
        np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()[::-1]))
    odd = [r for r in range(n) if r % 2]
    g = dist.new_group(odd)
    if me in odd:
        out, _ = comm_func.all_reduce(x, group=g)
        np.testing.assert_array_equal(out.asnumpy(), np.sum(everyone(ranks=odd), axis=0))
        assert dist.get_rank(g) == odd.index(me)
    else:
        assert dist.get_rank(g) == -1
        with pytest.raises(ValueError, match="should be a member of group"):
            comm_func.all_reduce(x, group=g)


def test_comm_func_compiled():
    me, n = world()

    @ms.jit
    def f(t):
        a, _ = comm_func.all_reduce(t)
        b, _ = comm_func.all_to_all_single_with_output_shape((4, 3), t * 2)
        return a, b
    a, b = f(Tensor(data(me)))
    np.testing.assert_array_equal(a.asnumpy(), np.sum(everyone(), axis=0))
    # (4, 3) split evenly: rows i*4/n.. of every rank's 2*data come back in rank order
    k = 4 // n if 4 % n == 0 else None
    if k:
        np.testing.assert_array_equal(b.asnumpy(), np.concatenate(
            [2 * data(r)[me * k:(me + 1) * k] for r in range(n)]))


def test_point_to_point_compiled():
    me, n = world()
    nxt, prv = (me + 1) % n, (me - 1) % n

    @ms.jit
    def ring(t):
        got = comm_func.batch_isend_irecv([comm_func.P2POp("isend", t * 2, nxt),
                                           comm_func.P2POp("irecv", t, prv)])
        return got[1]
    np.testing.assert_array_equal(ring(Tensor(data(me, (6,)))).asnumpy(), 2 * data(prv, (6,)))
    peer = me ^ 1

    @ms.jit
    def pair(t):
        if me % 2 == 0:
            comm_func.send(t + 1, peer)
            return t
        return comm_func.recv(t, peer)
    np.testing.assert_array_equal(pair(Tensor(data(me, (3,)))).asnumpy(),
                                  data(me, (3,)) if me % 2 == 0 else data(peer, (3,)) + 1)


# -- mint.distributed: results written into the caller's Tensors -------------------------------

def test_mint_all_reduce_in_place_nothing_else():
    me, n = world()
    dist.init_process_group()                      # the running world is kept
    assert (dist.get_rank(), dist.get_world_size()) == (me, n)
    t = Tensor(data(me))
    buffer, bystander = t.asnumpy(), Tensor(data(me))
    assert dist.all_reduce(t) is None
    assert t.asnumpy() is buffer
    np.testing.assert_array_equal(t.asnumpy(), np.sum(everyone(), axis=0))
    np.testing.assert_array_equal(bystander.asnumpy(), data(me))
    h = dist.all_reduce(bystander, "min", async_op=True)
    assert h.wait() is None
    np.testing.assert_array_equal(bystander.asnumpy(), np.min(everyone(), axis=0))


def test_returning_form_after_set_comm_ops_inplace_false():
    """MindSpore 2.9+'s switch: the four functions with a returning form give (Tensor,
    handle) and leave their arguments alone; the others keep writing in place."""
    from msops import ops
    me, n = world()
    t = Tensor(data(me))
    ops.set_comm_ops_inplace(False)
    try:
        got, h = ops.all_reduce(t, "max")
        assert h is None
        np.testing.assert_array_equal(got.asnumpy(), np.max(everyone(), axis=0))
        np.testing.assert_array_equal(t.asnumpy(), data(me))
        got, _ = ops.all_gather_into_tensor(None, t)
        np.testing.assert_array_equal(got.asnumpy(), np.concatenate(everyone()))
        x = Tensor(data(me, (2 * n, 3)))
        got, h = ops.reduce_scatter_tensor(None, x, async_op=True)
        h.wait()
        np.testing.assert_array_equal(got.asnumpy(), np.split(np.sum(
            [data(r, (2 * n, 3)) for r in range(n)], axis=0), n)[me])
        got, _ = ops.all_to_all_single((n, 3), Tensor(data(me, (n, 3))))
        np.testing.assert_array_equal(got.asnumpy(), np.stack(
            [data(r, (n, 3))[me] for r in range(n)]))
        ops.set_comm_ops_inplace(True, ["all_reduce"])
        assert ops.all_reduce(t) is None
        np.testing.assert_array_equal(t.asnumpy(), np.sum(everyone(), axis=0))
        assert isinstance(ops.reduce_scatter_tensor(None, x), tuple)   # still returning
    finally:
        ops.set_comm_ops_inplace(True)


def test_mint_gathers_and_scatters():
    me, n = world()
    x = Tensor(data(me))
    lst = [Tensor(np.zeros((4, 3), np.float32)) for _ in range(n)]
    dist.all_gather(lst, x)
    for r in range(n):
        np.testing.assert_array_equal(lst[r].asnumpy(), data(r))
    out = Tensor(np.zeros((n * 4, 3), np.float32))
    dist.all_gather_into_tensor(out, x)
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()))
    mine = Tensor(np.zeros((2, 3), np.float32))
    dist.reduce_scatter_tensor(mine, Tensor(data(me, (2 * n, 3))), "max")
    np.testing.assert_array_equal(mine.asnumpy(), np.max(
        [data(r, (2 * n, 3)) for r in range(n)], axis=0)[2 * me:2 * me + 2])
    dist.reduce_scatter(mine, [Tensor(data(me + 10 * j, (2, 3))) for j in range(n)])
    np.testing.assert_array_equal(mine.asnumpy(), np.sum(
        [data(r + 10 * me, (2, 3)) for r in range(n)], axis=0))
    t = Tensor(data(me))
    dist.reduce(t, dst=1, op="sum")
    np.testing.assert_array_equal(t.asnumpy(), np.sum(everyone(), axis=0) if me == 1
                                  else data(me))              # only dst's Tensor changes
    t = Tensor(data(me))
    dist.broadcast(t, src=n - 1)
    np.testing.assert_array_equal(t.asnumpy(), data(n - 1))
    t = Tensor(np.zeros((4, 3), np.float32))
    dist.scatter(t, [Tensor(data(50 + j)) for j in range(n)] if me == 0 else None, src=0)
    np.testing.assert_array_equal(t.asnumpy(), data(50 + me))
    gl = [Tensor(np.zeros((4, 3), np.float32)) for _ in range(n)] if me == n - 1 else None
    dist.gather(x, gl, dst=n - 1)
    if me == n - 1:
        for r in range(n):
            np.testing.assert_array_equal(gl[r].asnumpy(), data(r))


def test_mint_all_to_all_uneven():
    me, n = world()
    outs = [Tensor(np.zeros((rows_between(r, me), 2), np.float32)) for r in range(n)]
    dist.all_to_all(outs, [Tensor(block(me, j)) for j in range(n)])
    for r in range(n):
        np.testing.assert_array_equal(outs[r].asnumpy(), block(r, me))
    expected = np.concatenate([block(r, me) for r in range(n)])
    out = Tensor(np.zeros(expected.shape, np.float32))
    dist.all_to_all_single(out, Tensor(np.concatenate([block(me, j) for j in range(n)])),
                           [rows_between(r, me) for r in range(n)],
                           [rows_between(me, j) for j in range(n)])
    np.testing.assert_array_equal(out.asnumpy(), expected)


def test_mint_sub_group_global_ranks():
    me, n = world()
    evens = list(range(0, n, 2)) if n > 2 else [1, 0]           # sorted by new_group
    g = dist.new_group(evens)
    members = sorted(evens)
    assert dist.get_process_group_ranks(g) == members
    t = Tensor(data(me))
    if me not in members:
        assert (dist.get_rank(g), dist.get_world_size(g)) == (-1, -1)
        return
    assert dist.get_world_size(g) == len(members)
    last = members[-1]
    dist.broadcast(t, src=last, group=g)                       # a global rank
    np.testing.assert_array_equal(t.asnumpy(), data(last))
    t = Tensor(data(me))
    dist.all_reduce(t, group=g)
    np.testing.assert_array_equal(t.asnumpy(), np.sum(everyone(ranks=members), axis=0))
    lst = [Tensor(np.zeros((4, 3), np.float32)) for _ in members]
    dist.all_gather(lst, Tensor(data(me)), group=g)
    for r, got in zip(members, lst):
        np.testing.assert_array_equal(got.asnumpy(), data(r))


def test_mint_point_to_point():
    me, n = world()
    peer = me ^ 1
    t = Tensor(np.zeros(4, np.int32))
    if me % 2 == 0:
        dist.send(Tensor(data(me, (4,), np.int32)), peer)
        assert dist.irecv(t, peer).wait() is None
    else:
        assert dist.recv(t, peer) == 0
        dist.isend(Tensor(data(me, (4,), np.int32)), peer).wait()
    np.testing.assert_array_equal(t.asnumpy(), data(peer, (4,), np.int32))
    nxt, prv = (me + 1) % n, (me - 1) % n
    into = Tensor(np.zeros(5, np.float32))
    handles = dist.batch_isend_irecv([dist.P2POp(dist.irecv, into, prv),
                                      dist.P2POp(dist.isend, Tensor(data(me, (5,))), nxt)])
    assert [h.wait() for h in handles] == [None, None]
    np.testing.assert_array_equal(into.asnumpy(), data(prv, (5,)))


def test_mint_objects():
    me, n = world()
    got = [None] * n
    dist.all_gather_object(got, {"rank": me, "tags": ["r"] * me})
    assert got == [{"rank": r, "tags": ["r"] * r} for r in range(n)]
    lst = [me, "x" * me, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == [1, "x", None]


def test_mint_object_gather_scatter_and_point_to_point():
    me, n = world()
    out = [None] * n if me == 1 else None
    dist.gather_object({"from": me, "sq": me * me}, out, dst=1)
    if me == 1:
        assert out == [{"from": r, "sq": r * r} for r in range(n)]
    mine = [None]
    dist.scatter_object_list(mine, [["item", r, {"k": "v" * r}] for r in range(n)] if me == 0
                             else None, src=0)
    assert mine == [["item", me, {"k": "v" * me}]]
    # a ring: each rank sends its list to the next and receives the previous one's
    nxt, prv = (me + 1) % n, (me - 1) % n
    got = [None, None]
    if me % 2 == 0:
        dist.send_object_list([me, "to %d" % nxt], dst=nxt)
        assert dist.recv_object_list(got, src=prv) == prv
    else:
        assert dist.recv_object_list(got, src=prv) == prv
        dist.send_object_list([me, "to %d" % nxt], dst=nxt)
    assert got == [prv, "to %d" % me]


def test_scatter_object_list_of_the_wrong_length_raises_everywhere():
    me, n = world()
    msg = same_everywhere(TypeError, lambda: dist.scatter_object_list(
        [None], [1] * (n + 1) if me == 0 else None, src=0))
    assert f"should be a list of the group size {n}" in msg


def test_mint_compiled_in_place_values():
    me, n = world()

    @ms.jit
    def f(t):
        y = t + 0
        dist.all_reduce(y, "max")
        return y
    np.testing.assert_array_equal(f(Tensor(data(me))).asnumpy(), np.max(everyone(), axis=0))


# -- errors: a cross-rank mismatch raises the same error on every rank -------------------------

def test_mismatched_shapes_raise_everywhere():
    me, n = world()
    msg = same_everywhere(ValueError, lambda: comm_func.all_reduce(Tensor(data(me, (me + 1,)))))
    assert "every rank should make the same call" in msg


def test_mismatched_roots_raise_everywhere():
    me, n = world()
    msg = same_everywhere(ValueError, lambda: dist.broadcast(Tensor(data(me)), src=me))
    assert "every rank should make the same call" in msg and "root_rank" in msg


def test_mismatched_split_sizes_raise_everywhere():
    me, n = world()
    x = Tensor(np.zeros((n, 2), np.float32))
    recv = [1] * n if me else [2] + [1] * (n - 1)              # rank 0 expects too much
    msg = same_everywhere(ValueError, lambda: comm_func.all_to_all_single_with_output_shape(
        (sum(recv), 2), x, recv, [1] * n))
    assert "recv_counts" in msg


def test_unencodable_object_reported_everywhere():
    me, n = world()
    msg = same_everywhere(TypeError, lambda: dist.all_gather_object(
        [None] * n, {1, 2} if me == n - 1 else me))
    assert f"the object of global rank(s) [{n - 1}] is not" in msg


def test_wrong_output_on_one_rank_blocks_nobody():
    me, n = world()
    out = Tensor(np.zeros((n * 4 + (me == 0), 3), np.float32))
    if me == 0:
        with pytest.raises(ValueError, match="the 'output_tensor' should have shape"):
            dist.all_gather_into_tensor(out, Tensor(data(me)))
    else:
        dist.all_gather_into_tensor(out, Tensor(data(me)))
        np.testing.assert_array_equal(out.asnumpy(), np.concatenate(everyone()))
    dist.barrier()                                  # every rank still in step


def test_isend_does_not_wait_for_the_peer():
    """Pairs exchange 4 MiB (past MPI's eager limit: a blocking send would wait for the
    peer's receive) by isend then recv on both sides, and by irecv then send; the handles
    complete on wait(), the Tensors hold the peer's data."""
    me, n = world()
    peer = me ^ 1
    big = (1024, 1024)
    h = comm_func.isend(Tensor(data(me, big)), peer, tag=3)
    got = comm_func.recv(Tensor(np.zeros(big, np.float32)), peer, tag=3)
    h.wait()
    assert h.is_completed()
    np.testing.assert_array_equal(got.asnumpy(), data(peer, big))
    got, h = comm_func.irecv(Tensor(np.zeros(big, np.float32)), peer, tag=4)
    comm_func.send(Tensor(data(me, big) * 2), peer, tag=4)
    h.wait()
    np.testing.assert_array_equal(got.asnumpy(), data(peer, big) * 2)
    into = Tensor(np.zeros(big, np.float32))                  # mint: into a Tensor
    h_recv = dist.irecv(into, peer, tag=5)
    h_send = dist.isend(Tensor(data(me, big) * 3), peer, tag=5)
    assert h_send.wait() is None and h_recv.wait() is None
    np.testing.assert_array_equal(into.asnumpy(), data(peer, big) * 3)
    comm_func.isend(Tensor(data(me, big) * 4), peer, tag=8)    # handle dropped unwaited
    gc.collect()
    got = comm_func.recv(Tensor(np.zeros(big, np.float32)), peer, tag=8)
    np.testing.assert_array_equal(got.asnumpy(), data(peer, big) * 4)
    # a message of another size: the receiver's wait() raises the receive's ValueError
    h = comm_func.isend(Tensor(data(me, (4, 3))), peer, tag=6)
    _, bad = comm_func.irecv(Tensor(np.zeros((2, 3), np.float32)), peer, tag=6)
    with pytest.raises(ValueError, match=r"For 'Receive', the message from rank \d should "
                                         r"hold 24 bytes .* but got a longer one"):
        bad.wait()
    h.wait()


def test_mint_root_only_arguments_are_checked_on_every_rank():
    """A scatter_list or gather_list only the root passes: a bad one raises the root's
    error on every rank (the others do not wait in a collective the root never joins)."""
    me, n = world()
    t = Tensor(np.zeros((4, 3), np.float32))
    short = [Tensor(data(j)) for j in range(n - 1)] if me == 0 else None
    msg = same_everywhere(ValueError, lambda: dist.scatter(t, short, src=0))
    assert f"the length of 'scatter_list' should be the group size {n}, but got {n - 1}" in msg
    wrong = [Tensor(data(j, (2, 3))) for j in range(n)] if me == 0 else None
    msg = same_everywhere(ValueError, lambda: dist.scatter(t, wrong, src=0))
    assert "the 'scatter_list[0]' should have the 'tensor' shape [4, 3]" in msg
    msg = same_everywhere(TypeError, lambda: dist.gather(t, 5 if me == n - 1 else None,
                                                         dst=n - 1))
    assert "the 'gather_list' should be a list or tuple of Tensors, but got int" in msg
    dist.scatter(t, [Tensor(data(j)) for j in range(n)] if me == 0 else None, src=0)
    np.testing.assert_array_equal(t.asnumpy(), data(me))          # and a good one after
