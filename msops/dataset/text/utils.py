"""Enums and helpers of `mindspore.dataset.text`."""
from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np

from msops.common.tensor import Tensor

__all__ = ["NormalizeForm", "string_array", "byte_offsets"]


class NormalizeForm(str, Enum):
    """Unicode normalization forms (NONE: unchanged)."""
    NONE = "NONE"
    NFC = "NFC"
    NFKC = "NFKC"
    NFD = "NFD"
    NFKD = "NFKD"


def string_array(value: Any, op: str) -> np.ndarray:
    """`value` (str, bytes, a str array or a list of str) as a numpy str array."""
    if isinstance(value, Tensor):
        value = value.asnumpy()
    if isinstance(value, (bytes, np.bytes_)):
        value = value.decode("utf-8")
    array = np.asarray(value)
    if array.dtype.kind == "S":
        array = np.char.decode(array, "utf-8")
    if array.dtype.kind != "U":
        raise TypeError(f"For '{op}', the input should be a string (str or a str array), but "
                        f"got {type(value).__name__} of dtype {array.dtype}.")
    return array


def byte_offsets(text: str, spans: list) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 byte (start, limit) offsets, as uint32 arrays, of the character `spans`
    [(start, end), ...] of `text` (MindSpore's tokenizers give byte offsets)."""
    starts, limits = [], []
    prefix = [0]
    for ch in text:
        prefix.append(prefix[-1] + len(ch.encode("utf-8")))
    for a, b in spans:
        starts.append(prefix[a])
        limits.append(prefix[b])
    return np.array(starts, np.uint32), np.array(limits, np.uint32)
