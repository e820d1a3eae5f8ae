"""`MnistDataset`: MNIST from its idx files on disk (msops downloads nothing).

The idx format (big-endian): an image file is the magic number 2051, the image count,
rows and cols (4 bytes each), then count * rows * cols uint8 pixels; a label file is the
magic number 2049 and the count, then one uint8 label per image. MindSpore finds the files
by name in `dataset_dir`: '<prefix>-images...idx3-ubyte' and '<prefix>-labels...idx1-ubyte',
prefix 'train' or 't10k' (usage 'all': both, sorted by name, so t10k first).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.dataset.files import (FileDataset, RecordFiles, check_dir, check_usage, matching_files,
                                 pick_usage)

__all__ = ["MnistDataset", "FashionMnistDataset", "KMnistDataset", "EMnistDataset",
           "QMnistDataset"]

_IMAGE_MAGIC, _LABEL_MAGIC = 2051, 2049
_PREFIX = {"train": "train", "test": "t10k", "all": ""}


def _header(path: str, words: int, magic: int, api: str) -> tuple[int, ...]:
    """The big-endian uint32 header words of an idx file, checking its magic number."""
    size = os.path.getsize(path)
    if size < 4 * words:
        raise ValueError(f"For '{api}', the file '{path}' is truncated: its header should have "
                         f"{4 * words} bytes, but the file has {size}.")
    head = tuple(int(v) for v in np.fromfile(path, dtype=">u4", count=words))
    if head[0] != magic:
        raise ValueError(f"For '{api}', the magic number of '{path}' should be {magic}, but got "
                         f"{head[0]}: not an MNIST idx file (or a compressed one: gunzip it).")
    return head


def _check_size(path: str, header_bytes: int, expected: int, api: str) -> None:
    got = os.path.getsize(path) - header_bytes
    if got != expected:
        raise ValueError(f"For '{api}', the data of '{path}' should be {expected} bytes (from "
                         f"its header), but got {got}: the file is truncated or corrupt.")


def _read_pair(image_path: str, label_path: str, api: str) -> tuple[np.ndarray, np.ndarray]:
    _, count, rows, cols = _header(image_path, 4, _IMAGE_MAGIC, api)
    _check_size(image_path, 16, count * rows * cols, api)
    _, labels = _header(label_path, 2, _LABEL_MAGIC, api)
    _check_size(label_path, 8, labels, api)
    if labels != count:
        raise ValueError(f"For '{api}', the label file '{label_path}' should have one label per "
                         f"image of '{image_path}' ({count}), but got {labels}.")
    images = np.memmap(image_path, np.uint8, "r", 16, (count, rows, cols)) if count else \
        np.zeros((0, rows, cols), np.uint8)
    label = np.memmap(label_path, np.uint8, "r", 8, (count,)) if count else np.zeros(0, np.uint8)
    return images, label


def _row(image: np.ndarray, label: np.ndarray) -> tuple:
    return image[..., None], label.astype(np.uint32)


class MnistDataset(FileDataset):
    """MNIST as MindSpore's `MnistDataset`: columns `image` (uint8, (rows, cols, 1), 28x28
    for MNIST) and `label` (a uint32 scalar), from the idx files in `dataset_dir`.

    `usage` 'train' (train-* files), 'test' (t10k-* files) or 'all'/None (both). Shuffled
    unless `shuffle=False`; `num_shards`/`shard_id` and `num_samples` (rows per shard) as
    GeneratorDataset. `num_parallel_workers` is accepted and ignored (rows are read inline).
    """

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        path = check_dir(dataset_dir, api)
        use = check_usage(usage, api)
        images = matching_files(path, lambda n: self._accept(n, "images", use) and
                                "idx3-ubyte" in n)
        labels = matching_files(path, lambda n: self._accept(n, "labels", use) and
                                "idx1-ubyte" in n)
        if not images or len(images) != len(labels):
            example = self._example("train" if use == "all" else use)
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold matching image and "
                             f"label idx files for usage '{usage or 'all'}' (e.g. "
                             f"'{example}-images-idx3-ubyte' and "
                             f"'{example}-labels-idx1-ubyte', uncompressed), but got "
                             f"{len(images)} image and {len(labels)} label files in '{path}'.")
        pairs = [_read_pair(i, lb, api) for i, lb in zip(images, labels)]
        records = RecordFiles([[p[0] for p in pairs], [p[1] for p in pairs]], _row)
        super().__init__(records, ["image", "label"], num_samples, shuffle, sampler, num_shards,
                         shard_id, cache)

    def _accept(self, name: str, kind: str, usage: str) -> bool:
        """Whether file `name` holds the `kind` ('images' or 'labels') of `usage`."""
        return _PREFIX[usage] + "-" + kind in name

    def _example(self, usage: str) -> str:
        return _PREFIX[usage]


class FashionMnistDataset(MnistDataset):
    """Fashion-MNIST as MindSpore's `FashionMnistDataset`: the same idx files and names as
    MNIST (28x28 grey clothing images, labels 0-9); arguments and columns as `MnistDataset`."""


class KMnistDataset(MnistDataset):
    """Kuzushiji-MNIST as MindSpore's `KMnistDataset`: the same idx files and names as MNIST;
    arguments and columns as `MnistDataset`."""


_EMNIST_NAMES = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")


class EMnistDataset(MnistDataset):
    """EMNIST as MindSpore's `EMnistDataset`: split `name` ('byclass', 'bymerge',
    'balanced', 'letters', 'digits' or 'mnist') from the idx files
    'emnist-<name>-<train|test>-images-idx3-ubyte' / '...-labels-idx1-ubyte' (as
    extracted, images not transposed); columns and sampling as `MnistDataset`."""

    def __init__(self, dataset_dir: str, name: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        if name not in _EMNIST_NAMES:
            raise ValueError(f"For 'EMnistDataset', the 'name' should be one of "
                             f"{list(_EMNIST_NAMES)}, but got {name!r}.")
        self._name = name
        super().__init__(dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                         sampler, num_shards, shard_id, cache)

    def _accept(self, name: str, kind: str, usage: str) -> bool:
        parts = ("train", "test") if usage == "all" else (usage,)
        return any(name.startswith(f"emnist-{self._name}-{u}-{kind}") for u in parts)

    def _example(self, usage: str) -> str:
        return f"emnist-{self._name}-{usage}"


_QMNIST_LABEL_MAGIC = 3074          # 0x0C02: int32 items, 2 dims
_QMNIST_FILES = {"train": ["qmnist-train"], "test": ["qmnist-test"], "test10k": ["qmnist-test"],
                 "test50k": ["qmnist-test"], "nist": ["xnist"],
                 "all": ["qmnist-train", "qmnist-test", "xnist"]}


def _qmnist_pair(root: str, prefix: str, api: str) -> tuple[np.ndarray, np.ndarray]:
    """(images (n, 28, 28), labels (n, 8) int) of '<prefix>-images-idx3-ubyte' and
    '<prefix>-labels-idx2-int' (big-endian int32 label rows of 8)."""
    images_path = os.path.join(root, prefix + "-images-idx3-ubyte")
    labels_path = os.path.join(root, prefix + "-labels-idx2-int")
    for path in (images_path, labels_path):
        if not os.path.isfile(path):
            raise ValueError(f"For '{api}', the QMNIST file '{path}' does not exist.")
    _, count, rows, cols = _header(images_path, 4, _IMAGE_MAGIC, api)
    _check_size(images_path, 16, count * rows * cols, api)
    _, items, width = _header(labels_path, 3, _QMNIST_LABEL_MAGIC, api)
    if width != 8:
        raise ValueError(f"For '{api}', every label of '{labels_path}' should have 8 values, "
                         f"but the header says {width}.")
    _check_size(labels_path, 12, items * 32, api)
    if items != count:
        raise ValueError(f"For '{api}', the label file '{labels_path}' should have one label per "
                         f"image of '{images_path}' ({count}), but got {items}.")
    images = np.memmap(images_path, np.uint8, "r", 16, (count, rows, cols)) if count else \
        np.zeros((0, rows, cols), np.uint8)
    labels = np.memmap(labels_path, ">i4", "r", 12, (count, 8)) if count else \
        np.zeros((0, 8), ">i4")
    return images, labels


class QMnistDataset(FileDataset):
    """QMNIST as MindSpore's `QMnistDataset`: images from '<prefix>-images-idx3-ubyte' and
    labels from '<prefix>-labels-idx2-int' (8 big-endian int32 per image: class, NIST
    writer, ...), prefix 'qmnist-train', 'qmnist-test' or 'xnist'. `usage` 'train',
    'test', 'test10k' (the test file's first 10,000), 'test50k' (the rest), 'nist' or
    'all'/None (train, test, nist). Columns `image` (uint8 (28, 28, 1)) and `label`: the
    class (uint32 scalar) when `compat`, else the whole uint32 (8,) row. Sampling as
    `MnistDataset`."""

    def __init__(self, dataset_dir: str, usage: str | None = None, compat: bool = True,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, list(_QMNIST_FILES), api)
        if not isinstance(compat, bool):
            raise TypeError(f"For '{api}', the 'compat' should be bool, but got "
                            f"{type(compat).__name__}.")
        pairs = [_qmnist_pair(root, prefix, api) for prefix in _QMNIST_FILES[usage]]
        if usage == "test10k":
            pairs = [(i[:10000], lb[:10000]) for i, lb in pairs]
        elif usage == "test50k":
            pairs = [(i[10000:], lb[10000:]) for i, lb in pairs]

        def row(image: np.ndarray, label: np.ndarray) -> tuple:
            label = label.astype(np.uint32)
            return image[..., None], label[0] if compat else label
        records = RecordFiles([[p[0] for p in pairs], [p[1] for p in pairs]], row)
        super().__init__(records, ["image", "label"], num_samples, shuffle, sampler, num_shards,
                         shard_id, cache)
