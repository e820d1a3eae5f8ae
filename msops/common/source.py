"""Where in the user's code a call comes from: the line errors and reports point at."""
from __future__ import annotations

import linecache
import os
import sys

__all__ = ["user_source"]

_MSOPS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_source(full_path: bool = True) -> str | None:
    """`file:line: code` of the innermost stack frame outside the msops package (the file's
    base name when not `full_path`)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_MSOPS_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    path, line = frame.f_code.co_filename, frame.f_lineno
    shown = path if full_path else os.path.basename(path)
    return f"{shown}:{line}: {linecache.getline(path, line).strip()}"
