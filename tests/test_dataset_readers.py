"""MnistDataset, Cifar10Dataset, Cifar100Dataset over small files written here from the
formats' specs (idx: big-endian magic/count/rows/cols header; CIFAR binary: label byte(s)
then the R, G, B planes), against the arrays they were written from."""
import struct

import numpy as np
import pytest

import msops as ms
from msops import dataset as ds


def write_idx(folder, prefix, images, labels, sep="-"):
    """MNIST idx files: images (n, rows, cols) uint8 and labels (n,) uint8."""
    n, rows, cols = images.shape
    with open(folder / f"{prefix}-images{sep}idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, rows, cols) + images.astype(np.uint8).tobytes())
    with open(folder / f"{prefix}-labels{sep}idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, len(labels)) + labels.astype(np.uint8).tobytes())


def mnist_arrays(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n, np.uint8)


@pytest.fixture
def mnist(tmp_path):
    train, test = mnist_arrays(7, 0), mnist_arrays(3, 1)
    write_idx(tmp_path, "train", *train)
    write_idx(tmp_path, "t10k", *test)
    return tmp_path, train, test


def rows(dataset):
    return list(dataset.create_tuple_iterator(output_numpy=True))


def test_mnist_values_dtypes_shapes_and_usage(mnist):
    folder, (train_x, train_y), (test_x, test_y) = mnist
    d = ds.MnistDataset(str(folder), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "label"] and d.get_dataset_size() == 7
    got = rows(d)
    for (image, label), x, y in zip(got, train_x, train_y):
        assert image.dtype == np.uint8 and image.shape == (28, 28, 1)
        assert label.dtype == np.uint32 and label.shape == ()
        np.testing.assert_array_equal(image[..., 0], x)
        assert int(label) == int(y)
    test = rows(ds.MnistDataset(folder, usage="test", shuffle=False))
    assert [int(r[1]) for r in test] == test_y.tolist()
    # 'all' (and None) read both, the files sorted by name: t10k before train (as MindSpore)
    for usage in ("all", None):
        both = rows(ds.MnistDataset(str(folder), usage=usage, shuffle=False))
        assert [int(r[1]) for r in both] == test_y.tolist() + train_y.tolist()
    # the dotted names of the original download are found too
    dotted = folder / "dotted"
    dotted.mkdir()
    write_idx(dotted, "train", train_x, train_y, sep=".")
    assert len(rows(ds.MnistDataset(str(dotted), "train"))) == 7
    for reader in (ds.FashionMnistDataset, ds.KMnistDataset):        # the same files and names
        same = rows(reader(str(folder), "train", shuffle=False))
        assert [int(r[1]) for r in same] == train_y.tolist()


def test_mnist_batches_into_tensors(mnist):
    folder, (train_x, _), _ = mnist
    image, label = next(iter(ds.MnistDataset(str(folder), "train", shuffle=False).batch(4)))
    assert image.shape == (4, 28, 28, 1) and image.dtype == ms.uint8
    assert label.shape == (4,) and label.dtype == ms.uint32
    np.testing.assert_array_equal(image.asnumpy()[..., 0], train_x[:4])


def test_shuffle_is_seeded_num_samples_and_shards(mnist):
    folder, (_, train_y), _ = mnist
    labels = lambda d: [int(r[1]) for r in rows(d)]          # noqa: E731
    ms.set_seed(7)
    a = ds.MnistDataset(str(folder), "train")                # shuffled by default
    first = labels(a)
    ms.set_seed(7)
    assert labels(ds.MnistDataset(str(folder), "train")) == first
    assert sorted(first) == sorted(train_y.tolist())
    ms.set_seed(7)
    # the reader samples as GeneratorDataset over the same rows
    g = ds.GeneratorDataset([(x,) for x in train_y], ["y"], shuffle=True)
    assert first == [int(r[0]) for r in rows(g)]
    assert len(rows(ds.MnistDataset(str(folder), "train", num_samples=4))) == 4
    parts = [labels(ds.MnistDataset(str(folder), "train", shuffle=False, num_shards=3,
                                    shard_id=k)) for k in range(3)]
    assert [len(p) for p in parts] == [3, 3, 3]                 # ceil(7 / 3), wrapped
    assert parts[0] == [train_y[0], train_y[3], train_y[6]]
    assert parts[1] == [train_y[1], train_y[4], train_y[0]]


def test_readers_take_samplers(mnist):
    folder, (_, train_y), _ = mnist
    got = [int(r[1]) for r in rows(ds.MnistDataset(
        str(folder), "train", sampler=ds.DistributedSampler(2, 1, shuffle=False)))]
    assert got == [train_y[1], train_y[3], train_y[5], train_y[0]]   # round-robin, padded
    got = [int(r[1]) for r in rows(ds.MnistDataset(str(folder), "train",
                                                   sampler=ds.SubsetSampler([5, 2])))]
    assert got == [train_y[5], train_y[2]]
    with pytest.raises(ValueError, match="Conflicting arguments during sampler assignments"):
        ds.MnistDataset(str(folder), "train", sampler=ds.SubsetSampler([0, 1]), shuffle=True)


def corrupt(folder, name, data):
    with open(folder / name, "wb") as f:
        f.write(data)


@pytest.mark.parametrize("name,data,match", [
    ("train-images-idx3-ubyte", struct.pack(">IIII", 2049, 7, 28, 28),
     "magic number of .* should be 2051, but got 2049"),
    ("train-images-idx3-ubyte", struct.pack(">IIII", 2051, 7, 28, 28) + bytes(100),
     "should be 5488 bytes .* but got 100: the file is truncated"),
    ("train-images-idx3-ubyte", b"\x00\x00", "is truncated: its header should have 16 bytes"),
    ("train-labels-idx1-ubyte", struct.pack(">II", 2051, 7) + bytes(7), "should be 2049"),
    ("train-labels-idx1-ubyte", struct.pack(">II", 2049, 6) + bytes(6),
     "one label per image .* \\(7\\), but got 6"),
], ids=["image-magic", "image-truncated", "image-header", "label-magic", "label-count"])
def test_mnist_corrupt_files(mnist, name, data, match):
    folder = mnist[0]
    corrupt(folder, name, data)
    with pytest.raises(ValueError, match="For 'MnistDataset', .*" + match):
        ds.MnistDataset(str(folder), "train")


def test_reader_argument_errors(mnist, tmp_path):
    folder = str(mnist[0])
    with pytest.raises(ValueError, match="For 'MnistDataset', the 'dataset_dir' should be an "
                                         "existing directory"):
        ds.MnistDataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="the 'usage' should be one of \\['train', 'test', "
                                         "'all'\\], but got 'valid'"):
        ds.MnistDataset(folder, usage="valid")
    with pytest.raises(TypeError, match="the type of 'dataset_dir' should be str"):
        ds.MnistDataset(3)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="should hold matching image and label idx files for "
                                         "usage 'test'"):
        ds.MnistDataset(str(empty), "test")
    with pytest.raises(ValueError, match="'cache' is not supported"):
        ds.MnistDataset(folder, cache=object())
    with pytest.raises(ValueError, match="For 'MnistDataset', the 'shard_id' should be < "
                                         "num_shards"):
        ds.MnistDataset(folder, num_shards=2, shard_id=2)


