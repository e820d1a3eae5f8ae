"""msops' own safetensors reader against the safetensors library, and its header checks."""
import json
import struct

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from msops.train.safetensors_read import SafetensorsFile, SafetensorsFormatError


def _read(path):
    with SafetensorsFile(path) as f:
        return f.read_all(), f.metadata


def test_same_arrays_as_safetensors(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {f"t_{np.dtype(d).name}": (rng.standard_normal((3, 5)) * 50).astype(d)
               for d in (np.float64, np.float32, np.float16, np.int64, np.uint64, np.int32,
                         np.uint32, np.int16, np.uint16, np.int8, np.uint8, np.complex64)}
    tensors.update(flags=rng.random(7) > 0.5, scalar=np.array(2.5), empty=np.zeros((0, 4)),
                   bf16=rng.standard_normal(6).astype(ml_dtypes.bfloat16))
    path = str(tmp_path / "x.safetensors")
    save_file(tensors, path, metadata={"k": "v"})
    got, metadata = _read(path)
    want = load_file(path)
    assert list(got) == sorted(tensors) and metadata == {"k": "v"}
    for name, arr in want.items():
        assert got[name].dtype == arr.dtype and got[name].shape == arr.shape, name
        np.testing.assert_array_equal(got[name], arr)
        assert got[name].flags.writeable and got[name].flags.c_contiguous


def test_each_sees_every_tensor_in_file_order(tmp_path):
    path = str(tmp_path / "x.safetensors")
    save_file({"b": np.ones(3, np.float32), "a": np.arange(4)}, path)
    seen = []
    with SafetensorsFile(path) as f:
        f.read_all(lambda name, arr: seen.append((name, arr.sum())))
    raw = open(path, "rb").read()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    header.pop("__metadata__", None)
    assert [n for n, _ in seen] == sorted(header, key=lambda n: header[n]["data_offsets"])
    assert dict(seen) == {"b": 3.0, "a": 6}


def _file(tmp_path, header: dict, data: bytes) -> str:
    raw = json.dumps(header).encode()
    path = str(tmp_path / "bad.safetensors")
    open(path, "wb").write(struct.pack("<Q", len(raw)) + raw + data)
    return path


@pytest.mark.parametrize("header, data, what", [
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8),
     r"'a' \(F32 \[3\]\) should span 12 bytes, but its data_offsets span 8"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(8),
     "should start at byte 4"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8),
     "should start at byte 0"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, bytes(6),
     "end at byte 4 of a data section of 6"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(4),
     r"tensors cut off: \['a'\]"),
    ({"a": {"dtype": "X9", "shape": [1], "data_offsets": [0, 4]}}, bytes(4), "known dtype"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4), "known dtype"),
    ({"a": [1, 2]}, b"", "known dtype"),
    ({"__metadata__": {"k": 1}}, b"", "map strings to strings"),
])
def test_malformed_headers_are_named_errors(tmp_path, header, data, what):
    import msops as ms
    from msops.train.safetensors_io import CheckpointError
    path = _file(tmp_path, header, data)
    with pytest.raises(CheckpointError, match=rf"bad\.safetensors' is not a readable .*{what}"):
        ms.load_checkpoint(path)


@pytest.mark.parametrize("raw, what", [
    (b"\x01\x00", "shorter than the 8-byte header length"),
    (struct.pack("<Q", 10 ** 12) + b"{}", "a header of 1000000000000 bytes"),
    (struct.pack("<Q", 3) + b"{{{", "not JSON"),
    (struct.pack("<Q", 2) + b"[]", "should be a JSON object"),
])
def test_unreadable_starts(tmp_path, raw, what):
    path = str(tmp_path / "x.safetensors")
    open(path, "wb").write(raw)
    with pytest.raises(SafetensorsFormatError, match=what):
        _read(path)


@pytest.mark.parametrize("small, run", [(1, 1), (40, 100), (2 ** 20, 2 ** 20)])
def test_runs_of_small_tensors_and_large_ones(tmp_path, monkeypatch, small, run):
    """Small tensors are read in runs (one read, then copied out), large ones alone: any
    mix of the two, any run boundary, gives safetensors' arrays."""
    import msops.train.safetensors_read as reader
    monkeypatch.setattr(reader, "_SMALL", small)
    monkeypatch.setattr(reader, "_RUN", run)
    rng = np.random.default_rng(1)
    sizes = [1, 7, 30, 2, 0, 11, 64, 3, 25, 5]
    tensors = {f"t{i}": rng.standard_normal(n).astype(np.float32 if i % 3 else np.float64)
               for i, n in enumerate(sizes)}
    path = str(tmp_path / "x.safetensors")
    save_file(tensors, path)
    got, _ = _read(path)
    for name, arr in load_file(path).items():
        np.testing.assert_array_equal(got[name], arr)
        assert got[name].dtype == arr.dtype and got[name].flags.owndata
