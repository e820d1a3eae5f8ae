"""Communication groups on a simulated world (real MPI groups: tests/ranks/test_groups.py)."""
import re

import numpy as np
import pytest

from msops import Tensor, ops
from msops.communication import (GlobalComm, SimulationError, create_group,
                                 create_group_partition, destroy_group, get_group,
                                 get_group_rank_from_world_rank, get_group_size, get_rank,
                                 get_world_rank_from_group_rank, group_name_of, init,
                                 is_initialized, is_simulation, release)


def exactly(exc: type, message: str):
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


def test_world_of_simulation(sim):
    sim(8, 3)
    assert is_initialized() and is_simulation() and GlobalComm.INITED
    assert get_rank() == 3 and get_group_size() == 8
    world = get_group()
    assert world.name == GlobalComm.WORLD_COMM_GROUP
    assert world.ranks == tuple(range(8)) and world.rank == 3 and world.simulated


@pytest.mark.parametrize("alias", ["hccl_world_group", "nccl_world_group",
                                   GlobalComm.WORLD_COMM_GROUP])
def test_world_aliases(sim, alias):
    sim(8, 5)
    assert get_rank(alias) == 5 and get_group_size(alias) == 8
    assert get_group(alias) is get_group()


def test_mindspore_world_group_constants_are_world_aliases(sim):
    from msops import communication as comm
    sim(4, 2)
    assert (comm.HCCL_WORLD_COMM_GROUP, comm.NCCL_WORLD_COMM_GROUP,
            comm.MCCL_WORLD_COMM_GROUP) == ("hccl_world_group", "nccl_world_group",
                                            "mccl_world_group")
    for name in (comm.HCCL_WORLD_COMM_GROUP, comm.NCCL_WORLD_COMM_GROUP,
                 comm.MCCL_WORLD_COMM_GROUP):
        assert get_rank(name) == 2 and get_group(name) is get_group()


def test_sub_groups_rank_and_size(sim):
    sim(8, 3)
    create_group("g0123", [0, 1, 2, 3])
    create_group("g_rev", [7, 3, 5])                 # group rank follows list order
    assert get_group_size("g0123") == 4 and get_rank("g0123") == 3
    assert get_group_size("g_rev") == 3 and get_rank("g_rev") == [7, 3, 5].index(3)
    assert get_world_rank_from_group_rank("g_rev", 2) == 5
    assert get_group_rank_from_world_rank(7, "g_rev") == 0
    create_group("others", [4, 5, 6])                # non-members create it too
    assert get_group_size("others") == 3 and get_group("others").rank is None
    with exactly(ValueError, "For 'get_rank', this process (world rank 3) is not a member of "
                             "group 'others' (ranks [4, 5, 6])."):
        get_rank("others")


def test_destroy_group(sim):
    sim(4, 0)
    create_group("g", [0, 1])
    destroy_group("g")
    with exactly(ValueError, "For 'get_rank', the 'group' should be a created group "
                             "['world_group'], but got 'g'."):
        get_rank("g")
    create_group("g", [2, 3])                        # the name is free again
    assert get_group("g").ranks == (2, 3)
    for world in (GlobalComm.WORLD_COMM_GROUP, "hccl_world_group"):
        with exactly(ValueError, "For 'destroy_group', the world group cannot be destroyed, "
                                 f"but got '{world}'."):
            destroy_group(world)
    with exactly(ValueError, "For 'destroy_group', the 'group' should be a created group "
                             "['g', 'world_group'], but got 'nope'."):
        destroy_group("nope")


def test_unknown_group(sim):
    sim(8, 3)
    with exactly(ValueError, "For 'get_group_size', the 'group' should be a created group "
                             "['world_group'], but got 'missing'."):
        get_group_size("missing")
    with exactly(TypeError, "For 'get_rank', the type of 'group' should be str, but got int."):
        get_rank(0)