def cifar_records(n, labels, seed):
    """n records of the CIFAR binary format: label bytes, then R, G, B planes (32x32 each);
    returns (bytes, HWC images, labels)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    label = rng.integers(0, 100, (n, labels), dtype=np.uint8)
    data = b"".join(label[i].tobytes() + b"".join(images[i, :, :, c].tobytes() for c in range(3))
                    for i in range(n))
    return data, images, label


def test_cifar10_values_usage_and_order(tmp_path):
    parts = {}
    for k, name in enumerate(["data_batch_1.bin", "data_batch_2.bin", "test_batch.bin"]):
        data, images, label = cifar_records(3 + k, 1, k)
        corrupt(tmp_path, name, data)
        parts[name] = images, label[:, 0]
    corrupt(tmp_path, "batches.meta.txt", b"airplane\n")     # not a .bin: ignored
    d = ds.Cifar10Dataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "label"] and d.get_dataset_size() == 7
    got = rows(d)
    want_x = np.concatenate([parts["data_batch_1.bin"][0], parts["data_batch_2.bin"][0]])
    want_y = np.concatenate([parts["data_batch_1.bin"][1], parts["data_batch_2.bin"][1]])
    for (image, label), x, y in zip(got, want_x, want_y):
        assert image.dtype == np.uint8 and image.shape == (32, 32, 3)
        assert label.dtype == np.uint32 and label.shape == ()
        np.testing.assert_array_equal(image, x)
        assert int(label) == int(y)
    test = rows(ds.Cifar10Dataset(str(tmp_path), usage="test", shuffle=False))
    assert [int(r[1]) for r in test] == parts["test_batch.bin"][1].tolist()
    assert ds.Cifar10Dataset(str(tmp_path), shuffle=False).get_dataset_size() == 12
    with pytest.raises(ValueError, match="For 'Cifar10Dataset', the size of .*data_batch_1.bin' "
                                         "should be a multiple of the 3073-byte record"):
        corrupt(tmp_path, "data_batch_1.bin", bytes(3073 * 2 + 5))
        ds.Cifar10Dataset(str(tmp_path))
    with pytest.raises(ValueError, match="CIFAR binary files for usage 'train'"):
        (tmp_path / "empty").mkdir()
        ds.Cifar10Dataset(str(tmp_path / "empty"), usage="train")


def test_cifar100_columns(tmp_path):
    data, images, labels = cifar_records(4, 2, 5)
    corrupt(tmp_path, "train.bin", data)
    test_data, _, test_labels = cifar_records(2, 2, 6)
    corrupt(tmp_path, "test.bin", test_data)
    d = ds.Cifar100Dataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["image", "coarse_label", "fine_label"]
    for (image, coarse, fine), x, y in zip(rows(d), images, labels):
        np.testing.assert_array_equal(image, x)
        assert coarse.dtype == fine.dtype == np.uint32
        assert (int(coarse), int(fine)) == (int(y[0]), int(y[1]))
    both = rows(ds.Cifar100Dataset(str(tmp_path), shuffle=False))      # test.bin first
    assert [int(r[2]) for r in both] == test_labels[:, 1].tolist() + labels[:, 1].tolist()
