"""Real MPI sub-groups: creation by every rank, rank/size inside, collectives, partitions."""
import numpy as np
import pytest

from msops import Tensor, ops
from msops.communication import (GlobalComm, create_group, create_group_partition,
                                 destroy_group, get_group, get_group_size, get_rank)

RANKS = (2, 4, 8)


def world():
    return get_rank(), get_group_size()


def data_of(world_rank: int, shape=(2, 3)) -> np.ndarray:
    """A rank's distinct input: every entry encodes (rank, position)."""
    return (100 * world_rank + np.arange(np.prod(shape))).reshape(shape).astype(np.float32)


def test_world_aliases_are_the_world():
    me, n = world()
    for alias in ("hccl_world_group", "nccl_world_group", GlobalComm.WORLD_COMM_GROUP):
        assert get_rank(alias) == me and get_group_size(alias) == n
    assert get_group().ranks == tuple(range(n))


def test_subset_group_members_and_non_members():
    me, n = world()
    members = [0, n - 1]                      # the first and the last world rank
    create_group("ends", members)             # every rank calls, members or not
    assert get_group_size("ends") == 2
    if me in members:
        assert get_rank("ends") == members.index(me)
    else:
        with pytest.raises(ValueError, match=f"world rank {me}\\) is not a member of group 'ends'"):
            get_rank("ends")
    destroy_group("ends")


def test_allgather_on_a_reversed_sub_group():
    me, n = world()
    members = list(range(n - 1, -1, -1))[: max(2, n // 2)]   # e.g. [7, 6, 5, 4] of 8
    create_group("rev", members)
    ag = ops.AllGather(group="rev")
    assert ag.rank_size == len(members) and ag.group == "rev"
    x = Tensor(data_of(me))
    if me in members:
        assert get_rank("rev") == members.index(me)
        out = ag(x).asnumpy()
        expected = np.concatenate([data_of(r) for r in members])   # group-rank order
        np.testing.assert_array_equal(out, expected)
    else:
        with pytest.raises(ValueError, match="not a member of group 'rev'"):
            ag(x)
    destroy_group("rev")


@pytest.mark.parametrize("op,reduce", [("sum", np.sum), ("max", np.max), ("min", np.min)])
def test_allreduce_on_a_sub_group(op, reduce):
    me, n = world()
    members = list(range(1, n)) if n > 2 else [0, 1]
    create_group("tail", members)
    if me in members:
        out = ops.AllReduce(op, group="tail")(Tensor(data_of(me) * (-1) ** me)).asnumpy()
        expected = reduce(np.stack([data_of(r) * (-1) ** r for r in members]), axis=0)
        np.testing.assert_array_equal(out, expected)
    destroy_group("tail")


def test_even_odd_partition():
    me, n = world()
    evens, odds = list(range(0, n, 2)), list(range(1, n, 2))
    mine = evens if me % 2 == 0 else odds
    name = create_group_partition([evens, odds])            # one split, each rank its part
    assert name == "ranks" + ",".join(map(str, mine))
    assert get_rank(name) == mine.index(me) and get_group_size(name) == len(mine)
    gathered = ops.AllGather(group=name)(Tensor(data_of(me, (1, 4)))).asnumpy()
    np.testing.assert_array_equal(gathered, np.concatenate([data_of(r, (1, 4)) for r in mine]))
    total = ops.AllReduce(group=name)(Tensor(np.array([me], np.int64))).asnumpy()
    np.testing.assert_array_equal(total, [sum(mine)])
    assert create_group_partition([evens, odds]) == name    # cached, no second split


def test_partition_into_pairs_with_ranks_left_out():
    me, n = world()
    parts = [[r, r + 1] for r in range(0, n - 2, 2)] if n >= 4 else [[1]]
    name = create_group_partition(parts)
    mine = next((p for p in parts if me in p), None)
    if mine is None:
        assert name is None
    else:
        assert get_group(name).ranks == tuple(mine)
        out = ops.AllReduce("prod", group=name)(Tensor(np.array([me + 1.0]))).asnumpy()
        np.testing.assert_array_equal(out, [np.prod([r + 1.0 for r in mine])])


def test_partition_then_create_group_then_partition():
    me, n = world()
    columns = [list(range(c, n, 2)) for c in range(2)]      # the same partition as even/odd
    first = create_group_partition(columns)
    create_group("pair", [0, 1])
    assert create_group_partition(columns) == first
    halves = [list(range(n // 2)), list(range(n // 2, n))]
    half = create_group_partition(halves)
    mine = halves[0] if me < n // 2 else halves[1]
    out = ops.AllGather(group=half)(Tensor(np.array([me], np.int16))).asnumpy()
    np.testing.assert_array_equal(out, np.array(mine, np.int16))
    if me in (0, 1):
        out = ops.AllGather(group="pair")(Tensor(np.array([me], np.int16))).asnumpy()
        np.testing.assert_array_equal(out, [0, 1])
    destroy_group("pair")


def test_destroy_and_recreate_with_other_ranks():
    me, n = world()
    create_group("g", [0, 1])
    destroy_group("g")
    members = [n - 1, 0]
    create_group("g", members)
    assert get_group("g").ranks == tuple(members)
    if me in members:
        out = ops.AllGather(group="g")(Tensor(np.array([me], np.int32))).asnumpy()
        np.testing.assert_array_equal(out, np.array(members, np.int32))
    destroy_group("g")
    with pytest.raises(ValueError, match="should be a created group"):
        get_group_size("g")


def test_overlapping_groups_used_one_after_the_other():
    me, n = world()
    a, b = [0, 1], list(range(1, n)) if n > 2 else [1, 0]
    create_group("a", a)
    create_group("b", b)
    x = Tensor(np.array([me + 1], np.int64))
    if me in a:
        np.testing.assert_array_equal(ops.AllReduce(group="a")(x).asnumpy(), [sum(r + 1 for r in a)])
    if me in b:
        np.testing.assert_array_equal(ops.AllReduce(group="b")(x).asnumpy(), [sum(r + 1 for r in b)])
    destroy_group("a")
    destroy_group("b")
