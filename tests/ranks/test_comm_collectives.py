"""Every collective but AllToAllV on real MPI worlds, against numpy, for every dtype it moves.

Each rank builds every rank's input (`rank_data`), so the numpy reference of an op is
computed from the inputs alone, independently of the code under test.
"""
import weakref

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.common.dtype import all_types
from msops.communication import create_group, create_group_partition, get_group_size, get_rank

RANKS = (1, 2, 4, 8)

# the reduce ops each dtype family allows (the spec, written out independently of comm_ops)
ARITHMETIC = ("sum", "max", "min", "prod")
OPS_OF_KIND = {"int": ARITHMETIC, "uint": ARITHMETIC, "float": ARITHMETIC,
               "complex": ("sum", "prod"), "bool": ("land", "lor", "lxor")}
BITWISE = ("band", "bor", "bxor")
NUMPY_OP = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply,
            "land": np.logical_and, "lor": np.logical_or, "lxor": np.logical_xor,
            "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}
#: (dtype, op) pairs: every dtype with its family's first op; every other op on a few
#: dtypes (both half types: they reduce in float32), bitwise ops on two ints
REDUCE_CASES = [(t, OPS_OF_KIND[t.kind][0]) for t in all_types] + \
    [(t, op) for t in (ms.int8, ms.uint16, ms.float16, ms.bfloat16, ms.float64)
     for op in ("max", "min", "prod")] + \
    [(t, "prod") for t in (ms.complex64, ms.complex128)] + \
    [(ms.bool_, "lor"), (ms.bool_, "lxor")] + \
    [(t, op) for t in (ms.int16, ms.uint32) for op in BITWISE]


def world():
    return get_rank(), get_group_size()


def rank_data(rank: int, shape, dtype, op: str = "sum", n: int = 1) -> np.ndarray:
    """Rank `rank`'s input: small integers (exact in every dtype, sums of 8 fit in int8).

    For prod each element is 2 on one rank and +-1 elsewhere (no overflow); bitwise ops get
    7-bit patterns; bool data mixes True and False along every column.
    """
    i = np.arange(int(np.prod(shape)))
    if dtype.kind == "bool":
        v = (i * (rank + 1)) % 3 != 1
    elif op == "prod":
        v = np.where(i % n == rank, 2, np.where((i + rank) % 3 == 0, -1, 1))
    elif op in BITWISE:
        v = (rank * 37 + i * 11) % 128
    else:
        v = (rank * 7 + i * 3) % 11 - 5
    if dtype.kind == "uint":
        v = np.abs(v)
    if dtype.kind == "complex":
        v = v + 1j * v[::-1]
    return v.reshape(shape).astype(ms.dtype_to_nptype(dtype))


def reduced(op: str, dtype, parts) -> np.ndarray:
    """numpy reduction of the ranks' inputs in the dtype MPI reduces in, rounded once."""
    wide = np.stack(parts).astype(dtype.reduce_np_dtype)
    return NUMPY_OP[op].reduce(wide, axis=0).astype(ms.dtype_to_nptype(dtype))


def case_id(case):
    return f"{case[0]}-{case[1]}"


# -- AllGather family ----------------------------------------------------------------------

def test_allgather_seed000_example():
    n = get_group_size()
    out = ops.AllGather()(Tensor(np.ones([2, 8]).astype(np.float32)))
    assert out.shape == (2 * n, 8) and out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), np.ones([2 * n, 8], np.float32))


def test_allgather_seed003_torch_examples():
    me, n = world()
    out = ops.AllGather()(Tensor(np.arange(2, dtype=np.int64) + 1 + 2 * me))
    assert out.dtype == ms.int64
    tensor_list = np.split(out.asnumpy(), n)              # torch's per-rank list
    for r, t in enumerate(tensor_list):
        np.testing.assert_array_equal(t, np.array([1, 2], np.int64) + 2 * r)
    base = np.array([1 + 1j, 2 + 2j], np.complex64)
    out = ops.AllGather()(Tensor(base + 2 * me * (1 + 1j)))
    assert out.dtype == ms.complex64
    for r, t in enumerate(np.split(out.asnumpy(), n)):
        np.testing.assert_array_equal(t, base + 2 * r * (1 + 1j))
    if n == 2:                                            # the seed's printed values
        np.testing.assert_array_equal(out.asnumpy(), [1 + 1j, 2 + 2j, 3 + 3j, 4 + 4j])