def test_create_group_errors(sim):
    sim(8, 3)
    create_group("g", [0, 1])
    with exactly(ValueError, "For 'create_group', the 'group' should be a new name, but got "
                             "'g', which already exists."):
        create_group("g", [2, 3])
    with exactly(ValueError, "For 'create_group', the 'group' should be a new name, but got "
                             "'nccl_world_group', which already exists."):
        create_group("nccl_world_group", [2, 3])
    with exactly(ValueError, "For 'create_group', the 'rank_ids' should be world ranks in "
                             "[0, 8), but got 8 in [1, 8]."):
        create_group("h", [1, 8])
    with exactly(ValueError, "For 'create_group', the 'rank_ids' should be world ranks in "
                             "[0, 8), but got -1 in [-1, 2]."):
        create_group("h", [-1, 2])
    with exactly(ValueError, "For 'create_group', the 'rank_ids' should not repeat, "
                             "but got [1, 2, 1]."):
        create_group("h", [1, 2, 1])
    with exactly(ValueError, "For 'create_group', the 'rank_ids' should be non-empty, "
                             "but got []."):
        create_group("h", [])
    with exactly(TypeError, "For 'create_group', the type of 'rank_ids' should be one of "
                            "[list, tuple], but got range."):
        create_group("h", range(2))
    with exactly(TypeError, "For 'create_group', the type of 'rank_ids element' should be int, "
                            "but got float."):
        create_group("h", [0, 1.0])
    with exactly(TypeError, "For 'create_group', the type of 'group' should be str, "
                            "but got int."):
        create_group(5, [0, 1])
    assert "h" not in get_group("g").name and get_group("g").ranks == (0, 1)


def test_create_group_partition(sim):
    sim(8, 3)
    evens, odds = [0, 2, 4, 6], [1, 3, 5, 7]
    name = create_group_partition([evens, odds])           # the name of this rank's part
    assert name == group_name_of(odds) == "ranks1,3,5,7"
    assert get_rank(name) == odds.index(3) and get_group_size(name) == 4
    assert get_group(name).ranks == tuple(odds)
    assert create_group_partition([evens, odds]) == name   # cached: no second split
    assert create_group_partition([[0, 1], [2, 3]]) == "ranks2,3"
    assert get_rank("ranks2,3") == 1
    assert create_group_partition([[0, 1], [4, 5]]) is None  # rank 3 is in no part
    assert create_group_partition([list(range(8))]) == GlobalComm.WORLD_COMM_GROUP


def test_create_group_partition_errors(sim):
    sim(8, 3)
    with exactly(ValueError, "For 'create_group_partition', the 'parts' should be disjoint, "
                             "but got rank(s) [2] in two parts."):
        create_group_partition([[0, 1, 2], [2, 3]])
    with exactly(ValueError, "For 'create_group_partition', the 'rank_ids' should not repeat, "
                             "but got [4, 4]."):
        create_group_partition([[4, 4]])
    with exactly(ValueError, "For 'create_group_partition', the 'rank_ids' should be world "
                             "ranks in [0, 8), but got 9 in [3, 9]."):
        create_group_partition([[3, 9]])
    name = create_group_partition([[3, 4]])
    with exactly(ValueError, "For 'destroy_group', the 'group' should be made by create_group, "
                             "but got 'ranks3,4', a create_group_partition group "
                             "(freed by release)."):
        destroy_group(name)
    assert get_rank(name) == 0


def test_use_before_init_is_runtime_error():
    release()
    assert not is_initialized()
    for call, api in [(get_rank, "get_rank"), (get_group_size, "get_group_size"),
                      (lambda: create_group("g", [0]), "create_group"),
                      (lambda: destroy_group("g"), "destroy_group"),
                      (lambda: create_group_partition([[0]]), "create_group_partition")]:
        with exactly(RuntimeError, f"For '{api}', the communication world is not initialized: "
                                   "call msops.communication.init() first."):
            call()
    with exactly(RuntimeError, "For 'AllGather', the communication world is not initialized: "
                               "call msops.communication.init() first."):
        ops.AllGather()


def test_release_forgets_the_world(sim):
    sim(4, 1)
    create_group("g", [0, 1])
    release()
    assert not is_initialized() and not GlobalComm.INITED
    with pytest.raises(RuntimeError, match="not initialized"):
        get_rank()


