"""Where in the user's code a call comes from: the line errors and reports point at."""
from __future__ import annotations

import hashlib
import linecache
import os
import sys
from typing import Any

__all__ = ["user_source", "call_site", "user_site", "site_of", "sites", "CallSite"]

_MSOPS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_OPS_DIR = _MSOPS_DIR + "ops" + os.sep
#: call sites remembered (a script has few); beyond it the oldest is forgotten
_SITES_LIMIT = 1024


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


class CallSite:
    """One place in code that calls into msops's primitives: its text (`x.py:12: code`) and
    a 62-bit hash of that text, the same on every rank running the same script. `user`:
    the place is the user's code (False: inside msops, e.g. save_checkpoint's own call)."""

    __slots__ = ("code", "text", "hash", "user")

    def __init__(self, code: Any, text: str | None, user: bool = True) -> None:
        self.code = code                 # kept alive: its id() is part of the cache key
        self.text, self.user = text, user
        self.hash = 0 if text is None else \
            int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


_NOWHERE = CallSite(None, None)
#: by (id(code), instruction offset); the CallSite keeps its code alive, so no other code
#: object takes that id while the entry lives
sites: dict[tuple[int, int], CallSite] = {}


def call_site(depth: int = 1) -> CallSite:
    """The CallSite of the innermost frame outside msops, starting `depth` frames above the
    caller: a frame walk and a cached lookup (no line-number computation, no file read
    after the first call from a site)."""
    return user_site(sys._getframe(depth + 1))


def user_site(frame: Any) -> CallSite:
    """The CallSite of `frame` or, when that is msops code, of the innermost frame above it
    outside msops."""
    while frame.f_code.co_filename.startswith(_MSOPS_DIR):
        frame = frame.f_back
        if frame is None:
            return _NOWHERE
    return site_of(frame)      # (not None: the walk stopped at user code)


def site_of(frame: Any) -> CallSite | None:
    """The cached CallSite of the call being made in `frame`: the user's line, or for msops
    code its own location (`user=False`), except msops/ops/ (thin public wrappers, None:
    the place that counts is further up; `call_site` walks there)."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    site = sites.get(key)
    if site is not None:
        return site
    path, line = code.co_filename, frame.f_lineno
    if path.startswith(_MSOPS_DIR):
        if path.startswith(_OPS_DIR):
            return None
        site = CallSite(code, f"msops/{path[len(_MSOPS_DIR):]}:{line}", user=False)
    else:
        site = CallSite(code, f"{os.path.basename(path)}:{line}: "
                              f"{linecache.getline(path, line).strip()}")
    if len(sites) >= _SITES_LIMIT:
        del sites[next(iter(sites))]
    sites[key] = site
    return site