@pytest.mark.parametrize("dtype", all_types, ids=str)
def test_allgather_every_dtype(dtype):
    me, n = world()
    out = ops.AllGather()(Tensor(rank_data(me, (3, 2), dtype)))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), np.concatenate([rank_data(r, (3, 2), dtype)
                                                                 for r in range(n)]))


@pytest.mark.parametrize("dtype", [ms.bfloat16, ms.int8, ms.complex128], ids=str)
def test_accumulation_allgathers_gather_x(dtype):
    me, n = world()
    x = Tensor(rank_data(me, (3, 2), dtype))
    z = Tensor(np.zeros([4], np.float32))                 # the accumulation buffer
    for out in (ops._MiniStepAllGather(grad_accumulation_step=2)(x, z),
                ops._MicroStepAllGather(mean_flag=True)(x, z)):
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.asnumpy(), np.concatenate(
            [rank_data(r, (3, 2), dtype) for r in range(n)]))


@pytest.mark.parametrize("dtype", all_types, ids=str)
def test_collective_gather_every_dtype(dtype):
    me, n = world()
    dest = n - 1
    out = ops.CollectiveGather(dest)(Tensor(rank_data(me, (2, 3), dtype))).asnumpy()
    if me == dest:
        np.testing.assert_array_equal(out, np.concatenate([rank_data(r, (2, 3), dtype)
                                                           for r in range(n)]))
    else:
        np.testing.assert_array_equal(out, np.zeros([1], ms.dtype_to_nptype(dtype)))


@pytest.mark.parametrize("dtype", all_types, ids=str)
def test_collective_scatter_every_dtype(dtype):
    me, n = world()
    src = n - 1
    full = rank_data(src, (2 * n, 3), dtype)
    x = full if me == src else np.zeros_like(full)       # only the source's values count
    out = ops.CollectiveScatter(src)(Tensor(x))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), full[2 * me:2 * me + 2])


# -- reductions ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", REDUCE_CASES, ids=case_id)
def test_allreduce_every_dtype_and_op(case):
    dtype, op = case
    me, n = world()
    parts = [rank_data(r, (n, 3), dtype, op, n) for r in range(n)]
    out = ops.AllReduce(op)(Tensor(parts[me]))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), reduced(op, dtype, parts))


@pytest.mark.parametrize("dtype", all_types, ids=str)
def test_reduce_scatter_and_reduce_every_dtype(dtype):
    me, n = world()
    op = OPS_OF_KIND[dtype.kind][1]                       # max, prod (complex), lor (bool)
    parts = [rank_data(r, (2 * n, 3), dtype, op, n) for r in range(n)]
    expected = reduced(op, dtype, parts)
    x = Tensor(parts[me])
    out = ops.ReduceScatter(op)(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), expected[2 * me:2 * me + 2])
    out = ops.Reduce(n - 1, op)(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), expected if me == n - 1 else
                                  np.zeros([1], expected.dtype))


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16])
def test_half_precision_sums_in_float32_and_rounds_once(dtype):
    me, n = world()
    np_t = ms.dtype_to_nptype(dtype)
    # 1 + (n-1) * 2**-9: rounding after each addition would lose the small addends
    x = np.full([4], 1.0, np_t) if me == 0 else np.full([4], 2.0 ** -9, np_t)
    once = (np.float32(1.0) + np.float32(2.0 ** -9) * (n - 1)).astype(np_t)
    for out in (ops.AllReduce()(Tensor(x)), ops.ReduceScatter()(Tensor(np.tile(x, n)))):
        np.testing.assert_array_equal(out.asnumpy(), np.full(out.shape, once, np_t))
    stepwise = np.asarray(1.0, np_t)
    for _ in range(n - 1):
        stepwise = (stepwise + np.asarray(2.0 ** -9, np_t)).astype(np_t)
    if dtype == ms.bfloat16 and n >= 4:                   # the test can tell the difference
        assert stepwise != once


