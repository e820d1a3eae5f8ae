"""The auto-parallel context: parallel mode, device count, batch feeding, gradient mean."""
from __future__ import annotations


from typing import Any, Sequence

from msops.common import validator
from msops.common.state_epoch import bump
from msops.common.validator import Rel
from msops.communication import get_group_size

__all__ = ["ParallelMode", "set_auto_parallel_context", "get_auto_parallel_context",
           "reset_auto_parallel_context", "parallel_snapshot", "is_parallel",
           "parallel_device_num", "global_input_shape", "grad_bucket_bytes", "comm_fusion_bytes",
           "dataset_input_strategy", "SEARCH_MODES", "set_internal", "internal"]


class ParallelMode:
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    #: the user writes the collectives by hand: compiled as stand-alone (nothing inserted)
    HYBRID_PARALLEL = "hybrid_parallel"
    MODE_LIST = (STAND_ALONE, DATA_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL, HYBRID_PARALLEL)


_DEFAULTS: dict[str, Any] = {
    "parallel_mode": ParallelMode.STAND_ALONE,
    "device_num": None,            # None: the world size at compile time
    "global_rank": None,           # None: this process's world rank
    "full_batch": False,
    "gradients_mean": False,
    "enable_parallel_optimizer": False,
    # {"allreduce" | "allgather" | "reducescatter": {"mode": "auto" | "size", "config": MB}}
    "comm_fusion": None,
    # how a fed batch is laid over the ranks: "data_parallel" (each rank feeds its dim-0
    # slice; = full_batch False), "full_batch" (each feeds the whole batch; = full_batch
    # True) or one strategy per input, e.g. ((2, 1), (2, 1)): each rank feeds its slice
    "dataset_strategy": "data_parallel",
    # redistribution may move a split between dims with AlltoAll (msops's default: n times
    # fewer bytes than gather-then-slice); False plans with AllGather and Slice only
    "enable_alltoall": True,
    # auto_parallel's strategy search (msops.parallel.propagation)
    "search_mode": "recursive_programming",
    "strategy_ckpt_load_file": "",   # JSON strategy file whose strategies ops take
    "strategy_ckpt_save_file": "",   # JSON strategy file written after each compile
    # MindSpore 2.x's spelling of the two: {"load_file", "save_file", "only_trainable_params"}
    "strategy_ckpt_config": None,
    # accepted and stored; nothing here reads them yet (see docs/api.md)
    "gradient_fp32_sync": True,
    "loss_repeated_mean": True,
    "parameter_broadcast": False,
    "group_ckpt_save_file": "",
    "parallel_optimizer_config": None,
    "optimizer_weight_shard_size": -1,
    "optimizer_weight_shard_aggregated_save": False,
    "all_reduce_fusion_config": None,
    "grad_accumulation_step": 1,
    "force_fp32_communication": False,
    # pipeline parallelism (msops.parallel.stages): the number of stages the devices form
    "pipeline_stages": 1,
    # {"pipeline_interleave": False, "pipeline_scheduler": "gpipe" | "1f1b"}
    "pipeline_config": None,
    # accepted: a compiled pipeline returns its outputs on every stage either way
    "pipeline_result_broadcast": False,
    # features msops does not have: only their "off" value is accepted
    "auto_pipeline": False,
    "dump_local_norm": False,
    "dump_local_norm_path": "",
    "dump_device_local_norm": False,
}
#: MindSpore's older spellings: key -> the key it sets
_ALIASES = {"auto_parallel_search_mode": "search_mode"}
SEARCH_MODES = ("recursive_programming", "sharding_propagation", "dynamic_programming")
#: the gradient AllReduce bucket of comm_fusion mode "auto" (MindSpore's default, 64 MB)
AUTO_FUSION_MB = 64
_ctx: dict[str, Any] = dict(_DEFAULTS)
_snapshot: list = [None]        # the context as a hashable tuple, made again after a change
_API = "set_auto_parallel_context"
_PATHS = ("strategy_ckpt_load_file", "strategy_ckpt_save_file", "group_ckpt_save_file")
_DICTS = ("strategy_ckpt_config", "parallel_optimizer_config")
#: key -> the one value accepted (a feature msops does not implement) and why
_ONLY_OFF = {"auto_pipeline": (False, "automatic stage assignment is not implemented"),
             "dump_local_norm": (False, "local-norm dumps are not implemented"),
             "dump_local_norm_path": ("", "local-norm dumps are not implemented"),
             "dump_device_local_norm": (False, "local-norm dumps are not implemented")}


