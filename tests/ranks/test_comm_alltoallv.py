"""AllToAllV on real MPI worlds: seed 002, random count matrices against numpy, the
cross-rank count check (the same error on every rank), sub-groups, and seed 002's
quantized pipeline (examples/quantized_alltoallv.py) against float32 numpy.

Random cases come from one seeded generator, so every rank draws the same count matrix
and can build every rank's input for the numpy reference.
"""
import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import Tensor, ops
from msops.communication import create_group, create_group_partition, get_group_size, get_rank

RANKS = (2, 4, 8)

_spec = importlib.util.spec_from_file_location(
    "quantized_alltoallv", Path(__file__).parents[2] / "examples" / "quantized_alltoallv.py")
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)

SEED002_DTYPES = [ms.int8, ms.int16, ms.int32, ms.int64, ms.float32, ms.float16, ms.bfloat16]
RANDOM_DTYPES = [ms.int8, ms.bfloat16, ms.float32, ms.complex128, ms.bool_, ms.uint16,
                 ms.int64, ms.float16]


def exactly(exc: type, message: str):
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


def world():
    return get_rank(), get_group_size()


def rank_input(rank: int, numel: int, dtype) -> np.ndarray:
    """A rank's flat input: values that tell rank and position apart (mod the dtype's range)."""
    v = (rank * 37 + np.arange(numel) * 7) % 101
    return (v % 2 if dtype == ms.bool_ else v).astype(ms.dtype_to_nptype(dtype))


def reference(inputs, sc, sd, rc, rd, me: int, block: int) -> np.ndarray:
    """numpy Alltoallv: what rank `me` receives (seed 002's gold formula, by blocks)."""
    out = np.zeros(sum(rc[me]) * block, inputs[0].dtype)
    for j, x in enumerate(inputs):
        assert sc[j][me] == rc[me][j]                       # a consistent plan
        piece = x.reshape(-1)[sd[j][me] * block:(sd[j][me] + sc[j][me]) * block]
        out[rd[me][j] * block:(rd[me][j] + rc[me][j]) * block] = piece
    return out


def packed(counts):
    return list(np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int))


def random_plan(rng, n: int, block: int, max_count: int = 3):
    """A consistent random plan: counts C[i][j] (i sends to j), send blocks anywhere in the
    input (gaps and overlaps), receive blocks tiling the output in a random order."""
    C = rng.integers(0, max_count + 1, (n, n))
    numel, sd, rd = [], [], []
    for i in range(n):
        blocks = int(C[i].sum()) + int(rng.integers(0, 3))
        numel.append(blocks * block)
        sd.append([int(rng.integers(0, blocks - c + 1)) for c in C[i]])
        order, displs, at = rng.permutation(n), [0] * n, 0
        for j in order:
            displs[j], at = at, at + int(C[j][i])
        rd.append(displs)
    sc = C.tolist()
    rc = C.T.tolist()
    return numel, sc, sd, rc, rd


# -- seed 002 ----------------------------------------------------------------------------

SEED002 = dict(inputs=[[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 1, 2], [3, 4, 6]]],
               sendcount=[[2, 4], [2, 1]], senddisp=[[0, 2], [0, 2]],
               recvout=[[2, 2], [4, 1]], recvdis=[[0, 2], [0, 4]],
               golden=[[0, 1, 0, 1], [2, 3, 4, 5, 2]])


@pytest.fixture(scope="module")
def pair() -> str:
    create_group("seed002", [0, 1])                       # the seed's 2 ranks
    return "seed002"


