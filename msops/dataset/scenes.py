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

    DIV2KDataset      dataset_dir/DIV2K_<usage>_HR/0001.png with its low-resolution
                      partner: DIV2K_<usage>_LR_<bicubic|unknown>/X<scale>/0001x<scale>.png
                      (scale 2, 3, 4), DIV2K_<usage>_LR_x8/0001x8.png (bicubic, 8) or
                      DIV2K_<usage>_LR_<mild|difficult|wild>/0001x4<m|d|w>.png (scale 4)
                      -> hr_image, lr_image; usage 'train', 'valid' or 'all' (train
                      then valid), the HR files by name.

`image` is the file's bytes (1-D uint8), decoded to (H, W, 3) RGB with `decode`. All
sample as MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.imagefolder import folder_files
from msops.dataset.linefiles import read_text

__all__ = ["SUN397Dataset", "Places365Dataset", "Food101Dataset", "DIV2KDataset"]


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
            items += folder_files([(folder, label)],
                                  lambda f: f.startswith("sun_") and f.endswith(".jpg"))
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
        usage = pick_usage(usage, list(_PLACES_LISTS), api, "train-standard")
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
        usage = pick_usage(usage, ["train", "test", "all"], api, "all")
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


_DIV2K_SCALES = {"bicubic": (2, 3, 4, 8), "unknown": (2, 3, 4), "mild": (4,), "difficult": (4,),
                 "wild": (4,)}


class DIV2KDataset(FileDataset):
    """DIV2K as MindSpore's `DIV2KDataset` (module docstring): `downgrade` 'bicubic',
    'unknown', 'mild', 'difficult' or 'wild' with a `scale` it has."""

    def __init__(self, dataset_dir: str, usage: str = "train", downgrade: str = "bicubic",
                 scale: int = 2, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("usage", usage, ["train", "valid", "all"], api)
        validator.check_string("downgrade", downgrade, list(_DIV2K_SCALES), api)
        validator.check_bool("decode", decode, api)
        if scale not in _DIV2K_SCALES[downgrade] or isinstance(scale, bool):
            raise ValueError(f"For '{api}', the 'scale' should be one of "
                             f"{list(_DIV2K_SCALES[downgrade])} for downgrade '{downgrade}', "
                             f"but got {scale!r}.")
        items = []
        for part in (["train", "valid"] if usage == "all" else [usage]):
            hr_dir = os.path.join(root, f"DIV2K_{part}_HR")
            if scale == 8:
                lr_dir, suffix = os.path.join(root, f"DIV2K_{part}_LR_x8"), ""
            elif downgrade in ("bicubic", "unknown"):
                lr_dir, suffix = os.path.join(root, f"DIV2K_{part}_LR_{downgrade}", f"X{scale}"), ""
            else:
                lr_dir, suffix = os.path.join(root, f"DIV2K_{part}_LR_{downgrade}"), downgrade[0]
            for folder in (hr_dir, lr_dir):
                if not os.path.isdir(folder):
                    raise ValueError(f"For '{api}', the folder '{folder}' does not exist.")
            for name in sorted(f for f in os.listdir(hr_dir) if f.endswith(".png")):
                lr = os.path.join(lr_dir, f"{name[:-4]}x{scale}{suffix}.png")
                if not os.path.isfile(lr):
                    raise ValueError(f"For '{api}', the low-resolution image '{lr}' of "
                                     f"'{name}' does not exist.")
                items.append((os.path.join(hr_dir, name), lr))

        def make_row(item: tuple) -> tuple:
            return read_image(item[0], decode, api), read_image(item[1], decode, api)
        super().__init__(ListedRows(items, make_row), ["hr_image", "lr_image"], num_samples,
                         shuffle, sampler, num_shards, shard_id, cache)