@pytest.mark.parametrize("dtype", [ms.int32, ms.float32, ms.complex64, ms.uint8])
def test_allreduce_equals_allgather_of_reduce_scatter(dtype):
    me, n = world()
    x = Tensor(rank_data(me, (4 * n, 2), dtype))
    composed = ops.AllGather()(ops.ReduceScatter()(x)).asnumpy()
    np.testing.assert_array_equal(composed, ops.AllReduce()(x).asnumpy())
    np.testing.assert_array_equal(composed, reduced("sum", dtype, [rank_data(r, (4 * n, 2), dtype)
                                                                   for r in range(n)]))


# -- Broadcast, AlltoAll ----------------------------------------------------------------------

def test_broadcast_a_tuple_of_every_dtype():
    me, n = world()
    root = n - 1
    shapes = [(2, 3), (5,), (1, 2, 2)]
    datas = [rank_data(root, shapes[k % 3], t) for k, t in enumerate(all_types)]
    inputs = tuple(Tensor(d if me == root else np.zeros_like(d)) for d in datas)
    outs = ops.Broadcast(root)(inputs)
    assert isinstance(outs, tuple) and len(outs) == len(all_types)
    assert (outs is inputs) == (me == root)                 # the root's inputs themselves
    for out, d, t in zip(outs, datas, all_types):
        assert out.dtype == t
        np.testing.assert_array_equal(out.asnumpy(), d)
    bc, one = ops.Broadcast(root), (Tensor(datas[0] if me == root else np.zeros_like(datas[0])),)
    first, second = bc(one), bc(one)                        # the Python path, then the C one
    assert (first is one and second is one) if me == root else second[0] is not first[0]
    for out in first + second:
        np.testing.assert_array_equal(out.asnumpy(), datas[0])


def alltoall_reference(parts, me, n, split_dim, concat_dim):
    """What rank `me` holds: block `me` of every rank's split, concatenated in rank order."""
    return np.concatenate([np.split(p, n, axis=split_dim)[me] for p in parts], axis=concat_dim)


@pytest.mark.parametrize("split_dim,concat_dim,shape", [
    (0, 0, (2, 3)), (0, 1, (2, 3)), (1, 0, (3, 2)), (-1, 0, (2, 2, 2)), (2, 1, (2, 3, 2)),
    (1, 1, (3, 2, 2))], ids=str)
def test_alltoall_moves_blocks_between_dims(split_dim, concat_dim, shape):
    me, n = world()
    shape = list(shape)
    shape[split_dim] *= n
    parts = [(r * 100 + np.arange(np.prod(shape))).reshape(shape).astype(np.float32)
             for r in range(n)]
    out = ops.AlltoAll(n, split_dim, concat_dim)(Tensor(parts[me]))
    expected = alltoall_reference(parts, me, n, split_dim, concat_dim)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.asnumpy(), expected)


@pytest.mark.parametrize("dtype", all_types, ids=str)
def test_alltoall_every_dtype(dtype):
    me, n = world()
    parts = [rank_data(r, (3, 2 * n), dtype) for r in range(n)]
    out = ops.AlltoAll(n, 1, 0)(Tensor(parts[me]))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), alltoall_reference(parts, me, n, 1, 0))


# -- Barrier, Send / Receive ----------------------------------------------------------------

def test_barrier():
    out = ops.Barrier()()
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), np.zeros([1], np.float32))


def pairs_of(me: int, n: int):
    """Partner in the pairing (0,1), (2,3), ...: None for the odd one out."""
    partner = me ^ 1
    return partner if partner < n else None


