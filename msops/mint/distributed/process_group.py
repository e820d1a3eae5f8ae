"""mint.distributed's process groups: the world (`init_process_group`), sub-groups
(`new_group`, named by their ranks) and rank queries, over msops.communication's groups.
A group is its name (a str), as in MindSpore; None is the world."""
from __future__ import annotations

from typing import Any, Sequence

from msops.communication import management
from msops.communication.management import GlobalComm

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized",
           "get_rank", "get_world_size", "new_group", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks"]

_BACKENDS = ("hccl", "nccl", "mpi")


def _check_world_arg(name: str, value: Any, actual: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"For 'init_process_group', the '{name}' should be an int, but got "
                        f"{type(value).__name__}.")
    if value != -1 and value != actual:
        raise ValueError(f"For 'init_process_group', the '{name}' should be -1 or this MPI "
                         f"world's {actual}, but got {value}.")


def init_process_group(backend: str = "hccl", init_method: Any = None, timeout: Any = None,
                       world_size: int = -1, rank: int = -1, store: Any = None,
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Start the MPI world (every backend name is MPI here). world_size and rank come from
    MPI: -1, or the values MPI gives. init_method, timeout, store, pg_options and device_id
    are accepted and unused (the watchdog's timeout is `ms.set_context(op_timeout=...)`).
    Called again on a running MPI world, it checks the arguments and keeps the world."""
    api = "init_process_group"
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValueError(f"For '{api}', the 'backend' should be one of {list(_BACKENDS)}, but "
                         f"got {backend!r}.")
    if init_method is not None and store is not None:
        raise ValueError(f"For '{api}', only one of 'init_method' and 'store' should be set, "
                         f"but got both.")
    if management.is_initialized() and management.is_simulation():
        raise RuntimeError(f"For '{api}', a simulated world is running: call "
                           f"msops.communication.release() before starting the MPI world.")
    if not management.is_initialized():
        management.init(backend)
    g = management.get_group(None, api)
    _check_world_arg("world_size", world_size, g.size)
    _check_world_arg("rank", rank, g.rank)


def destroy_process_group(group: str | None = None) -> None:
    """group None (or the world): release the world and every group; else free `group`."""
    if group is None or management.get_group(group, "destroy_process_group").name == \
            GlobalComm.WORLD_COMM_GROUP:
        management.release()
        return
    management.destroy_group(group)


def is_available() -> bool:
    """True: the distributed package is available (over MPI)."""
    return True


def is_initialized() -> bool:
    """Whether the world is initialized."""
    return management.is_initialized()


def get_rank(group: str | None = None) -> int:
    """This process's rank in `group` (the world by default); -1 when not a member."""
    g = management.get_group(group, "get_rank")
    return -1 if g.rank is None else g.rank


def get_world_size(group: str | None = None) -> int:
    """The number of ranks in `group`; -1 when this process is not a member."""
    g = management.get_group(group, "get_world_size")
    return -1 if g.rank is None else g.size


def new_group(ranks: Sequence[int] | None = None, timeout: Any = None, backend: Any = None,
              pg_options: Any = None, use_local_synchronization: bool = False,
              group_desc: Any = None) -> str:
    """The group of global `ranks` (sorted: group rank i is the i-th smallest), made by
    every rank of the world, members or not; returns its name. None or every rank: the
    world. The same ranks again return the same group. The other arguments are unused."""
    api = "new_group"
    world = management.get_group(None, api)
    if ranks is None:
        return world.name
    ordered = _check_ranks(api, ranks, world.size)
    if tuple(ordered) == world.ranks:
        return world.name
    name = "mint_" + management.group_name_of(ordered)
    try:
        existing = management.get_group(name, api)
    except ValueError:
        management.create_group(name, ordered)
        return name
    return existing.name


def _check_ranks(api: str, ranks: Any, world_size: int) -> list:
    """`ranks` as a sorted list of distinct global ranks (errors naming `api`)."""
    if not isinstance(ranks, (list, tuple)):
        raise TypeError(f"For '{api}', the 'ranks' should be a list of ints, but got "
                        f"{type(ranks).__name__}.")
    for r in ranks:
        if not isinstance(r, int) or isinstance(r, bool):
            raise TypeError(f"For '{api}', every element of 'ranks' should be an int, but got "
                            f"{type(r).__name__} in {list(ranks)}.")
    if not ranks or any(not 0 <= r < world_size for r in ranks) or \
            len(set(ranks)) != len(ranks):
        raise ValueError(f"For '{api}', the 'ranks' should be distinct global ranks in "
                         f"[0, {world_size}), at least one, but got {list(ranks)}.")
    return sorted(ranks)


def get_backend(group: str | None = None) -> str:
    """The backend name the world was started with ("hccl", "mpi", ...: all MPI here)."""
    management.get_group(group, "get_backend")
    return GlobalComm.BACKEND


def get_global_rank(group: str | None, group_rank: int) -> int:
    """The global rank of `group_rank` in `group`."""
    g = management.get_group(group, "get_global_rank")
    return management.get_world_rank_from_group_rank(g.name, group_rank)


def get_group_rank(group: str | None, global_rank: int) -> int:
    """The rank in `group` of global rank `global_rank`."""
    g = management.get_group(group, "get_group_rank")
    return management.get_group_rank_from_world_rank(global_rank, g.name)


def get_process_group_ranks(group: str | None = None) -> list:
    """The global ranks of `group`, in group-rank order."""
    return management.get_process_group_ranks(group)
