"""TFRecordDataset over TFRecord files written here by an independent writer: the
tf.train.Example wire format encoded by hand (varints, length-delimited fields, packed
lists) and the record framing with a bit-by-bit CRC-32C; rows compared with the values
written (names, dtypes, shapes, order), shuffle modes, file and row sharding, corrupt
files."""
import gzip
import json
import struct

import numpy as np
import pytest

import msops as ms
from msops import dataset as ds
from test_checkpoint_ckpt import _field as field, _varint   # the protobuf wire helpers


def crc32c(data):
    """Bit-by-bit CRC-32C (Castagnoli, reflected 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 * (crc & 1))
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    """Protobuf varint of an int64 (a negative one as its 64-bit two's complement)."""
    return _varint(n & ((1 << 64) - 1))


def feature(value):
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return field(1, b"".join(field(1, v) for v in value))           # bytes_list
    if isinstance(value, list) and value and isinstance(value[0], float):
        return field(2, field(1, struct.pack(f"<{len(value)}f", *value)))   # packed floats
    return field(3, field(1, b"".join(varint(v) for v in value)))       # packed int64s


def example(features):
    entries = b"".join(field(1, field(1, k.encode()) + field(2, feature(v)))
                       for k, v in features.items())
    return field(1, entries)


def write_tfrecord(path, examples, opener=open):
    with opener(path, "wb") as f:
        for e in examples:
            data = example(e)
            header = struct.pack("<Q", len(data))
            f.write(header + struct.pack("<I", masked(header)) + data +
                    struct.pack("<I", masked(data)))


def records(n, start=0):
    return [{"label": [start + k], "weights": [0.5 * k, -1.25],
             "text": [f"row {start + k}".encode()],
             "ids": [k, -3, 2 ** 40]} for k in range(n)]


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def test_crc32c_reference_vector():
    assert crc32c(b"123456789") == 0xE3069283
    from msops.dataset.tfrecord import masked_crc32c
    assert masked_crc32c(b"123456789") == masked(b"123456789")


def test_inferred_columns_values_and_dtypes(tmp_path):
    write_tfrecord(tmp_path / "a.tfrecord", records(3))
    d = ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), shuffle=False)
    assert d.get_col_names() == ["ids", "label", "text", "weights"]      # sorted names
    got = rows(d)
    assert len(got) == 3
    for k, (ids, label, text, weights) in enumerate(got):
        assert ids.dtype == np.int64 and ids.tolist() == [k, -3, 2 ** 40]
        assert label.dtype == np.int64 and label.shape == (1,) and label[0] == k
        assert text.dtype.kind == "U" and text.tolist() == [f"row {k}"]
        assert weights.dtype == np.float32
        np.testing.assert_array_equal(weights, np.array([0.5 * k, -1.25], np.float32))
    chosen = ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), columns_list=["weights", "label"],
                                shuffle=False)
    assert chosen.get_col_names() == ["weights", "label"]
    assert [int(r[1][0]) for r in rows(chosen)] == [0, 1, 2]


def test_schema_types_and_shapes(tmp_path):
    pixels = [bytes(range(250 - k, 256 - k)) for k in range(2)]     # not UTF-8
    write_tfrecord(tmp_path / "a.tfrecord", [{"image": [p], "label": [k], "ids": [1, 2, 3, 4]}
                                             for k, p in enumerate(pixels)])
    schema = ds.Schema()
    schema.add_column("image", "uint8", [2, 3])
    schema.add_column("label", ms.int32, [])
    schema.add_column("ids", "int64", [-1, 2])
    got = rows(ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), schema=schema, shuffle=False))
    for k, (image, label, ids) in enumerate(got):
        assert image.dtype == np.uint8 and image.shape == (2, 3)
        np.testing.assert_array_equal(image.reshape(-1), list(range(250 - k, 256 - k)))
        assert label.dtype == np.int32 and label.shape == () and int(label) == k
        np.testing.assert_array_equal(ids, [[1, 2], [3, 4]])
    # the same schema from MindSpore's JSON schema file
    (tmp_path / "schema.json").write_text(json.dumps({"columns": {
        "label": {"type": "int64", "rank": 1, "shape": [1]},
        "image": {"type": "string", "rank": 1}}}))
    with pytest.raises(RuntimeError, match="not UTF-8 text: declare the column uint8"):
        rows(ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), schema=str(tmp_path / "schema.json")))
    bad = ds.Schema()
    bad.add_column("ids", "int64", [3])
    with pytest.raises(RuntimeError, match="4 values, which do not fit the schema's shape"):
        rows(ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), schema=bad))


