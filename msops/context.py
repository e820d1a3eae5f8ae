"""Execution context: GRAPH_MODE (trace once, run a compiled schedule) or PYNATIVE_MODE.

Every key MindSpore 2.x documents for `set_context` is accepted. Keys that mean something
here act: `mode`, `save_graphs` / `save_graphs_path` (each compiled graph is written there
as text IR and DOT, see msops.pipeline), `device_target` ("CPU"; "GPU" and "Ascend" are
recorded for scripts that read them, with a warning: msops computes with numpy). The rest tune hardware msops does not drive (Ascend/GPU memory, kernel fusion,
compile caches, AOE tuning, ...): their values are checked for type and stored, and
change nothing. A value msops cannot honour is a ValueError naming the key.

Reliability keys (docs/api.md, "Reliability"): `check_collectives` (default True; the
environment variable MSOPS_CHECK_COLLECTIVES=0 sets it off) checks every eager collective
across ranks; `op_timeout` (seconds, default 600, 0 = wait forever; environment variable
MSOPS_OP_TIMEOUT) bounds every collective and Send/Receive.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable

from msops.common import validator
from msops.common.state_epoch import bump

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context", "graph_dump_dir"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1
_API = "set_context"


def _bool(key: str, v: Any) -> bool:
    return validator.check_bool(key, v, _API)


def _str(key: str, v: Any) -> str:
    validator.check_value_type(key, v, str, _API)
    return v


def _dict(key: str, v: Any) -> dict:
    validator.check_value_type(key, v, dict, _API)
    return dict(v)


def _non_negative(key: str, v: Any) -> int:
    return validator.check_non_negative_int(v, key, _API)


def _positive(key: str, v: Any) -> int:
    return validator.check_positive_int(v, key, _API)


def _choice(*values: Any) -> Callable[[str, Any], Any]:
    def check(key: str, v: Any) -> Any:
        if v not in values:
            raise ValueError(f"For '{_API}', the '{key}' should be one of {list(values)}, "
                             f"but got {v!r}.")
        return v
    return check


def _timeout(key: str, v: Any) -> float:
    validator.check_value_type(key, v, (int, float), _API)
    if isinstance(v, bool) or not v >= 0:
        raise ValueError(f"For '{_API}', the '{key}' should be a number of seconds >= 0 "
                         f"(0: no timeout), but got {v!r}.")
    return float(v)


def _mode(key: str, v: Any) -> int:
    validator.check_value_type(key, v, int, _API)
    if v not in (GRAPH_MODE, PYNATIVE_MODE):
        raise ValueError(f"For '{_API}', the 'mode' should be GRAPH_MODE (0) or "
                         f"PYNATIVE_MODE (1), but got {v}.")
    return v


DEVICE_TARGETS = ("CPU", "GPU", "Ascend")


def _device_target(key: str, v: Any) -> str:
    """MindSpore's targets, recorded as given (scripts branch on them); every kernel runs
    with numpy on the CPU, which a warning says once for "GPU" / "Ascend"."""
    validator.check_value_type(key, v, str, _API)
    v = validator.check_string(key, v, DEVICE_TARGETS, _API)
    if v != "CPU" and not _warned_device[0]:
        _warned_device[0] = True
        warnings.warn(f"For '{_API}', the 'device_target' {v!r} is recorded, but msops runs "
                      f"every kernel with numpy on the CPU.", stacklevel=4)
    return v


_warned_device = [False]


def _save_graphs(key: str, v: Any) -> int:
    """MindSpore 2.x: bool or a level 0..3 (higher dumps more); here any level > 0 dumps."""
    if isinstance(v, bool):
        return int(v)
    return validator.check_int_range(v, 0, 3, validator.Rel.INC_BOTH, key, _API)


def _precompile_only(key: str, v: Any) -> bool:
    if _bool(key, v):
        raise ValueError(f"For '{_API}', the 'precompile_only' should be False (msops "
                         f"compiles on the first call and runs at once), but got True.")
    return False


#: key -> (default, check). Grouped as MindSpore's table: system, debug, execution.
_KEYS: dict[str, tuple[Any, Callable[[str, Any], Any]]] = {
    # system
    "device_id": (0, _non_negative),
    "device_target": ("CPU", _device_target),
    "max_device_memory": ("1024GB", _str),
    "variable_memory_max_size": ("0", _str),
    "mempool_block_size": ("1GB", _str),
    # seconds every collective and Send/Receive may take (msops.communication.watchdog)
    "op_timeout": (float(os.environ.get("MSOPS_OP_TIMEOUT", "600")), _timeout),
    # every eager collective checked across ranks first (msops.primitives.desync)
    "check_collectives": (os.environ.get("MSOPS_CHECK_COLLECTIVES", "1").strip().lower()
                          not in ("0", "false", "off", "no"), _bool),
    # debug
    "save_graphs": (0, _save_graphs),
    "save_graphs_path": (".", _str),
    "enable_dump": (False, _bool),
    "save_dump_path": (".", _str),
    "deterministic": ("OFF", _choice("ON", "OFF")),
    "print_file_path": ("", _str),
    "env_config_path": ("", _str),
    "precompile_only": (False, _precompile_only),
    "reserve_class_name_in_scope": (True, _bool),
    "pynative_synchronize": (False, _bool),
    "debug_level": ("RELEASE", _choice("RELEASE", "DEBUG")),
    # execution
    "mode": (PYNATIVE_MODE, _mode),
    "enable_graph_kernel": (False, _bool),
    "graph_kernel_flags": ("", _str),
    "enable_reduce_precision": (True, _bool),
    "aoe_tune_mode": ("", _str),
    "aoe_config": ({}, _dict),
    "check_bprop": (False, _bool),
    "max_call_depth": (1000, _positive),
    "grad_for_scalar": (False, _bool),
    "enable_compile_cache": (False, _bool),
    "compile_cache_path": (".", _str),
    "inter_op_parallel_num": (0, _non_negative),
    "runtime_num_threads": (30, _non_negative),
    "disable_format_transform": (False, _bool),
    "support_binary": (False, _bool),
    "memory_optimize_level": ("O0", _choice("O0", "O1")),
    "memory_offload": ("OFF", _choice("ON", "OFF")),
    "ascend_config": ({}, _dict),
    "jit_syntax_level": ("LAX", _choice("STRICT", "COMPATIBLE", "LAX")),
    "gpu_config": ({}, _dict),
    "jit_config": ({}, _dict),
    "exec_order": ("bfs", _choice("bfs", "dfs", "gpto")),
    # MindSpore 1.x spellings still found in scripts
    "enable_sparse": (False, _bool),
    "auto_tune_mode": ("NO_TUNE", _str),
    "enable_auto_mixed_precision": (False, _bool),
}

_context: dict[str, Any] = {k: d for k, (d, _) in _KEYS.items()}


def set_context(**kwargs: Any) -> None:
    """Set context keys (MindSpore's `set_context`): `mode` (GRAPH_MODE / PYNATIVE_MODE),
    `save_graphs` (bool or level 0-3) with `save_graphs_path`, `device_target`, and
    every other documented key (checked, stored, no effect here). Unknown key → ValueError."""
    for key in kwargs:                    # all-or-nothing: check every key before setting
        if key not in _KEYS:
            raise ValueError(f"For '{_API}', the key should be one of {sorted(_KEYS)}, "
                             f"but got '{key}'.")
    checked = {key: _KEYS[key][1](key, value) for key, value in kwargs.items()}
    _context.update(checked)
    bump()


def get_context(key: str) -> Any:
    """The value of a context key."""
    if key not in _context:
        raise ValueError(f"For 'get_context', the key should be one of {sorted(_context)}, "
                         f"but got '{key}'.")
    return _context[key]


def graph_dump_dir() -> str | None:
    """Where compiled graphs are written (`save_graphs_path`), or None when `save_graphs`
    is off."""
    return _context["save_graphs_path"] if _context["save_graphs"] else None
