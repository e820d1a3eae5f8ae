"""TextFileDataset and CSVDataset over text files written here: rows against the lines and
fields written, MindSpore's file order, Shuffle modes, contiguous shard blocks, seeds and
errors."""
import numpy as np
import pytest

import msops as ms
from msops import dataset as ds


def texts(dataset):
    return [str(r[0]) for r in dataset.create_tuple_iterator(output_numpy=True)]


@pytest.fixture
def lines(tmp_path):
    """b.txt (4 lines, a blank one skipped) and a.txt (3 lines, no final newline):
    read a.txt first (sorted names)."""
    (tmp_path / "b.txt").write_text("b0\nb1\n\nb2\nb3\n")
    (tmp_path / "a.txt").write_text("a0\na1 with spaces\na2")
    (tmp_path / "skip.dat").write_text("not matched by *.txt\n")
    return tmp_path, ["a0", "a1 with spaces", "a2", "b0", "b1", "b2", "b3"]


def test_textfile_rows_in_file_order(lines):
    root, want = lines
    for files in (str(root / "*.txt"), [str(root / "b.txt"), str(root / "a.txt")]):
        d = ds.TextFileDataset(files, shuffle=False)
        assert d.get_col_names() == ["text"] and d.get_dataset_size() == 7
        got = list(d.create_tuple_iterator(output_numpy=True))
        assert [str(r[0]) for r in got] == want
        assert got[0][0].dtype.kind == "U" and got[0][0].shape == ()
    (root / "crlf.txt").write_bytes(b"x\r\ny\r\n")            # getline keeps the '\r'
    assert texts(ds.TextFileDataset(str(root / "crlf.txt"), shuffle=False)) == ["x\r", "y\r"]
    assert texts(ds.TextFileDataset(str(root / "a.txt"), shuffle=False, num_samples=2)) == \
        ["a0", "a1 with spaces"]


def test_textfile_shuffle_modes(lines):
    root, want = lines
    a, b = want[:3], want[3:]
    pattern = str(root / "*.txt")
    seen = set()
    for seed in range(6):
        ms.set_seed(seed)
        files = texts(ds.TextFileDataset(pattern, shuffle=ds.Shuffle.FILES))
        assert files in (a + b, b + a)                       # whole files, rows in order
        seen.add(tuple(files))
        ms.set_seed(seed)
        infile = texts(ds.TextFileDataset(pattern, shuffle=ds.Shuffle.INFILE))
        assert sorted(infile[:3]) == a and sorted(infile[3:]) == b   # files in order
        for mode in (ds.Shuffle.GLOBAL, True):
            ms.set_seed(seed)
            assert sorted(texts(ds.TextFileDataset(pattern, shuffle=mode))) == sorted(want)
    assert len(seen) == 2
    ms.set_seed(1)
    d = ds.TextFileDataset(pattern)                          # Shuffle.GLOBAL by default
    it = d.create_tuple_iterator(output_numpy=True)
    epochs = [[str(r[0]) for r in it] for _ in range(3)]
    ms.set_seed(1)
    it = ds.TextFileDataset(pattern).create_tuple_iterator(output_numpy=True)
    assert [[str(r[0]) for r in it] for _ in range(3)] == epochs    # seeded, per epoch
    assert len({tuple(e) for e in epochs}) > 1 and all(sorted(e) == sorted(want) for e in epochs)


