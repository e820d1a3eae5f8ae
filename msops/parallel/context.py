"""The auto-parallel context: parallel mode, device count, batch feeding, gradient mean."""
from __future__ import annotations

from typing import Any, Sequence

from msops.common import validator
from msops.common.validator import Rel
from msops.communication import get_group_size

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "parallel_snapshot", "is_parallel",
           "parallel_device_num", "global_input_shape", "grad_bucket_bytes"]


class ParallelMode:
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST = (STAND_ALONE, DATA_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL)


_DEFAULTS: dict[str, Any] = {
    "parallel_mode": ParallelMode.STAND_ALONE,
    "device_num": None,            # None: the world size at compile time
    "global_rank": None,           # None: this process's world rank
    "full_batch": False,
    "gradients_mean": False,
    "enable_parallel_optimizer": False,
    "comm_fusion": None,           # {"allreduce": {"mode": "auto" | "size", "config": MB}}
    "search_mode": "recursive_programming",   # auto_parallel's strategy search
}
#: auto_parallel's search modes (msops.parallel.propagation)
SEARCH_MODES = ("recursive_programming", "sharding_propagation", "dynamic_programming")
#: the gradient AllReduce bucket of comm_fusion mode "auto" (MindSpore's default, 64 MB)
AUTO_FUSION_MB = 64
_ctx: dict[str, Any] = dict(_DEFAULTS)
_snapshot: list = [None]        # the context as a hashable tuple, made again after a change


def _check(key: str, value: Any) -> Any:
    api = "set_auto_parallel_context"
    if key == "parallel_mode":
        validator.check_value_type(key, value, str, api)
        return validator.check_string(key, value, ParallelMode.MODE_LIST, api)
    if key == "device_num":
        return validator.check_int_range(value, 1, 4096, Rel.INC_BOTH, key, api)
    if key == "global_rank":
        return validator.check_int_range(value, 0, 4095, Rel.INC_BOTH, key, api)
    if key == "comm_fusion":
        return _check_comm_fusion(value, api)
    if key == "search_mode":
        validator.check_value_type(key, value, str, api)
        return validator.check_string(key, value, SEARCH_MODES, api)
    return validator.check_bool(key, value, api)


def _check_comm_fusion(value: Any, api: str) -> Any:
    """comm_fusion as MindSpore spells it, for the gradient AllReduces: None, or
    {"allreduce": {"mode": "auto"} | {"mode": "size", "config": bucket size in MB}}."""
    if value is None:
        return None
    inner = value.get("allreduce") if isinstance(value, dict) and set(value) == {"allreduce"} \
        else None
    mode = inner.get("mode") if isinstance(inner, dict) else None
    config = inner.get("config") if isinstance(inner, dict) else None
    ok = (mode == "auto" and set(inner) <= {"mode", "config"}) or \
        (mode == "size" and set(inner) == {"mode", "config"} and
         isinstance(config, (int, float)) and not isinstance(config, bool) and config > 0)
    if not ok:
        raise ValueError(f"For '{api}', the 'comm_fusion' should be None or "
                         f"{{'allreduce': {{'mode': 'auto'}}}} or {{'allreduce': {{'mode': "
                         f"'size', 'config': MB > 0}}}}, but got {value!r}.")
    return {"allreduce": dict(inner)}


def grad_bucket_bytes() -> int:
    """The gradient AllReduce bucket size in bytes, from comm_fusion (default: auto)."""
    fusion = _ctx["comm_fusion"]
    inner = fusion["allreduce"] if fusion else {"mode": "auto"}
    mb = inner["config"] if inner["mode"] == "size" else AUTO_FUSION_MB
    return int(mb * 2 ** 20)


def set_auto_parallel_context(**kwargs: Any) -> None:
    """Set parallel_mode, device_num, global_rank, full_batch, gradients_mean,
    enable_parallel_optimizer, comm_fusion, search_mode (MindSpore's validation: unknown key or mode, device_num < 1
    → ValueError). `full_batch=True`: every rank feeds the whole batch and msops slices it;
    False: every rank feeds its own batch slice."""
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            raise ValueError(f"For 'set_auto_parallel_context', the key should be one of "
                             f"{sorted(_DEFAULTS)}, but got '{key}'.")
        _ctx[key] = _check(key, value)
        _snapshot[0] = None


def get_auto_parallel_context(key: str) -> Any:
    """The value of one auto-parallel context key."""
    if key not in _ctx:
        raise ValueError(f"For 'get_auto_parallel_context', the key should be one of "
                         f"{sorted(_ctx)}, but got '{key}'.")
    return _ctx[key]


def reset_auto_parallel_context() -> None:
    """Back to stand-alone defaults."""
    _ctx.clear()
    _ctx.update(_DEFAULTS)
    _snapshot[0] = None


def parallel_snapshot() -> tuple:
    """A hashable snapshot of the context (part of a compile-cache key, read every call)."""
    snap = _snapshot[0]
    if snap is None:
        snap = _snapshot[0] = tuple(sorted((k, repr(v) if isinstance(v, dict) else v)
                                           for k, v in _ctx.items()))
    return snap


def is_parallel() -> bool:
    """True when the context asks for a partitioned graph."""
    return _ctx["parallel_mode"] in (ParallelMode.DATA_PARALLEL, ParallelMode.SEMI_AUTO_PARALLEL,
                                     ParallelMode.AUTO_PARALLEL)


def parallel_device_num() -> int:
    """The stage's device count: the context's device_num, which must equal the world size."""
    world = get_group_size()
    n = _ctx["device_num"]
    if n is not None and n != world:
        raise ValueError(f"For 'set_auto_parallel_context', the 'device_num' should equal the "
                         f"world size {world} (ranks started), but got {n}.")
    return world


def global_input_shape(shape: Sequence[int]) -> tuple:
    """The global shape of a fed input: with full_batch=False each rank feeds dim 0 / N."""
    if not is_parallel() or _ctx["full_batch"] or not shape:
        return tuple(shape)
    return (shape[0] * parallel_device_num(),) + tuple(shape[1:])
