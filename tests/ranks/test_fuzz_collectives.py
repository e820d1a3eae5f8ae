"""A fuzzer over the eager collectives' arguments under real MPI (issue 16 §7).

Rank 0 draws a collective (AllGather, AllReduce, ReduceScatter, AlltoAll, Broadcast,
AllGatherV, ReduceScatterV), its attributes (reduce op, split and concat dims, split
count, root, split sizes), and the input's shape and dtype; every rank runs that call
(broadcast: hypothesis engines in different processes are not bound to draw alike) on its
own deterministic input. Accepted: the
same TypeError / ValueError / IndexError naming the op (or, when only some ranks' own
arguments fail, the collective check's error) on every rank, or the result numpy computes
from every rank's input.
"""
import hypothesis  # noqa: F401  (plugin autoload is off under mpiexec)
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mpi4py import MPI

from msops import Tensor, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4, 8)
N, RANK = get_group_size(), get_rank()
DOCUMENTED = (TypeError, ValueError, IndexError)
FUZZ = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
DTYPES = ["float32", "float16", "float64", "int32", "int64", "int8", "uint8", "bool"]
REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}

calls = st.one_of(
    st.tuples(st.just("AllGather"), st.just(None)),
    st.tuples(st.just("AllReduce"), st.sampled_from(sorted(REDUCE) + ["bogus"])),
    st.tuples(st.just("ReduceScatter"), st.sampled_from(sorted(REDUCE))),
    st.tuples(st.just("AlltoAll"), st.tuples(st.integers(0, 5), st.integers(-3, 3),
                                             st.integers(-3, 3))),
    st.tuples(st.just("Broadcast"), st.integers(-1, 4)),
    # (split sizes, reduce op, whether x's length comes from the drawn shape instead)
    st.tuples(st.sampled_from(["AllGatherV", "ReduceScatterV"]),
              st.tuples(st.one_of(st.lists(st.integers(0, 3), min_size=N, max_size=N),
                                  st.lists(st.integers(-1, 3), min_size=N - 1, max_size=N + 1)),
                        st.sampled_from(sorted(REDUCE)), st.booleans())))
shapes = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)


def _input(rank: int, shape: tuple, dtype: str) -> np.ndarray:
    """Rank `rank`'s input: small values (products and sums stay exact in every dtype)."""
    values = (np.arange(int(np.prod(shape))).reshape(shape) + 3 * rank) % 3 + (rank % 2)
    return np.asarray(values).astype(dtype)


CHECK = "For the collective calls of group 'world_group', every rank should make the same call"


def _uneven_input(name: str, rank: int, attr, shape: tuple, dtype: str) -> np.ndarray:
    """AllGatherV/ReduceScatterV's 1-D input: rank's piece / every piece, or (sizes
    invalid, or drawn so) the drawn shape's size, which may not fit the sizes."""
    sizes, _, from_shape = attr
    fits = len(sizes) == N and min(sizes) >= 0 and not from_shape
    length = (sizes[rank] if name == "AllGatherV" else sum(sizes)) if fits else \
        int(np.prod(shape))
    return _input(rank, (length,), dtype)


def _make(name: str, attr):
    if name == "AllGatherV":
        return ops.AllGatherV()
    if name == "ReduceScatterV":
        return ops.ReduceScatterV(attr[1])
    if name == "AllGather":
        return ops.AllGather()
    if name in ("AllReduce", "ReduceScatter"):
        return getattr(ops, name)(attr)
    if name == "AlltoAll":
        return ops.AlltoAll(*attr)
    return ops.Broadcast(attr)


def _want(name: str, attr, xs: list) -> np.ndarray:
    """What numpy computes from every rank's input `xs` for this rank."""
    if name == "AllGather":
        return np.concatenate(xs, axis=0)
    if name in ("AllReduce", "ReduceScatter"):
        total = xs[0]
        for x in xs[1:]:
            total = REDUCE[attr](total, x)
        return total if name == "AllReduce" else np.split(total, N, axis=0)[RANK]
    if name == "AlltoAll":
        count, split, concat = attr
        return np.concatenate([np.split(x, count, axis=split)[RANK] for x in xs], axis=concat)
    if name == "AllGatherV":
        return np.concatenate(xs)
    if name == "ReduceScatterV":
        total, op = xs[0], REDUCE[attr[1]]
        for x in xs[1:]:
            total = op(total, x)
        at = np.concatenate([[0], np.cumsum(attr[0])])
        return total[at[RANK]:at[RANK + 1]]
    return xs[attr]


@FUZZ
@given(call=calls, shape=shapes, dtype=st.sampled_from(DTYPES))
def test_eager_collective_equals_numpy_or_raises_alike(call, shape, dtype):
    (name, attr), shape, dtype = MPI.COMM_WORLD.bcast((call, shape, dtype))
    uneven = name in ("AllGatherV", "ReduceScatterV")

    def make_input(rank):
        if uneven:
            return _uneven_input(name, rank, attr, shape, dtype)
        return _input(rank, shape, dtype)
    x = make_input(RANK)
    try:
        prim = _make(name, attr)
        got = prim(Tensor(x), attr[0]) if uneven else \
            prim((Tensor(x),) if name == "Broadcast" else Tensor(x))
    except DOCUMENTED as err:
        message = str(err)
        assert message.startswith((f"For '{name}'", CHECK)), \
            f"{type(err).__name__}: {message}"
        every = MPI.COMM_WORLD.allgather(message)
        assert every == [message] * N, every
        return
    got = (got[0] if isinstance(got, tuple) else got).asnumpy()
    want = _want(name, attr, [make_input(r) for r in range(N)])
    assert got.dtype == want.dtype and got.shape == want.shape, (name, attr, got, want)
    np.testing.assert_array_equal(got, want)
