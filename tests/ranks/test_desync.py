"""The eager collective check on real MPI: each mismatch of issue 16 raises the same clear
ValueError on every rank (checked by gathering every rank's message), returns no wrong
value, and leaves the ranks in step for the calls that follow."""
import json
import os
import re

import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Tensor, ops
from msops.communication import create_group, destroy_group, get_group, get_group_size, get_rank

RANKS = (2, 4, 8)


def same_everywhere(text: str) -> str:
    """`text`, asserted equal on every rank (a gather of every rank's)."""
    every = MPI.COMM_WORLD.allgather(text)
    assert every == [text] * len(every), every
    return text


def raises_everywhere(fn, *sides: str) -> str:
    """fn() raises a ValueError on every rank, the same message, naming every side."""
    with pytest.raises(ValueError) as err:
        fn()
    msg = same_everywhere(str(err.value))
    assert msg.startswith("For the collective calls of group 'world_group', every rank should "
                          "make the same call"), msg
    for side in sides:
        assert side in msg, (side, msg)
    return msg


def still_in_step():
    """After an error the ranks still agree: a checked AllReduce gives the right sum."""
    n = get_group_size()
    out = ops.AllReduce()(Tensor(np.full(3, get_rank() + 1, np.float32))).asnumpy()
    np.testing.assert_array_equal(out, np.full(3, n * (n + 1) / 2, np.float32))


def x23(rows: int = 2) -> Tensor:
    return Tensor(np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + get_rank())


def test_different_ops():
    r = get_rank()
    fn = (lambda: ops.AllGather()(x23())) if r == 0 else (lambda: ops.AllReduce()(x23()))
    msg = raises_everywhere(fn, "rank 0: #", "AllGather(", "AllReduce(op='sum'",
                            "[2, 3] Float32")
    assert "test_desync.py:" in msg              # each side's source line
    still_in_step()


def test_different_reduce_ops():
    op = "sum" if get_rank() == 0 else "max"
    raises_everywhere(lambda: ops.AllReduce(op)(x23()), "AllReduce(op='sum'", "AllReduce(op='max'")
    still_in_step()


def test_different_alltoall_dims():
    n, r = get_group_size(), get_rank()
    split = 0 if r == 0 else 1
    x = Tensor(np.ones((n, n), np.float32))
    raises_everywhere(lambda: ops.AlltoAll(n, split, 0)(x), "split_dim=0", "split_dim=1")
    still_in_step()


def test_different_broadcast_roots_leave_inputs_alone():
    r = get_rank()
    mine = np.full((2, 2), r, np.float32)
    x = Tensor(mine.copy())
    root = 0 if r == 0 else 1
    raises_everywhere(lambda: ops.Broadcast(root)((x,)), "root_rank=0", "root_rank=1")
    np.testing.assert_array_equal(x.asnumpy(), mine)
    still_in_step()


def test_different_shapes():
    rows = 2 if get_rank() == 0 else 4
    raises_everywhere(lambda: ops.AllGather()(x23(rows)), "[2, 3] Float32", "[4, 3] Float32")
    still_in_step()


def test_different_dtypes_in_a_sub_group():
    from msops.communication import create_group
    if "g01_desync" not in ms.communication.management._state.groups:
        create_group("g01_desync", [0, 1])
    if get_rank() > 1:
        return
    x = Tensor(np.ones(3, np.float32 if get_rank() == 0 else np.float64))
    with pytest.raises(ValueError, match="group 'g01_desync'.*Float32.*Float64"):
        ops.AllReduce(group="g01_desync")(x)


def test_check_off_runs_matching_calls_unchecked():
    ms.set_context(check_collectives=False)
    try:
        still_in_step()
        out = ops.AllGather()(x23()).asnumpy()
        n = get_group_size()
        expected = np.concatenate([np.arange(6, dtype=np.float32).reshape(2, 3) + r
                                   for r in range(n)])
        np.testing.assert_array_equal(out, expected)
    finally:
        ms.set_context(check_collectives=True)
    still_in_step()


