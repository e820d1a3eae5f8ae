"""Readers of image datasets listed by class or by meta files, as MindSpore's readers:

    SUN397Dataset     dataset_dir/ClassName.txt lists the classes ('/a/abbey', ...; label =
                      line number from 0); each class folder dataset_dir/a/abbey holds the
                      images 'sun_*.jpg' -> image, label uint32. Classes in name order,
                      images by name.
    Places365Dataset  dataset_dir/categories_places365.txt ('/a/airfield 0' per line) and
                      the list of `usage` (places365_train_standard.txt,
                      places365_train_challenge.txt or places365_val.txt: 'path label' per
                      line), images under data_256_standard / data_256_challenge / val_256
                      (`small`) or data_large_* / val_large -> image, label uint32, in
                      list order.
    Food101Dataset    dataset_dir/images/<class>/<id>.jpg with dataset_dir/meta/train.txt
                      and test.txt ('<class>/<id>' per line; 'all': train then test) ->
                      image, label str (the class name).

`image` is the file's bytes (1-D uint8), decoded to (H, W, 3) RGB with `decode`. All
sample as MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, read_image
from msops.dataset.linefiles import read_text

__all__ = ["SUN397Dataset", "Places365Dataset", "Food101Dataset"]


def _meta(root: str, name: str, api: str) -> str:
    path = os.path.join(root, name)
    if not os.path.isfile(path):
        raise ValueError(f"For '{api}', the 'dataset_dir' should hold '{name}', but '{path}' "
                         f"does not exist.")
    return read_text(path, api)


class _ImageList(FileDataset):
    """Rows (image, label) of a list of (path, label value)."""

    def _build(self, items: list, decode: bool, label_dtype: Any, num_samples: Any,
               shuffle: Any, sampler: Any, num_shards: Any, shard_id: Any, cache: Any) -> None:
        api = type(self).__name__
        validator.check_bool("decode", decode, api)

        def make_row(item: tuple) -> tuple:
            return read_image(item[0], decode, api), np.array(item[1], label_dtype)
        super().__init__(ListedRows(items, make_row), ["image", "label"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)


class SUN397Dataset(_ImageList):
    """SUN397 as MindSpore's `SUN397Dataset` (module docstring)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        labels: dict = {}
        for k, name in enumerate(_meta(root, "ClassName.txt", api).split()):
            labels.setdefault(name, k)
        items = []
        for name, label in sorted(labels.items()):
            folder = os.path.join(root, name.lstrip("/"))
            if not os.path.isdir(folder):
                raise ValueError(f"For '{api}', the class folder '{folder}' listed in "
                                 f"ClassName.txt does not exist.")
            items += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))
                      if f.startswith("sun_") and f.endswith(".jpg")]
        self._class_indexing = labels
        self._build(items, decode, np.uint32, num_samples, shuffle, sampler, num_shards,
                    shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{class ('/a/abbey'): label}."""
        return dict(self._class_indexing)


_PLACES_LISTS = {"train-standard": "places365_train_standard.txt",
                 "train-challenge": "places365_train_challenge.txt", "val": "places365_val.txt"}
_PLACES_IMAGES = {("train-standard", False): "data_large_standard",
                  ("train-challenge", False): "data_large_challenge", ("val", False): "val_large",
                  ("train-standard", True): "data_256_standard",
                  ("train-challenge", True): "data_256_challenge", ("val", True): "val_256"}


class Places365Dataset(_ImageList):
    """Places365 as MindSpore's `Places365Dataset` (module docstring): `usage`
    'train-standard' (default), 'train-challenge' or 'val'; `small` the 256x256 images."""

    def __init__(self, dataset_dir: str, usage: str | None = None, small: bool = True,
                 decode: bool = False, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = "train-standard" if usage is None else usage
        validator.check_string("usage", usage, list(_PLACES_LISTS), api)
        validator.check_bool("small", small, api)
        fields = _meta(root, "categories_places365.txt", api).split()
        self._class_indexing = {c: int(v) for c, v in zip(fields[0::2], fields[1::2])}
        listing = _meta(root, _PLACES_LISTS[usage], api).split()
        if len(listing) % 2:
            raise RuntimeError(f"For '{api}', every line of '{_PLACES_LISTS[usage]}' should be "
                               f"'path label', but the file has an odd number of fields.")
        images = os.path.join(root, _PLACES_IMAGES[(usage, small)])
        items = [(os.path.join(images, p.lstrip("/")), int(v))
                 for p, v in zip(listing[0::2], listing[1::2])]
        self._build(items, decode, np.uint32, num_samples, shuffle, sampler, num_shards,
                    shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{category ('/a/airfield'): label} from categories_places365.txt."""
        return dict(self._class_indexing)


class Food101Dataset(_ImageList):
    """Food-101 as MindSpore's `Food101Dataset` (module docstring): `usage` 'train', 'test'
    or 'all'/None; the label is the class name (a str)."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = "all" if usage is None else usage
        validator.check_string("usage", usage, ["train", "test", "all"], api)
        images = os.path.join(root, "images")
        if not os.path.isdir(images):
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold the folder 'images', "
                             f"but '{images}' does not exist.")
        classes = {d for d in os.listdir(images) if os.path.isdir(os.path.join(images, d))}
        items = []
        for part in (["train", "test"] if usage == "all" else [usage]):
            for line in _meta(root, os.path.join("meta", part + ".txt"), api).splitlines():
                entry = line.strip()
                if not entry:
                    continue
                label = entry.split("/")[0]
                if label not in classes:
                    raise RuntimeError(f"For '{api}', the entry '{entry}' of meta/{part}.txt "
                                       f"should name a class folder of 'images', but "
                                       f"'{label}' is not one.")
                items.append((os.path.join(images, entry + ".jpg"), label))
        self._build(items, decode, np.str_, num_samples, shuffle, sampler, num_shards,
                    shard_id, cache)
