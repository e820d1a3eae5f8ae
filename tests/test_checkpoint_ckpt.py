"""MindSpore's .ckpt (protobuf) and safetensors files: read, write, checksums, damage.

The reference files here are encoded by hand, byte by byte, the way MindSpore's
save_checkpoint writes them (checkpoint.proto's wire format, its "crc_num" trailer,
its safetensors metadata), independently of msops' protobuf classes.
"""
import zlib

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

import msops as ms
from msops import Tensor
from msops.train import ckpt_format
from msops.train.safetensors_io import CheckpointError


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, payload):                  # a length-delimited field
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _mindspore_record(tag, dims, tensor_type, content):
    """One `Checkpoint { value { tag, tensor { dims, tensor_type, tensor_content } } }`."""
    tensor = b"".join(_varint(1 << 3) + _varint(d) for d in dims)
    tensor += _field(2, tensor_type.encode()) + _field(3, content)
    return _field(1, _field(1, tag.encode()) + _field(2, tensor))


MS_TYPES = {"float32": "Float32", "int32": "Int32", "float16": "Float16", "uint8": "UInt8"}


def _mindspore_file(path, tensors, chunks=1, crc=False, type_names=None):
    body = b""
    for name, arr in tensors.items():
        ttype = (type_names or {}).get(name) or MS_TYPES[arr.dtype.name]
        for part in np.array_split(arr, chunks) if arr.ndim else [arr]:
            body += _mindspore_record(name, arr.shape, ttype, part.tobytes())
    if crc:
        body += b"crc_num" + (zlib.crc32(body) & 0xFFFFFFFF).to_bytes(10, "big")
    open(path, "wb").write(body)


TENSORS = {"w": np.arange(24, dtype=np.float32).reshape(4, 6),
           "b": np.array([1, -2, 3], np.int32),
           "h": np.linspace(0, 1, 8).astype(np.float16).reshape(2, 4),
           "u": np.arange(5, dtype=np.uint8)}


@pytest.mark.parametrize("crc", [False, True])
@pytest.mark.parametrize("chunks", [1, 3])
def test_reads_mindspore_ckpt(tmp_path, crc, chunks):
    path = str(tmp_path / "ms.ckpt")
    _mindspore_file(path, TENSORS, chunks=chunks, crc=crc, type_names={"u": "Uint8"})
    got = ms.load_checkpoint(path)
    assert list(got) == list(TENSORS)
    for name, want in TENSORS.items():
        assert got[name].asnumpy().dtype == want.dtype
        np.testing.assert_array_equal(got[name].asnumpy(), want)


@pytest.mark.parametrize("crc_check", [False, True])
def test_written_ckpt_is_mindspores_bytes(tmp_path, crc_check):
    """Our file parses as MindSpore's records: same tags, dims, types and contents in
    order, chunks included, plus only the fields MindSpore ignores: the number of values
    in the file and each chunk's crc32."""
    path = str(tmp_path / "ours.ckpt")
    arr = np.arange(40, dtype=np.float32).reshape(10, 4)
    ckpt_format.write_ckpt(path, {"w": arr}, crc_check=crc_check, chunk_bytes=64)
    raw = open(path, "rb").read()
    if crc_check:
        assert raw[-17:-10] == b"crc_num"
        assert int.from_bytes(raw[-10:], "big") == zlib.crc32(raw[:-17]) & 0xFFFFFFFF
        raw = raw[:-17]
    want = b""
    for i in range(0, 160, 64):
        part = arr.tobytes()[i:i + 64]
        # MindSpore's record, plus fields 14 (the file's 3 values) and 15 (the chunk's crc32)
        extra = _varint(14 << 3) + _varint(3) + _varint(15 << 3) + _varint(
            zlib.crc32(part) & 0xFFFFFFFF)
        tensor = b"".join(_varint(1 << 3) + _varint(d) for d in arr.shape)
        tensor += _field(2, b"Float32") + _field(3, part) + extra
        want += _field(1, _field(1, b"w") + _field(2, tensor))
    assert raw == want


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int64,
                                   np.uint16, np.bool_, ml_dtypes.bfloat16, np.complex64])
def test_ckpt_round_trip_dtypes(tmp_path, dtype):
    path = str(tmp_path / "d.ckpt")
    arr = (np.arange(12) % 5).reshape(3, 4).astype(dtype)
    ms.save_checkpoint({"t": Tensor(arr), "s": Tensor(np.array(2.5, np.float32))}, path)
    got = ms.load_checkpoint(path)
    assert got["t"].asnumpy().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got["t"].asnumpy(), arr)
    assert got["s"].asnumpy().shape == () and float(got["s"].asnumpy()) == 2.5


