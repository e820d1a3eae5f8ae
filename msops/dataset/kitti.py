"""`KITTIDataset`: KITTI object detection from its extracted layout, as MindSpore's reader.

    dataset_dir/data_object_image_2/training/image_2/000000.png ...   (usage 'train')
    dataset_dir/data_object_image_2/testing/image_2/000000.png ...    (usage 'test')
    dataset_dir/data_object_label_2/training/label_2/000000.txt ...

The images are numbered 000000 .. n-1 (n the number of files in the image folder). A label
line is 'type truncated occluded alpha xmin ymin xmax ymax h w l x y z rotation_y'; 'train'
rows are (image, label (N, 1) uint32, truncated (N, 1) float32, occluded (N, 1) uint32,
alpha (N, 1) float32, bbox (N, 4) float32, dimensions (N, 3) float32, location (N, 3)
float32, rotation_y (N, 1) float32) for the images with at least one object, labels
numbering the object types found, sorted, from 0; 'test' rows hold the image alone.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.linefiles import read_text

__all__ = ["KITTIDataset"]

_COLUMNS = ["image", "label", "truncated", "occluded", "alpha", "bbox", "dimensions",
            "location", "rotation_y"]


class KITTIDataset(FileDataset):
    """KITTI as MindSpore's `KITTIDataset` (module docstring): `usage` 'train' (default)
    or 'test'. Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "test"], api, "train")
        validator.check_bool("decode", decode, api)
        part = "training" if usage == "train" else "testing"
        images = os.path.join(root, "data_object_image_2", part, "image_2")
        if not os.path.isdir(images):
            raise ValueError(f"For '{api}', the folder '{images}' does not exist.")
        ids = [f"{k:06d}" for k in range(len(os.listdir(images)))]
        objects: dict = {}
        if usage == "train":
            for i in ids:
                path = os.path.join(root, "data_object_label_2", "training", "label_2", i + ".txt")
                if not os.path.isfile(path):
                    raise ValueError(f"For '{api}', the label file '{path}' does not exist.")
                found = []
                for number, line in enumerate(read_text(path, api).splitlines(), 1):
                    fields = line.split()
                    if not fields:
                        continue
                    try:
                        values = [float(v) for v in fields[1:15]]
                    except ValueError:
                        values = []
                    if len(fields) < 15 or len(values) != 14:
                        raise RuntimeError(f"For '{api}', line {number} of '{path}' should be a "
                                           f"type and 14 numbers, but got {line!r}.")
                    found.append((fields[0], values))
                if found:
                    objects[i] = found
            ids = [i for i in ids if i in objects]
        names = sorted({name for found in objects.values() for name, _ in found})
        self._class_indexing = {n: k for k, n in enumerate(names)}
        labels = self._class_indexing

        def make_row(i: str) -> tuple:
            image = read_image(os.path.join(images, i + ".png"), decode, api)
            if usage == "test":
                return (image,)
            found = objects[i]
            v = np.array([values for _, values in found], np.float32)
            return (image, np.array([[labels[n]] for n, _ in found], np.uint32), v[:, 0:1],
                    v[:, 1:2].astype(np.int64).astype(np.uint32), v[:, 2:3], v[:, 3:7],
                    v[:, 7:10], v[:, 10:13], v[:, 13:14])
        columns = ["image"] if usage == "test" else _COLUMNS
        super().__init__(ListedRows(ids, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, cache)
