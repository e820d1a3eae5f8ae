"""MindSpore's `.ckpt` files: serialized protobuf `Checkpoint` messages, read and written.

The file is a concatenation of serialized `Checkpoint` messages (MindSpore's
checkpoint.proto, proto2), each holding one `Value {tag, tensor {dims, tensor_type,
tensor_content}}`; protobuf merges the concatenation into one message whose repeated
`value` lists them all. A tensor larger than the chunk size is written as several values
under the same tag, each with the full `dims` and a part of the C-order bytes; a reader
joins the parts. With `crc_check` the writer appends `b"crc_num"` and the crc32 of all
the bytes before it as 10 big-endian bytes; a reader checks it whenever it is present.

msops also writes, in fields unknown to MindSpore (which keeps and ignores them), in
each `TensorProto`: the crc32 of that chunk's content (field 15), so a damaged file names
its tensor, and the number of values in the file (field 14), so a file cut at a value's
end (which protobuf reads as a shorter, valid file) is known to be short.
The message classes are built at import from a descriptor made here (no generated
`_pb2.py`, so any protobuf runtime >= 4.21 works). Nothing here runs code from a file.
"""
from __future__ import annotations

import zlib
from typing import Mapping

import ml_dtypes
import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from msops.common.tensor import contiguous
from msops.train.atomic import atomic_write
from msops.train.safetensors_io import CheckpointError

__all__ = ["write_ckpt", "read_ckpt", "Checkpoint", "CHUNK_BYTES"]

#: largest tensor_content of one value (MindSpore's SLICE_SIZE: 512 MiB)
CHUNK_BYTES = 512 * 2 ** 20
_CRC_MARK = b"crc_num"
_CRC_LEN = 10
_TRAILER = len(_CRC_MARK) + _CRC_LEN

# MindSpore's tensor_type spellings (str of its dtypes); older files write "Uint8" etc.
_TO_NUMPY = {"Int8": np.int8, "UInt8": np.uint8, "Int16": np.int16, "UInt16": np.uint16,
             "Int32": np.int32, "UInt32": np.uint32, "Int64": np.int64, "UInt64": np.uint64,
             "Float16": np.float16, "Float32": np.float32, "Float64": np.float64,
             "Bool": np.bool_, "BFloat16": ml_dtypes.bfloat16, "Complex64": np.complex64,
             "Complex128": np.complex128}
_TO_NUMPY.update({"Uint8": np.uint8, "Uint16": np.uint16, "Uint32": np.uint32,
                  "Uint64": np.uint64})
_TO_MS = {np.dtype(v).name: k for k, v in _TO_NUMPY.items() if not k.startswith("Uint")}