def test_files_shuffle_and_sharding(tmp_path):
    for f in range(3):
        write_tfrecord(tmp_path / f"part{f}.tfrecord", records(2 + f, start=10 * f))
    files = str(tmp_path / "part*.tfrecord")
    labels = lambda d: [int(r[0][0]) for r in rows(d)]          # noqa: E731
    every = [0, 1, 10, 11, 12, 20, 21, 22, 23]
    assert labels(ds.TFRecordDataset(files, columns_list=["label"], shuffle=False)) == every
    # by files (default): shard k reads files k, k + 2, ...
    assert labels(ds.TFRecordDataset(files, columns_list=["label"], shuffle=False,
                                     num_shards=2, shard_id=0)) == [0, 1, 20, 21, 22, 23]
    assert labels(ds.TFRecordDataset(files, columns_list=["label"], shuffle=False,
                                     num_shards=2, shard_id=1)) == [10, 11, 12]
    # equal rows: contiguous blocks of ceil(9 / 2) = 5, wrapping around
    assert labels(ds.TFRecordDataset(files, columns_list=["label"], shuffle=False, num_shards=2,
                                     shard_id=1, shard_equal_rows=True)) == [20, 21, 22, 23, 0]
    ms.set_seed(5)
    a = labels(ds.TFRecordDataset(files, columns_list=["label"]))
    ms.set_seed(5)
    assert a == labels(ds.TFRecordDataset(files, columns_list=["label"]))
    assert sorted(a) == every and a != every
    infile = labels(ds.TFRecordDataset(files, columns_list=["label"], shuffle=ds.Shuffle.INFILE))
    assert [x // 10 for x in infile] == [0, 0, 1, 1, 1, 2, 2, 2, 2]
    assert len(rows(ds.TFRecordDataset(files, num_samples=4))) == 4
    with pytest.raises(ValueError, match="needs at least 'num_shards' \\(4\\) files"):
        ds.TFRecordDataset(files, num_shards=4, shard_id=0)


def test_compression_and_corrupt_files(tmp_path):
    write_tfrecord(tmp_path / "z.tfrecord.gz", records(2), opener=gzip.open)
    got = rows(ds.TFRecordDataset(str(tmp_path / "z.tfrecord.gz"), compression_type="GZIP",
                                  shuffle=False, columns_list=["label"]))
    assert [int(r[0][0]) for r in got] == [0, 1]
    write_tfrecord(tmp_path / "a.tfrecord", records(2))
    raw = bytearray((tmp_path / "a.tfrecord").read_bytes())
    raw[20] ^= 0xFF                                   # a byte of the first record's data
    (tmp_path / "bad.tfrecord").write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match="data CRC of record 0 .* does not match"):
        ds.TFRecordDataset(str(tmp_path / "bad.tfrecord"))
    (tmp_path / "cut.tfrecord").write_bytes((tmp_path / "a.tfrecord").read_bytes()[:-3])
    with pytest.raises(RuntimeError, match="truncated: record 1 should have"):
        ds.TFRecordDataset(str(tmp_path / "cut.tfrecord"))
    with pytest.raises(ValueError, match="'compression_type' should be"):
        ds.TFRecordDataset(str(tmp_path / "a.tfrecord"), compression_type="BZ2")