_SCHEDULERS = ("1f1b", "gpipe")


def _check_pipeline_config(value: Any, api: str) -> dict | None:
    """{"pipeline_interleave": bool, "pipeline_scheduler": "1f1b" | "gpipe"} (MindSpore's
    keys); interleaving lets cells set virtual segments (`Cell.pipeline_segment`)."""
    if value is None:
        return None
    validator.check_value_type("pipeline_config", value, dict, api)
    out = {"pipeline_interleave": False, "pipeline_scheduler": "1f1b"}
    for key, v in value.items():
        if key not in out:
            raise ValueError(f"For '{api}', the 'pipeline_config' keys should be in "
                             f"{sorted(out)}, but got '{key}'.")
        if key == "pipeline_interleave":
            validator.check_bool(key, v, api)
        else:
            validator.check_value_type(key, v, str, api)
            validator.check_string(key, v, _SCHEDULERS, api)
        out[key] = v
    return out


def _check(key: str, value: Any) -> Any:
    api = _API
    if key == "parallel_mode":
        validator.check_value_type(key, value, str, api)
        return validator.check_string(key, value, ParallelMode.MODE_LIST, api)
    if key == "device_num":
        return validator.check_int_range(value, 1, 4096, Rel.INC_BOTH, key, api)
    if key == "global_rank":
        return validator.check_int_range(value, 0, 4095, Rel.INC_BOTH, key, api)
    if key == "comm_fusion":
        return _check_comm_fusion(value, api)
    if key == "dataset_strategy":
        return _check_dataset_strategy(value, api)
    if key == "search_mode":
        validator.check_value_type(key, value, str, api)
        return validator.check_string(key, value, SEARCH_MODES, api)
    if key in _PATHS:
        validator.check_value_type(key, value, str, api)
        return value
    if key == "strategy_ckpt_config":
        return _check_strategy_ckpt_config(value, api)
    if key in _DICTS:
        if value is not None:
            validator.check_value_type(key, value, dict, api)
        return None if value is None else dict(value)
    if key in ("optimizer_weight_shard_size",):
        validator.check_value_type(key, value, int, api)
        if value != -1 and value < 1:
            raise ValueError(f"For '{api}', the '{key}' should be -1 or a positive int, "
                             f"but got {value}.")
        return value
    if key in ("grad_accumulation_step", "pipeline_stages"):
        return validator.check_positive_int(value, key, api)
    if key == "pipeline_config":
        return _check_pipeline_config(value, api)
    if key == "all_reduce_fusion_config":
        ok = isinstance(value, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value) and \
            list(value) == sorted(set(value))
        if not ok:
            raise ValueError(f"For '{api}', the 'all_reduce_fusion_config' should be an "
                             f"increasing list of positive gradient indices, but got "
                             f"{value!r}.")
        return list(value)
    if key in _ONLY_OFF:
        off, why = _ONLY_OFF[key]
        if value != off:
            raise ValueError(f"For '{api}', the '{key}' should be {off!r} ({why} in msops), "
                             f"but got {value!r}.")
        return value
    return validator.check_bool(key, value, api)


#: strategy_ckpt_config's keys (MindSpore 2.x) and their defaults
_STRATEGY_CKPT_CONFIG = {"load_file": "", "save_file": "", "only_trainable_params": True}


def _check_strategy_ckpt_config(value: Any, api: str) -> dict | None:
    """`{"load_file": str, "save_file": str, "only_trainable_params": bool}` (each
    optional), completed with the defaults; None clears it."""
    if value is None:
        return None
    validator.check_value_type("strategy_ckpt_config", value, dict, api)
    unknown = sorted(set(value) - set(_STRATEGY_CKPT_CONFIG))
    if unknown:
        raise ValueError(f"For '{api}', the keys of 'strategy_ckpt_config' should be in "
                         f"{sorted(_STRATEGY_CKPT_CONFIG)}, but got {unknown}.")
    config = {**_STRATEGY_CKPT_CONFIG, **value}
    for key in ("load_file", "save_file"):
        validator.check_value_type(f"strategy_ckpt_config['{key}']", config[key], str, api)
    validator.check_bool("strategy_ckpt_config['only_trainable_params']",
                         config["only_trainable_params"], api)
    return config


