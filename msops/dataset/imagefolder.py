"""`ImageFolderDataset`: images in one sub-folder per class, as MindSpore's reader.

    dataset_dir/cat/001.jpg      row (bytes of 001.jpg, 0)
    dataset_dir/cat/002.jpg      row (bytes of 002.jpg, 0)
    dataset_dir/dog/a.png        row (bytes of a.png, 1)

The class folders are sorted by name and numbered from 0 (or labelled by `class_indexing`,
which also restricts the read to its folders); the files directly inside each folder are
sorted by name. Rows are that list in that order, sampled as every reader's (shuffled by
default, shards, samplers). The listing is made when the dataset is built; a file is read
when its row is.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from msops.dataset.files import FileDataset, check_dir, pick_usage, read_image

__all__ = ["ImageFolderDataset", "Caltech256Dataset", "OmniglotDataset", "RenderedSST2Dataset",
           "LSUNDataset", "folder_files"]


class _ImageFiles:
    """Random access to (image, label) rows of a list of (path, label)."""

    def __init__(self, items: list, decode: bool, decrypt: Callable | None, api: str) -> None:
        self.items, self.decode, self.decrypt, self.api = items, decode, decrypt, api

    def __len__(self) -> int:
        return len(self.items)

    def column_values(self, k: int) -> list:
        """The labels (k = 1) without reading the images (what PKSampler asks for)."""
        if k == 1:
            return [np.uint32(label) for _, label in self.items]
        return [self[i][k] for i in range(len(self))]

    def __getitem__(self, i: int) -> tuple:
        path, label = self.items[i]
        return read_image(path, self.decode, self.api, self.decrypt), np.uint32(label)


def folder_files(folders: list, accept: Callable[[str], bool] = lambda name: True) -> list:
    """(path, label) of the files, by name, directly inside each (folder, label) of
    `folders` (in that order) whose name `accept`s."""
    return [(os.path.join(folder, name), label) for folder, label in folders
            if os.path.isdir(folder) for name in sorted(os.listdir(folder))
            if accept(name) and os.path.isfile(os.path.join(folder, name))]


def _extensions(extensions: Any, api: str) -> set | None:
    if extensions is None:
        return None
    if not isinstance(extensions, (list, tuple)) or not all(
            isinstance(e, str) for e in extensions):
        raise TypeError(f"For '{api}', the 'extensions' should be a list of str such as "
                        f"['.JPEG', '.png'], but got {extensions!r}.")
    return {e.lower() for e in extensions}


def _class_indexing(class_indexing: Any, api: str) -> dict | None:
    if class_indexing is None:
        return None
    if not isinstance(class_indexing, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in class_indexing.items()):
        raise TypeError(f"For '{api}', the 'class_indexing' should be a dict from folder name "
                        f"(str) to label (int >= 0), but got {class_indexing!r}.")
    return dict(class_indexing)


class ImageFolderDataset(FileDataset):
    """Images under `dataset_dir`, one sub-folder per class (module docstring): columns
    `image` (the file's bytes, 1-D uint8; decoded to (H, W, 3) uint8 RGB when `decode`,
    which needs Pillow) and `label` (a uint32 scalar).

    `extensions` (e.g. ['.JPEG', '.png'], compared case-insensitively) keeps only files
    with those suffixes; `class_indexing` {folder: label} reads only those folders;
    `decrypt(path) -> bytes` reads an encrypted file. Sampling as `MnistDataset`
    (shuffled by default, `num_shards`/`shard_id`, `num_samples` per shard, `sampler`);
    `num_parallel_workers` is accepted and ignored, `cache` must be None.
    """

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, extensions: Sequence[str] | None = None,
                 class_indexing: dict | None = None, decode: bool = False,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None, decrypt: Callable | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        if not isinstance(decode, bool):
            raise TypeError(f"For '{api}', the 'decode' should be bool, but got "
                            f"{type(decode).__name__}: {decode!r}.")
        if decrypt is not None and not callable(decrypt):
            raise TypeError(f"For '{api}', the 'decrypt' should be a callable (path -> bytes) "
                            f"or None, but got {type(decrypt).__name__}.")
        exts = _extensions(extensions, api)
        indexing = _class_indexing(class_indexing, api)
        folders = sorted(name for name in os.listdir(root)
                         if os.path.isdir(os.path.join(root, name)) and
                         (indexing is None or name in indexing))
        self._class_indexing = indexing if indexing is not None else \
            {name: k for k, name in enumerate(folders)}
        items = folder_files([(os.path.join(root, n), self._class_indexing[n]) for n in folders],
                             lambda f: exts is None or os.path.splitext(f)[1].lower() in exts)
        if not items:
            ending = "" if exts is None else f" ending in {sorted(exts)}"
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold class sub-folders "
                             f"with image files{ending}, but none were found in '{root}'.")
        super().__init__(_ImageFiles(items, decode, decrypt, api), ["image", "label"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{class folder name: label}."""
        return dict(self._class_indexing)

    def num_classes(self) -> int:
        """The number of classes (of labels in `get_class_indexing`)."""
        return len(set(self._class_indexing.values()))


