"""Reading a safetensors file straight into fresh numpy arrays: one copy, no library.

`safetensors.numpy.load_file` maps the file and copies each tensor out of the map into a
Python buffer; measured here it took 2-3x as long as one `readinto` of the same bytes.
Here the header (8-byte little-endian length, then JSON) is parsed and checked as the
format's reference reader checks it, and each tensor's bytes are read with one
`readinto` into a new C-order array, which the caller keeps (no copy after). `readinto`
releases the GIL, so a caller's per-tensor work (the checksum) runs on another thread
while the next tensor is read. Nothing here runs code from the file.
"""
from __future__ import annotations

import json
import math
import os
from typing import Callable

import ml_dtypes
import numpy as np

__all__ = ["SafetensorsFile", "SafetensorsFormatError"]

#: safetensors' dtype names -> numpy (little-endian, as the format stores them)
DTYPES = {k: np.dtype(v) for k, v in {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "U64": "<u8", "I32": "<i4",
    "U32": "<u4", "I16": "<i2", "U16": "<u2", "I8": "i1", "U8": "u1", "BOOL": "?",
    "C64": "<c8", "BF16": ml_dtypes.bfloat16, "F8_E4M3": ml_dtypes.float8_e4m3fn,
    "F8_E5M2": ml_dtypes.float8_e5m2}.items()}
_MAX_HEADER = 100_000_000        # the reference reader's limit on the JSON header
# tensors below _SMALL bytes are read in runs of up to _RUN bytes (one read, then each
# copied out): a read per tiny tensor would cost more than its bytes
_SMALL = 64 * 2 ** 10
_RUN = 4 * 2 ** 20


class SafetensorsFormatError(ValueError):
    """A file that is not a well-formed safetensors file; `cut` names the tensors whose
    bytes lie past the end of a truncated file."""

    def __init__(self, what: str, cut: list[str] | None = None) -> None:
        super().__init__(what)
        self.cut = cut or []


def _header(f, size: int) -> tuple[list[tuple[str, np.dtype, tuple, int, int]], dict, int]:
    """([(name, dtype, shape, begin, end)] by offset, __metadata__, data start) of a file."""
    if size < 8:
        raise SafetensorsFormatError(f"{size} bytes, shorter than the 8-byte header length")
    n = int.from_bytes(_exact(f, 8), "little")
    if n > _MAX_HEADER or 8 + n > size:
        raise SafetensorsFormatError(f"a header of {n} bytes in a file of {size}")
    try:
        header = json.loads(_exact(f, n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise SafetensorsFormatError(f"the header is not JSON: {err}") from None
    if not isinstance(header, dict):
        raise SafetensorsFormatError("the header should be a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict)
            and all(isinstance(v, str) for v in metadata.values())):
        raise SafetensorsFormatError("'__metadata__' should map strings to strings")
    entries = []
    for name, info in header.items():
        try:
            dtype = DTYPES[info["dtype"]]
            shape = tuple(info["shape"])
            begin, end = info["data_offsets"]
            ok = type(begin) is int and type(end) is int and 0 <= begin <= end \
                and all(type(d) is int and d >= 0 for d in shape)
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise SafetensorsFormatError(f"the entry of '{name}' should have a known dtype, "
                                         f"a shape and data_offsets, but got {info!r:.200}")
        if end - begin != math.prod(shape) * dtype.itemsize:
            raise SafetensorsFormatError(f"'{name}' ({info['dtype']} {list(shape)}) should "
                                         f"span {math.prod(shape) * dtype.itemsize} bytes, "
                                         f"but its data_offsets span {end - begin}")
        entries.append((name, dtype, shape, begin, end))
    entries.sort(key=lambda e: (e[3], e[4]))
    data = size - 8 - n
    cut = sorted(e[0] for e in entries if e[4] > data)
    if cut:
        raise SafetensorsFormatError(f"the data section holds {data} bytes", cut)
    # the tensors tile the data section: in order, no gap, no overlap, nothing after
    position = 0
    for name, _, _, begin, end in entries:
        if begin != position:
            raise SafetensorsFormatError(f"'{name}' should start at byte {position} of the "
                                         f"data, but starts at {begin}")
        position = end
    if position != data:
        raise SafetensorsFormatError(f"the tensors end at byte {position} of a data section "
                                     f"of {data} bytes")
    return entries, metadata, 8 + n


def _exact(f, n: int) -> bytes:
    """The next `n` bytes of `f`."""
    buf = np.empty(n, np.uint8)
    _fill(f, buf)
    return buf.tobytes()


def _fill(f, arr: np.ndarray) -> None:
    """Read exactly `arr.nbytes` bytes from `f` into `arr` (a read may return fewer)."""
    view = memoryview(arr.reshape(-1).view(np.uint8))
    done = 0
    while done < len(view):
        got = f.readinto(view[done:])
        if not got:
            raise SafetensorsFormatError(f"the file ended {len(view) - done} bytes early "
                                         f"(it changed while it was read)")
        done += got


class SafetensorsFile:
    """An open safetensors file, its header read and checked (`metadata`: its
    `__metadata__`); `read_all` then reads every tensor. A malformed file is a
    SafetensorsFormatError saying what is wrong."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "rb", buffering=0)
        try:
            self._tensors, self.metadata, self._start = _header(
                self._file, os.fstat(self._file.fileno()).st_size)
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> "SafetensorsFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()

    def read_all(self, each: Callable[[str, np.ndarray], None] | None = None
                 ) -> dict[str, np.ndarray]:
        """name -> array of every tensor, names sorted (as safetensors' `keys()`). Each
        array is new, writable and owned by the caller; `each(name, array)` is called as
        soon as a tensor is read (before the next large one is)."""
        self._file.seek(self._start)
        tensors, arrays, i = self._tensors, {}, 0
        while i < len(tensors):                # file order: one sequential pass
            name, dtype, shape, begin, end = tensors[i]
            j = i
            while (j < len(tensors) and tensors[j][4] - tensors[j][3] < _SMALL
                   and tensors[j][4] - begin <= _RUN):
                j += 1
            if j == i:                         # a large tensor: read into its own array
                arr = arrays[name] = np.empty(shape, dtype)
                _fill(self._file, arr)
                if each is not None:
                    each(name, arr)
                i += 1
                continue
            run = np.empty(tensors[j - 1][4] - begin, np.uint8)
            _fill(self._file, run)
            for name, dtype, shape, start, _ in tensors[i:j]:
                arr = arrays[name] = np.frombuffer(run, dtype, math.prod(shape),
                                                   start - begin).reshape(shape).copy()
                if each is not None:
                    each(name, arr)
            i = j
        return {name: arrays[name] for name in sorted(arrays)}