def test_seed002_two_rank_example_every_dtype(pair):
    me, _ = world()
    s = SEED002
    a2av = ops.AllToAllV(group=pair)
    for dtype in SEED002_DTYPES:
        np_t = ms.dtype_to_nptype(dtype)
        r = min(me, 1)
        x = Tensor(np.array(s["inputs"][r], np_t))
        host = [Tensor(np.array(s[k][r], np.int64))        # int64 host tensors, as in the seed
                for k in ("sendcount", "senddisp", "recvout", "recvdis")]
        if me > 1:
            with pytest.raises(ValueError, match="not a member of group 'seed002'"):
                a2av(x, *host)
            continue
        out = a2av(x, *host)
        assert out.dtype == dtype and out.shape == (len(s["golden"][me]),)
        np.testing.assert_array_equal(out.asnumpy(), np.array(s["golden"][me], np_t))
        gold = reference([np.array(v, np_t) for v in s["inputs"]], s["sendcount"],
                         s["senddisp"], s["recvout"], s["recvdis"], me, 1)
        np.testing.assert_array_equal(out.asnumpy(), gold)


# -- random count matrices ----------------------------------------------------------------

@pytest.mark.parametrize("case", range(8))
def test_random_count_matrices_match_numpy(case):
    me, n = world()
    rng = np.random.default_rng(1000 + case)
    dtype, block = RANDOM_DTYPES[case], (1, 3)[case % 2]
    numel, sc, sd, rc, rd = random_plan(rng, n, block)
    inputs = [rank_input(r, numel[r], dtype) for r in range(n)]
    x = Tensor(inputs[me].reshape(-1, block) if block > 1 else inputs[me])
    expected = reference(inputs, sc, sd, rc, rd, me, block)
    for check in (True, False):
        out = ops.AllToAllV(block_size=block, check_counts=check)(x, sc[me], sd[me], rc[me],
                                                                  rd[me])
        assert out.dtype == dtype and out.shape == expected.shape
        np.testing.assert_array_equal(out.asnumpy(), expected)


@pytest.mark.parametrize("case", range(4))
def test_packed_and_derived_forms_match_numpy(case):
    me, n = world()
    rng = np.random.default_rng(2000 + case)
    dtype, block = RANDOM_DTYPES[-1 - case], (2, 1)[case % 2]
    C = rng.integers(0, 4, (n, n))
    if case == 0:
        C[:, 0] = 0                                       # rank 0 receives nothing at all
    sc, rc = C.tolist(), C.T.tolist()
    sd, rd = [packed(c) for c in sc], [packed(c) for c in rc]
    inputs = [rank_input(r, int(C[r].sum()) * block, dtype) for r in range(n)]
    expected = reference(inputs, sc, sd, rc, rd, me, block)
    a2av = ops.AllToAllV(block_size=block)
    x = Tensor(inputs[me])
    counts = Tensor(np.array(sc[me], np.int32))           # an int Tensor is fine too
    for out in (a2av(x, sc[me], rc[me]), a2av(x, counts, tuple(rc[me])), a2av(x, sc[me]),
                a2av(x, counts)):
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.asnumpy(), expected)


def test_lowered_kernel_with_constant_counts():
    me, n = world()
    rng = np.random.default_rng(3000)
    numel, sc, sd, rc, rd = random_plan(rng, n, 2)
    inputs = [rank_input(r, numel[r], ms.float64) for r in range(n)]
    a2av = ops.AllToAllV(block_size=2, check_counts=False)
    nodes = [SimpleNamespace(kind="input", shape=(numel[me],), value=None)] + \
        [SimpleNamespace(kind="const", shape=(), value=v[me]) for v in (sc, sd, rc, rd)]
    kernel = a2av.lower(nodes, None)
    for _ in range(2):
        out = kernel(inputs[me], sc[me], sd[me], rc[me], rd[me])
        np.testing.assert_array_equal(out, reference(inputs, sc, sd, rc, rd, me, 2))


# -- the cross-rank count check ------------------------------------------------------------

def assert_still_in_step():
    """After an error every rank is at the same point: a valid call still works."""
    me, n = world()
    out = ops.AllToAllV()(Tensor(np.full([n], me, np.int32)), [1] * n)
    np.testing.assert_array_equal(out.asnumpy(), np.arange(n, dtype=np.int32))