def _lines(msg: str) -> set:
    return set(re.findall(r"test_desync\.py:(\d+): return ops\.(?:AllReduce|AllToAllV)\(", msg))


def test_the_same_call_from_two_source_lines():
    n, x = get_group_size(), x23()
    v = Tensor(np.arange(n, dtype=np.int32))
    if get_rank() == 0:
        def fn():
            return ops.AllReduce()(x)

        def run():
            return ops.AllToAllV()(v, [1] * n)
    else:
        def fn():
            return ops.AllReduce()(x)

        def run():
            return ops.AllToAllV()(v, [1] * n)
    msg = raises_everywhere(fn, "rank 0: #", "AllReduce(op='sum'", ") on [2, 3] Float32 at "
                            "test_desync.py:")
    assert len(_lines(msg)) == 2, msg
    still_in_step()
    # AllToAllV carries the check in its count exchange: the same, with no extra collective
    msg = raises_everywhere(run, "AllToAllV(block_size=1, check_counts=True) on Int32, send "
                            f"counts {[1] * n} (receive side derived) at test_desync.py:")
    assert len(_lines(msg)) == 2, msg
    still_in_step()
    # with the check off, such a program runs
    ms.set_context(check_collectives=False)
    try:
        expected = np.arange(6, dtype=np.float32).reshape(2, 3) * n + n * (n - 1) / 2
        np.testing.assert_array_equal(fn().asnumpy(), expected)
        np.testing.assert_array_equal(run().asnumpy(), np.full(n, get_rank(), np.int32))
    finally:
        ms.set_context(check_collectives=True)
    still_in_step()


def test_alltoallv_count_mismatch_in_the_checks_format():
    n, r = get_group_size(), get_rank()
    send = [1] * n
    recv = [2] + [1] * (n - 1) if r == n - 1 else [1] * n      # the last rank expects 2 from 0
    x = Tensor(np.zeros(n, np.float32))
    msg = raises_everywhere(lambda: ops.AllToAllV()(x, send, recv),
                            f"rank {n - 1}: #", f"send counts {send}, recv counts {recv} at "
                            "test_desync.py:", f"AllToAllV: every rank's recv_counts[i] should "
                            f"equal rank i's send_counts to it, but got: rank 0 sends 1 to rank "
                            f"{n - 1} but rank {n - 1} expects 2.")
    assert msg.count(" at test_desync.py:") == 2, msg          # the agreeing ranks, and the last
    still_in_step()


# -- compiled graphs: the whole program, checked once at compile ----------------------------

class _MatMulNet(ms.nn.Cell):
    def __init__(self, strategy: tuple, rows: int = 4) -> None:
        super().__init__()
        self.w = ms.Parameter(Tensor(np.ones((rows, 4), np.float32)), name="w")
        self.mm = ops.MatMul().shard(strategy)

    def construct(self, v):
        return self.mm(v, self.w)


def _compile_error(net, v) -> str:
    n = get_group_size()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError) as err:
            net(v)
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return same_everywhere(str(err.value))


def test_graph_ranks_with_different_strategies_fail_alike_at_compile():
    n, r = get_group_size(), get_rank()
    mine = ((1, 1), (1, n)) if r == 1 else ((n, 1), (1, 1))
    msg = _compile_error(_MatMulNet(mine), Tensor(np.ones((4, 4), np.float32)))
    others = ", ".join(str(i) for i in range(n) if i != 1)
    assert msg.startswith("For '_MatMulNet.compile', every rank should compile the same program"), msg
    assert f"rank 1: MatMul(transpose_a=False, transpose_b=False) in_strategy ((1, 1), (1, {n}))" \
        in msg, msg
    assert f"rank{'s' if n > 2 else ''} {others}: MatMul(transpose_a=False, transpose_b=False) " \
           f"in_strategy (({n}, 1), (1, 1))" in msg, msg
    assert "test_desync.py:" in msg and "return self.mm(v, self.w)" in msg


