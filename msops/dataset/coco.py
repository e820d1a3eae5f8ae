"""`CocoDataset`: COCO images listed in an annotation JSON file, as MindSpore's reader.

    annotation_file: {"images": [{"id": 1, "file_name": "a.jpg"}, ...],
                      "annotations": [{"id": 7, "image_id": 1, "bbox": [x, y, w, h],
                                       "category_id": 3, "iscrowd": 0, ...}, ...],
                      "categories": [{"id": 3, "name": "cat"}, ...]}
    dataset_dir/a.jpg                        the image file of each listed image

A row is one image that has at least one annotation, in the order of "images"; its
annotations come in the file's order. Per `task` (MindSpore's columns):

    Detection   image, bbox (N, 4) float32, category_id (N, 1) uint32, iscrowd (N, 1) uint32
    Stuff       image, segmentation (N, L) float32 (one row per polygon, or the RLE
                counts of a crowd annotation; shorter rows padded with -1), iscrowd (N, 1)
    Keypoint    image, keypoints (N, 51) float32, num_keypoints (N, 1) uint32
    Panoptic    image, bbox, category_id, iscrowd, area (N, 1) uint32 - from each
                annotation's "segments_info"
    Captioning  image, captions (N, 1) str

`extra_metadata` adds `_meta-filename` (the file name without its extension).
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, read_image

__all__ = ["CocoDataset", "padded_rows"]

_COLUMNS = {"Detection": ["image", "bbox", "category_id", "iscrowd"],
            "Stuff": ["image", "segmentation", "iscrowd"],
            "Keypoint": ["image", "keypoints", "num_keypoints"],
            "Panoptic": ["image", "bbox", "category_id", "iscrowd", "area"],
            "Captioning": ["image", "captions"]}


def padded_rows(rows: list, pad: float = -1.0) -> np.ndarray:
    """Float32 (len(rows), longest row) array of `rows`, shorter rows padded with `pad`."""
    width = max((len(r) for r in rows), default=0)
    out = np.full((len(rows), width), pad, np.float32)
    for k, r in enumerate(rows):
        out[k, :len(r)] = r
    return out


def _column(values: list) -> np.ndarray:
    return np.array(values, np.uint32).reshape(-1, 1)


class _Annotations:
    """The per-image values of one task, parsed from the annotation JSON."""

    def __init__(self, path: str, task: str, api: str) -> None:
        self.path, self.task, self.api = path, task, api
        try:
            with open(path, encoding="utf-8") as f:
                tree = json.load(f)
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"For '{api}', the 'annotation_file' should be a readable JSON "
                               f"file, but '{path}' failed to load: {exc}") from exc
        images = self._node(tree, "images")
        if not images:
            raise RuntimeError(f"For '{api}', the 'images' node of '{path}' is empty.")
        self.files = {}
        order = []
        for image in images:
            self.files[self._node(image, "id")] = self._node(image, "file_name")
            order.append(self._node(image, "file_name"))
        self.categories = []
        if task in ("Detection", "Panoptic"):
            for c in self._node(tree, "categories"):
                info = [self._node(c, "id")] + ([self._node(c, "isthing")]
                                                if task == "Panoptic" else [])
                self.categories.append((self._node(c, "name"), info))
        known = {info[0] for _, info in self.categories}
        self.values: dict = {}
        for ann in self._node(tree, "annotations"):
            image_id = self._node(ann, "image_id")
            if image_id not in self.files:
                raise RuntimeError(f"For '{api}', the annotation's 'image_id' {image_id} is not "
                                   f"in the 'images' node of '{path}'.")
            entries = self.values.setdefault(self.files[image_id], [])
            if task == "Panoptic":
                for info in self._node(ann, "segments_info"):
                    self._check_category(self._node(info, "category_id"), known)
                    entries.append((self._node(info, "bbox"), info["category_id"],
                                    self._node(info, "iscrowd"), self._node(info, "area")))
            elif task == "Detection":
                self._check_category(self._node(ann, "category_id"), known)
                entries.append((self._node(ann, "bbox"), ann["category_id"],
                                ann.get("iscrowd", 0)))
            elif task == "Stuff":
                crowd, seg = self._node(ann, "iscrowd"), self._node(ann, "segmentation")
                polygons = [self._node(seg, "counts")] if crowd else list(seg)
                entries.append((polygons, crowd))
            elif task == "Keypoint":
                entries.append((self._node(ann, "keypoints"), self._node(ann, "num_keypoints")))
            else:
                entries.append(self._node(ann, "caption"))
        self.order = [name for name in order if name in self.values]

    def _node(self, tree: Any, key: str) -> Any:
        if not isinstance(tree, dict) or key not in tree:
            raise RuntimeError(f"For '{self.api}', the attribute '{key}' is missing in the "
                               f"annotation file '{self.path}'.")
        return tree[key]

    def _check_category(self, category: Any, known: set) -> None:
        if category not in known:
            raise RuntimeError(f"For '{self.api}', the 'category_id' {category} is not in the "
                               f"'categories' node of '{self.path}'.")

    def row(self, name: str) -> tuple:
        """The annotation columns of image `name` (module docstring)."""
        e = self.values[name]
        if self.task == "Detection":
            return (padded_rows([b for b, _, _ in e]), _column([c for _, c, _ in e]),
                    _column([i for _, _, i in e]))
        if self.task == "Panoptic":
            return (padded_rows([v[0] for v in e]),) + tuple(
                _column([v[k] for v in e]) for k in (1, 2, 3))
        if self.task == "Stuff":
            return (padded_rows([p for polygons, _ in e for p in polygons]),
                    _column([crowd for _, crowd in e]))
        if self.task == "Keypoint":
            return padded_rows([k for k, _ in e]), _column([n for _, n in e])
        return (np.array(e, np.str_).reshape(-1, 1),)


class CocoDataset(FileDataset):
    """COCO as MindSpore's `CocoDataset` (module docstring for the files and the columns of
    each `task`): `image` is the file's bytes (1-D uint8), decoded to (H, W, 3) RGB when
    `decode`. Sampling as every reader's (shuffled by default; `num_shards`/`shard_id`;
    `num_samples`; `sampler`); `num_parallel_workers` is accepted, `cache` must be None;
    `decrypt(path) -> bytes` reads encrypted image files."""

    def __init__(self, dataset_dir: str, annotation_file: str, task: str = "Detection",
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None, cache: Any = None,
                 extra_metadata: bool = False, decrypt: Callable | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("task", task, list(_COLUMNS), api)
        validator.check_bool("decode", decode, api)
        validator.check_bool("extra_metadata", extra_metadata, api)
        if not isinstance(annotation_file, (str, os.PathLike)) or \
                not os.path.isfile(annotation_file):
            raise ValueError(f"For '{api}', the 'annotation_file' should be an existing file, "
                             f"but got {annotation_file!r}.")
        ann = _Annotations(os.fspath(annotation_file), task, api)
        self._ann = ann
        if not ann.order:
            raise RuntimeError(f"For '{api}', no image of '{annotation_file}' has an "
                               f"annotation for task '{task}'.")

        def make_row(name: str) -> tuple:
            image = read_image(os.path.join(root, name), decode, api, decrypt)
            meta = (np.array(name.split(".")[0]),) if extra_metadata else ()
            return (image,) + ann.row(name) + meta

        columns = _COLUMNS[task] + (["_meta-filename"] if extra_metadata else [])
        super().__init__(ListedRows(ann.order, make_row), columns, num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{category name: [id]} ([id, isthing] for Panoptic), for the Detection and
        Panoptic tasks, as MindSpore."""
        if self._ann.task not in ("Detection", "Panoptic"):
            raise RuntimeError(f"For '{type(self).__name__}', the 'get_class_indexing' is only "
                               f"valid for the 'Detection' and 'Panoptic' tasks, but the task "
                               f"is '{self._ann.task}'.")
        return {name: list(info) for name, info in self._ann.categories}
