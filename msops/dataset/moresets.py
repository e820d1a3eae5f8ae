"""Three more of MindSpore's vision readers:

    USPSDataset    dataset_dir/usps (train) and usps.t (test), libsvm lines
                   'label 1:v1 ... 256:v256' with v in [-1, 1] -> image (16, 16, 1) uint8
                   (trunc((v + 1) / 2 * 255)), label uint32 (label - 1); read as
                   TextFileDataset (shuffle default Shuffle.GLOBAL, shards as linefiles.py)
    SVHNDataset    dataset_dir/{train,test,extra}_32x32.mat ('X' (32, 32, 3, n) uint8,
                   'y' (n, 1), 10 meaning digit 0) -> image (32, 32, 3) uint8, label uint32;
                   usage 'train', 'test', 'extra' or 'all' (in that order)
    FlickrDataset  images in dataset_dir named by `annotation_file` lines
                   '<image>#<k><TAB><caption>' -> image (bytes, decoded with `decode`),
                   annotation (1-D str: the image's captions in file order); images by
                   path; a file that is not JPEG, PNG, GIF or BMP is left out (as MindSpore)
    PhotoTourDataset  dataset_dir/<name>/patches*.bmp (by name; 16 x 16 grey 64 x 64 patches
                   each, row by row), info.txt (one '3D-point-id unused' line per patch) and
                   m50_100000_100000_0.txt ('patch1 point1 _ patch2 point2 _ _' lines) ->
                   usage 'train': image (64, 64, 1) uint8 per patch of info.txt; 'test':
                   image1, image2, matches (uint32: 1 when the two points are the same)
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import (FileDataset, ListedRows, RecordFiles, check_dir, pick_usage,
                                 read_image)
from msops.dataset.linefiles import LineFileDataset, Shuffle, read_text
from msops.dataset.matfile import load_mat

__all__ = ["USPSDataset", "SVHNDataset", "FlickrDataset", "PhotoTourDataset"]


def _usps_row(line: str, where: str, api: str) -> tuple:
    fields = line.split()
    try:
        label = int(fields[0]) - 1
        pairs = [f.split(":") for f in fields[1:]]
        if len(pairs) != 256 or any(int(k) != i for i, (k, _) in enumerate(pairs, 1)):
            raise ValueError("not 256 pixels '1:v' ... '256:v'")
        values = np.array([float(v) for _, v in pairs], np.float32).astype(np.float64)
    except (ValueError, IndexError) as exc:
        raise RuntimeError(f"For '{api}', {where} should be 'label 1:v1 ... 256:v256', but it "
                           f"is not: {exc}.") from None
    pixels = ((values + 1.0) / 2.0 * 255.0).astype(np.uint8).reshape(16, 16, 1)
    return pixels, np.uint32(label)


class USPSDataset(LineFileDataset):
    """USPS as MindSpore's `USPSDataset` (module docstring); usage 'train', 'test' or
    'all'/None."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "test", "all"], api)
        names = {"train": ["usps"], "test": ["usps.t"], "all": ["usps", "usps.t"]}[usage]
        rows, counts = [], []
        for name in names:
            path = os.path.join(root, name)
            if not os.path.isfile(path):
                raise ValueError(f"For '{api}', the file '{path}' does not exist (the "
                                 f"decompressed USPS file).")
            found = [_usps_row(line, f"line {k} of '{path}'", api)
                     for k, line in enumerate(read_text(path, api).splitlines(), 1)
                     if line.strip()]
            rows += found
            counts.append(len(found))
        super().__init__(rows, counts, ["image", "label"], num_samples, shuffle, num_shards,
                         shard_id, cache)