def same_on_every_rank(text: str) -> str:
    every = MPI.COMM_WORLD.allgather(text)
    assert every == [text] * len(every), every
    return text


def disagreement(fn, detail: str, *sides: str) -> str:
    """fn() raises, on every rank alike, the eager check's ValueError (check_collectives on)
    showing each rank's side and ending with AllToAllV's `detail`; with the check off, the
    count check alone raises `For 'AllToAllV', <detail>`."""
    with pytest.raises(ValueError) as info:
        fn()
    msg = same_on_every_rank(str(info.value))
    assert msg.startswith("For the collective calls of group 'world_group', every rank should "
                          "make the same call"), msg
    assert msg.endswith(f". AllToAllV: {detail}"), msg
    for side in sides:
        assert side in msg, (side, msg)
    assert_still_in_step()
    ms.set_context(check_collectives=False)
    try:
        with exactly(ValueError, f"For 'AllToAllV', {detail}"):
            fn()
    finally:
        ms.set_context(check_collectives=True)
    assert_still_in_step()
    return msg


def test_mismatched_count_matrix_fails_on_every_rank_alike():
    me, n = world()
    send = [2] * n
    recv = [3] + [2] * (n - 1) if me == 1 else [2] * n     # rank 1 expects 3 from rank 0
    disagreement(lambda: ops.AllToAllV()(Tensor(np.zeros([2 * n], np.float32)), send,
                                         packed(send), recv, packed(recv)),
                 "every rank's recv_counts[i] should equal rank i's send_counts to it, but got: "
                 "rank 0 sends 2 to rank 1 but rank 1 expects 3.",
                 "rank 1: #", f"on Float32, send counts {send}, recv counts {recv} at "
                 f"test_comm_alltoallv.py:")


def test_many_mismatches_are_listed_and_cut():
    me, n = world()
    send = [1] * n
    recv = [2] * n                                        # every pair is wrong
    with pytest.raises(ValueError) as info:
        ops.AllToAllV()(Tensor(np.zeros([n], np.int8)), send, recv)
    text = str(info.value)
    assert text.count(" but rank ") == min(8, n * n)
    assert ("more pairs" in text) == (n * n > 8)
    assert "rank 0 sends 1 to rank 0 but rank 0 expects 2" in text
    assert_still_in_step()


@pytest.mark.parametrize("form", ["mpi", "derived"])
def test_a_rank_with_invalid_counts_is_named_by_all(form):
    me, n = world()
    bad = n - 1
    send = [1] * n if me != bad else [1] * (n - 2) + [-1, 1]
    args = (send, packed([1] * n), [1] * n, packed([1] * n)) if form == "mpi" else (send,)
    x = Tensor(np.zeros([n], np.int16))
    if me == bad:                                         # its own, detailed error
        message = (f"For 'AllToAllV', every element of 'send_counts' should be >= 0, but got "
                   f"{send}.")
    else:
        message = (f"For 'AllToAllV', the counts of every rank should be valid, but got "
                   f"invalid counts on group rank(s) [{bad}] (see the error raised there).")
    with exactly(ValueError, message):
        ops.AllToAllV()(x, *args)
    assert_still_in_step()


def test_dtype_and_form_disagreements_fail_on_every_rank():
    me, n = world()
    int16_on_rank0 = (np.int16 if me == 0 else np.int8, ([1] * n, [1] * n),
                      [("explicit", 2)] + [("explicit", 1)] * (n - 1))
    derived_on_rank1 = (np.int8, ([1] * n,) if me == 1 else ([1] * n, [1] * n),
                        [("explicit", 1), ("derived", 1)] + [("explicit", 1)] * (n - 2))
    for np_dtype, args, seen in (int16_on_rank0, derived_on_rank1):
        disagreement(lambda: ops.AllToAllV()(Tensor(np.zeros([n], np_dtype)), *args),
                     f"every rank should use the same call form and block bytes (block_size "
                     f"* itemsize), but got (form, block bytes) by group rank: {seen}.")