def _check_dataset_strategy(value: Any, api: str) -> Any:
    """"data_parallel", "full_batch", or one strategy (a tuple of positive ints) per input."""
    if value in ("data_parallel", "full_batch"):
        return value
    ok = isinstance(value, (tuple, list)) and len(value) > 0 and all(
        isinstance(s, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                             and v > 0 for v in s) for s in value)
    if not ok:
        raise ValueError(f"For '{api}', the 'dataset_strategy' should be 'data_parallel', "
                         f"'full_batch' or one tuple of positive ints per input, e.g. "
                         f"((2, 1), (2, 1)), but got {value!r}.")
    return tuple(tuple(s) for s in value)


def _check_comm_fusion(value: Any, api: str) -> Any:
    """comm_fusion as MindSpore spells it: None, or a dict over "allreduce" (the gradient
    buckets), "allgather" and "reducescatter" (the fused collectives of the parallel
    optimizer, graph/fusion.py) of {"mode": "auto"} | {"mode": "size", "config": bucket
    size in MB}."""
    if value is None:
        return None
    kinds = ("allreduce", "allgather", "reducescatter")
    good = isinstance(value, dict) and value and set(value) <= set(kinds)
    out = {}
    for kind, inner in (value.items() if good else ()):
        mode = inner.get("mode") if isinstance(inner, dict) else None
        config = inner.get("config") if isinstance(inner, dict) else None
        ok = (mode == "auto" and set(inner) <= {"mode", "config"}) or \
            (mode == "size" and set(inner) == {"mode", "config"} and
             isinstance(config, (int, float)) and not isinstance(config, bool) and config > 0)
        good = good and ok
        out[kind] = dict(inner) if ok else None
    if not good:
        raise ValueError(f"For '{api}', the 'comm_fusion' should be None or a dict over "
                         f"{list(kinds)} of {{'mode': 'auto'}} or {{'mode': 'size', "
                         f"'config': MB > 0}}, but got {value!r}.")
    return out


def grad_bucket_bytes() -> int:
    """The gradient AllReduce bucket size in bytes, from comm_fusion (default: auto)."""
    return comm_fusion_bytes()["allreduce"]


def comm_fusion_bytes() -> dict[str, int]:
    """The fusion bucket size in bytes of each fused collective kind ("allreduce",
    "allgather", "reducescatter"), from comm_fusion: "size" gives MB, "auto" (and a kind
    not given) MindSpore's 64 MB."""
    fusion = _ctx["comm_fusion"] or {}
    out = {}
    for kind in ("allreduce", "allgather", "reducescatter"):
        inner = fusion.get(kind) or {"mode": "auto"}
        mb = inner["config"] if inner["mode"] == "size" else AUTO_FUSION_MB
        out[kind] = int(mb * 2 ** 20)
    return out


def set_auto_parallel_context(**kwargs: Any) -> None:
    """Set auto-parallel keys (MindSpore's `set_auto_parallel_context`; every documented key
    is accepted, see docs/api.md for which act). Unknown key, mode or value → ValueError.

    `full_batch=True`: every rank feeds the whole batch and msops slices it; False: every
    rank feeds its own batch slice. `dataset_strategy` says the same ("full_batch" /
    "data_parallel") or gives one strategy per input; setting one sets the other.
    """
    for key in kwargs:                   # all-or-nothing: check every key before setting
        if _ALIASES.get(key, key) not in _DEFAULTS:
            raise ValueError(f"For '{_API}', the key should be one of "
                             f"{sorted(_DEFAULTS) + sorted(_ALIASES)}, but got '{key}'.")
    checked = [(_ALIASES.get(k, k), _check(_ALIASES.get(k, k), v)) for k, v in kwargs.items()]
    for key, value in checked:
        _ctx[key] = value
        if key == "full_batch":
            _ctx["dataset_strategy"] = "full_batch" if value else "data_parallel"
        elif key == "dataset_strategy":
            _ctx["full_batch"] = value == "full_batch"
        elif key == "strategy_ckpt_config" and value is not None:   # the files it names
            _ctx["strategy_ckpt_load_file"] = value["load_file"]
            _ctx["strategy_ckpt_save_file"] = value["save_file"]
    _snapshot[0] = None
    bump()


