"""`CelebADataset`: CelebA from its attribute list, as MindSpore's reader.

    dataset_dir/list_attr_celeba.txt     the row count, the 40 attribute names, then one
                                         line per image: '000001.jpg -1 1 1 -1 ...'
    dataset_dir/list_eval_partition.txt  '000001.jpg 0' per image, line by line with the
                                         attribute list: 0 train, 1 valid, 2 test (read
                                         when `usage` is not 'all')
    dataset_dir/000001.jpg ...           the images

Rows (image, attr): the file's bytes (decoded when `decode`) and the (40,) uint32
attributes, 1 where the list has 1 and 0 elsewhere (-1), in the list's order.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, read_image

__all__ = ["CelebADataset"]

_PARTS = {"train": 0, "valid": 1, "test": 2}


def _lines(path: str, api: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return [line.rstrip("\r\n") for line in f]
    except OSError as exc:
        raise ValueError(f"For '{api}', the file '{path}' could not be read: {exc}.") from exc


class CelebADataset(FileDataset):
    """CelebA as MindSpore's `CelebADataset` (module docstring): `usage` 'train', 'valid',
    'test' or 'all'; `extensions` (e.g. ['.jpg']) keeps only images with those suffixes.
    Sampling as every reader's; `num_parallel_workers` is accepted, `cache` must be None;
    `decrypt(path) -> bytes` reads encrypted image files."""

    def __init__(self, dataset_dir: str, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, usage: str = "all", sampler: Any = None,
                 decode: bool = False, extensions: Sequence[str] | None = None,
                 num_samples: int | None = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None,
                 decrypt: Callable | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("usage", usage, ["train", "valid", "test", "all"], api)
        validator.check_bool("decode", decode, api)
        if extensions is not None and (not isinstance(extensions, (list, tuple)) or not all(
                isinstance(e, str) for e in extensions)):
            raise TypeError(f"For '{api}', the 'extensions' should be a list of str such as "
                            f"['.jpg'], but got {extensions!r}.")
        attrs = _lines(os.path.join(root, "list_attr_celeba.txt"), api)[2:]
        parts = None
        if usage != "all":
            parts = _lines(os.path.join(root, "list_eval_partition.txt"), api)
        items = []
        for k, line in enumerate(attrs):
            fields = line.split()
            if not fields:
                continue
            if parts is not None:
                part = parts[k].split() if k < len(parts) else []
                if len(part) != 2 or part[1] != str(_PARTS[usage]):
                    continue
            if extensions is not None and os.path.splitext(fields[0])[1] not in extensions:
                continue
            try:
                values = [int(v) for v in fields[1:]]
            except ValueError:
                raise RuntimeError(f"For '{api}', the attributes of '{fields[0]}' in "
                                   f"list_attr_celeba.txt should be integers, but got "
                                   f"{fields[1:]}.") from None
            items.append((fields[0], np.array([v == 1 for v in values], np.uint32)))
        if not items:
            raise RuntimeError(f"For '{api}', no image of '{root}' is listed for usage "
                               f"'{usage}'.")

        def make_row(item: tuple) -> tuple:
            return read_image(os.path.join(root, item[0]), decode, api, decrypt), item[1]
        super().__init__(ListedRows(items, make_row), ["image", "attr"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)