class _AddNet(ms.nn.Cell):
    def __init__(self, shape: tuple) -> None:
        super().__init__()
        self.b = ms.Parameter(Tensor(np.ones(shape, np.float32)), name="b")

    def construct(self, v):
        return v + self.b


def test_graph_ranks_with_different_parameter_shapes_fail_alike_at_compile():
    shape = (4,) if get_rank() == 0 else (1, 4)
    msg = _compile_error(_AddNet(shape), Tensor(np.ones((4, 4), np.float32)))
    assert "rank 0: parameter b: [4] Float32" in msg and ": parameter b: [1, 4] Float32" in msg, msg


def test_ranks_may_name_their_own_strategy_files(tmp_path_factory):
    """MindSpore's tutorials give each rank its own strategy file
    (`strategy_ckpt_config={"save_file": f".../strategy{rank}.ckpt"}`): file names are not
    part of the program the ranks must agree on; the files' contents are the same."""
    n, r = get_group_size(), get_rank()
    base = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("strategies")) if r == 0 else None)
    path = f"{base}/strategy{r}.json"
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True, strategy_ckpt_config={"save_file": path})
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        out = _MatMulNet(((n, 1), (1, 1)))(Tensor(np.ones((8, 4), np.float32)))
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    assert out.shape == (8 // n, 4)
    MPI.COMM_WORLD.Barrier()
    contents = [json.load(open(f"{base}/strategy{i}.json")) for i in range(n)]
    assert all(c == contents[0] for c in contents)
    assert contents[0]["parallel_strategy_item"]["mm"]["parallel_strategy"] == [[n, 1], [1, 1]]


def test_a_call_through_an_msops_api_shows_the_users_current_line():
    """Calls from one msops API line (comm_func.all_reduce) made from two user lines: the
    mismatch names the second user line, not the first call's."""
    from msops.communication import comm_func
    t = Tensor(np.ones(3, np.float32))
    comm_func.all_reduce(t)                                   # first line: all agree
    op = "max" if get_rank() == 0 else "sum"
    msg = raises_everywhere(lambda: comm_func.all_reduce(t, op),  # second line: they differ
                            "# second line: they differ")
    assert "# first line" not in msg, msg
    still_in_step()


def test_the_check_exchange_is_persistent_where_the_host_has_a_core_a_rank():
    """MPI-4 persistent Allreduce where each rank has a core (or MSOPS_CHECK_EXCHANGE says
    so), the blocking call otherwise; alike on every rank, in sub-groups too, freed with
    its group, and a mismatch is still caught either way."""
    n, me = get_group_size(), get_rank()
    kind = os.environ.get("MSOPS_CHECK_EXCHANGE")
    want = MPI.Get_version() >= (4, 0) and (
        kind == "persistent" if kind else n <= len(os.sched_getaffinity(0)))
    assert (get_group().digests.request is not None) == want
    create_group("evens", list(range(0, n, 2)))
    sub = get_group("evens").digests
    if me % 2 == 0:
        assert (sub.request is not None) == want
        assert sub.agree(7) and sub.agree(me) == (n <= 2)
        if n > 2:           # rank 0 gives 3 elements, rank 2 gives 2
            x = Tensor(np.ones(2 + (me == 0), np.float32))
            with pytest.raises(ValueError, match="every rank should make the same call"):
                ops.AllReduce(group="evens")(x)
        out = ops.AllReduce(group="evens")(Tensor(np.ones(2, np.float32))).asnumpy()
        np.testing.assert_array_equal(out, [(n + 1) // 2] * 2)
    else:
        assert sub is None
    destroy_group("evens")
    assert sub is None or sub.request is None
    still_in_step()
