"""`VOCDataset`: PASCAL VOC from its directory layout, as MindSpore's reader.

    dataset_dir/ImageSets/Segmentation/<usage>.txt   image ids, one a line (Segmentation)
    dataset_dir/ImageSets/Main/<usage>.txt           image ids, one a line (Detection)
    dataset_dir/JPEGImages/<id>.jpg                  the image
    dataset_dir/SegmentationClass/<id>.png           the segmentation target
    dataset_dir/Annotations/<id>.xml                 the objects (Detection)

Segmentation rows are (image, target): the two files' bytes (uint8), decoded when `decode`.
Detection rows are (image, bbox (N, 4) float32 [xmin, ymin, xmax - xmin, ymax - ymin],
label (N, 1) uint32, difficult (N, 1) uint32, truncate (N, 1) uint32) over the objects of
the XML file that have a name, a box with xmin > 0, ymin > 0, xmax > xmin and ymax > ymin
and (with `class_indexing`) a listed name; an image with no such object is left out.
Labels come from `class_indexing` {name: label}, else the names found, sorted, from 0.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any, Callable

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, read_image

__all__ = ["VOCDataset"]


def _number(node: Any, name: str) -> float:
    child = node.find(name) if node is not None else None
    try:
        return float(child.text) if child is not None and child.text else 0.0
    except ValueError:
        return 0.0


def _objects(path: str, indexing: dict | None, api: str) -> list:
    """(name, [xmin, ymin, w, h], difficult, truncated) of the valid objects of `path`."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise RuntimeError(f"For '{api}', the annotation file '{path}' could not be parsed: "
                           f"{exc}") from exc
    objects = root.findall("object")
    if not objects:
        raise RuntimeError(f"For '{api}', the annotation file '{path}' should have an "
                           f"'object', but has none.")
    out = []
    for obj in objects:
        name_node = obj.find("name")
        name = (name_node.text or "") if name_node is not None else ""
        box = obj.find("bndbox")
        if box is None:
            raise RuntimeError(f"For '{api}', every object of '{path}' should have a "
                               f"'bndbox', but one has none.")
        xmin, ymin, xmax, ymax = (_number(box, k) for k in ("xmin", "ymin", "xmax", "ymax"))
        if name and (indexing is None or name in indexing) and xmin > 0 and ymin > 0 and \
                xmax > xmin and ymax > ymin:
            out.append((name, [xmin, ymin, xmax - xmin, ymax - ymin],
                        _number(obj, "difficult"), _number(obj, "truncated")))
    return out


class VOCDataset(FileDataset):
    """PASCAL VOC as MindSpore's `VOCDataset` (module docstring): `task` 'Segmentation' or
    'Detection', `usage` the ImageSets list read ('train', 'val', 'trainval', ...).
    Sampling as every reader's; `num_parallel_workers` is accepted, `cache` must be None;
    `extra_metadata` adds `_meta-filename` (the image id)."""

    def __init__(self, dataset_dir: str, task: str = "Segmentation", usage: str = "train",
                 class_indexing: dict | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None, extra_metadata: bool = False,
                 decrypt: Callable | None = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("task", task, ["Segmentation", "Detection"], api)
        validator.check_value_type("usage", usage, str, api)
        validator.check_bool("decode", decode, api)
        validator.check_bool("extra_metadata", extra_metadata, api)
        if class_indexing is not None and task != "Detection":
            raise ValueError(f"For '{api}', the 'class_indexing' is only valid for the "
                             f"'Detection' task, but the task is '{task}'.")
        if class_indexing is not None and (not isinstance(class_indexing, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in class_indexing.items())):
            raise TypeError(f"For '{api}', the 'class_indexing' should be a dict from str to "
                            f"int, but got {class_indexing!r}.")
        folder = "Segmentation" if task == "Segmentation" else "Main"
        listing = os.path.join(root, "ImageSets", folder, usage + ".txt")
        if not os.path.isfile(listing):
            raise ValueError(f"For '{api}', the 'usage' '{usage}' should name a list "
                             f"'{listing}', but it does not exist.")
        with open(listing, encoding="utf-8") as f:
            ids = [line.rstrip("\r\n").rstrip("\r") for line in f]
        ids = [i for i in ids if i]
        image = lambda i: os.path.join(root, "JPEGImages", i + ".jpg")   # noqa: E731
        meta = lambda i: (np.array(i),) if extra_metadata else ()        # noqa: E731
        if task == "Segmentation":
            self._class_indexing: dict | None = None

            def make_row(i: str) -> tuple:
                target = os.path.join(root, "SegmentationClass", i + ".png")
                return (read_image(image(i), decode, api, decrypt),
                        read_image(target, decode, api, decrypt)) + meta(i)
            columns, items = ["image", "target"], ids
        else:
            found = {i: _objects(os.path.join(root, "Annotations", i + ".xml"), class_indexing,
                                 api) for i in ids}
            items = [i for i in ids if found[i]]
            names = sorted({o[0] for objs in found.values() for o in objs})
            self._class_indexing = dict(class_indexing) if class_indexing is not None else \
                {n: k for k, n in enumerate(names)}
            labels = self._class_indexing

            def make_row(i: str) -> tuple:
                objs = found[i]
                column = lambda k: np.array([o[k] for o in objs], np.uint32).reshape(-1, 1)  # noqa
                return (read_image(image(i), decode, api, decrypt),
                        np.array([o[1] for o in objs], np.float32).reshape(-1, 4),
                        np.array([labels[o[0]] for o in objs], np.uint32).reshape(-1, 1),
                        column(2), column(3)) + meta(i)
            columns = ["image", "bbox", "label", "difficult", "truncate"]
        if not items:
            raise RuntimeError(f"For '{api}', no image of '{listing}' has a valid object for "
                               f"task '{task}'.")
        super().__init__(ListedRows(items, make_row),
                         columns + (["_meta-filename"] if extra_metadata else []),
                         num_samples, shuffle, sampler, num_shards, shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{object name: label} of the Detection task."""
        if self._class_indexing is None:
            raise RuntimeError(f"For '{type(self).__name__}', the 'get_class_indexing' is only "
                               f"valid for the 'Detection' task.")
        return dict(self._class_indexing)
