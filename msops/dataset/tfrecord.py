"""`TFRecordDataset`: tf.train.Example records from TFRecord files, as MindSpore's reader.

A TFRecord file is a sequence of records framed as

    uint64 length (little-endian) | uint32 masked CRC-32C of the length bytes
    | length bytes of data         | uint32 masked CRC-32C of the data

(masked crc = ((crc >> 15) | (crc << 17)) + 0xa282ead8, mod 2**32); a CRC mismatch is an
error naming the file and the record. Each record is a serialized tf.train.Example: a map
from feature name to one of a BytesList, a FloatList or an Int64List. The messages are
declared here with protobuf's public descriptor API (no generated code, no TensorFlow).

Columns: the `schema`'s (a Schema or a schema JSON file), else every feature of the
first record, sorted by name, typed as MindSpore infers them: bytes -> string, float ->
float32, int64 -> int64; `columns_list` chooses and orders them. Each value is the
feature's list as a 1-D array (a string column: str, each value decoded as UTF-8),
reshaped to the schema's shape when it has one (-1 for one unknown dim). A schema may
declare an int64 feature as any integer type, and a bytes feature as uint8/int8 (each
value's bytes, zero-padded to the longest, concatenated) or string.

Files, `shuffle` modes and sampling are linefiles.py's; sharding is by files (shard k
reads the files at k, k + n, ... of the pass's file order) unless `shard_equal_rows`,
which cuts equal blocks of rows. `compression_type` '' / None, 'GZIP' or 'ZLIB'.
"""
from __future__ import annotations

import functools
import gzip
import struct
import zlib
from typing import Any, Sequence

import numpy as np

from msops.dataset.files import ListedRows
from msops.dataset.linefiles import LineFileDataset, Shuffle, dataset_file_list
from msops.dataset.schema import Schema

__all__ = ["TFRecordDataset", "new_example", "masked_crc32c", "read_records"]


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C (Castagnoli) of `data`."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@functools.lru_cache(maxsize=None)
def _example_class() -> type:
    """The tf.train.Example message class, declared with protobuf's descriptor API."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    Field = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="msops_tf_example.proto",
                                             package="msops.tf", syntax="proto3")

    for name, kind in (("BytesList", Field.TYPE_BYTES), ("FloatList", Field.TYPE_FLOAT),
                       ("Int64List", Field.TYPE_INT64)):
        fdp.message_type.add(name=name).field.add(name="value", number=1, type=kind,
                                                  label=Field.LABEL_REPEATED)
    feature = fdp.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, kind) in enumerate((("bytes_list", "BytesList"),
                                           ("float_list", "FloatList"),
                                           ("int64_list", "Int64List")), 1):
        feature.field.add(name=name, number=number, type=Field.TYPE_MESSAGE,
                          type_name=f".msops.tf.{kind}", label=Field.LABEL_OPTIONAL,
                          oneof_index=0)
    features = fdp.message_type.add(name="Features")
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=Field.TYPE_STRING, label=Field.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=Field.TYPE_MESSAGE,
                    type_name=".msops.tf.Feature", label=Field.LABEL_OPTIONAL)
    features.field.add(name="feature", number=1, type=Field.TYPE_MESSAGE,
                       type_name=".msops.tf.Features.FeatureEntry", label=Field.LABEL_REPEATED)
    fdp.message_type.add(name="Example").field.add(
        name="features", number=1, type=Field.TYPE_MESSAGE, type_name=".msops.tf.Features",
        label=Field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("msops.tf.Example"))


def new_example() -> Any:
    """A new, empty tf.train.Example message (the class is built once, on first use)."""
    return _example_class()()


def _open(path: str, compression: str, api: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
        if compression == "GZIP":
            return gzip.decompress(data)
        if compression == "ZLIB":
            return zlib.decompress(data)
        return data
    except (OSError, zlib.error, EOFError) as exc:
        raise RuntimeError(f"For '{api}', the file '{path}' could not be read as a "
                           f"{compression or 'uncompressed'} TFRecord file: {exc}") from exc


def read_records(path: str, api: str, compression: str = "") -> list[bytes]:
    """The records' data of the TFRecord file `path`, every CRC checked."""
    data, pos, out = _open(path, compression, api), 0, []
    while pos < len(data):
        if pos + 12 > len(data):
            raise RuntimeError(f"For '{api}', the file '{path}' is truncated: record "
                               f"{len(out)} has an incomplete header.")
        header = data[pos:pos + 8]
        (length,), (crc,) = struct.unpack("<Q", header), struct.unpack("<I", data[pos + 8:pos + 12])
        if masked_crc32c(header) != crc:
            raise RuntimeError(f"For '{api}', the length CRC of record {len(out)} of '{path}' "
                               f"does not match: the file is corrupt or not a TFRecord file.")
        start, end = pos + 12, pos + 12 + length
        if end + 4 > len(data):
            raise RuntimeError(f"For '{api}', the file '{path}' is truncated: record "
                               f"{len(out)} should have {length} bytes.")
        record = data[start:end]
        if masked_crc32c(record) != struct.unpack("<I", data[end:end + 4])[0]:
            raise RuntimeError(f"For '{api}', the data CRC of record {len(out)} of '{path}' "
                               f"does not match: the file is corrupt.")
        out.append(record)
        pos = end + 4
    return out


_INFERRED = {"bytes_list": np.dtype(np.str_), "float_list": np.dtype(np.float32),
             "int64_list": np.dtype(np.int64)}


