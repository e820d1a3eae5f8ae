"""Execution context: GRAPH_MODE (trace once, run a compiled schedule) or PYNATIVE_MODE."""
from __future__ import annotations

from typing import Any

from msops.common import validator

__all__ = ["GRAPH_MODE", "PYNATIVE_MODE", "set_context", "get_context"]

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_DEFAULTS: dict[str, Any] = {"mode": PYNATIVE_MODE, "device_target": "CPU", "device_id": 0,
                             "save_graphs": False}
_context: dict[str, Any] = dict(_DEFAULTS)


def set_context(**kwargs: Any) -> None:
    """Set context keys: mode (GRAPH_MODE / PYNATIVE_MODE), device_target, device_id, save_graphs."""
    for key, value in kwargs.items():
        if key not in _DEFAULTS:
            raise ValueError(f"For 'set_context', the key should be one of {sorted(_DEFAULTS)}, "
                             f"but got '{key}'.")
        if key == "mode":
            validator.check_value_type("mode", value, int, "set_context")
            if value not in (GRAPH_MODE, PYNATIVE_MODE):
                raise ValueError("For 'set_context', the 'mode' should be GRAPH_MODE (0) or "
                                 f"PYNATIVE_MODE (1), but got {value}.")
        _context[key] = value


def get_context(key: str) -> Any:
    """The value of a context key."""
    if key not in _context:
        raise ValueError(f"For 'get_context', the key should be one of {sorted(_context)}, "
                         f"but got '{key}'.")
    return _context[key]