@pytest.mark.parametrize("shards", [2, 3, 7, 8])
def test_textfile_shards_are_contiguous_blocks_covering_the_rows(lines, shards):
    root, want = lines
    per = -(-7 // shards)
    parts = [texts(ds.TextFileDataset(str(root / "*.txt"), shuffle=False, num_shards=shards,
                                      shard_id=k)) for k in range(shards)]
    for k, part in enumerate(parts):      # MindSpore: block k of the file order, wrapped
        assert part == [want[(k * per + i) % 7] for i in range(per)]
    assert {t for p in parts for t in p} == set(want)
    if 7 % shards == 0:
        assert sorted(t for p in parts for t in p) == sorted(want)
    for seed in (0, 1):                    # shuffled shards (same seed on every rank) still cover
        ms.set_seed(seed)
        parts = [texts(ds.TextFileDataset(str(root / "*.txt"), num_shards=shards, shard_id=k))
                 for k in range(shards)]
        assert {t for p in parts for t in p} == set(want) and {len(p) for p in parts} == {per}


def test_textfile_errors(lines):
    root, _ = lines
    api = "For 'TextFileDataset', "
    with pytest.raises(ValueError, match=api + "every 'dataset_files' entry should name an "
                                               "existing file .* but got '/nope/x.txt'"):
        ds.TextFileDataset("/nope/x.txt")
    with pytest.raises(TypeError, match=api + "the 'dataset_files' should be a str or a "
                                              "non-empty list"):
        ds.TextFileDataset([])
    with pytest.raises(TypeError, match=api + "the 'shuffle' should be a bool or a "
                                              "dataset.Shuffle"):
        ds.TextFileDataset(str(root / "a.txt"), shuffle="global")
    with pytest.raises(ValueError, match=api + "the 'num_shards' and 'shard_id' should be given "
                                               "together"):
        ds.TextFileDataset(str(root / "a.txt"), num_shards=2)
    with pytest.raises(ValueError, match=api + "the 'num_samples' should be None or an int"):
        ds.TextFileDataset(str(root / "a.txt"), num_samples=-1)
    with pytest.raises(ValueError, match=api + "the 'cache' is not supported"):
        ds.TextFileDataset(str(root / "a.txt"), cache=object())
    (root / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ValueError, match=api + "the file '.*bin.txt' should be UTF-8 text"):
        ds.TextFileDataset(str(root / "bin.txt"))
    (root / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match=api + "the dataset files hold no records"):
        ds.TextFileDataset(str(root / "empty.txt"))


# -- CSVDataset --------------------------------------------------------------------------------
@pytest.fixture
def csvs(tmp_path):
    (tmp_path / "2.csv").write_text('id,name,score\n3,"c, quoted",2.5\n4,"say ""hi""",\n')
    (tmp_path / "1.csv").write_text("id,name,score\n1,a,0.5\n\n2,,1.25\n")
    return tmp_path


def values(dataset):
    return [tuple(v.item() for v in r) for r in dataset.create_tuple_iterator(output_numpy=True)]


def test_csv_header_types_defaults_and_quoting(csvs):
    d = ds.CSVDataset(str(csvs / "*.csv"), column_defaults=[0, "none", -1.0], shuffle=False)
    assert d.get_col_names() == ["id", "name", "score"] and d.get_dataset_size() == 4
    assert values(d) == [(1, "a", 0.5), (2, "none", 1.25), (3, "c, quoted", 2.5),
                         (4, 'say "hi"', -1.0)]
    row = next(iter(d.create_tuple_iterator(output_numpy=True)))
    assert [v.dtype for v in row] == [np.int32, np.dtype("<U1"), np.float32]
    assert all(v.shape == () for v in row)
    # no column_defaults: every column a str (empty fields stay empty)
    assert values(ds.CSVDataset(str(csvs / "1.csv"), shuffle=False)) == \
        [("1", "a", "0.5"), ("2", "", "1.25")]
    # defaults for the first columns only: the rest are str
    assert values(ds.CSVDataset(str(csvs / "1.csv"), column_defaults=[7], shuffle=False)) == \
        [(1, "a", "0.5"), (2, "", "1.25")]
    # numeric columns batch into Tensors
    ids, scores = next(iter(ds.CSVDataset(str(csvs / "*.csv"), column_defaults=[0, "", 0.0],
                                          shuffle=False).batch(4).create_tuple_iterator(
        columns=["id", "score"])))
    assert ids.dtype == ms.int32 and ids.asnumpy().tolist() == [1, 2, 3, 4]
    np.testing.assert_array_equal(scores.asnumpy(), np.float32([0.5, 1.25, 2.5, 0.0]))


def test_csv_column_names_delimiter_and_shards(tmp_path):
    (tmp_path / "t.tsv").write_text("".join(f"{i}\tname{i}\n" for i in range(5)))
    d = ds.CSVDataset(str(tmp_path / "t.tsv"), field_delim="\t", column_names=["k", "v"],
                      column_defaults=[0, ""], shuffle=False)
    assert d.get_col_names() == ["k", "v"]                  # no header: every line is a row
    assert values(d) == [(i, f"name{i}") for i in range(5)]
    parts = [values(ds.CSVDataset(str(tmp_path / "t.tsv"), "\t", [0, ""], ["k", "v"],
                                  shuffle=False, num_shards=2, shard_id=k)) for k in range(2)]
    assert parts == [[(0, "name0"), (1, "name1"), (2, "name2")],
                     [(3, "name3"), (4, "name4"), (0, "name0")]]


@pytest.mark.parametrize("text,kwargs,error,match", [
    ("a,b\n1,2,3\n", {}, RuntimeError, "one field per column \\(2: \\['a', 'b'\\]\\), but got 3 "
                                       "at '.*bad.csv' line 2"),
    ("a,b\nx,2\n", dict(column_defaults=[0, 0]), RuntimeError,
     "the field 'x' at '.*bad.csv' line 2 should be an int"),
    ("a,b\n1,2\n", dict(column_defaults=[0, None]), TypeError,
     "the 'column_defaults' should be a list of int, float or str"),
    ("a,b\n1,2\n", dict(column_defaults=[0, 0, 0]), ValueError,
     "at most one value per column \\(2\\), but got 3"),
    ("a,a\n1,2\n", {}, ValueError, "the 'column_names' should be distinct"),
    ("a,b\n1,2\n", dict(field_delim=";;"), ValueError, "the 'field_delim' should be one character"),
    ("a,b\n1,2\n", dict(column_names=["x", ""]), TypeError, "the 'column_names' should be a "
                                                            "non-empty list of non-empty str"),
    ('a,b\n"1,2\n', {}, RuntimeError, "is not valid CSV at line"),
    ("", {}, ValueError, "should start with a header line"),
])
def test_csv_errors(tmp_path, text, kwargs, error, match):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(error, match="For 'CSVDataset', .*" + match):
        ds.CSVDataset(str(tmp_path / "bad.csv"), **kwargs)
