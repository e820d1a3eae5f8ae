"""Checkpoint files: safetensors, written atomically, read back with a checksum per tensor.

A file holds named numpy arrays and, in its `__metadata__`, one JSON entry per tensor
(`msops.tensors`): dtype name, shape, CRC-32C of its bytes (`crc32c`) and any extra fields the
caller gives (its layout); `msops.crc32` is the crc32 of the rest of the metadata, so a
damaged entry (a dtype, a checksum, the format's name) is told from a real one. Dtypes safetensors' numpy API lacks (bfloat16, complex128)
are stored as their raw bytes (uint8, one extra trailing dim of the item size) and
viewed back on reading. No pickle: reading never runs code.
"""
from __future__ import annotations

import json
import os
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Mapping

import crc32c
import ml_dtypes                # registers bfloat16 with numpy, names its dtypes
import numpy as np
from safetensors.numpy import save_file

from msops.common.tensor import contiguous
from msops.train.atomic import atomic_write
from msops.train.safetensors_read import SafetensorsFile, SafetensorsFormatError

__all__ = ["write_tensors", "read_tensors", "CheckpointError"]

_FORMAT = "msops-checkpoint-1"
_NATIVE = {"float64", "float32", "float16", "int64", "uint64", "int32", "uint32", "int16",
           "uint16", "int8", "uint8", "bool", "complex64"}


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read or fails its checks."""


_METADATA_CRC = "msops.crc32"


def _metadata_crc(metadata: Mapping[str, str]) -> int:
    """crc32 of the metadata but its own entry, in a canonical spelling."""
    rest = {k: v for k, v in metadata.items() if k != _METADATA_CRC}
    return zlib.crc32(json.dumps(rest, sort_keys=True).encode()) & 0xFFFFFFFF


def _crc(arr: np.ndarray, kind: str = "crc32c") -> int:
    """The checksum of `arr`'s bytes: CRC-32C (crc32c: hardware-accelerated, measured 10x
    zlib's crc32, which was the largest cost of a save), or zlib's crc32 (older files)."""
    data = contiguous(arr)           # both take any C-contiguous buffer: no view needed
    if kind == "crc32c":
        return crc32c.crc32c(data)
    return zlib.crc32(data) & 0xFFFFFFFF


# checksums run on worker threads (crc32c releases the GIL): several tensors at once when
# saving, and each tensor while the next is being read when loading
_POOL: list[ThreadPoolExecutor] = []
_SERIAL_BYTES = 4 * 2 ** 20             # below this, threads cost more than they save


def _pool() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1),
                                        thread_name_prefix="msops-crc"))
    return _POOL[0]


def _crc_later(arr: np.ndarray, kind: str = "crc32c") -> Future | int:
    """The checksum of `arr`, computed now when small, else on a worker thread."""
    if arr.nbytes < _SERIAL_BYTES:
        return _crc(arr, kind)
    return _pool().submit(_crc, arr, kind)


def _value(crc: Future | int) -> int:
    return crc.result() if isinstance(crc, Future) else crc


def _stored(arr: np.ndarray) -> np.ndarray:
    arr = contiguous(arr)
    if arr.dtype.name in _NATIVE:
        return arr
    return arr.reshape(arr.shape + (1,)).view(np.uint8)


def write_tensors(path: str, tensors: Mapping[str, np.ndarray],
                  extra: Mapping[str, dict] | None = None) -> None:
    """Write `tensors` to `path` atomically: a temporary file in the same folder, flushed
    and fsynced, then renamed over `path`. On any error `path` is left as it was."""
    entries = {}
    stored = {}
    crcs = {}
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        stored[name] = _stored(arr)
        crcs[name] = _crc_later(arr)
        entries[name] = {"dtype": arr.dtype.name, "shape": list(arr.shape), "crc32c": 0,
                         **(extra or {}).get(name, {})}
    for name, crc in crcs.items():
        entries[name]["crc32c"] = _value(crc)
    metadata = {"format": _FORMAT, "msops.tensors": json.dumps(entries)}
    metadata[_METADATA_CRC] = str(_metadata_crc(metadata))
    atomic_write(path, lambda tmp: save_file(stored, tmp, metadata=metadata))


def _restored(stored: np.ndarray, entry: dict, path: str, name: str,
              api: str = "load_checkpoint") -> np.ndarray:
    dtype = np.dtype(entry["dtype"])
    shape = tuple(entry["shape"])
    if stored.dtype != dtype:
        if stored.dtype != np.uint8 or stored.shape != shape + (dtype.itemsize,):
            raise CheckpointError(f"For '{api}', the tensor '{name}' in '{path}' "
                                  f"should be stored as {dtype.name} {shape}, but got "
                                  f"{stored.dtype.name} {stored.shape}.")
        stored = contiguous(stored).view(dtype).reshape(shape)
    return stored


def _check_mindspore_crc(path: str, raw: Mapping[str, np.ndarray], crc_num: str,
                         api: str = "load_checkpoint") -> None:
    """MindSpore's safetensors checksum (`crc_check=True`): crc32 chained over each
    tensor's name and bytes, in sorted name order, kept as a decimal string."""
    crc = 0
    for name in sorted(raw):
        crc = zlib.crc32(name.encode(), crc)
        crc = zlib.crc32(contiguous(raw[name]).reshape(-1).view(np.uint8), crc)
    if str(crc & 0xFFFFFFFF) != crc_num.strip():
        raise CheckpointError(f"For '{api}', the file '{path}' fails MindSpore's "
                              f"crc_num check: the file is corrupted or was tampered with.")


