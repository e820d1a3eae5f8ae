"""`parameter_broadcast(net, layout)`: make the replicas of every parameter agree.

Under a layout, the ranks differing only along the device axes a parameter's tensor map
leaves unused (its replica, data-parallel axes) hold copies of one slice. Ranks that
initialised or loaded their parameters apart (each its own seed, a checkpoint read on one
rank) can disagree; this broadcasts each such slice from the first (lowest) rank of its
replica group to the others. Split dims are left alone: a rank only ever receives its own
slice. One Broadcast per replica partition carries all the parameters sharing it.

The replica groups are created for every stage at once (`create_stage_groups`), a
collective over the world; ranks of different pipeline stages pass different layouts (their
own stage's parameters), so they first agree on the union of the partitions they need.
"""
from __future__ import annotations

from math import prod
from typing import Any, Mapping

from msops.common.tensor import Parameter
from msops.communication import get_group_size, get_rank
from msops.communication._comm_call import collective, member_group
from msops.mint.distributed.objects import all_gather_object
from msops.parallel.context import is_parallel, parallel_device_num
from msops.parallel.device_matrix import groups_over
from msops.parallel.stages import create_stage_groups, stage_num, stage_of_rank
from msops.primitives.comm_ops import Broadcast

__all__ = ["parameter_broadcast"]

_API = "parameter_broadcast"


def _layout_axes(name: str, value: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(device matrix, replica axes) of one `layout` entry: a `parameter_layout_dict` /
    `build_searched_strategy` value, or a sequence starting [dev_matrix, tensor_map]."""
    if hasattr(value, "dev_matrix") and hasattr(value, "tensor_map"):
        dm, tmap = value.dev_matrix, value.tensor_map
    elif isinstance(value, (list, tuple)) and len(value) >= 2:
        dm, tmap = value[0], value[1]
    else:
        raise TypeError(f"For '{_API}', the layout of '{name}' should be a parameter layout "
                        f"([dev_matrix, tensor_map, ...]), but got {type(value).__name__}.")
    used = {k for m in tmap for k in (m if isinstance(m, (list, tuple)) else (m,)) if k >= 0}
    return tuple(dm), tuple(k for k in range(len(dm)) if k not in used)


def parameter_broadcast(net: Any, layout: Mapping[str, Any], cur_rank: int = 0,
                        initial_rank: int = 0) -> None:
    """Broadcast each parameter named in `layout` (name -> layout, as
    `net.parameter_layout_dict` or `build_searched_strategy` give) from the first rank of
    its replica group to the rest of it. `cur_rank` is this rank, `initial_rank` the first
    rank of its pipeline stage (MindSpore's checks)."""
    if not isinstance(layout, Mapping):
        raise TypeError(f"For '{_API}', the 'layout' should be a dict of parameter name to "
                        f"layout, but got {type(layout).__name__}.")
    rank = get_rank()
    if isinstance(cur_rank, bool) or not isinstance(cur_rank, int) or cur_rank != rank:
        raise ValueError(f"For '{_API}', the 'cur_rank' should be this process's rank "
                         f"{rank}, but got {cur_rank!r}.")
    n = parallel_device_num() if is_parallel() else get_group_size()
    first = stage_of_rank(rank) * n if stage_num() > 1 else 0
    if isinstance(initial_rank, bool) or not isinstance(initial_rank, int) or \
            initial_rank != first:
        raise ValueError(f"For '{_API}', the 'initial_rank' should be the first rank of this "
                         f"rank's pipeline stage, {first}, but got {initial_rank!r}.")
    params = net.parameters_dict()
    by_partition: dict[tuple, list[Parameter]] = {}
    for name in sorted(layout):
        if name not in params:
            raise ValueError(f"For '{_API}', the parameter '{name}' of 'layout' should be one "
                             f"of the net's parameters (net.parameters_dict()), but it is not.")
        dm, replica = _layout_axes(name, layout[name])
        if prod(dm) != n:
            raise ValueError(f"For '{_API}', the device matrix of '{name}' should hold the "
                             f"{n} devices of a stage, but got {list(dm)}.")
        if prod(dm[len(dm) - 1 - k] for k in replica) > 1:
            by_partition.setdefault(groups_over(dm, replica), []).append(params[name])
    needed = [None] * get_group_size()
    all_gather_object(needed, sorted(by_partition))
    union = sorted({tuple(tuple(p) for p in key) for keys in needed for key in keys})
    for key in union:                              # the same calls in the same order everywhere
        group = create_stage_groups(key)
        mine = by_partition.get(key)
        if mine:
            g = member_group(_API, group)
            got = collective(Broadcast, g, root_rank=0)(tuple(mine))
            for p, value in zip(mine, got):
                p.set_data(value)
