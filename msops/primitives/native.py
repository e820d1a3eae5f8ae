"""The optional C fast path, `msops._fastpath`, or None.

None when the extension was not built (no C compiler at install) or when the
environment sets MSOPS_PURE_PYTHON=1; msops then runs the pure-Python twins of its
types (`primitive._PyCall`, `buffer_call._py_buffer_call`,
`gather_check._py_gather_check`), which behave alike.
"""
from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("MSOPS_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from msops import _fastpath
    except ImportError:
        return None
    return _fastpath


fastpath: ModuleType | None = _load()