class Caltech256Dataset(ImageFolderDataset):
    """Caltech 256 as MindSpore's `Caltech256Dataset`: `dataset_dir` holds the class folders
    ('001.ak47', ..., '257.clutter'), labelled 0, 1, ... by name; the '.jpg' / '.JPEG' files
    in each are its rows; columns `image` (bytes, decoded with `decode`) and `label`
    (uint32). Sampling as ImageFolderDataset."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        super().__init__(dataset_dir, num_samples, num_parallel_workers, shuffle, sampler,
                         [".jpg", ".JPEG"], None, decode, num_shards, shard_id, cache)


class OmniglotDataset(FileDataset):
    """Omniglot as MindSpore's `OmniglotDataset`: `dataset_dir`/images_background
    (`background`, the default) or images_evaluation holds <alphabet>/<character>/ folders;
    each character is a class, labelled 0, 1, ... in 'alphabet/character' name order, its
    files (by name) the rows; columns `image` (bytes, decoded with `decode`) and `label`
    (uint32). Sampling as ImageFolderDataset."""

    def __init__(self, dataset_dir: str, background: bool | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        background = True if background is None else background
        if not isinstance(background, bool) or not isinstance(decode, bool):
            raise TypeError(f"For '{api}', the 'background' and 'decode' should be bool, but "
                            f"got {background!r} and {decode!r}.")
        root = os.path.join(check_dir(dataset_dir, api),
                            "images_background" if background else "images_evaluation")
        if not os.path.isdir(root):
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold '{root}', but it "
                             f"does not exist.")
        classes = sorted(f"{a}/{c}" for a in os.listdir(root)
                         if os.path.isdir(os.path.join(root, a))
                         for c in os.listdir(os.path.join(root, a))
                         if os.path.isdir(os.path.join(root, a, c)))
        items = folder_files([(os.path.join(root, n), k) for k, n in enumerate(classes)])
        if not items:
            raise ValueError(f"For '{api}', '{root}' should hold <alphabet>/<character>/ image "
                             f"folders, but none were found.")
        super().__init__(_ImageFiles(items, decode, None, api), ["image", "label"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)


class RenderedSST2Dataset(FileDataset):
    """Rendered SST-2 as MindSpore's `RenderedSST2Dataset`: `dataset_dir`/train, valid (usage
    'val') and test hold one folder per class ('negative', 'positive', labelled 0, 1, ...
    by name) of .png images; `usage` 'train', 'val', 'test' or 'all'/None (every split).
    Rows are the images by folder path then name: `image` (bytes, decoded with `decode`) and
    `label` (uint32). Sampling as ImageFolderDataset."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "val", "test", "all"], api)
        if not isinstance(decode, bool):
            raise TypeError(f"For '{api}', the 'decode' should be bool, but got {decode!r}.")
        splits = {"train": ["train"], "val": ["valid"], "test": ["test"],
                  "all": ["test", "train", "valid"]}[usage]
        folders = [os.path.join(root, split, c) for split in splits
                   if os.path.isdir(os.path.join(root, split))
                   for c in os.listdir(os.path.join(root, split))
                   if os.path.isdir(os.path.join(root, split, c))]
        labels = {c: k for k, c in enumerate(sorted({os.path.basename(f) for f in folders}))}
        items = folder_files([(f, labels[os.path.basename(f)]) for f in sorted(folders)],
                             lambda name: name.endswith(".png"))
        if not items:
            raise ValueError(f"For '{api}', '{root}' should hold <split>/<class>/*.png images for "
                             f"usage '{usage}', but none were found.")
        self._class_indexing = labels
        super().__init__(_ImageFiles(items, decode, None, api), ["image", "label"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{class folder name: label}."""
        return dict(self._class_indexing)


_LSUN_CLASSES = ("bedroom", "bridge", "church_outdoor", "classroom", "conference_room",
                 "dining_room", "kitchen", "living_room", "restaurant", "tower")


class LSUNDataset(FileDataset):
    """LSUN (images extracted from the LMDB files) as MindSpore's `LSUNDataset`:
    `dataset_dir` holds '<class>_train' and '<class>_val' folders and 'test'; `usage`
    'train', 'valid', 'test' or 'all'/None (train and val); `classes` (default: the ten
    scene classes) chooses the folders. As MindSpore's reader (an image-folder reader), the
    chosen folders are labelled 0, 1, ... in name order (so bedroom_train and bedroom_val
    are different labels) and their files, by name, are the rows: `image` (bytes, decoded
    with `decode`) and `label` (uint32). Sampling as ImageFolderDataset."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 classes: Sequence[str] | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "valid", "test", "all"], api)
        if not isinstance(decode, bool):
            raise TypeError(f"For '{api}', the 'decode' should be bool, but got {decode!r}.")
        names = list(_LSUN_CLASSES) if not classes else \
            [classes] if isinstance(classes, str) else list(classes)
        unknown = [c for c in names if c not in _LSUN_CLASSES]
        if unknown:
            raise ValueError(f"For '{api}', the 'classes' should be among {list(_LSUN_CLASSES)}, "
                             f"but got {unknown}.")
        if usage == "test":
            folders = ["test"]
        else:
            suffixes = {"train": ["_train"], "valid": ["_val"], "all": ["_train", "_val"]}[usage]
            folders = sorted({d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                              and any(c + s in d for c in names for s in suffixes)})
        items = folder_files([(os.path.join(root, d), k) for k, d in enumerate(folders)])
        if not items:
            raise ValueError(f"For '{api}', '{root}' should hold images in the folders of usage "
                             f"'{usage}' and classes {names}, but none were found.")
        super().__init__(_ImageFiles(items, decode, None, api), ["image", "label"],
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)
