"""Execution context: GRAPH_MODE (trace once, run a compiled schedule) or PYNATIVE_MODE.

Reliability keys (docs/api.md, "Reliability"): `check_collectives` (default True; the
environment variable MSOPS_CHECK_COLLECTIVES=0 sets it off) checks every eager collective
across ranks; `op_timeout` (seconds, default 600, 0 = wait forever; environment variable
MSOPS_OP_TIMEOUT) bounds every collective and Send/Receive.
"""
from __future__ import annotations

import os
from typing import Any

from msops.common import validator

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEFAULTS: dict[str, Any] = {"mode": PYNATIVE_MODE, "device_target": "CPU", "device_id": 0,
                             "save_graphs": False}
_DEFAULTS["check_collectives"] = os.environ.get("MSOPS_CHECK_COLLECTIVES", "1").strip().lower() \
    not in ("0", "false", "off", "no")
_DEFAULTS["op_timeout"] = float(os.environ.get("MSOPS_OP_TIMEOUT", "600"))
_context: dict[str, Any] = dict(_DEFAULTS)


def set_context(**kwargs: Any) -> None:
    """Set context keys: mode (GRAPH_MODE / PYNATIVE_MODE), device_target, device_id, save_graphs,
    check_collectives, op_timeout."""
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            raise ValueError(f"For 'set_context', the key should be one of {sorted(_DEFAULTS)}, "
                             f"but got '{key}'.")
        if key == "mode":
            validator.check_value_type("mode", value, int, "set_context")
            if value not in (GRAPH_MODE, PYNATIVE_MODE):
                raise ValueError("For 'set_context', the 'mode' should be GRAPH_MODE (0) or "
                                 f"PYNATIVE_MODE (1), but got {value}.")
        if key == "check_collectives":
            validator.check_bool("check_collectives", value, "set_context")
        if key == "op_timeout":
            validator.check_value_type("op_timeout", value, (int, float), "set_context")
            if isinstance(value, bool) or not value >= 0:
                raise ValueError("For 'set_context', the 'op_timeout' should be a number of "
                                 f"seconds >= 0 (0: no timeout), but got {value!r}.")
            value = float(value)
        _context[key] = value


def get_context(key: str) -> Any:
    """The value of a context key."""
    if key not in _context:
        raise ValueError(f"For 'get_context', the key should be one of {sorted(_context)}, "
                         f"but got '{key}'.")
    return _context[key]
