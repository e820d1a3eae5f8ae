"""msops.dataset: sources, batch, shuffle (seeded), map, repeat, shards, iterators, errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor
from msops import dataset as ds


def rows(dataset, column=0):
    return [r[column].tolist() for r in dataset.create_tuple_iterator(output_numpy=True)]


def numbers(n=10, **kw):
    x = np.arange(n, dtype=np.float32).reshape(n, 1)
    return ds.NumpySlicesDataset((x, np.arange(n, dtype=np.int32)), ["x", "y"], **kw)


def test_batch_keeps_or_drops_the_remainder():
    d = numbers(shuffle=False).batch(4)
    assert d.get_dataset_size() == 3 and d.get_batch_size() == 4
    assert rows(d, 1) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    d = numbers(shuffle=False).batch(4, drop_remainder=True)
    assert d.get_dataset_size() == 2 and rows(d, 1) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    batch = next(iter(numbers(shuffle=False).batch(3)))
    assert isinstance(batch[0], Tensor) and batch[0].shape == (3, 1)
    assert batch[0].dtype == ms.float32 and batch[1].dtype == ms.int32


def test_sources_and_column_names():
    d = ds.NumpySlicesDataset({"a": np.ones((3, 2)), "b": np.zeros(3)}, shuffle=False)
    assert d.get_col_names() == ["a", "b"]
    first = next(d.create_dict_iterator(output_numpy=True))
    assert set(first) == {"a", "b"} and first["a"].shape == (2,)
    assert ds.NumpySlicesDataset([1, 2, 3], shuffle=False).get_col_names() == ["column_0"]

    def gen():
        for i in range(5):
            yield np.array([i, i]), np.array(i * i)
    g = ds.GeneratorDataset(gen, ["v", "sq"])
    assert g.get_dataset_size() == 5 and rows(g, 1) == [0, 1, 4, 9, 16]

    class Source:                          # random access: shuffled by default (MindSpore)
        def __getitem__(self, i):
            return (np.array(i),)

        def __len__(self):
            return 6
    assert sorted(rows(ds.GeneratorDataset(Source(), "i"))) == list(range(6))
    assert rows(ds.GeneratorDataset(Source(), "i", shuffle=False)) == list(range(6))


def test_shuffle_is_seeded_and_reshuffles_every_epoch():
    ms.set_seed(3)
    a = numbers(20, shuffle=True)
    first, second = rows(a, 1), rows(a, 1)
    assert sorted(first) == list(range(20)) and first != second       # epoch 2 differs
    ms.set_seed(3)
    b = numbers(20, shuffle=True)
    assert rows(b, 1) == first and rows(b, 1) == second              # replayed
    ds.config.set_seed(4)
    try:
        assert ds.config.get_seed() == 4 and rows(numbers(20, shuffle=True), 1) != first
    finally:
        ds.config._seed[0] = None


def test_buffer_shuffle():
    ms.set_seed(0)
    d = numbers(12, shuffle=False).shuffle(4)
    got = rows(d, 1)
    assert sorted(got) == list(range(12)) and got != list(range(12))
    # a buffer of 4 emits a row at most 4 places early (it must have been read already)
    assert all(v <= i + 3 for i, v in enumerate(got))
    ms.set_seed(0)
    assert rows(numbers(12, shuffle=False).shuffle(4), 1) == got


@pytest.mark.parametrize("n,shards", [(10, 3), (12, 4), (7, 2)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_shards_partition_the_data(n, shards, shuffle):
    """Shard k reads rows k, k + shards, ... of the (shuffled) order, wrapping around so
    every shard has ceil(n / shards) rows; together they cover the data once (+ padding)."""
    ms.set_seed(5)
    parts = [rows(numbers(n, shuffle=shuffle, num_shards=shards, shard_id=k), 1)
             for k in range(shards)]
    per = -(-n // shards)
    assert [len(p) for p in parts] == [per] * shards
    dealt = [parts[k][i] for i in range(per) for k in range(shards)]     # round-robin order
    assert dealt[:n] == (rows(_seeded_order(n), 1) if shuffle else list(range(n)))
    assert dealt[n:] == dealt[:per * shards - n]                        # wrap-around padding
    assert numbers(n, num_shards=shards, shard_id=0).get_dataset_size() == per


def _seeded_order(n):
    ms.set_seed(5)
    return numbers(n, shuffle=True)


def test_map_and_repeat():
    d = numbers(4, shuffle=False).map(lambda x: x * 10, input_columns="x")
    assert rows(d, 0) == [[0.0], [10.0], [20.0], [30.0]]
    two = numbers(3, shuffle=False).map([lambda x, y: (x + y, x - y)], ["x", "y"],
                                        ["sum", "diff"])
    assert two.get_col_names() == ["sum", "diff"]
    assert rows(two, 0) == [[0.0], [2.0], [4.0]]
    r = numbers(3, shuffle=False).repeat(2).batch(2)
    assert r.get_dataset_size() == 3 and rows(r, 1) == [[0, 1], [2, 0], [1, 2]]


def test_iterator_epochs():
    d = numbers(3, shuffle=False)
    it = d.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert len(list(it)) == 3 and len(list(it)) == 3 and list(it) == []
    cols = next(d.create_tuple_iterator(columns=["y"], output_numpy=True))
    assert len(cols) == 1 and cols[0] == 0


@pytest.mark.parametrize("make,err,match", [
    (lambda: ds.GeneratorDataset(lambda: iter([]), None), ValueError, "'column_names'"),
    (lambda: ds.GeneratorDataset(lambda: iter([]), "a", num_shards=2, shard_id=0), ValueError,
     "need a random-accessible source"),
    (lambda: numbers(num_shards=2), ValueError, "'num_shards' and 'shard_id' should be given "
                                                "together"),
    (lambda: numbers(num_shards=2, shard_id=2), ValueError, "'shard_id' should be < "
                                                            "num_shards: 2, but got 2"),
    (lambda: numbers().batch(0), ValueError, "batch_size"),
    (lambda: numbers().shuffle(1), ValueError, "buffer_size"),
    (lambda: numbers().repeat(0), ValueError, "'count' should be -1"),
    (lambda: numbers().map(lambda v: v, "z"), ValueError, "should be one of \\['x', 'y'\\], "
                                                          "but got 'z'"),
    (lambda: numbers().batch(2, per_batch_map=len), ValueError, "'per_batch_map' is not "
                                                                "supported"),
    (lambda: ds.NumpySlicesDataset((np.ones(3), np.ones(4))), ValueError, "same first dim"),
])
def test_errors(make, err, match):
    with pytest.raises(err, match=match):
        make()


def test_ragged_rows_cannot_batch():
    g = ds.GeneratorDataset(lambda: (np.ones(i + 1) for i in range(3)), "v").batch(3)
    with pytest.raises(ValueError, match="For 'batch', every row of column 'v' should have "
                                         "the same shape"):
        list(g)
