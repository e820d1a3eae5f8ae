"""`Cifar10Dataset` and `Cifar100Dataset`: CIFAR from its binary version on disk.

A CIFAR-10 record is 1 label byte then 3072 pixel bytes: the 32x32 red plane, then green,
then blue, each row-major (CHW); files data_batch_1.bin ... data_batch_5.bin (train) and
test_batch.bin (test). A CIFAR-100 record is a coarse and a fine label byte then the 3072
pixels; files train.bin and test.bin. Rows are HWC images, as MindSpore's readers give.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.dataset.files import FileDataset, RecordFiles, check_dir, check_usage, matching_files

__all__ = ["Cifar10Dataset", "Cifar100Dataset"]

_PIXELS = 3 * 32 * 32


def _records(path: str, labels: int, api: str) -> np.ndarray:
    """The (count, labels + 3072) uint8 records of one file."""
    size, width = os.path.getsize(path), labels + _PIXELS
    if size % width:
        raise ValueError(f"For '{api}', the size of '{path}' should be a multiple of the "
                         f"{width}-byte record, but got {size} bytes: the file is truncated "
                         f"or not the CIFAR binary version.")
    if size == 0:
        return np.zeros((0, width), np.uint8)
    return np.memmap(path, np.uint8, "r", 0, (size // width, width))


def _image(pixels: np.ndarray) -> np.ndarray:
    return pixels.reshape(3, 32, 32).transpose(1, 2, 0).copy()


def _cifar10_file(name: str, usage: str) -> bool:
    return {"train": "data_batch" in name, "test": "test_batch" in name,
            "all": "batch" in name}[usage]


def _cifar100_file(name: str, usage: str) -> bool:
    return {"train": "train" in name, "test": "test" in name,
            "all": "train" in name or "test" in name}[usage]


class _CifarDataset(FileDataset):
    """The CIFAR readers' common body: `_labels` label bytes per record, the files `_accept`
    takes for a usage, the columns `_columns`."""
    _labels: int
    _columns: list
    _expected: str

    @staticmethod
    def _accept(name: str, usage: str) -> bool:
        raise NotImplementedError

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api, labels = type(self).__name__, self._labels
        path = check_dir(dataset_dir, api)
        use = check_usage(usage, api)
        files = matching_files(path, lambda n: n.endswith(".bin") and self._accept(n, use))
        if not files:
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold the CIFAR binary files "
                             f"for usage '{use}' ({self._expected}), but none were found in "
                             f"'{path}'.")
        records = RecordFiles([[_records(f, labels, api) for f in files]],
                              lambda r: (_image(r[labels:]),) + tuple(r[:labels].astype(np.uint32)))
        super().__init__(records, list(self._columns), num_samples, shuffle, sampler, num_shards,
                         shard_id, cache)


class Cifar10Dataset(_CifarDataset):
    """CIFAR-10 as MindSpore's `Cifar10Dataset`: columns `image` (uint8, (32, 32, 3) HWC) and
    `label` (a uint32 scalar) from the binary version's .bin files in `dataset_dir`:
    `usage` 'train' (data_batch_*.bin), 'test' (test_batch.bin) or 'all'/None (both, by
    name). Sampling arguments as `MnistDataset`."""
    _labels, _columns, _expected = 1, ["image", "label"], "data_batch_*.bin, test_batch.bin"
    _accept = staticmethod(_cifar10_file)


class Cifar100Dataset(_CifarDataset):
    """CIFAR-100 as MindSpore's `Cifar100Dataset`: columns `image` (uint8, (32, 32, 3) HWC),
    `coarse_label` and `fine_label` (uint32 scalars) from train.bin / test.bin in
    `dataset_dir` (`usage` 'train', 'test' or 'all'/None). Sampling as `MnistDataset`."""
    _labels, _columns, _expected = 2, ["image", "coarse_label", "fine_label"], \
        "train.bin, test.bin"
    _accept = staticmethod(_cifar100_file)