def read_tensors(path: str, api: str = "load_checkpoint"
                 ) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """(name -> array, name -> metadata entry) of a checkpoint file; every checksum is
    checked (errors name `api`). A safetensors file without msops metadata is read
    without checks."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"For '{api}', the checkpoint file '{path}' "
                                f"does not exist.")
    crcs: dict[str, Future | int] = {}
    restored: dict[str, np.ndarray] = {}

    def check_later(name: str, stored: np.ndarray) -> None:
        """Start `name`'s checksum, which runs while the next tensor is read."""
        if name in entries:
            arr = restored[name] = _restored(stored, entries[name], path, name, api)
            kind = "crc32c" if "crc32c" in entries[name] else "crc32"
            crcs[name] = _crc_later(arr, kind)

    try:
        with SafetensorsFile(path) as f:
            metadata = f.metadata
            entries = _entries(path, metadata, api)
            raw = f.read_all(check_later)
    except SafetensorsFormatError as err:
        which = f" (tensors cut off: {err.cut})" if err.cut else ""
        raise CheckpointError(f"For '{api}', the file '{path}' is not a readable "
                              f"safetensors checkpoint (truncated or corrupted){which}: "
                              f"{err}") from None
    raw = {name: restored.get(name, arr) for name, arr in raw.items()}
    if metadata.get("format") == "ms" and "crc_num" in metadata:
        _check_mindspore_crc(path, raw, metadata["crc_num"], api)
    if not entries and metadata.get("format") != _FORMAT:
        return raw, {}
    if set(entries) != set(raw):
        raise CheckpointError(f"For '{api}', the tensors of '{path}' should be "
                              f"{sorted(entries)} (its metadata), but got {sorted(raw)}.")
    for name, crc in crcs.items():
        kind = "crc32c" if "crc32c" in entries[name] else "crc32"
        if _value(crc) != entries[name].get(kind):
            raise CheckpointError(f"For '{api}', the tensor '{name}' in '{path}' "
                                  f"fails its checksum: the file is corrupted.")
    return raw, entries


def _known_dtype(name: object) -> bool:
    """Whether `name` spells a numeric numpy or ml_dtypes dtype (never object or bytes)."""
    if not isinstance(name, str):
        return False
    try:
        dtype = np.dtype(name)
    except TypeError:
        return False
    return dtype.kind in "biufc" or dtype.type is getattr(ml_dtypes, name, None)


def _entries(path: str, metadata: Mapping[str, str],
             api: str = "load_checkpoint") -> dict[str, dict]:
    """The msops metadata entries of a file ({} for a plain or MindSpore safetensors),
    checked: its metadata crc32 (files written before it have none) and each entry's
    fields."""
    def corrupted(what: str) -> CheckpointError:
        return CheckpointError(f"For '{api}', the metadata of '{path}' is "
                               f"corrupted: {what}.")

    ours = metadata.get("format") == _FORMAT or any(k.startswith("msops.") for k in metadata)
    if not ours:
        return {}
    if _METADATA_CRC in metadata and metadata[_METADATA_CRC] != str(_metadata_crc(metadata)):
        raise corrupted("it fails its crc32 check")
    if metadata.get("format") != _FORMAT:
        raise corrupted(f"the format should be {_FORMAT!r}, but got {metadata.get('format')!r}")
    try:
        entries = json.loads(metadata["msops.tensors"])
    except (KeyError, ValueError) as err:
        raise corrupted(str(err)) from None
    if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
        raise corrupted("'msops.tensors' should map names to entries")
    for name, entry in entries.items():
        shape = entry.get("shape")
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)):
            raise corrupted(f"the shape of '{name}' should be a list of sizes, but got {shape!r}")
        if not _known_dtype(entry.get("dtype")):
            raise corrupted(f"the dtype of '{name}' should be the name of a numeric dtype, "
                            f"but got {entry.get('dtype')!r}")
        if not any(isinstance(entry.get(k), int) for k in ("crc32c", "crc32")):
            raise corrupted(f"the entry of '{name}' should hold its checksum")
    return entries
