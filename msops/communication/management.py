"""init / release and the group registry, over MPI or a simulated world.

Every process runs the same program (SPMD). Group creation is collective over the
world, like `MPI_Comm_split`: every rank calls `create_group` with the same
arguments, members or not, and every rank records every group's ranks so that
planning code sees the same registry everywhere.
"""
from __future__ import annotations

from typing import Sequence

from msops.common import validator
from msops.communication import watchdog
from msops.communication.digest_exchange import DigestExchange, persistent_possible
from msops.communication.group import Group, SimulationError

__all__ = ["GlobalComm", "init", "release", "is_initialized", "is_simulation", "get_rank",
           "get_group_size", "get_local_rank", "get_local_rank_size", "get_world_rank_from_group_rank",
           "get_group_rank_from_world_rank", "create_group", "destroy_group",
           "get_group", "create_group_partition", "group_name_of", "SimulationError",
           "get_comm_name", "get_process_group_ranks"]


class GlobalComm:
    """Names of the world group. hccl/nccl spellings are aliases of WORLD_COMM_GROUP."""

    BACKEND = "mpi"
    WORLD_COMM_GROUP = "world_group"
    INITED = False


#: MindSpore's names of its backends' world groups: aliases of WORLD_COMM_GROUP here
HCCL_WORLD_COMM_GROUP = "hccl_world_group"
NCCL_WORLD_COMM_GROUP = "nccl_world_group"
MCCL_WORLD_COMM_GROUP = "mccl_world_group"
_WORLD_ALIASES = {HCCL_WORLD_COMM_GROUP, NCCL_WORLD_COMM_GROUP, MCCL_WORLD_COMM_GROUP}
_BACKENDS = ("mpi", "hccl", "nccl", "simulation")


class _State:
    simulated = False
    world_size = 0
    rank = 0
    groups: dict[str, Group] = {}
    partitions: dict[tuple, str | None] = {}
    #: per world rank, its host: the lowest world rank sharing its memory (made at init)
    hosts: tuple[int, ...] = ()
    #: whether every group's check exchange is a persistent collective (agreed at init)
    persistent_digests = False


_state = _State()


def _canonical(group: str | None) -> str:
    if group is None or group in _WORLD_ALIASES:
        return GlobalComm.WORLD_COMM_GROUP
    return group


def init(backend_name: str | None = None, world_size: int | None = None,
         rank: int | None = None) -> None:
    """Start the world: MPI (default; one process is a world of 1) or `"simulation"`.

    `init("simulation", world_size=N, rank=r)` plans and infers as rank r of N
    would, in one process; any attempt to move data raises SimulationError.
    Calling init again replaces the world (and drops its groups).
    """
    backend = "mpi" if backend_name is None else backend_name
    validator.check_string("backend_name", backend, _BACKENDS, "init")
    if backend == "simulation":
        if world_size is None or rank is None:
            raise ValueError("For 'init', the simulation backend needs 'world_size' and 'rank', "
                             f"but got world_size={world_size}, rank={rank}.")
        validator.check_positive_int(world_size, "world_size", "init")
        validator.check_int_range(rank, 0, world_size, validator.Rel.INC_LEFT, "rank", "init")
        world = (True, world_size, rank, None)
        hosts = (0,) * world_size          # one process plays every rank: one host
        persistent = False
    else:
        if world_size is not None or rank is not None:
            raise ValueError("For 'init', 'world_size' and 'rank' come from MPI with the "
                             f"'{backend}' backend; pass them only with 'simulation'.")
        from mpi4py import MPI
        # MPI errors come back as exceptions the ops raise as their own (never MPICH's
        # fatal path); sub-group communicators inherit the handler
        MPI.COMM_WORLD.Set_errhandler(MPI.ERRORS_RETURN)
        world = (False, MPI.COMM_WORLD.size, MPI.COMM_WORLD.rank, MPI.COMM_WORLD)
        hosts = _hosts(MPI.COMM_WORLD)
        persistent = MPI.COMM_WORLD.allreduce(
            persistent_possible(MPI.COMM_WORLD, hosts.count(hosts[MPI.COMM_WORLD.rank])),
            op=MPI.LAND)
        watchdog.start(MPI.COMM_WORLD)
    if _state.groups:
        release()                    # only now: a call with bad arguments keeps the old world
    _state.simulated, _state.world_size, _state.rank, world_comm = world
    _state.hosts = hosts
    _state.persistent_digests = not _state.simulated and persistent
    _state.groups = {GlobalComm.WORLD_COMM_GROUP: _group(
        GlobalComm.WORLD_COMM_GROUP, tuple(range(_state.world_size)), _state.rank, world_comm)}
    GlobalComm.BACKEND = backend
    GlobalComm.INITED = True


