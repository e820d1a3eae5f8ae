"""`LFWDataset`: Labeled Faces in the Wild from its extracted layout, as MindSpore's reader.

    dataset_dir/lfw/, lfw_funneled/, lfw-deepfunneled/   (`image_set` 'original',
                                     'funneled' (default), 'deepfunneled'):
                                     <Name>/<Name>_0001.jpg ...
    dataset_dir/lfw-names.txt        'Name count' per line; the line number is the label
    dataset_dir/<task>.txt           usage '10fold': the fold count, then each fold
    dataset_dir/<task>DevTrain.txt   usage 'train'      } ('all'/None: DevTrain then
    dataset_dir/<task>DevTest.txt    usage 'test'       }  DevTest)

task 'people': a list of n then n lines 'Name count' gives count rows (image, label uint32)
per name. task 'pairs': a header holding the pair count p (10fold: 'folds p'), then per
fold p matched lines 'Name i j' and p mismatched lines 'Name1 i Name2 j' -> rows (image1,
image2, label uint32: 1 matched, 0 not).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.linefiles import read_text

__all__ = ["LFWDataset"]

_IMAGE_SETS = {"original": "lfw", "funneled": "lfw_funneled", "deepfunneled": "lfw-deepfunneled"}


def _table(path: str, api: str) -> list[list[str]]:
    if not os.path.isfile(path):
        raise ValueError(f"For '{api}', the file '{path}' does not exist.")
    return [line.split() for line in read_text(path, api).splitlines()]


def _image(name: str, number: str) -> tuple:
    return name, f"{name}_{int(number):04d}"


class LFWDataset(FileDataset):
    """LFW as MindSpore's `LFWDataset` (module docstring). Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, task: str | None = None, usage: str | None = None,
                 image_set: str | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        task = "people" if task is None else task
        usage = pick_usage(usage, ["10fold", "train", "test", "all"], api)
        image_set = "funneled" if image_set is None else image_set
        validator.check_string("task", task, ["people", "pairs"], api)
        validator.check_string("image_set", image_set, list(_IMAGE_SETS), api)
        validator.check_bool("decode", decode, api)
        names = {row[0]: k for k, row in enumerate(_table(os.path.join(root, "lfw-names.txt"),
                                                          api)) if row}
        lists = {"10fold": [task], "train": [task + "DevTrain"], "test": [task + "DevTest"],
                 "all": [task + "DevTrain", task + "DevTest"]}[usage]
        items = []
        try:
            for stem in lists:
                table = [r for r in _table(os.path.join(root, stem + ".txt"), api) if r]
                items += (self._people if task == "people" else self._pairs)(table, usage)
        except (IndexError, ValueError):
            raise RuntimeError(f"For '{api}', the {task} lists {lists} of '{root}' are not in "
                               f"LFW's format.") from None
        images = os.path.join(root, _IMAGE_SETS[image_set])

        def path(image: tuple) -> str:
            return os.path.join(images, image[0], image[1] + ".jpg")

        def make_row(item: tuple) -> tuple:
            if task == "people":
                if item[0] not in names:
                    raise RuntimeError(f"For '{api}', the name '{item[0]}' is not in "
                                       f"lfw-names.txt.")
                return read_image(path(item), decode, api), np.uint32(names[item[0]])
            return (read_image(path(item[0]), decode, api), read_image(path(item[1]), decode, api),
                    np.uint32(item[2]))
        columns = ["image", "label"] if task == "people" else ["image1", "image2", "label"]
        super().__init__(ListedRows(items, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, cache)

    @staticmethod
    def _people(table: list, usage: str) -> list:
        folds, begin = (int(table[0][0]), 1) if usage == "10fold" else (1, 0)
        out = []
        for _ in range(folds):
            count = int(table[begin][0])
            for name, number in (row[:2] for row in table[begin + 1:begin + 1 + count]):
                out += [_image(name, str(k)) for k in range(1, int(number) + 1)]
            begin += count + 1
        return out

    @staticmethod
    def _pairs(table: list, usage: str) -> list:
        folds, pairs = (int(table[0][0]), int(table[0][1])) if usage == "10fold" else \
            (1, int(table[0][0]))
        out, begin = [], 1
        for _ in range(folds):
            for row in table[begin:begin + pairs]:
                out.append((_image(row[0], row[1]), _image(row[0], row[2]), 1))
            for row in table[begin + pairs:begin + 2 * pairs]:
                out.append((_image(row[0], row[1]), _image(row[2], row[3]), 0))
            begin += 2 * pairs
        return out