def get_auto_parallel_context(key: str) -> Any:
    """The value of one auto-parallel context key."""
    key = _ALIASES.get(key, key)
    if key not in _ctx:
        raise ValueError(f"For 'get_auto_parallel_context', the key should be one of "
                         f"{sorted(_ctx)}, but got '{key}'.")
    return _ctx[key]


def reset_auto_parallel_context() -> None:
    """Back to stand-alone defaults."""
    _ctx.clear()
    _ctx.update(_DEFAULTS)
    _snapshot[0] = None
    bump()


def set_internal(key: str, value: Any) -> None:
    """Set a context entry that is not one of set_auto_parallel_context's keys (MindSpore
    keeps these settings elsewhere: set_op_strategy_config's file, the algo parameters):
    in the context, a change recompiles and reset_auto_parallel_context clears it."""
    _ctx[key] = value
    _snapshot[0] = None
    bump()


def internal(key: str, default: Any = None) -> Any:
    """An entry set by set_internal, else `default`."""
    return _ctx.get(key, default)


def parallel_snapshot() -> tuple:
    """A hashable snapshot of the context (part of a compile-cache key, read every call)."""
    snap = _snapshot[0]
    if snap is None:
        snap = _snapshot[0] = tuple(sorted((k, repr(v) if isinstance(v, (dict, list)) else v)
                                           for k, v in _ctx.items()))
    return snap


def is_parallel() -> bool:
    """True when the context asks for a partitioned graph."""
    return _ctx["parallel_mode"] in (ParallelMode.DATA_PARALLEL, ParallelMode.SEMI_AUTO_PARALLEL,
                                     ParallelMode.AUTO_PARALLEL)


def parallel_device_num() -> int:
    """The stage's device count: the world size (the context's device_num, which must equal
    it) over `pipeline_stages`."""
    world = get_group_size()
    n = _ctx["device_num"]
    if n is not None and n != world:
        raise ValueError(f"For 'set_auto_parallel_context', the 'device_num' should equal the "
                         f"world size {world} (ranks started), but got {n}.")
    stages = _ctx["pipeline_stages"]
    if world % stages:
        raise ValueError(f"For 'set_auto_parallel_context', the 'pipeline_stages' should divide "
                         f"the world size {world} (each stage holds as many devices), but got "
                         f"{stages}.")
    return world // stages


def dataset_input_strategy(index: int) -> tuple | None:
    """The dataset_strategy entry of fed input `index` when dataset_strategy is a tuple
    (None: "data_parallel" / "full_batch"). Too few entries is a ValueError."""
    strategy = _ctx["dataset_strategy"]
    if not isinstance(strategy, tuple):
        return None
    if index >= len(strategy):
        raise ValueError(f"For '{_API}', the 'dataset_strategy' should have one strategy per "
                         f"fed input (at least {index + 1}), but got {len(strategy)}: "
                         f"{strategy}.")
    return strategy[index]


def global_input_shape(shape: Sequence[int], index: int = 0) -> tuple:
    """The global shape of fed input `index`: with full_batch=False each rank feeds dim 0 / N
    (or, with a tuple dataset_strategy, each dim / its strategy value)."""
    if not is_parallel() or _ctx["full_batch"] or not shape:
        return tuple(shape)
    strategy = dataset_input_strategy(index)
    if strategy is not None:
        if len(strategy) != len(shape):
            raise ValueError(f"For '{_API}', the 'dataset_strategy' of input {index} should "
                             f"have length {len(shape)} (the input's rank, shape "
                             f"{tuple(shape)}), but got {strategy}.")
        return tuple(s * v for s, v in zip(shape, strategy))
    return (shape[0] * parallel_device_num(),) + tuple(shape[1:])