def _group(name: str, ranks: tuple[int, ...], rank: int | None, comm) -> Group:
    """A registered group; a member's communicator gets its check exchange now, while every
    member is at the same point (the communicator's creation)."""
    digests = None if comm is None else DigestExchange(comm, _state.persistent_digests)
    return Group(name, ranks, rank, _state.simulated, comm, digests)


def _free(g: Group) -> None:
    """Free a group's check exchange and (but the world's) its communicator."""
    if g.digests is not None:
        g.digests.free()
    if g.name != GlobalComm.WORLD_COMM_GROUP and g._comm is not None:
        g._comm.Free()


def _hosts(world) -> tuple[int, ...]:
    """Per world rank, the lowest world rank on its host: the ranks one
    MPI_Comm_split_type(SHARED) puts together share a host."""
    from mpi4py import MPI
    shared = world.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        leader = shared.allreduce(world.rank, op=MPI.MIN)
    finally:
        shared.Free()
    return tuple(world.allgather(leader))


def release() -> None:
    """Free every sub-group and forget the world (MPI itself is finalized at exit)."""
    for g in list(_state.groups.values()):
        _free(g)
    _state.groups = {}
    _state.partitions = {}
    _state.world_size = 0
    _state.hosts = ()
    GlobalComm.INITED = False


def is_initialized() -> bool:
    return bool(_state.groups)


def is_simulation() -> bool:
    """True when the world is a dry-run simulation."""
    return _state.simulated


def _require_init(api: str) -> None:
    if not _state.groups:
        raise RuntimeError(f"For '{api}', the communication world is not initialized: "
                           f"call msops.communication.init() first.")


def get_group(group: str | None = None, api: str = "get_group") -> Group:
    """The Group registered under `group` (world aliases accepted)."""
    _require_init(api)
    validator.check_value_type("group", group if group is not None else "", str, api)
    name = _canonical(group)
    try:
        return _state.groups[name]
    except KeyError:
        raise ValueError(f"For '{api}', the 'group' should be a created group "
                         f"{sorted(_state.groups)}, but got '{group}'.") from None


