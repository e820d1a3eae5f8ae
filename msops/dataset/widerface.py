"""`WIDERFaceDataset`: WIDER FACE from its extracted layout, as MindSpore's reader.

    dataset_dir/WIDER_train/images/<event>/*.jpg, WIDER_val/images/..., WIDER_test/images/...
    dataset_dir/wider_face_split/wider_face_train_bbx_gt.txt, wider_face_val_bbx_gt.txt

An annotation file repeats: an image path (relative to images/), the face count n, then
max(n, 1) lines 'x y w h blur expression illumination invalid occlusion pose' (an image
without faces has one all-zero line). Rows for 'train', 'valid' and 'all' (train then
valid): image, bbox (N, 4), blur, expression, illumination, occlusion, pose, invalid (N,),
all uint32 (MindSpore's columns); 'test' rows hold the image alone. The values follow the
file format's field order (..., invalid, occlusion, pose), where MindSpore's reader takes
the 8th to 10th numbers as occlusion, pose, invalid. Event folders and their .jpg files
are read in name order.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.linefiles import read_text

__all__ = ["WIDERFaceDataset"]

_PARTS = {"train": ("WIDER_train", "wider_face_train_bbx_gt.txt"),
          "valid": ("WIDER_val", "wider_face_val_bbx_gt.txt"), "test": ("WIDER_test", None)}
_COLUMNS = ["bbox", "blur", "expression", "illumination", "occlusion", "pose", "invalid"]


def _annotations(path: str, images: str, api: str) -> dict:
    """{image path: (N, 10) int array} of an annotation file."""
    lines = read_text(path, api).splitlines()
    out, k = {}, 0
    while k < len(lines):
        if not lines[k].strip():
            k += 1
            continue
        name = lines[k].strip()
        try:
            count = int(lines[k + 1])
            rows = [[int(v) for v in line.split()]
                    for line in lines[k + 2:k + 2 + max(count, 1)]]
        except (IndexError, ValueError):
            raise RuntimeError(f"For '{api}', the annotation of '{name}' in '{path}' should be a "
                               f"face count then one line of 10 integers per face.") from None
        if len(rows) != max(count, 1) or any(len(r) != 10 for r in rows):
            raise RuntimeError(f"For '{api}', every face line of '{name}' in '{path}' should hold "
                               f"10 integers.")
        out[os.path.join(images, name)] = np.array(rows, np.int64)
        k += 2 + max(count, 1)
    return out


class WIDERFaceDataset(FileDataset):
    """WIDER FACE as MindSpore's `WIDERFaceDataset` (module docstring): `usage` 'train',
    'test', 'valid' or 'all'/None. Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, decode: bool = False, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "test", "valid", "all"], api, "all")
        validator.check_bool("decode", decode, api)
        items, labels = [], {}
        for part in (["train", "valid"] if usage == "all" else [usage]):
            base, anno = _PARTS[part]
            images = os.path.join(root, base, "images")
            if not os.path.isdir(images):
                raise ValueError(f"For '{api}', the folder '{images}' does not exist.")
            for event in sorted(e for e in os.listdir(images)
                                if os.path.isdir(os.path.join(images, e))):
                folder = os.path.join(images, event)
                items += [os.path.join(folder, f) for f in sorted(os.listdir(folder))
                          if f.endswith(".jpg")]
            if anno is not None:
                path = os.path.join(root, "wider_face_split", anno)
                if not os.path.isfile(path):
                    raise ValueError(f"For '{api}', the annotation file '{path}' does not exist.")
                labels.update(_annotations(path, images, api))
        if usage != "test":
            missing = [p for p in items if p not in labels]
            if missing:
                raise RuntimeError(f"For '{api}', the image '{missing[0]}' has no annotation.")

        def make_row(path: str) -> tuple:
            image = read_image(path, decode, api)
            if usage == "test":
                return (image,)
            faces = labels[path].astype(np.uint32)
            # the file's order: x y w h blur expression illumination invalid occlusion pose
            return (image, faces[:, :4], faces[:, 4], faces[:, 5], faces[:, 6], faces[:, 8],
                    faces[:, 9], faces[:, 7])
        columns = ["image"] + ([] if usage == "test" else _COLUMNS)
        super().__init__(ListedRows(items, make_row), columns, num_samples, shuffle, sampler,
                         num_shards, shard_id, cache)
