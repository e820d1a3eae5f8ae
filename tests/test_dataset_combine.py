"""dataset.zip / Dataset.zip, Dataset.concat / `+`, ConcatDataset.use_sampler with a
PaddedDataset (MindSpore's way of dividing a dataset evenly over shards), and
FakeImageDataset: rows against numpy arrays built in the test."""
import numpy as np
import pytest

import msops as ms
from msops import dataset as ds


def values(dataset):
    return [tuple(v.tolist() for v in r) for r in dataset.create_tuple_iterator(output_numpy=True)]


def column(n, name, start=0):
    return ds.NumpySlicesDataset(np.arange(start, start + n), [name], shuffle=False)


def test_zip_rows_side_by_side_to_the_shortest():
    a, b = column(5, "x"), ds.NumpySlicesDataset((np.arange(3) * 10, np.arange(3) * 100),
                                                 ["y", "z"], shuffle=False)
    for zipped in (ds.zip((a, b)), a.zip(b), a.zip((b,))):
        assert zipped.get_col_names() == ["x", "y", "z"] and zipped.get_dataset_size() == 3
        assert values(zipped) == [(0, 0, 0), (1, 10, 100), (2, 20, 200)]
    ms.set_seed(4)                  # shuffled children: each pass zips the same epoch's orders
    s1 = ds.NumpySlicesDataset(np.arange(6), ["p"], shuffle=True)
    ms.set_seed(4)
    s2 = ds.NumpySlicesDataset(np.arange(6) * 2, ["q"], shuffle=True)
    it = s1.zip(s2).create_tuple_iterator(output_numpy=True)
    for _ in range(2):
        assert all(int(q) == 2 * int(p) for p, q in it)
    batch = next(iter(a.zip(b).batch(2)))
    assert [t.asnumpy().tolist() for t in batch] == [[0, 1], [0, 10], [0, 100]]


def test_concat_in_order_and_plus():
    a, b, c = column(3, "x"), column(2, "x", 10), column(1, "x", 20)
    for joined in (a + b + c, a.concat([b, c]), a.concat(b).concat(c)):
        assert joined.get_dataset_size() == 6
        assert [r[0] for r in values(joined)] == [0, 1, 2, 10, 11, 20]
    assert [r[0] for r in values((a + b).repeat(2))] == [0, 1, 2, 10, 11] * 2


@pytest.mark.parametrize("shards", [2, 3, 6])
def test_padded_concat_divides_evenly_over_shards(shards):
    data = np.arange(5) * 7                     # 5 rows; one padded row makes 6
    whole = [int(v) for v in data] + [-1]
    parts = []
    for k in range(shards):
        joined = ds.NumpySlicesDataset(data, ["v"], shuffle=False) + \
            ds.PaddedDataset([{"v": np.int64(-1)}])
        joined.use_sampler(ds.DistributedSampler(shards, k, shuffle=False))
        assert ds.dataset_shards(joined.batch(1)) == (shards, k)
        part = [r[0] for r in values(joined)]
        assert part == whole[k::shards] and joined.get_dataset_size() == 6 // shards
        parts.append(part)
    assert sorted(v for p in parts for v in p) == sorted(whole)      # each row once


def test_use_sampler_random_mixes_the_children_seeded():
    def joined():
        d = column(4, "x") + column(3, "x", 100)
        d.use_sampler(ds.RandomSampler())
        return d
    ms.set_seed(2)
    it = joined().create_tuple_iterator(output_numpy=True)
    epochs = [[int(r[0]) for r in it] for _ in range(2)]
    assert all(sorted(e) == [0, 1, 2, 3, 100, 101, 102] for e in epochs)
    assert epochs[0] != epochs[1]
    ms.set_seed(2)
    it = joined().create_tuple_iterator(output_numpy=True)
    assert [[int(r[0]) for r in it] for _ in range(2)] == epochs