class SVHNDataset(FileDataset):
    """SVHN (cropped digits) as MindSpore's `SVHNDataset` (module docstring). Sampling as
    MnistDataset."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "test", "extra", "all"], api)
        images, labels = [], []
        for part in (["train", "test", "extra"] if usage == "all" else [usage]):
            path = os.path.join(root, f"{part}_32x32.mat")
            if not os.path.isfile(path):
                raise ValueError(f"For '{api}', the file '{path}' does not exist.")
            try:
                mat = load_mat(path)
            except ValueError as exc:
                raise RuntimeError(f"For '{api}', {exc}") from exc
            if "X" not in mat or "y" not in mat or mat["X"].ndim != 4:
                raise RuntimeError(f"For '{api}', '{path}' should hold 'X' (32, 32, 3, n) and "
                                   f"'y' (n, 1).")
            images.append(np.ascontiguousarray(np.moveaxis(mat["X"], 3, 0)).astype(np.uint8))
            label = mat["y"].reshape(-1).astype(np.int64)
            labels.append(np.where(label == 10, 0, label).astype(np.uint32))
        records = RecordFiles([images, labels], lambda x, y: (x, y))
        super().__init__(records, ["image", "label"], num_samples, shuffle, sampler, num_shards,
                         shard_id, None)


_MAGIC = (b"\xff\xd8\xff", b"\x89PN", b"GIF", b"BM")


class FlickrDataset(FileDataset):
    """Flickr8k / Flickr30k as MindSpore's `FlickrDataset` (module docstring). Sampling as
    MnistDataset."""

    def __init__(self, dataset_dir: str, annotation_file: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        decode = False if decode is None else decode
        validator.check_bool("decode", decode, api)
        if not isinstance(annotation_file, (str, os.PathLike)) or \
                not os.path.isfile(annotation_file):
            raise ValueError(f"For '{api}', the 'annotation_file' should be an existing file, "
                             f"but got {annotation_file!r}.")
        captions: dict = {}
        for number, line in enumerate(read_text(os.fspath(annotation_file), api).splitlines(), 1):
            if not line:
                continue
            tab = line.find("\t")
            name, caption = line[:max(tab - 2, 0)], line[tab + 1:]
            if tab < 0 or not name or not caption:
                raise RuntimeError(f"For '{api}', line {number} of '{annotation_file}' should be "
                                   f"'<image>#<k><TAB><caption>', but got {line!r}.")
            path = os.path.join(root, name)
            try:
                with open(path, "rb") as f:
                    head = f.read(3)
            except OSError as exc:
                raise RuntimeError(f"For '{api}', the image '{path}' of line {number} could not "
                                   f"be read: {exc}") from exc
            if head.startswith(_MAGIC):
                captions.setdefault(path, []).append(caption)
        items = sorted(captions.items())

        def make_row(item: tuple) -> tuple:
            return read_image(item[0], decode, api), np.array(item[1], np.str_)
        super().__init__(ListedRows(items, make_row), ["image", "annotation"], num_samples,
                         shuffle, sampler, num_shards, shard_id, cache)


_PHOTOTOUR_NAMES = ("notredame", "yosemite", "liberty", "notredame_harris", "yosemite_harris",
                    "liberty_harris")


class _Patches:
    """Random access to the 64 x 64 patches of a list of 1024 x 1024 grey bitmaps."""

    def __init__(self, bitmaps: list, api: str) -> None:
        self.bitmaps, self.api, self.cache = bitmaps, api, {}

    def __call__(self, index: int) -> np.ndarray:
        sheet, cell = divmod(index, 256)
        if sheet >= len(self.bitmaps):
            raise RuntimeError(f"For '{self.api}', the patch {index} is beyond the "
                               f"{len(self.bitmaps)} bitmaps.")
        if sheet not in self.cache:
            from msops.dataset.vision.decode import load_pil
            with load_pil().open(self.bitmaps[sheet]) as image:
                self.cache = {sheet: np.asarray(image.convert("L"))}
        row, col = divmod(cell, 16)
        return self.cache[sheet][row * 64:(row + 1) * 64, col * 64:(col + 1) * 64, None].copy()


class PhotoTourDataset(FileDataset):
    """PhotoTour (Multi-view Stereo Correspondence) as MindSpore's `PhotoTourDataset`
    (module docstring): `name` one of 'notredame', 'yosemite', 'liberty' and their
    '_harris' sets; `usage` 'train' (default) or 'test'. Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, name: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        validator.check_string("name", name, list(_PHOTOTOUR_NAMES), api)
        usage = pick_usage(usage, ["train", "test"], api, "train")
        folder = os.path.join(check_dir(dataset_dir, api), name)
        tables = {}
        for file in ("info.txt", "m50_100000_100000_0.txt"):
            path = os.path.join(folder, file)
            if not os.path.isfile(path):
                raise ValueError(f"For '{api}', the file '{path}' does not exist.")
            tables[file] = [row.split() for row in read_text(path, api).splitlines() if row]
        patches = _Patches(sorted(os.path.join(folder, f) for f in os.listdir(folder)
                                  if f.endswith("bmp")), api)
        try:
            if usage == "train":
                items = list(range(len(tables["info.txt"])))
            else:
                items = [(int(r[0]), int(r[3]), np.uint32(int(r[1]) == int(r[4])))
                         for r in tables["m50_100000_100000_0.txt"]]
        except (IndexError, ValueError):
            raise RuntimeError(f"For '{api}', the match file of '{folder}' should hold "
                               f"'patch1 point1 unused patch2 point2 unused unused' lines.") from None

        def make_row(item: Any) -> tuple:
            if usage == "train":
                return (patches(item),)
            return patches(item[0]), patches(item[1]), item[2]
        columns = ["image"] if usage == "train" else ["image1", "image2", "matches"]
        super().__init__(ListedRows(items, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, cache)
