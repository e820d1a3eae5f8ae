"""Image datasets whose labels or annotations are MATLAB .mat files (read by matfile.py),
as MindSpore's readers:

    Flowers102Dataset   dataset_dir/jpg/image_00001.jpg ..., segmim/segmim_00001.jpg ...,
                        imagelabels.mat ('labels', 1..102) and setid.mat ('trnid',
                        'valid', 'tstid': 1-based image numbers). usage 'train', 'valid',
                        'test' or 'all' (train, then test, then valid ids) ->
                        Classification: image, label (uint32, 0..101);
                        Segmentation: image, segmentation, label.
    Caltech101Dataset   dataset_dir/101_ObjectCategories/<class>/image_0001.jpg ... and
                        dataset_dir/Annotations/<class'>/annotation_0001.mat
                        ('obj_contour', float64 (2, n)); classes by name without
                        BACKGROUND_Google, labels 0..; the annotation folders of Faces,
                        Faces_easy, Motorbikes and airplanes are Faces_2, Faces_3,
                        Motorbikes_16 and Airplanes_Side_2. target_type 'category' ->
                        image, category (uint32); 'annotation' -> image, annotation;
                        'all' -> image, category, annotation.
    SBDataset           dataset_dir/img/<id>.jpg, cls/<id>.mat (struct 'GTcls' with
                        'Segmentation' (H, W) and 'Boundaries', a cell of 20 sparse (H, W)
                        masks), <usage>.txt lists of ids (usage 'train', 'val',
                        'train_noval'; 'all': train then val) -> task 'Boundaries': image,
                        task (20, H, W) uint8; 'Segmentation': image, task (H, W) uint8.

Images are the files' bytes (decoded to (H, W, 3) RGB with `decode`); rows sample as
MnistDataset (shuffled by default, shards, num_samples, sampler).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.linefiles import read_text
from msops.dataset.matfile import load_mat

__all__ = ["Flowers102Dataset", "Caltech101Dataset", "SBDataset"]


def _mat(path: str, keys: tuple, api: str) -> dict:
    if not os.path.isfile(path):
        raise ValueError(f"For '{api}', the file '{path}' does not exist.")
    try:
        found = load_mat(path)
    except ValueError as exc:
        raise RuntimeError(f"For '{api}', {exc}") from exc
    missing = [k for k in keys if k not in found]
    if missing:
        raise RuntimeError(f"For '{api}', the file '{path}' should hold {list(keys)}, but "
                           f"{missing} are missing.")
    return found


class Flowers102Dataset(FileDataset):
    """Oxford Flowers 102 as MindSpore's `Flowers102Dataset` (module docstring)."""

    def __init__(self, dataset_dir: str, task: str = "Classification", usage: str = "all",
                 num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("task", task, ["Classification", "Segmentation"], api)
        validator.check_string("usage", usage, ["train", "valid", "test", "all"], api)
        validator.check_bool("decode", decode, api)
        labels = _mat(os.path.join(root, "imagelabels.mat"), ("labels",), api)["labels"]
        labels = (labels.reshape(-1).astype(np.int64) - 1).astype(np.uint32)
        setid = _mat(os.path.join(root, "setid.mat"), ("trnid", "valid", "tstid"), api)
        keys = {"train": ["trnid"], "valid": ["valid"], "test": ["tstid"],
                "all": ["trnid", "tstid", "valid"]}[usage]
        ids = [int(i) for k in keys for i in setid[k].reshape(-1)]
        bad = [i for i in ids if not 1 <= i <= len(labels)]
        if bad:
            raise RuntimeError(f"For '{api}', the image numbers of setid.mat should be in [1, "
                               f"{len(labels)}] (the labels of imagelabels.mat), but got "
                               f"{bad[:5]}.")

        def make_row(i: int) -> tuple:
            image = read_image(os.path.join(root, "jpg", f"image_{i:05d}.jpg"), decode, api)
            if task == "Segmentation":
                seg = read_image(os.path.join(root, "segmim", f"segmim_{i:05d}.jpg"), decode, api)
                return image, seg, labels[i - 1]
            return image, labels[i - 1]
        columns = ["image", "label"] if task == "Classification" else \
            ["image", "segmentation", "label"]
        super().__init__(ListedRows(ids, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, None)


_ANNOTATION_FOLDERS = {"Faces": "Faces_2", "Faces_easy": "Faces_3",
                       "Motorbikes": "Motorbikes_16", "airplanes": "Airplanes_Side_2"}


class Caltech101Dataset(FileDataset):
    """Caltech 101 as MindSpore's `Caltech101Dataset` (module docstring)."""

    def __init__(self, dataset_dir: str, target_type: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        target_type = "category" if target_type is None else target_type
        validator.check_string("target_type", target_type, ["category", "annotation", "all"],
                               api)
        validator.check_bool("decode", decode, api)
        images = os.path.join(root, "101_ObjectCategories")
        if not os.path.isdir(images):
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold the folder "
                             f"'101_ObjectCategories', but '{images}' does not exist.")
        classes = sorted(c for c in os.listdir(images) if c != "BACKGROUND_Google")
        items = []
        for label, name in enumerate(classes):
            folder = os.path.join(images, name)
            if os.path.isdir(folder):
                items += [(name, label, k) for k in range(1, len(os.listdir(folder)) + 1)]

        def make_row(item: tuple) -> tuple:
            name, label, k = item
            image = read_image(os.path.join(images, name, f"image_{k:04d}.jpg"), decode, api)
            out = [image]
            if target_type in ("category", "all"):
                out.append(np.uint32(label))
            if target_type in ("annotation", "all"):
                folder = _ANNOTATION_FOLDERS.get(name, name)
                path = os.path.join(root, "Annotations", folder, f"annotation_{k:04d}.mat")
                out.append(_mat(path, ("obj_contour",), api)["obj_contour"])
            return tuple(out)
        self._classes = classes
        columns = {"category": ["image", "category"], "annotation": ["image", "annotation"],
                   "all": ["image", "category", "annotation"]}[target_type]
        super().__init__(ListedRows(items, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, None)

    def get_class_indexing(self) -> dict:
        """{class folder name: label}."""
        return {name: k for k, name in enumerate(self._classes)}


class SBDataset(FileDataset):
    """The Semantic Boundaries Dataset as MindSpore's `SBDataset` (module docstring).
    Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, task: str = "Boundaries", usage: str = "all",
                 num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | None = None, decode: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("task", task, ["Boundaries", "Segmentation"], api)
        usage = pick_usage(usage, ["train", "val", "train_noval", "all"], api)
        decode = False if decode is None else decode
        validator.check_bool("decode", decode, api)
        ids = []
        for part in (["train", "val"] if usage == "all" else [usage]):
            path = os.path.join(root, part + ".txt")
            if not os.path.isfile(path):
                raise ValueError(f"For '{api}', the list '{path}' does not exist.")
            ids += [line.strip() for line in read_text(path, api).splitlines() if line.strip()]

        def make_row(ident: str) -> tuple:
            image = read_image(os.path.join(root, "img", ident + ".jpg"), decode, api)
            path = os.path.join(root, "cls", ident + ".mat")
            gt = _mat(path, ("GTcls",), api)["GTcls"].reshape(-1)[0]
            if not isinstance(gt, dict) or task not in gt:
                raise RuntimeError(f"For '{api}', 'GTcls' of '{path}' should be a struct with "
                                   f"'{task}'.")
            if task == "Segmentation":
                return image, np.asarray(gt[task]).astype(np.uint8)
            masks = [np.asarray(m) for m in np.asarray(gt[task], object).reshape(-1)]
            return image, np.stack(masks).astype(np.uint8)
        super().__init__(ListedRows(ids, make_row), ["image", "task"], num_samples, shuffle,
                         sampler, num_shards, shard_id, None)
