"""Parameter plans: the layout a Parameter is stored in, set by `shard(parameter_plan=...)`.

Without a plan a Parameter takes the layout of its first consumer. With one, the
partition pass binds it in the planned layout (each rank holds that slice; its gradient
and optimizer state come out in it) and redistributes it to whatever each consumer
needs; sharding propagation prices that move like a fed input's. Plans count only in
semi_auto_parallel and auto_parallel, as primitives' strategies do.
"""
from __future__ import annotations

from typing import Any, Sequence

from msops.common.shard_layout import Layout
from msops.common.state_epoch import bump
from msops.parallel.layout import TensorLayout
from msops.parallel.op_sharding import resolve
from msops.primitives.array_ops import Identity
from msops.primitives.primitive import _check_strategy
from msops.primitives.sharding import spec_of

__all__ = ["check_plan", "set_plan", "plan_of", "planned_layout"]

_ATTR = "_layout_plan"


def check_plan(name: str, value: Any, where: str) -> tuple:
    """One `parameter_plan` entry (a tuple of ints or a called Layout) as a strategy of
    one tensor; `where` names the call for errors."""
    if isinstance(value, Layout):
        return _check_strategy((value,), f"parameter_plan['{name}']", where)
    if not isinstance(value, tuple):
        raise TypeError(f"For '{where}', the 'parameter_plan['{name}']' should be a tuple of "
                        f"ints or a Layout, but got {type(value).__name__}: {value!r}.")
    return _check_strategy((value,), f"parameter_plan['{name}']", where)


def set_plan(param: Any, strategy: tuple) -> None:
    """Store `param` in the layout of `strategy` (one tensor's strategy) from now on."""
    setattr(param, _ATTR, strategy)
    bump()                           # compiled graphs holding its old layout are stale


def plan_of(param: Any) -> tuple | None:
    """`param`'s plan (a one-tensor strategy), or None."""
    return getattr(param, _ATTR, None)


def planned_layout(param: Any, shape: Sequence[int], device_num: int) -> TensorLayout | None:
    """The layout `param` (of whole shape `shape`) is planned to be stored in, or None."""
    strategy = plan_of(param)
    if strategy is None:
        return None
    shape = tuple(shape)
    prim = Identity()
    try:
        sh, _, _ = resolve(prim, spec_of(prim, [shape], [shape], {}), strategy, None,
                           [shape], [shape], device_num)
    except ValueError as err:
        raise ValueError(f"For 'shard', the 'parameter_plan' of Parameter '{param.name}' "
                         f"(shape {list(shape)}) should fit it on {device_num} devices, but "
                         f"got {strategy[0]}: {err}") from None
    return TensorLayout(sh.device_matrix, sh.in_maps[0], shape)