def test_padded_dataset_rows_and_columns():
    p = ds.PaddedDataset([{"image": np.zeros((2, 2), np.uint8), "label": np.int32(3)},
                          {"label": np.int32(4), "image": np.ones((2, 2), np.uint8)}])
    assert p.get_col_names() == ["image", "label"]
    got = list(p.create_tuple_iterator(output_numpy=True))
    np.testing.assert_array_equal(got[1][0], np.ones((2, 2), np.uint8))
    assert [int(r[1]) for r in got] == [3, 4]


def test_fake_image_dataset():
    d = ds.FakeImageDataset(num_images=6, image_size=(4, 5, 3), num_classes=3, base_seed=1,
                            shuffle=False)
    rows = list(d.create_tuple_iterator(output_numpy=True))
    assert d.get_col_names() == ["image", "label"] and len(rows) == 6 == d.get_dataset_size()
    for image, label in rows:
        assert image.dtype == np.uint8 and image.shape == (4, 5, 3)
        assert label.dtype == np.uint32 and 0 <= int(label) < 3
    assert len({r[0].tobytes() for r in rows}) == 6              # distinct random images
    flat = np.concatenate([r[0].ravel() for r in rows])
    assert flat.min() < 20 and flat.max() > 235                   # spread over [0, 255]
    # a row's values depend on its index only: shuffled shards hold the same rows
    key = lambda r: (r[0].tobytes(), int(r[1]))                   # noqa: E731
    shards = [list(ds.FakeImageDataset(6, (4, 5, 3), 3, 1, num_shards=2, shard_id=k)
                   .create_tuple_iterator(output_numpy=True)) for k in range(2)]
    assert sorted(key(r) for s in shards for r in s) == sorted(key(r) for r in rows)
    other = list(ds.FakeImageDataset(6, (4, 5, 3), 3, 2, shuffle=False)
                 .create_tuple_iterator(output_numpy=True))
    assert other[0][0].tobytes() != rows[0][0].tobytes()          # base_seed matters


@pytest.mark.parametrize("make,error,match", [
    (lambda: column(2, "x").zip(column(2, "x")), ValueError,
     r"For 'zip', the datasets' column names should be distinct, but got \['x'\]"),
    (lambda: ds.zip((column(2, "x"),)), ValueError, r"For 'zip', .*at least 2 datasets"),
    (lambda: ds.zip([1, 2]), TypeError, r"For 'zip', the 'datasets' should be a Dataset"),
    (lambda: column(2, "x") + column(2, "y"), ValueError,
     r"For 'concat', every dataset should have the columns \['x'\], but got \['y'\]"),
    (lambda: column(2, "x").concat(3), TypeError, r"For 'concat', the 'datasets' should be"),
    (lambda: (column(2, "x") + ds.NumpySlicesDataset(np.arange(2), ["x"])).use_sampler(
        ds.RandomSampler()), ValueError,
     r"For 'use_sampler', every concatenated dataset should be a random-access source read "
     r"in order \(shuffle=False"),
    (lambda: (column(2, "x") + column(2, "x")).use_sampler([0, 1]), TypeError,
     r"For 'use_sampler', the 'sampler' should be a sampler"),
    (lambda: ds.PaddedDataset({"x": 1}), TypeError,
     r"For 'PaddedDataset', the 'padded_samples' should be a list of dicts"),
    (lambda: ds.PaddedDataset([]), ValueError, r"For 'PaddedDataset', .*should not be empty"),
    (lambda: ds.PaddedDataset([{"x": 1}, {"y": 2}]), ValueError,
     r"For 'PaddedDataset', every padded sample should have the keys \['x'\]"),
    (lambda: ds.FakeImageDataset(image_size=(4, 4)), ValueError,
     r"For 'FakeImageDataset', the 'image_size' should be three positive ints"),
    (lambda: ds.FakeImageDataset(num_images=0), ValueError, r"For 'FakeImageDataset'.*num_images"),
    (lambda: ds.FakeImageDataset(base_seed=-1), ValueError, r"For 'FakeImageDataset'.*base_seed"),
])
def test_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()