def _build_classes() -> tuple[type, type]:
    """Checkpoint and TensorProto message classes from checkpoint.proto's shape."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="msops_mindspore_checkpoint.proto",
                                             package="msops.mindspore", syntax="proto2")

    def field(msg, name, number, ftype, label, type_name=None):
        f = msg.field.add(name=name, number=number, type=ftype, label=label)
        if type_name:
            f.type_name = type_name

    tensor = fdp.message_type.add(name="TensorProto")
    field(tensor, "dims", 1, F.TYPE_INT64, F.LABEL_REPEATED)
    field(tensor, "tensor_type", 2, F.TYPE_STRING, F.LABEL_REQUIRED)
    field(tensor, "tensor_content", 3, F.TYPE_BYTES, F.LABEL_REQUIRED)
    field(tensor, "msops_crc32", 15, F.TYPE_UINT32, F.LABEL_OPTIONAL)
    field(tensor, "msops_records", 14, F.TYPE_UINT64, F.LABEL_OPTIONAL)
    map_tensor = fdp.message_type.add(name="MapTensorProto")
    field(map_tensor, "tensor", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".msops.mindspore.TensorProto")
    ckpt = fdp.message_type.add(name="Checkpoint")
    value = ckpt.nested_type.add(name="Value")
    field(value, "tag", 1, F.TYPE_STRING, F.LABEL_REQUIRED)
    field(value, "tensor", 2, F.TYPE_MESSAGE, F.LABEL_OPTIONAL, ".msops.mindspore.TensorProto")
    field(value, "maptensor", 3, F.TYPE_MESSAGE, F.LABEL_OPTIONAL,
          ".msops.mindspore.MapTensorProto")
    field(ckpt, "value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".msops.mindspore.Checkpoint.Value")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return (get(pool.FindMessageTypeByName("msops.mindspore.Checkpoint")),
            get(pool.FindMessageTypeByName("msops.mindspore.TensorProto")))


Checkpoint, TensorProto = _build_classes()


def _crc(data: bytes | memoryview, start: int = 0) -> int:
    return zlib.crc32(data, start) & 0xFFFFFFFF


def _step(arr: np.ndarray, chunk_bytes: int) -> int:
    """The bytes of each value of `arr`: whole items, at most `chunk_bytes` (MindSpore
    splits along dim 0 with np.array_split; whole items per chunk do the same job)."""
    return max(arr.dtype.itemsize, chunk_bytes - chunk_bytes % arr.dtype.itemsize)


def _record_count(arr: np.ndarray, chunk_bytes: int) -> int:
    return max(1, -(-arr.nbytes // _step(arr, chunk_bytes)))


def _records(name: str, arr: np.ndarray, chunk_bytes: int, total: int) -> list[bytes]:
    """The serialized Checkpoint messages of one tensor (several when it is large), each
    saying the file holds `total` of them."""
    arr = contiguous(arr)
    if arr.dtype.name not in _TO_MS:
        raise TypeError(f"For 'save_checkpoint', the dtype of '{name}' should be one of "
                        f"{sorted(_TO_MS)} for a .ckpt file, but got {arr.dtype.name}.")
    raw = memoryview(arr.reshape(-1).view(np.uint8))
    step = _step(arr, chunk_bytes)
    out = []
    for start in range(0, max(len(raw), 1), step):
        msg = Checkpoint()
        value = msg.value.add(tag=name)
        part = bytes(raw[start:start + step])
        value.tensor.dims.extend(arr.shape)
        value.tensor.tensor_type = _TO_MS[arr.dtype.name]
        value.tensor.tensor_content = part
        value.tensor.msops_crc32 = _crc(part)
        value.tensor.msops_records = total
        out.append(msg.SerializeToString())
    return out


def write_ckpt(path: str, tensors: Mapping[str, np.ndarray], crc_check: bool = False,
               chunk_bytes: int = CHUNK_BYTES) -> None:
    """Write `tensors` as a MindSpore .ckpt file, atomically (see atomic_write); with
    `crc_check` the crc32 trailer MindSpore's `save_checkpoint(crc_check=True)` writes."""
    arrays = {name: np.asarray(arr) for name, arr in tensors.items()}
    total = sum(_record_count(arr, chunk_bytes) for arr in arrays.values())

    def write(tmp: str) -> None:
        crc = 0
        with open(tmp, "wb") as f:
            for name, arr in arrays.items():
                for record in _records(name, arr, chunk_bytes, total):
                    crc = _crc(record, crc)
                    f.write(record)
            if crc_check:
                f.write(_CRC_MARK + crc.to_bytes(_CRC_LEN, "big"))
    atomic_write(path, write)


def _last_intact(content: bytes) -> str | None:
    """The tag of the last value that parses before the damage (for the error message):
    the file is a run of top-level `value` fields, each parsed alone by protobuf."""
    last, pos = None, 0
    while pos < len(content):
        try:
            if content[pos] != 0x0A:                     # field 1, length-delimited
                return last
            length, shift, p = 0, 0, pos + 1
            while content[p] & 0x80:
                length |= (content[p] & 0x7F) << shift
                shift, p = shift + 7, p + 1
            length |= content[p] << shift
            end = p + 1 + length
            if end > len(content):
                return last
            msg = Checkpoint()
            msg.ParseFromString(content[pos:end])
        except (IndexError, DecodeError):
            return last
        last, pos = msg.value[0].tag, end
    return last


