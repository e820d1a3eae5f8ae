"""msops.dataset samplers: index orders against plain-Python models of MindSpore's
documented behaviour, shards disjoint and covering, seeds and epochs, num_samples,
datasets taking a sampler, and MindSpore's errors."""
import numpy as np
import pytest

import msops as ms
from msops import dataset as ds
from msops.dataset import (DistributedSampler, GeneratorDataset, NumpySlicesDataset,
                           RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                           SubsetSampler, WeightedRandomSampler, PKSampler, dataset_shards)


@pytest.fixture(autouse=True)
def dataset_seed():
    ds.config.set_seed(3)
    yield
    ds.config._seed[0] = None


def ids(d, epochs=1):
    """The rows of each pass of a one-column dataset of row ids."""
    it = d.create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    return [[int(r[0]) for r in it] for _ in range(epochs)]


def numbers(n, **kw):
    return NumpySlicesDataset(np.arange(n), ["i"], **kw)


@pytest.mark.parametrize("n,k", [(10, 3), (12, 4), (7, 2), (3, 5), (1, 1)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_shards_deal_the_order_round_robin_with_padding(n, k, shuffle):
    parts = [ids(numbers(n, sampler=DistributedSampler(k, s, shuffle=shuffle)))[0]
             for s in range(k)]
    per = -(-n // k)
    assert [len(p) for p in parts] == [per] * k          # equal shards: equal step counts
    dealt = [parts[s][j] for j in range(per) for s in range(k)]
    order = dealt[:n]
    assert sorted(order) == list(range(n))                # every row once ...
    if not shuffle:
        assert order == list(range(n))
    assert dealt[n:] == dealt[:per * k - n]              # ... then wrapped to the start
    # the sampler deals what the num_shards/shard_id arguments read
    assert parts == [ids(numbers(n, shuffle=shuffle, num_shards=k, shard_id=s))[0]
                     for s in range(k)]


@pytest.mark.parametrize("n,k,offset", [(10, 3, 0), (10, 3, 1), (7, 4, 3), (5, 2, 2)])
def test_distributed_offset_deals_from_a_shard_without_padding(n, k, offset):
    parts = [ids(numbers(n, sampler=DistributedSampler(k, s, False, offset=offset)))[0]
             for s in range(k)]
    for s, part in enumerate(parts):          # position p goes to shard (p + offset) % k
        assert part == [p for p in range(n) if (p + offset) % k == s]
    assert sorted(sum(parts, [])) == list(range(n))       # disjoint, covering


def test_distributed_num_samples_caps_each_shard():
    parts = [ids(numbers(10, sampler=DistributedSampler(3, s, False, num_samples=2)))[0]
             for s in range(3)]
    assert parts == [[0, 3], [1, 4], [2, 5]]
    assert numbers(10, sampler=DistributedSampler(3, 0, num_samples=2)).get_dataset_size() == 2
    assert len(ids(numbers(10, sampler=DistributedSampler(3, 0, num_samples=0)))[0]) == 4


def test_shuffled_orders_are_seeded_and_change_every_epoch():
    def run(shard):
        return ids(numbers(20, sampler=DistributedSampler(2, shard)), epochs=3)
    first = run(1)
    assert first == run(1)                                # the same seed: the same rows
    assert first[0] != first[1] != first[2]               # a new order each epoch
    for a, b in zip(first, run(0)):                       # the shards split each epoch's
        assert sorted(a + b) == list(range(20))           # permutation
    ds.config.set_seed(4)
    assert run(1) != first


def test_the_global_seed_seeds_the_samplers_without_a_dataset_seed():
    ds.config._seed[0] = None
    ms.set_seed(5)
    a = ids(numbers(15, sampler=RandomSampler()))[0]
    ms.set_seed(5)
    assert ids(numbers(15, sampler=RandomSampler()))[0] == a and sorted(a) == list(range(15))
    ms.set_seed(0)


def test_sequential_sampler():
    assert ids(numbers(6, sampler=SequentialSampler()))[0] == [0, 1, 2, 3, 4, 5]
    assert ids(numbers(6, sampler=SequentialSampler(start_index=2)))[0] == [2, 3, 4, 5]
    assert ids(numbers(6, sampler=SequentialSampler(1, num_samples=3)))[0] == [1, 2, 3]
    assert ids(numbers(6, sampler=SequentialSampler(4, num_samples=5)))[0] == [4, 5]
    assert numbers(6, sampler=SequentialSampler(4)).get_dataset_size() == 2


def test_random_sampler():
    rows = ids(numbers(30, sampler=RandomSampler()), epochs=2)
    assert all(sorted(r) == list(range(30)) for r in rows) and rows[0] != rows[1]
    assert rows[0] != list(range(30))
    part = ids(numbers(30, sampler=RandomSampler(num_samples=7)))[0]
    assert len(part) == 7 and len(set(part)) == 7
    drawn = ids(numbers(5, sampler=RandomSampler(replacement=True, num_samples=200)))[0]
    assert len(drawn) == 200 and set(drawn) == set(range(5))          # repeats, all rows
    assert len(ids(numbers(5, sampler=RandomSampler(replacement=True)))[0]) == 5


def test_subset_samplers():
    assert ids(numbers(8, sampler=SubsetSampler([5, 1, 1, 7])))[0] == [5, 1, 1, 7]
    assert ids(numbers(8, sampler=SubsetSampler(np.array([6, 2]), num_samples=1)))[0] == [6]
    got = ids(numbers(50, sampler=SubsetRandomSampler(list(range(10, 40)))), epochs=2)
    assert all(sorted(g) == list(range(10, 40)) for g in got) and got[0] != got[1]
    assert len(ids(numbers(50, sampler=SubsetRandomSampler((3, 4, 5), num_samples=2)))[0]) == 2
    # a list (or an array) as the sampler is a SubsetSampler, as MindSpore
    assert ids(numbers(8, sampler=[3, 0, 2]))[0] == [3, 0, 2]
    assert ids(numbers(8, sampler=[3, 0, 2], num_samples=2))[0] == [3, 0]


def test_a_user_sampler_and_an_iterable():
    class Evens(Sampler):
        def __iter__(self):
            return iter(range(0, 10, 2))
    assert ids(numbers(10, sampler=Evens()), epochs=2) == [[0, 2, 4, 6, 8]] * 2
    assert ids(numbers(10, sampler=Evens(num_samples=2)))[0] == [0, 2]
    assert ids(numbers(10, sampler=range(9, 6, -1)))[0] == [9, 8, 7]


def test_generator_dataset_takes_a_sampler():
    class Source:
        def __getitem__(self, i):
            return (np.array(i * 10),)

        def __len__(self):
            return 9
    d = GeneratorDataset(Source(), ["x"], sampler=DistributedSampler(4, 3, shuffle=False))
    assert [int(r[0]) for r in d.create_tuple_iterator(output_numpy=True)] == [30, 70, 20]
    assert dataset_shards(d.batch(2)) == (4, 3)          # what Model checks against the context
    assert dataset_shards(numbers(4, sampler=RandomSampler())) == (1, 0)


def test_weighted_random_sampler():
    weights = [0.0, 1.0, 3.0, 0.0, 4.0]
    drawn = ids(numbers(5, sampler=WeightedRandomSampler(weights, num_samples=16000)), 2)
    for epoch in drawn:
        counts = np.bincount(epoch, minlength=5)
        assert counts[0] == counts[3] == 0                      # weight 0: never drawn
        np.testing.assert_allclose(counts / 16000, np.array(weights) / 8, atol=0.015)
    assert drawn[0] != drawn[1]                                 # a new draw each epoch
    assert len(ids(numbers(5, sampler=WeightedRandomSampler(weights)))[0]) == 5   # default
    once = ids(numbers(5, sampler=WeightedRandomSampler(weights, 3, replacement=False)), 3)
    assert all(sorted(e) == [1, 2, 4] for e in once)            # each non-zero index once
    ds.config.set_seed(9)
    a = ids(numbers(5, sampler=WeightedRandomSampler(weights, 50)), 2)
    ds.config.set_seed(9)
    assert ids(numbers(5, sampler=WeightedRandomSampler(weights, 50)), 2) == a      # seeded


LABELS = np.array([2, 0, 1, 0, 2, 2, 5, 0, 0])        # class 5 has one row, class 0 four


def labelled(**kw):
    return NumpySlicesDataset((np.arange(9), LABELS), ["i", "label"], **kw)


def test_pk_sampler_draws_num_val_from_each_class_in_label_order():
    members = {c: set(np.flatnonzero(LABELS == c).tolist()) for c in (0, 1, 2, 5)}
    it = labelled(sampler=PKSampler(3)).create_tuple_iterator(output_numpy=True)
    seen = {c: set() for c in members}
    epochs = []
    for _ in range(12):
        rows = [(int(i), int(c)) for i, c in it]
        assert [c for _, c in rows] == [0] * 3 + [1] * 3 + [2] * 3 + [5] * 3
        for i, c in rows:
            assert i in members[c] and LABELS[i] == c           # the row is of its class
            seen[c].add(i)
        epochs.append(rows)
    assert seen == members                                     # every member drawn in time
    assert len({tuple(e) for e in epochs}) > 1                  # new draws each epoch
    assert labelled(sampler=PKSampler(2, num_samples=5)).get_dataset_size() == 5
    orders = set()
    for seed in range(8):
        ds.config.set_seed(seed)
        it = labelled(sampler=PKSampler(1, shuffle=True)).create_tuple_iterator(output_numpy=True)
        per_epoch = [tuple(int(c) for _, c in it) for _ in range(2)]
        assert per_epoch[0] == per_epoch[1] and sorted(per_epoch[0]) == [0, 1, 2, 5]
        orders.add(per_epoch[0])
    assert len(orders) > 1                                      # shuffled class order


def test_pk_sampler_reads_image_folder_labels_without_the_files(tmp_path):
    for name, count in (("a", 3), ("b", 1)):
        (tmp_path / name).mkdir()
        for k in range(count):
            (tmp_path / name / f"{k}.bin").write_bytes(bytes([k]))
    reads = []
    d = ds.ImageFolderDataset(str(tmp_path), sampler=PKSampler(2),
                              decrypt=lambda p: reads.append(p) or open(p, "rb").read())
    assert reads == []                                          # labels from the listing
    got = [(r[0].tobytes(), int(r[1])) for r in d.create_tuple_iterator(output_numpy=True)]
    assert [c for _, c in got] == [0, 0, 1, 1] and got[2][0] == got[3][0] == bytes([0])


@pytest.mark.parametrize("make,error,message", [
    (lambda: PKSampler(0), ValueError, r"For 'PKSampler', the 'num_val' should be > 0, but got 0"),
    (lambda: PKSampler(2, num_class=3), NotImplementedError,
     r"For 'PKSampler', the 'num_class' is not supported"),
    (lambda: PKSampler(2, shuffle=None), TypeError, r"For 'PKSampler', the 'shuffle' should be"),
    (lambda: labelled(sampler=PKSampler(2, class_column="y")), ValueError,
     r"For 'PKSampler', the 'class_column' should be a column of a random-access dataset "
     r"\['i', 'label'\], but got 'y'"),
    (lambda: NumpySlicesDataset(np.ones(3, np.float32), ["label"], sampler=PKSampler(1)),
     ValueError, r"For 'PKSampler', the 'label' column should hold integer scalars"),
    (lambda: WeightedRandomSampler([]), TypeError,
     r"For 'WeightedRandomSampler', the 'weights' should be a non-empty list of numbers"),
    (lambda: WeightedRandomSampler([1, -1]), ValueError,
     r"For 'WeightedRandomSampler', the 'weights' should be finite, >= 0 and not all 0"),
    (lambda: WeightedRandomSampler([0, 0]), ValueError, r"not all 0, but got \[0, 0\]"),
    (lambda: WeightedRandomSampler([1, 0, 1], 3, replacement=False), ValueError,
     r"the 'num_samples' should be <= the number of non-zero weights \(2\) without "
     r"replacement, but got 3"),
    (lambda: WeightedRandomSampler([1], replacement=1), TypeError, r"'replacement' should be bool"),
    (lambda: ids(numbers(3, sampler=WeightedRandomSampler([0, 0, 0, 1]))), ValueError,
     r"For 'WeightedRandomSampler', the indices should be rows in \[0, 3\), but got 3"),
    (lambda: numbers(4, sampler=SequentialSampler(), shuffle=False), ValueError,
     r"For 'NumpySlicesDataset', the 'sampler' should come alone: Conflicting arguments during "
     r"sampler assignments. num_samples: None, num_shards: None, shard_id: None, shuffle: False"),
    (lambda: numbers(4, sampler=DistributedSampler(2, 0), num_shards=2, shard_id=0), ValueError,
     r"Conflicting arguments during sampler assignments"),
    (lambda: numbers(4, sampler=RandomSampler(), num_samples=2), ValueError,
     r"Conflicting arguments during sampler assignments"),
    (lambda: GeneratorDataset(lambda: iter([1, 2]), ["a"], sampler=[0]), ValueError,
     r"For 'GeneratorDataset', 'shuffle', 'num_shards' and 'sampler' need a random-accessible"),
    (lambda: numbers(4, sampler=3), TypeError,
     r"For 'NumpySlicesDataset', the 'sampler' should be a sampler or an iterable"),
    (lambda: DistributedSampler(0, 0), RuntimeError,
     r"For 'DistributedSampler', the 'num_shards' should be > 0, but got 0"),
    (lambda: DistributedSampler(2, 2), RuntimeError,
     r"For 'DistributedSampler', the 'shard_id' should be in \[0, 1\], but got 2"),
    (lambda: DistributedSampler(2, 0, offset=3), RuntimeError, r"'offset' should be in \[-1, 2\]"),
    (lambda: DistributedSampler(2, 0, shuffle=1), TypeError,
     r"For 'DistributedSampler', the 'shuffle' should be bool, but got int"),
    (lambda: DistributedSampler(2.0, 0), TypeError, r"the 'num_shards' should be int"),
    (lambda: DistributedSampler(2, 0, num_samples=-1), ValueError,
     r"the 'num_samples' should be None or an int >= 0, but got -1"),
    (lambda: RandomSampler(replacement=None), TypeError, r"'replacement' should be bool"),
    (lambda: SequentialSampler(start_index=-1), ValueError, r"'start_index' should be >= 0"),
    (lambda: ids(numbers(3, sampler=SequentialSampler(start_index=3))), ValueError,
     r"For 'SequentialSampler', the 'start_index' should be < the dataset size 3, but got 3"),
    (lambda: SubsetSampler([0, 1.5]), TypeError, r"For 'SubsetSampler', the indices should be"),
    (lambda: SubsetRandomSampler([-1]), ValueError, r"For 'SubsetRandomSampler', the indices"),
    (lambda: ids(numbers(3, sampler=SubsetSampler([0, 3]))), ValueError,
     r"For 'SubsetSampler', the indices should be rows in \[0, 3\), but got 3"),
    (lambda: SubsetSampler(5), TypeError, r"the 'indices' should be list or tuple"),
])
def test_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()
