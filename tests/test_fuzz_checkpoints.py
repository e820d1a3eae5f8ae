"""A fuzzer over checkpoint files (the checkpoint issue, with issue 16's fuzzer).

Random sets of tensors (every dtype each format stores, 0-d, empty and non-contiguous
arrays, names with dots, slashes and non-ASCII letters) are saved in both formats and
loaded back: the same names, dtypes, shapes and bytes as numpy holds them. Then the file is
damaged at random (bytes flipped, the file cut short, bytes appended): loading gives
either exactly what was saved (a flip in the JSON header's padding changes nothing) or
a ValueError (the CheckpointError) naming the file, never other values, fewer tensors,
another error or a crash. A
.ckpt without its crc32 trailer has no checksum of the data (as MindSpore's), so it is
damaged only with `crc_check=True`.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msops as ms

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CKPT_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.float16,
               np.float32, np.float64]
SAFETENSORS_DTYPES = CKPT_DTYPES + [np.uint16, np.uint32, np.uint64, np.complex64]
names = st.text(st.sampled_from("abcxyz_.0123/éλ"), min_size=1, max_size=12)
shapes = st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple)


def _array(shape: tuple, dtype: type, seed: int, strided: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    big = tuple(2 * n for n in shape) if strided else shape
    if np.dtype(dtype).kind == "b":
        a = rng.integers(0, 2, big).astype(bool)
    elif np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, big, dtype=dtype, endpoint=True)
    else:
        a = (rng.standard_normal(big) * 1e3).astype(dtype)
    return a[tuple(slice(None, None, 2) for _ in shape)] if strided else a


@st.composite
def tensor_sets(draw, dtypes: list) -> dict:
    out = {}
    for i, name in enumerate(draw(st.lists(names, min_size=1, max_size=5, unique=True))):
        out[name] = _array(draw(shapes), draw(st.sampled_from(dtypes)), seed=i,
                           strided=draw(st.booleans()))
    return out


def _assert_same(loaded: dict, saved: dict) -> None:
    assert sorted(loaded) == sorted(saved)
    for name, want in saved.items():
        got = loaded[name].asnumpy()
        assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, got.shape)
        np.testing.assert_array_equal(got.reshape(-1).view(np.uint8),
                                      np.ascontiguousarray(want.reshape(-1)).view(np.uint8))


FORMATS = [("safetensors", False), ("ckpt", False), ("ckpt", True)]


@pytest.mark.parametrize("format,crc", FORMATS, ids=["safetensors", "ckpt", "ckpt_crc"])
@FUZZ
@given(data=st.data())
def test_saved_tensors_load_back_bit_for_bit(tmp_path, format, crc, data):
    tensors = data.draw(tensor_sets(SAFETENSORS_DTYPES if format == "safetensors"
                                    else CKPT_DTYPES))
    path = str(tmp_path / f"net.{format}")
    ms.save_checkpoint({k: ms.Tensor(v) for k, v in tensors.items()}, path, crc_check=crc)
    _assert_same(ms.load_checkpoint(path), tensors)


@st.composite
def damage(draw, size: int) -> list:
    """A list of (kind, place, value) edits of a file of `size` bytes."""
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "cut", "append"]))
        edits.append((kind, draw(st.integers(0, size - 1)), draw(st.integers(1, 255))))
    return edits


def _damaged(raw: bytes, edits: list) -> bytes:
    raw = bytearray(raw)
    for kind, place, value in edits:
        if kind == "flip" and raw:
            raw[place % len(raw)] ^= value
        elif kind == "cut":
            del raw[place % max(len(raw), 1):]
        elif kind == "append":
            raw += bytes([value]) * (place % 64 + 1)
    return bytes(raw)


@pytest.mark.parametrize("format,crc", [f for f in FORMATS if f[0] == "safetensors" or f[1]],
                         ids=["safetensors", "ckpt_crc"])
@FUZZ
@given(data=st.data())
def test_damaged_file_loads_unchanged_or_raises_naming_it(tmp_path, format, crc, data):
    tensors = data.draw(tensor_sets(CKPT_DTYPES))
    path = str(tmp_path / f"net.{format}")
    ms.save_checkpoint({k: ms.Tensor(v) for k, v in tensors.items()}, path, crc_check=crc)
    raw = open(path, "rb").read()
    changed = _damaged(raw, data.draw(damage(len(raw))))
    if changed == raw:
        return
    with open(path, "wb") as f:
        f.write(changed)
    try:
        loaded = ms.load_checkpoint(path)
    except ValueError as err:                     # CheckpointError, or "no parameter loaded"
        assert str(err).startswith("For 'load_checkpoint'") and os.path.basename(path) in str(err), str(err)
        return
    _assert_same(loaded, tensors)