# -- sub-groups ------------------------------------------------------------------------------

def test_random_plans_on_sub_groups():
    me, n = world()
    reversed_ranks = list(range(n - 1, -1, -1))
    create_group("a2av_reversed", reversed_ranks)
    evens, odds = list(range(0, n, 2)), list(range(1, n, 2))
    halves = create_group_partition([evens, odds])
    for name, members in (("a2av_reversed", reversed_ranks),
                          (halves, evens if me % 2 == 0 else odds)):
        g, size = members.index(me), len(members)
        rng = np.random.default_rng(4000 + size)          # the same plan within each group
        numel, sc, sd, rc, rd = random_plan(rng, size, 1)
        inputs = [rank_input(members[k], numel[k], ms.float32) for k in range(size)]
        out = ops.AllToAllV(group=name)(Tensor(inputs[g]), sc[g], sd[g], rc[g], rd[g])
        np.testing.assert_array_equal(out.asnumpy(), reference(inputs, sc, sd, rc, rd, g, 1))
        out = ops.AllToAllV(group=name)(Tensor(inputs[g][:sum(sc[g])]), sc[g])   # derived
        packed_sd = [packed(c) for c in sc]
        np.testing.assert_array_equal(out.asnumpy(), reference(
            [x[:sum(c)] for x, c in zip(inputs, sc)], sc, packed_sd, rc,
            [packed(c) for c in rc], g, 1))


# -- seed 002's quantized pipeline (examples/quantized_alltoallv.py) -------------------------

def rank_x(rank: int, length: int, kind: str) -> np.ndarray:
    if kind == "saturated":                   # every partial sum overflows int8
        return np.full(length, 127 - rank % 3, np.int8)
    return np.random.default_rng(100 + rank).integers(-128, 128, length, dtype=np.int8)


def float32_reference(xs, scale: float) -> np.ndarray:
    return np.stack(xs).astype(np.float32).sum(axis=0) * np.float32(scale)


@pytest.mark.parametrize("length,kind", [(10, "random"), (37, "random"), (64, "saturated"),
                                         (3, "random")])
def test_pipeline_matches_float32_numpy(length, kind):
    me, n = world()
    scale = 0.0123
    xs = [rank_x(r, length, kind) for r in range(n)]
    y = example.quantized_alltoallv(Tensor(xs[me]), scale)
    assert y.dtype == ms.float16 and y.shape == (length,)
    # one rounding to float16: relative error at most 2**-11
    np.testing.assert_allclose(y.asnumpy().astype(np.float32), float32_reference(xs, scale),
                               rtol=2.0 ** -11, atol=0)


def test_shards_cover_the_vector_unevenly():
    assert example.shard_sizes(10, 4) == [3, 3, 2, 2]
    assert example.shard_sizes(3, 8) == [1, 1, 1, 0, 0, 0, 0, 0]


def test_pipeline_on_a_sub_group():
    me, n = world()
    evens, odds = list(range(0, n, 2)), list(range(1, n, 2))
    name = create_group_partition([evens, odds])
    members = evens if me % 2 == 0 else odds
    xs = [rank_x(r, 9, "random") for r in members]
    y = example.quantized_alltoallv(Tensor(xs[members.index(me)]), 0.5, group=name)
    np.testing.assert_allclose(y.asnumpy().astype(np.float32), float32_reference(xs, 0.5),
                               rtol=2.0 ** -11, atol=0)


def test_pipeline_refuses_other_inputs():
    with pytest.raises(TypeError, match=r"^For 'quantized_alltoallv', the 'x' should be a 1-D "
                                        r"Int8 Tensor, but got shape \[2, 2\] and dtype Int8\.$"):
        example.quantized_alltoallv(Tensor(np.zeros([2, 2], np.int8)), 1.0)