def get_rank(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank in `group`."""
    g = get_group(group, "get_rank")
    if g.rank is None:
        raise ValueError(f"For 'get_rank', this process (world rank {_state.rank}) is not a "
                         f"member of group '{g.name}' (ranks {list(g.ranks)}).")
    return g.rank


def get_group_size(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """The number of ranks in `group`."""
    return get_group(group, "get_group_size").size


def _on_my_host(api: str, group: str) -> tuple[int, ...]:
    """The world ranks of `group` on this process's host, in group-rank order."""
    g = get_group(group, api)
    if g.rank is None:
        raise ValueError(f"For '{api}', this process (world rank {_state.rank}) is not a "
                         f"member of group '{g.name}' (ranks {list(g.ranks)}).")
    mine = _state.hosts[_state.rank]
    return tuple(r for r in g.ranks if _state.hosts[r] == mine)


def get_local_rank(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """This process's rank among the ranks of `group` on its host (in group-rank order).
    A simulated world is one host: its local rank is the group rank."""
    return _on_my_host("get_local_rank", group).index(_state.rank)


def get_local_rank_size(group: str = GlobalComm.WORLD_COMM_GROUP) -> int:
    """How many ranks of `group` are on this process's host (a simulated world: all)."""
    return len(_on_my_host("get_local_rank_size", group))


def get_comm_name(group: str = GlobalComm.WORLD_COMM_GROUP) -> str:
    """The name of `group`'s MPI communicator (MindSpore: its HCCL communicator's): a
    sub-group's communicator is named after the group when it is made, the world's is
    MPI's "MPI_COMM_WORLD". ValueError for a non-member; SimulationError (a RuntimeError)
    in a simulated world, which has no communicators."""
    return get_group(group, "get_comm_name").comm("get_comm_name").Get_name()


def get_process_group_ranks(group: str = GlobalComm.WORLD_COMM_GROUP) -> list:
    """The global ranks of `group`, in group-rank order."""
    return list(get_group(group, "get_process_group_ranks").ranks)


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    g = get_group(group, "get_world_rank_from_group_rank")
    validator.check_int_range(group_rank_id, 0, g.size, validator.Rel.INC_LEFT, "group_rank_id",
                              "get_world_rank_from_group_rank")
    return g.ranks[group_rank_id]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    g = get_group(group, "get_group_rank_from_world_rank")
    if world_rank_id not in g.ranks:
        raise ValueError(f"For 'get_group_rank_from_world_rank', the 'world_rank_id' should be "
                         f"in {list(g.ranks)}, but got {world_rank_id}.")
    return g.ranks.index(world_rank_id)


def _check_ranks(ranks: Sequence[int], api: str) -> tuple[int, ...]:
    validator.check_value_type("rank_ids", ranks, (list, tuple), api)
    if not ranks:
        raise ValueError(f"For '{api}', the 'rank_ids' should be non-empty, but got {list(ranks)}.")
    for r in ranks:
        validator.check_value_type("rank_ids element", r, int, api)
        if not 0 <= r < _state.world_size:
            raise ValueError(f"For '{api}', the 'rank_ids' should be world ranks in "
                             f"[0, {_state.world_size}), but got {r} in {list(ranks)}.")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"For '{api}', the 'rank_ids' should not repeat, but got {list(ranks)}.")
    return tuple(ranks)


def create_group(group: str, rank_ids: Sequence[int]) -> None:
    """Create sub-group `group` of world ranks `rank_ids` (group rank i = rank_ids[i]).

    Collective over the world: every rank calls it with the same arguments.
    """
    _require_init("create_group")
    validator.check_value_type("group", group, str, "create_group")
    if _canonical(group) in _state.groups:
        raise ValueError(f"For 'create_group', the 'group' should be a new name, but got "
                         f"'{group}', which already exists.")
    ranks = _check_ranks(rank_ids, "create_group")
    _split([(group, ranks)])


def create_group_partition(parts: Sequence[Sequence[int]]) -> str | None:
    """Create the groups of a partition (disjoint rank lists) in one world-collective split.

    Used by the parallel layer for device groups along device-matrix axes. Returns the
    name of the group holding this rank (None if none). Only that group is registered
    here, so planning for 4,096 simulated ranks stays O(ranks) per partition. A partition
    already created is reused without communicating (every rank decides alike).
    """
    _require_init("create_group_partition")
    key = tuple(tuple(p) for p in parts)
    if key in _state.partitions:
        return _state.partitions[key]
    seen: set[int] = set()
    for p in key:
        _check_ranks(p, "create_group_partition")
        if not seen.isdisjoint(p):        # one Split gives each rank one communicator
            raise ValueError(f"For 'create_group_partition', the 'parts' should be disjoint, "
                             f"but got rank(s) {sorted(seen.intersection(p))} in two parts.")
        seen.update(p)
    mine = next((p for p in key if _state.rank in p), None)
    name = group_name_of(mine) if mine is not None else None
    _split([(name, mine)] if mine is not None else [], all_parts=key,
           keep_existing=True)
    _state.partitions[key] = name
    return name


def group_name_of(ranks: Sequence[int]) -> str:
    """The canonical name of the anonymous group of these world ranks."""
    if tuple(ranks) == tuple(range(_state.world_size)):
        return GlobalComm.WORLD_COMM_GROUP
    return "ranks" + ",".join(map(str, ranks))


def _split(parts: list[tuple[str, tuple[int, ...]]], all_parts: Sequence = (),
           keep_existing: bool = False) -> None:
    """Register `parts`; on MPI, one Split of the world (color = the part holding this rank,
    among `all_parts`, default `parts`). With keep_existing, a group already registered
    under the same name keeps its communicator (the new one is freed)."""
    me = _state.rank
    world = _state.groups[GlobalComm.WORLD_COMM_GROUP]
    comm = None
    if not _state.simulated:
        from mpi4py import MPI
        color, key = MPI.UNDEFINED, 0
        for i, ranks in enumerate(all_parts or [r for _, r in parts]):
            if me in ranks:
                color, key = i, list(ranks).index(me)
                break
        comm = world._comm.Split(color, key)
        if comm == MPI.COMM_NULL:
            comm = None
    for name, ranks in parts:
        if keep_existing and name in _state.groups:
            if comm is not None and comm is not _state.groups[name]._comm:
                comm.Free()
            continue
        member = me in ranks
        if member and comm is not None:
            comm.Set_name(name)          # MPI's tools and get_comm_name show the group
        _state.groups[name] = _group(name, ranks, ranks.index(me) if member else None,
                                     comm if member else None)


def destroy_group(group: str) -> None:
    """Free a sub-group. The world group cannot be destroyed."""
    _require_init("destroy_group")
    name = _canonical(group)
    if name == GlobalComm.WORLD_COMM_GROUP:
        raise ValueError("For 'destroy_group', the world group cannot be destroyed, "
                         f"but got '{group}'.")
    g = get_group(group, "destroy_group")
    if name in _state.partitions.values():
        # Ranks outside it keep the partition cached: re-splitting only here would hang.
        raise ValueError(f"For 'destroy_group', the 'group' should be made by create_group, "
                         f"but got '{group}', a create_group_partition group (freed by release).")
    _free(g)
    del _state.groups[name]