def read_ckpt(path: str, api: str = "load_checkpoint") -> dict[str, np.ndarray]:
    """name -> array of a MindSpore .ckpt file. The crc32 trailer, when present, and
    msops' per-chunk crc32s and value counts are checked; damage is a CheckpointError
    naming the file (and the tensor when it can be told)."""
    with open(path, "rb") as f:
        content = f.read()
    if not content:
        raise CheckpointError(f"For '{api}', the file '{path}' is empty (0 bytes): not a "
                              f"checkpoint, or one whose writing never finished.")
    trailer = None
    if len(content) >= _TRAILER and content[-_TRAILER:-_CRC_LEN] == _CRC_MARK:
        trailer = int.from_bytes(content[-_CRC_LEN:], "big")
        content = content[:-_TRAILER]
    msg = Checkpoint()
    try:
        msg.ParseFromString(content)
    except DecodeError:
        last = _last_intact(content)
        where = f"at or after tensor '{last}'" if last else "in its first tensor"
        raise CheckpointError(f"For '{api}', the file '{path}' is not a readable .ckpt "
                              f"checkpoint (truncated or corrupted {where}).") from None
    parts: dict[str, list] = {}
    for value in msg.value:
        name = value.tag
        if value.HasField("maptensor") or not value.HasField("tensor"):
            raise CheckpointError(f"For '{api}', the entry '{name}' in '{path}' should be a "
                                  f"tensor, but got a MapParameter (not supported).")
        t = value.tensor
        if t.HasField("msops_crc32") and _crc(t.tensor_content) != t.msops_crc32:
            raise CheckpointError(f"For '{api}', the tensor '{name}' in '{path}' fails its "
                                  f"checksum: the file is corrupted.")
        if t.tensor_type not in _TO_NUMPY:
            raise CheckpointError(f"For '{api}', the tensor_type of '{name}' in '{path}' "
                                  f"should be one of {sorted(_TO_NUMPY)}, but got "
                                  f"{t.tensor_type!r}.")
        parts.setdefault(name, []).append(t)
    counts = {v.tensor.msops_records for v in msg.value if v.tensor.HasField("msops_records")}
    if counts and counts != {len(msg.value)}:
        raise CheckpointError(f"For '{api}', the file '{path}' holds {len(msg.value)} "
                              f"values of the {max(counts)} msops wrote: it is truncated "
                              f"after tensor '{msg.value[-1].tag}' or corrupted.")
    if trailer is not None and _crc(content) != trailer:
        raise CheckpointError(f"For '{api}', the file '{path}' fails its crc32 check (the "
                              f"trailer): the file is corrupted or was tampered with.")
    out = {}
    for name, chunks in parts.items():
        dims, ttype = tuple(chunks[0].dims), chunks[0].tensor_type
        if any(tuple(c.dims) != dims or c.tensor_type != ttype for c in chunks):
            raise CheckpointError(f"For '{api}', every chunk of '{name}' in '{path}' should "
                                  f"have dims {dims} and type {ttype}, but they differ.")
        dtype = np.dtype(_TO_NUMPY[ttype])
        raw = bytearray().join(c.tensor_content for c in chunks)     # writable, one copy
        want = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        if len(raw) != want and not (dims == (0,) and len(raw) == dtype.itemsize):
            raise CheckpointError(f"For '{api}', the tensor '{name}' in '{path}' should "
                                  f"hold {want} bytes ({ttype} {dims}), but got {len(raw)}: "
                                  f"the file is truncated or corrupted.")
        if dims == (0,) and len(raw) == dtype.itemsize:   # MindSpore's old scalar spelling
            dims = ()
        out[name] = np.frombuffer(raw, dtype).reshape(dims)
    return out