def _parse(record: bytes, where: str, api: str) -> Any:
    from google.protobuf.message import DecodeError
    example = new_example()
    try:
        example.ParseFromString(record)
    except DecodeError as exc:
        raise RuntimeError(f"For '{api}', {where} is not a tf.train.Example: {exc}") from exc
    return example.features.feature


def _value(feature: Any, name: str, dtype: np.dtype, shape: tuple, where: str,
           api: str) -> np.ndarray:
    """One column's value from its Feature (module docstring)."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        raise RuntimeError(f"For '{api}', the feature '{name}' of {where} has no value list.")
    values = list(getattr(feature, kind).value)
    if kind == "bytes_list":
        if dtype.kind == "U":
            try:
                array = np.array([v.decode("utf-8") for v in values], np.str_)
            except UnicodeDecodeError:
                raise RuntimeError(f"For '{api}', the bytes feature '{name}' of {where} is not "
                                   f"UTF-8 text: declare the column uint8 in the 'schema' to "
                                   f"read raw bytes.") from None
        elif dtype in (np.uint8, np.int8):
            width = max((len(v) for v in values), default=0)
            if len(shape) >= 2 and shape[0] == -1 and -1 not in shape[1:]:
                width = int(np.prod(shape[1:]))
            array = np.zeros((len(values), width), np.uint8)
            for k, v in enumerate(values):
                array[k, :min(len(v), width)] = np.frombuffer(v[:width], np.uint8)
            array = array.reshape(-1).view(dtype)
        else:
            raise RuntimeError(f"For '{api}', the bytes feature '{name}' should be a string, "
                               f"uint8 or int8 column, but the schema says {dtype}.")
    elif kind == "float_list":
        if dtype != np.float32:
            raise RuntimeError(f"For '{api}', the float feature '{name}' should be a float32 "
                               f"column, but the schema says {dtype}.")
        array = np.array(values, np.float32)
    else:
        if dtype.kind not in "iu":
            raise RuntimeError(f"For '{api}', the int64 feature '{name}' should be an integer "
                               f"column, but the schema says {dtype}.")
        array = np.array(values, np.int64).astype(dtype)
    if shape != (-1,):
        try:
            array = array.reshape(shape)
        except ValueError:
            raise RuntimeError(f"For '{api}', the feature '{name}' of {where} has "
                               f"{array.size} values, which do not fit the schema's shape "
                               f"{list(shape)}.") from None
    return array


class TFRecordDataset(LineFileDataset):
    """Rows of tf.train.Example records in TFRecord files (module docstring).
    `num_samples` caps the rows of each shard; `num_parallel_workers` is accepted and
    ignored, `cache` must be None."""

    def __init__(self, dataset_files: str | Sequence[str], schema: Schema | str | None = None,
                 columns_list: Sequence[str] | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, shard_equal_rows: bool = False,
                 cache: Any = None, compression_type: str | None = None) -> None:
        api = type(self).__name__
        files = dataset_file_list(dataset_files, api)
        compression = (compression_type or "").upper()
        if compression not in ("", "GZIP", "ZLIB"):
            raise ValueError(f"For '{api}', the 'compression_type' should be '', 'GZIP' or "
                             f"'ZLIB', but got {compression_type!r}.")
        if not isinstance(shard_equal_rows, bool):
            raise TypeError(f"For '{api}', the 'shard_equal_rows' should be bool, but got "
                            f"{type(shard_equal_rows).__name__}.")
        if isinstance(schema, str):
            schema = Schema(schema)
        elif schema is not None and not isinstance(schema, Schema):
            raise TypeError(f"For '{api}', the 'schema' should be a Schema, a schema file path "
                            f"or None, but got {type(schema).__name__}.")
        records, counts = [], []
        for path in files:
            found = read_records(path, api, compression)
            records.extend((r, f"record {k} of '{path}'") for k, r in enumerate(found))
            counts.append(len(found))
        if schema is not None and schema.columns:
            columns = [(n, np.dtype(t), tuple(s)) for n, t, s in schema.columns]
        elif records:
            first = _parse(records[0][0], records[0][1], api)
            columns = [(n, _INFERRED[first[n].WhichOneof("kind") or "bytes_list"], (-1,))
                       for n in sorted(first)]
        else:
            raise ValueError(f"For '{api}', the 'dataset_files' hold no records.")
        if columns_list is not None:
            names = [c[0] for c in columns]
            if not isinstance(columns_list, (list, tuple)) or not columns_list or not all(
                    c in names for c in columns_list):
                raise ValueError(f"For '{api}', the 'columns_list' should name columns of the "
                                 f"records {names}, but got {columns_list!r}.")
            columns = [columns[names.index(c)] for c in columns_list]

        def make_row(item: tuple) -> tuple:
            features = _parse(item[0], item[1], api)
            out = []
            for name, dtype, shape in columns:
                if name not in features:
                    raise RuntimeError(f"For '{api}', the column '{name}' is missing in "
                                       f"{item[1]}.")
                out.append(_value(features[name], name, dtype, shape, item[1], api))
            return tuple(out)
        num_shards_ = 1 if num_shards is None else num_shards
        if not shard_equal_rows and isinstance(num_shards_, int) and num_shards_ > len(files):
            raise ValueError(f"For '{api}', sharding by files needs at least 'num_shards' "
                             f"({num_shards}) files, but got {len(files)}: pass "
                             f"shard_equal_rows=True to shard by rows.")
        super().__init__(ListedRows(records, make_row), counts, [c[0] for c in columns],
                         num_samples, shuffle, num_shards, shard_id, cache,
                         shard_files=not shard_equal_rows)