def test_send_receive_every_dtype():
    me, n = world()
    partner = pairs_of(me, n)
    if partner is None:                   # a world of 1 (or the last of an odd world)
        with pytest.raises(ValueError, match="the 'dest_rank' should be another rank"):
            ops.Send(0, me)(Tensor(np.ones(2, np.float32)))
        return
    for tag, dtype in enumerate(all_types):
        mine, theirs = rank_data(me, (2, 3), dtype), rank_data(partner, (2, 3), dtype)
        send, recv = ops.Send(tag, partner), ops.Receive(tag, partner, [2, 3], dtype)
        if me % 2 == 0:                   # even ranks send first, so nobody blocks forever
            np.testing.assert_array_equal(send(Tensor(mine)).asnumpy(), mine)   # passes x on
            got = recv()
        else:
            got = recv()
            send(Tensor(mine))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.asnumpy(), theirs)


def test_receive_of_another_size_is_an_error():
    me, n = world()
    partner = pairs_of(me, n)                     # (None: an odd world's last rank)
    x = Tensor(np.arange(3, dtype=np.float32))
    if partner is not None and me % 2 == 0:
        ops.Send(5, partner)(x)
        ops.Send(6, partner)(x)
    elif partner is not None:
        with pytest.raises(ValueError, match=r"^For 'Receive', the message from rank \d should "
                                             r"hold 16 bytes \(shape \[4\], Float32\), but got "
                                             r"12 bytes\.$"):
            ops.Receive(5, partner, [4], ms.float32)()
        # a longer message is the same ValueError, MPI's detail kept
        with pytest.raises(ValueError, match=r"^For 'Receive', the message from rank \d should "
                                             r"hold 8 bytes \(shape \[2\], Float32\), but got a "
                                             r"longer one: .*truncated; .*bytes received"):
            ops.Receive(6, partner, [2], ms.float32)()
    ops.Barrier()()


# -- sub-groups -------------------------------------------------------------------------------

def test_every_collective_on_a_reversed_group():
    me, n = world()
    members = list(range(n - 1, -1, -1))                # group rank g is world rank n-1-g
    name = f"reversed{n}"
    create_group(name, members)
    g = members.index(me)
    parts = [rank_data(members[k], (2 * n, 2), ms.int32) for k in range(n)]   # by group rank
    x = Tensor(parts[g])
    for out in (ops.AllGather(name)(x), ops._MiniStepAllGather(name)(x, x),
                ops._MicroStepAllGather(name)(x, x)):
        np.testing.assert_array_equal(out.asnumpy(), np.concatenate(parts))
    total = reduced("sum", ms.int32, parts)
    np.testing.assert_array_equal(ops.AllReduce(group=name)(x).asnumpy(), total)
    np.testing.assert_array_equal(ops.ReduceScatter(group=name)(x).asnumpy(),
                                  total[2 * g:2 * g + 2])
    out = ops.Reduce(0, group=name)(x).asnumpy()        # group rank 0 = world rank n-1
    np.testing.assert_array_equal(out, total if g == 0 else [0])
    out = ops.CollectiveGather(0, group=name)(x).asnumpy()
    np.testing.assert_array_equal(out, np.concatenate(parts) if g == 0 else [0])
    np.testing.assert_array_equal(ops.CollectiveScatter(0, group=name)(x).asnumpy(),
                                  parts[0][2 * g:2 * g + 2])
    (out,) = ops.Broadcast(0, group=name)((x,))
    np.testing.assert_array_equal(out.asnumpy(), parts[0])
    np.testing.assert_array_equal(ops.AlltoAll(n, 0, 1, group=name)(x).asnumpy(),
                                  alltoall_reference(parts, g, n, 0, 1))
    ops.Barrier(group=name)()


def test_collectives_on_an_even_odd_partition():
    me, n = world()
    evens, odds = list(range(0, n, 2)), list(range(1, n, 2))
    mine = evens if me % 2 == 0 else odds
    name = create_group_partition([evens, odds] if odds else [evens])
    g, size = mine.index(me), len(mine)
    parts = [rank_data(r, (size, 3), ms.float64, "prod", size) for r in mine]
    x = Tensor(parts[g])
    np.testing.assert_array_equal(ops.AllReduce("prod", name)(x).asnumpy(),
                                  reduced("prod", ms.float64, parts))
    np.testing.assert_array_equal(ops.AlltoAll(size, 0, 1, name)(x).asnumpy(),
                                  alltoall_reference(parts, g, size, 0, 1))
    partner = g ^ 1
    if partner < size:                                  # point-to-point by group rank
        send = ops.Send(1, partner, group=name)
        recv = ops.Receive(1, partner, [size, 3], ms.float64, group=name)
        if g % 2 == 0:
            send(x)
            got = recv()
        else:
            got = recv()
            send(x)
        np.testing.assert_array_equal(got.asnumpy(), parts[partner])
    ops.Barrier(name)()


