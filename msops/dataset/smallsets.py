"""Readers of small vision datasets kept in one or two files, as MindSpore's readers:

    STL10Dataset     dataset_dir/{train,test,unlabeled}_X.bin (uint8 images, 3 x 96 x 96
                     each, every plane column-major) and {train,test}_y.bin (labels 1-10)
                     -> image (96, 96, 3) uint8 HWC, label int32 scalar (the file's label
                     - 1; -1 for unlabeled). usage 'train', 'test', 'unlabeled',
                     'train+unlabeled' or 'all'/None; the files read by name (test,
                     train, unlabeled).
    SemeionDataset   dataset_dir/semeion.data: per line 256 pixel values (0 or 1) then a
                     one-hot label of 10 -> image (16, 16) uint8, label uint32 scalar.
    SBUDataset       dataset_dir/SBU_captioned_photo_dataset_urls.txt and ..._captions.txt
                     (line by line), images in dataset_dir/sbu_images/ named as the URL's
                     last part; rows are the listed images that exist -> image (file bytes,
                     decoded with `decode`), caption str.

All sample as MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import (FileDataset, ListedRows, RecordFiles, check_dir,
                                 pick_usage, read_image)
from msops.dataset.linefiles import read_text

__all__ = ["STL10Dataset", "SemeionDataset", "SBUDataset"]

_STL_SIZE = 3 * 96 * 96
_STL_USAGES = {"train": ("train",), "test": ("test",), "unlabeled": ("unlabeled",),
               "train+unlabeled": ("train", "unlabeled"), "all": ("test", "train", "unlabeled")}


def _stl_images(path: str, api: str) -> np.ndarray:
    size = os.path.getsize(path)
    if size % _STL_SIZE:
        raise ValueError(f"For '{api}', the size of '{path}' should be a multiple of the "
                         f"{_STL_SIZE}-byte image, but got {size} bytes.")
    count = size // _STL_SIZE
    return np.memmap(path, np.uint8, "r", 0, (count, _STL_SIZE)) if count else \
        np.zeros((0, _STL_SIZE), np.uint8)


class STL10Dataset(FileDataset):
    """STL-10's binary files as MindSpore's `STL10Dataset` (module docstring)."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, list(_STL_USAGES), api, "all")
        images, labels = [], []
        for part in _STL_USAGES[usage]:
            x = os.path.join(root, f"{part}_X.bin")
            if not os.path.isfile(x):
                raise ValueError(f"For '{api}', the 'dataset_dir' should hold '{part}_X.bin' "
                                 f"for usage '{usage}', but '{x}' does not exist.")
            data = _stl_images(x, api)
            if part == "unlabeled":
                label = np.full(len(data), -1, np.int32)
            else:
                y = os.path.join(root, f"{part}_y.bin")
                if not os.path.isfile(y) or os.path.getsize(y) != len(data):
                    raise ValueError(f"For '{api}', '{y}' should hold one label byte per image "
                                     f"of '{x}' ({len(data)}), but it is missing or its size "
                                     f"differs.")
                label = np.fromfile(y, np.uint8).astype(np.int32) - 1
            images.append(data)
            labels.append(label)

        def row(pixels: np.ndarray, label: np.ndarray) -> tuple:
            # each plane is stored column by column: pixels[c, x, y] is image[y, x, c]
            return pixels.reshape(3, 96, 96).transpose(2, 1, 0).copy(), np.int32(label)
        super().__init__(RecordFiles([images, labels], row), ["image", "label"], num_samples,
                         shuffle, sampler, num_shards, shard_id, cache)


class SemeionDataset(FileDataset):
    """Semeion handwritten digits as MindSpore's `SemeionDataset` (module docstring)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        path = os.path.join(check_dir(dataset_dir, api), "semeion.data")
        if not os.path.isfile(path):
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold 'semeion.data', but "
                             f"'{path}' does not exist.")
        rows = []
        for number, line in enumerate(read_text(path, api).splitlines(), 1):
            fields = line.split()
            if not fields:
                continue
            try:
                values = [int(float(v)) for v in fields]
            except ValueError:
                raise RuntimeError(f"For '{api}', line {number} of '{path}' should hold numbers, "
                                   f"but got {line[:40]!r}.") from None
            hot = [k for k, v in enumerate(values[256:266]) if v != 0]
            if len(values) < 266 or not hot:
                raise RuntimeError(f"For '{api}', line {number} of '{path}' should hold 256 "
                                   f"pixels and a one-hot label of 10, but it does not.")
            rows.append((np.array(values[:256], np.uint8).reshape(16, 16), np.uint32(hot[0])))
        super().__init__(rows, ["image", "label"], num_samples, shuffle, sampler, num_shards,
                         shard_id, cache)


class SBUDataset(FileDataset):
    """SBU Captioned Photos as MindSpore's `SBUDataset` (module docstring)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_bool("decode", decode, api)
        lists = []
        for name in ("SBU_captioned_photo_dataset_urls.txt",
                     "SBU_captioned_photo_dataset_captions.txt"):
            path = os.path.join(root, name)
            if not os.path.isfile(path):
                raise ValueError(f"For '{api}', the 'dataset_dir' should hold '{name}', but "
                                 f"'{path}' does not exist.")
            lists.append(read_text(path, api).splitlines())
        urls, captions = lists
        if len(urls) != len(captions):
            raise ValueError(f"For '{api}', the URL and caption lists should have one line per "
                             f"photo, but got {len(urls)} and {len(captions)} lines.")
        items = []
        for url, caption in zip(urls, captions):
            image = os.path.join(root, "sbu_images", url.strip().rsplit("/", 1)[-1])
            if url.strip() and os.path.isfile(image):
                items.append((image, caption.strip()))

        def make_row(item: tuple) -> tuple:
            return read_image(item[0], decode, api), np.array(item[1])
        super().__init__(ListedRows(items, make_row), ["image", "caption"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)