def test_ckpt_net_round_trip_and_format_argument(tmp_path):
    from test_checkpoint import Net, params    # tests/ is on sys.path (rootdir conftest)
    net = Net(seed=3)
    path = str(tmp_path / "net.bin")
    ms.save_checkpoint(net, path, format="ckpt", crc_check=True)
    assert open(path, "rb").read()[-17:-10] == b"crc_num"
    with pytest.raises(CheckpointError, match="net.bin"):          # not safetensors
        ms.load_checkpoint(path)
    fresh = Net(seed=4)
    assert ms.load_checkpoint(path, net=fresh, format="ckpt") is not None
    for name, want in params(net).items():
        np.testing.assert_array_equal(params(fresh)[name], want)
    with pytest.raises(ValueError, match=r"'format' should be one of \['safetensors', "
                                         r"'ckpt'\], but got 'npz'"):
        ms.save_checkpoint(net, path, format="npz")


def _damaged(tmp_path, crc):
    path = str(tmp_path / "x.ckpt")
    ms.save_checkpoint({k: Tensor(v) for k, v in TENSORS.items()}, path, crc_check=crc)
    return path, bytearray(open(path, "rb").read())


@pytest.mark.parametrize("crc", [False, True])
def test_ckpt_bit_flip_names_file_and_tensor(tmp_path, crc):
    path, raw = _damaged(tmp_path, crc)
    at = raw.index(TENSORS["h"].tobytes()) + 3
    raw[at] ^= 0x04
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match=r"tensor 'h' in '.*x\.ckpt' fails its checksum"):
        ms.load_checkpoint(path)


def test_ckpt_truncated_names_file_and_tensor(tmp_path):
    path, raw = _damaged(tmp_path, False)
    cut = raw.index(TENSORS["h"].tobytes()) + 5                # inside h's content
    open(path, "wb").write(bytes(raw[:cut]))
    with pytest.raises(CheckpointError, match=r"'.*x\.ckpt' is not a readable \.ckpt .*"
                                              r"truncated or corrupted at or after tensor 'b'"):
        ms.load_checkpoint(path)


def test_mindspore_ckpt_trailer_mismatch_names_the_file(tmp_path):
    path = str(tmp_path / "ms.ckpt")
    _mindspore_file(path, TENSORS, crc=True)
    raw = bytearray(open(path, "rb").read())
    raw[raw.index(TENSORS["w"].tobytes()) + 7] ^= 0x01     # no per-tensor crc: the trailer
    open(path, "wb").write(bytes(raw))
    with pytest.raises(CheckpointError, match=r"'.*ms\.ckpt' fails its crc32 check"):
        ms.load_checkpoint(path)


def test_mindspore_ckpt_short_tensor_names_it(tmp_path):
    path = str(tmp_path / "ms.ckpt")
    open(path, "wb").write(_mindspore_record("w", (4, 6), "Float32", b"\x00" * 90))
    with pytest.raises(CheckpointError, match=r"tensor 'w' in '.*ms\.ckpt' should hold 96 "
                                              r"bytes \(Float32 \(4, 6\)\), but got 90"):
        ms.load_checkpoint(path)


def test_mindspore_safetensors_with_crc(tmp_path):
    path = str(tmp_path / "ms.safetensors")
    crc = 0
    for name in sorted(TENSORS):
        crc = zlib.crc32(TENSORS[name].tobytes(), zlib.crc32(name.encode(), crc))
    save_file(TENSORS, path, metadata={"format": "ms", "crc_num": str(crc)})
    got = ms.load_checkpoint(path)
    for name, want in TENSORS.items():
        np.testing.assert_array_equal(got[name].asnumpy(), want)
    save_file(TENSORS, path, metadata={"format": "ms", "crc_num": str(crc ^ 1)})
    with pytest.raises(CheckpointError, match=r"'.*ms\.safetensors' fails MindSpore's crc_num"):
        ms.load_checkpoint(path)


def test_truncated_safetensors_names_the_tensor(tmp_path):
    path = str(tmp_path / "x.safetensors")
    ms.save_checkpoint({k: Tensor(v) for k, v in TENSORS.items()}, path)
    raw = open(path, "rb").read()
    open(path, "wb").write(raw[:-3])
    with pytest.raises(CheckpointError, match=r"x\.safetensors.*truncated or corrupted.*"
                                              r"tensors cut off: \['\w'\]"):
        ms.load_checkpoint(path)