# -- results belong to the caller: never reused, freed once dropped ---------------------------

def test_results_keep_their_values_through_later_calls():
    me, n = world()
    size = 16 * n

    def data(k, rank, part=1):
        return np.arange(size // part, dtype=np.int32) + 1000 * (k + rank)
    calls = [(ops.AllGather(), n, lambda k: np.concatenate([data(k, r, n) for r in range(n)])),
             (ops.AllReduce(), 1, lambda k: sum(data(k, r) for r in range(n))),
             (ops.AlltoAll(n, 0, 0), 1, lambda k: np.concatenate(
                  [np.split(data(k, r), n)[me] for r in range(n)]))]
    for prim, part, expected in calls:
        results = [prim(Tensor(data(k, me, part))) for k in range(3)]
        del results[1]                                   # a dropped result changes nothing
        results.append(prim(Tensor(data(3, me, part))))
        for k, got in zip((0, 2, 3), results):
            np.testing.assert_array_equal(got.asnumpy(), expected(k))
        assert len({id(r.asnumpy()) for r in results}) == 3


def test_broadcast_and_alltoallv_results_keep_their_values():
    me, n = world()
    size = 8 * n
    bc = ops.Broadcast(0)
    a2av, derived = ops.AllToAllV(check_counts=False), ops.AllToAllV()
    counts, displs = (size // n,) * n, tuple(range(0, size, size // n))
    block = slice(me * (size // n), (me + 1) * (size // n))

    def data(k, rank):
        return np.arange(size, dtype=np.float32) + 1000 * (k + rank)
    outs = []
    for k in range(3):
        x = Tensor(data(k, me))
        outs.append((bc((x,))[0], a2av(x, counts, displs, counts, displs), derived(x, counts)))
    for j, (b, v, d) in enumerate(outs):
        np.testing.assert_array_equal(b.asnumpy(), data(j, 0))
        expected = np.concatenate([data(j, r)[block] for r in range(n)])
        np.testing.assert_array_equal(v.asnumpy(), expected)
        np.testing.assert_array_equal(d.asnumpy(), expected)


def test_a_dropped_result_is_freed_and_never_becomes_another_call_s():
    me, n = world()
    ar = ops.AllReduce()
    x = Tensor(np.full(6, me + 1, np.float32))
    first = ar(x)
    freed = []
    weakref.finalize(first.asnumpy(), freed.append, "array")
    weakref.finalize(first, freed.append, "tensor")
    kept = weakref.WeakValueDictionary({"first": first})
    del first
    assert sorted(freed) == ["array", "tensor"] and "first" not in kept
    second = ar(Tensor(np.full(6, 2 * (me + 1), np.float32)))
    kept["second"] = second
    third = ar(x)
    np.testing.assert_array_equal(kept["second"].asnumpy(), np.full(6, n * (n + 1), np.float32))
    np.testing.assert_array_equal(third.asnumpy(), np.full(6, n * (n + 1) / 2, np.float32))


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        line = next(l for l in f if l.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_large_dropped_results_give_their_memory_back():
    """Results of 40, 60 and 80 MiB, dropped, leave RSS where it was (nothing pools them)."""
    me, n = world()
    ag = ops.AllGather()
    inputs = {mib: Tensor(np.ones((mib << 20) // 4 // n, np.float32)) for mib in (40, 60, 80)}
    ag(inputs[40])                                       # MPI's own buffers, warmed up
    base = _rss_mib()
    for mib, x in inputs.items():
        out = ag(x)
        assert out.shape == ((mib << 20) // 4,) and out.asnumpy()[-1] == 1
        del out
    assert _rss_mib() - base < 20, (base, _rss_mib())
