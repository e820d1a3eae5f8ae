"""Schema and RandomDataset: columns, dtypes and shapes against a schema file the test
writes, value ranges, seeds, shard unions and errors."""
import json

import numpy as np
import pytest

import msops as ms
from msops import dataset as ds

SCHEMA = {"datasetType": "TF", "numRows": 7,
          "columns": {"image": {"type": "uint8", "rank": 3, "shape": [4, 5, 3]},
                      "label": {"type": "int32", "rank": 0},
                      "score": {"type": "float32", "rank": 1, "shape": [-1]},
                      "flag": {"type": "bool", "rank": 1, "shape": [2]}}}


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return str(path)


def rows(d):
    return list(d.create_tuple_iterator(output_numpy=True))


def test_rows_follow_the_schema_file(schema_file):
    d = ds.RandomDataset(schema=schema_file, shuffle=False)
    assert d.get_col_names() == ["image", "label", "score", "flag"]
    got = rows(d)
    assert len(got) == 7 == d.get_dataset_size()                  # numRows
    lengths = set()
    for image, label, score, flag in got:
        assert image.dtype == np.uint8 and image.shape == (4, 5, 3)
        assert label.dtype == np.int32 and label.shape == ()
        assert score.dtype == np.float32 and score.ndim == 1 and 1 <= len(score) <= 8
        assert ((0 <= score) & (score < 1)).all()
        assert flag.dtype == np.bool_ and flag.shape == (2,)
        lengths.add(len(score))
    assert len(lengths) > 1                                        # the unknown dim varies
    images = np.stack([r[0] for r in got])
    assert images.min() < 30 and images.max() > 225               # uint8's whole range
    labels = np.array([int(r[1]) for r in got])
    assert np.abs(labels).max() > 2 ** 20                          # int32's range, not [0, 256)
    picked = ds.RandomDataset(total_rows=3, schema=schema_file, columns_list=["flag", "label"])
    assert picked.get_col_names() == ["flag", "label"] and len(rows(picked)) == 3


def test_schema_built_in_code_and_json_round_trip():
    schema = ds.Schema()
    schema.add_column("x", ms.float64, [3])
    schema.add_column("y", "int64")
    again = ds.Schema()
    again.from_json(json.loads(schema.to_json()))
    assert [(n, np.dtype(t).name, s) for n, t, s in again.columns] == \
        [("x", "float64", (3,)), ("y", "int64", (-1,))]
    d = ds.RandomDataset(total_rows=4, schema=schema, shuffle=False)
    for x, y in rows(d):
        assert x.dtype == np.float64 and x.shape == (3,) and y.dtype == np.int64 and y.ndim == 1
    listed = ds.Schema()
    listed.parse_columns([{"name": "a", "type": "uint8", "shape": [2]}])
    assert listed.columns == [("a", np.dtype(np.uint8), (2,))]


def test_seeded_and_sharded_rows(schema_file):
    key = lambda r: b"".join(v.tobytes() for v in r)              # noqa: E731
    ms.set_seed(5)
    whole = sorted(key(r) for r in rows(ds.RandomDataset(schema=schema_file)))
    ms.set_seed(5)
    assert sorted(key(r) for r in rows(ds.RandomDataset(schema=schema_file))) == whole
    ms.set_seed(6)
    assert sorted(key(r) for r in rows(ds.RandomDataset(schema=schema_file))) != whole
    ms.set_seed(5)
    parts = [[key(r) for r in rows(ds.RandomDataset(schema=schema_file, num_shards=3,
                                                    shard_id=k))] for k in range(3)]
    assert all(len(p) == 3 for p in parts) and set(sum(parts, [])) == set(whole)


def test_a_drawn_schema_is_consistent_over_rows():
    ms.set_seed(1)
    d = ds.RandomDataset(total_rows=5)
    names = d.get_col_names()
    assert 1 <= len(names) <= 4 and names == [f"c{k}" for k in range(len(names))]
    got = rows(d)
    assert len(got) == 5
    for k in range(len(names)):
        kinds = {(r[k].dtype, r[k].shape) for r in got}
        assert len(kinds) == 1                                     # one dtype and shape a column
        dtype, shape = kinds.pop()
        assert 1 <= len(shape) <= 3 and max(shape) <= 8
    ms.set_seed(1)
    assert 1 <= ds.RandomDataset().get_dataset_size() <= 1024


def string_schema():
    schema = ds.Schema()
    schema.add_column("s", "string")            # MindSpore's string columns are schema types
    return schema


@pytest.mark.parametrize("make,error,match", [
    (lambda f: ds.RandomDataset(schema=3), TypeError, "For 'RandomDataset', the 'schema' should"),
    (lambda f: ds.RandomDataset(schema=f, columns_list=["nope"]), ValueError,
     "For 'RandomDataset', the 'columns_list' should name columns of the schema"),
    (lambda f: ds.RandomDataset(total_rows=0, schema=f), ValueError, "total_rows"),
    (lambda f: ds.RandomDataset(schema=ds.Schema()), ValueError, "at least one column"),
    (lambda f: ds.Schema("/nope.json"), RuntimeError, "For 'Schema', the 'schema_file' should be"),
    (lambda f: ds.Schema().from_json({"columns": {}, "extra": 1}), RuntimeError,
     r"unknown \['extra'\]"),
    (lambda f: ds.Schema().from_json({"numRows": 1}), RuntimeError, "'columns', but they are"),
    (lambda f: ds.Schema().add_column("s", "text"), ValueError,
     "For 'add_column', the 'de_type' should be a known numeric type"),
    (lambda f: ds.RandomDataset(schema=string_schema()), ValueError,
     r"should be numeric \(random strings are not generated\), but \['s'\]"),
    (lambda f: ds.Schema().add_column("s", "int8", [0]), TypeError, "the 'shape' should be"),
    (lambda f: ds.Schema().parse_columns([{"name": "a"}]), RuntimeError,
     "every column should have a 'name' and a 'type'"),
])
def test_errors(schema_file, make, error, match):
    with pytest.raises(error, match=match):
        make(schema_file)


def test_duplicate_columns_are_refused():
    schema = ds.Schema()
    schema.add_column("a", "int8")
    with pytest.raises(ValueError, match="For 'add_column', the column 'a' is already"):
        schema.add_column("a", "int8")
