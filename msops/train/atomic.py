"""Atomic file replacement: write a temporary file in the same folder, fsync, rename.

A process killed (or an error raised) at any point before the rename leaves the previous
file as it was; the rename is atomic on POSIX and Windows (`os.replace`), and the folder
is fsynced after it so the new name survives a power loss too.
"""
from __future__ import annotations

import os
import tempfile
from typing import Callable

__all__ = ["atomic_write"]


def atomic_write(path: str, write: Callable[[str], None]) -> None:
    """Call `write(tmp)` to fill a temporary file beside `path`, then make it `path`.

    On any error the temporary file is removed and `path` is left untouched."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + "-", dir=folder)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    try:                                   # make the rename itself durable
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