def test_init_replaces_the_world_and_its_groups(sim):
    sim(8, 3)
    create_group("g", [0, 1])
    init("simulation", world_size=2, rank=1)
    assert get_group_size() == 2 and get_rank() == 1
    with pytest.raises(ValueError, match="should be a created group"):
        get_group("g")


def test_init_argument_errors():
    with exactly(ValueError, "For 'init', the 'backend_name' should be one of "
                             "['mpi', 'hccl', 'nccl', 'simulation'], but got 'gloo'."):
        init("gloo")
    with exactly(ValueError, "For 'init', the simulation backend needs 'world_size' and 'rank', "
                             "but got world_size=8, rank=None."):
        init("simulation", world_size=8)
    with exactly(ValueError, "For 'init', the 'world_size' should be a positive int, "
                             "but got 0."):
        init("simulation", world_size=0, rank=0)
    with exactly(TypeError, "For 'init', the type of 'world_size' should be int, "
                            "but got float."):
        init("simulation", world_size=4.0, rank=0)
    with exactly(ValueError, "For 'init', the 'rank' should be in [0, 8), but got 8."):
        init("simulation", world_size=8, rank=8)
    with exactly(ValueError, "For 'init', 'world_size' and 'rank' come from MPI with the "
                             "'mpi' backend; pass them only with 'simulation'."):
        init(world_size=8)


def test_init_with_bad_arguments_keeps_the_world(sim):
    sim(4, 2)
    create_group("g", [1, 2])
    with pytest.raises(ValueError, match="the 'rank' should be in"):
        init("simulation", world_size=2, rank=5)
    assert (get_rank(), get_group_size(), get_rank("g")) == (2, 4, 1)


@pytest.mark.parametrize("world,rank", [(1, 0), (1000, 999)])
def test_simulated_worlds_of_any_size(sim, world, rank):
    sim(world, rank)
    assert (get_rank(), get_group_size()) == (rank, world)
    ag = ops.AllGather()
    assert ag.infer_shape([2, 8]) == [2 * world, 8]


def test_moving_data_in_a_simulation_names_the_op(sim):
    sim(8, 3)
    x = Tensor(np.ones([2, 8], np.float32))
    with pytest.raises(SimulationError, match=r"^For 'AllGather', data cannot move in a simulated "
                                              r"world \(group 'world_group' of 8 ranks\)"):
        ops.AllGather()(x)
    create_group("g", [3, 4])
    with pytest.raises(SimulationError, match=r"^For 'AllReduce', data cannot move in a simulated "
                                              r"world \(group 'g' of 2 ranks\)"):
        ops.AllReduce(group="g")(x)
    assert issubclass(SimulationError, RuntimeError)


def test_a_non_member_fails_as_in_a_real_world(sim):
    sim(8, 3)
    create_group("far", [0, 1])
    ag = ops.AllGather(group="far")                  # planning for the group is allowed
    assert ag.rank_size == 2 and ag.infer_shape([3]) == [6]
    with exactly(ValueError, "For 'AllGather', this process is not a member of group 'far' "
                             "(ranks [0, 1])."):
        ag(Tensor(np.ones([3], np.float32)))


def test_local_rank_of_a_simulated_world_is_one_host(sim):
    """A simulated world runs in one process: every rank is on this host."""
    from msops.communication import get_local_rank, get_local_rank_size
    sim(8, 5)
    assert get_local_rank() == 5 and get_local_rank_size() == 8
    assert get_local_rank("hccl_world_group") == 5
    create_group("odd", [1, 3, 5, 7])
    assert get_local_rank("odd") == 2 and get_local_rank_size("odd") == 4
    create_group("low", [0, 1])
    with pytest.raises(ValueError, match="For 'get_local_rank', this process \\(world rank 5\\) "
                                         "is not a member of group 'low'"):
        get_local_rank("low")
    with pytest.raises(ValueError, match="For 'get_local_rank_size', the 'group' should be a "
                                         "created group"):
        get_local_rank_size("nope")
    with pytest.raises(TypeError, match="'group'"):
        get_local_rank(3)
    release()
    with pytest.raises(RuntimeError, match="For 'get_local_rank', the communication world is "
                                           "not initialized"):
        get_local_rank()
