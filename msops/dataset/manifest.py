"""`ManifestDataset`: images listed in a ModelArts manifest file, as MindSpore's reader.

One JSON object a line:

    {"source": "/data/a.jpg", "usage": "train",
     "annotation": [{"type": "modelarts/image_classification", "name": "dog"}, ...]}

A row is a listed image whose "usage" (case-insensitive) is `usage`, with at least one
image-classification label (with `class_indexing`, one of its names): (image, label),
the file's bytes (decoded when `decode`) and the uint64 label (MindSpore's documented type;
a scalar for one label, a 1-D array for several). Labels come from `class_indexing`, else
the names found, sorted, from 0.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, read_image

__all__ = ["ManifestDataset"]

_TYPE = "modelarts/image_classification"


class ManifestDataset(FileDataset):
    """A ModelArts manifest as MindSpore's `ManifestDataset` (module docstring): `usage`
    'train', 'eval' or 'inference'. Sampling as every reader's; `num_parallel_workers` is
    accepted, `cache` must be None."""

    def __init__(self, dataset_file: str, usage: str = "train", num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, class_indexing: dict | None = None, decode: bool = False,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        validator.check_string("usage", usage, ["train", "eval", "inference"], api)
        validator.check_bool("decode", decode, api)
        if class_indexing is not None and (not isinstance(class_indexing, dict) or not all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                for k, v in class_indexing.items())):
            raise TypeError(f"For '{api}', the 'class_indexing' should be a dict from str to "
                            f"int, but got {class_indexing!r}.")
        if not isinstance(dataset_file, (str, os.PathLike)) or not os.path.isfile(dataset_file):
            raise ValueError(f"For '{api}', the 'dataset_file' should be an existing file, but "
                             f"got {dataset_file!r}.")
        items = []
        with open(dataset_file, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    source, annotations = entry["source"], entry.get("annotation", [])
                except (ValueError, KeyError, TypeError) as exc:
                    raise RuntimeError(f"For '{api}', line {number} of '{dataset_file}' should be "
                                       f"a JSON object with a 'source', but got: {exc}") from exc
                if str(entry.get("usage", "")).lower() != usage:
                    continue
                names = [a["name"] for a in annotations
                         if isinstance(a, dict) and a.get("type") == _TYPE and "name" in a and
                         (class_indexing is None or a["name"] in class_indexing)]
                if names:
                    items.append((source, names))
        self._class_indexing = dict(class_indexing) if class_indexing is not None else \
            {n: k for k, n in enumerate(sorted({n for _, names in items for n in names}))}
        labels = self._class_indexing

        def make_row(item: tuple) -> tuple:
            label = np.array([labels[n] for n in item[1]], np.uint64)
            return read_image(item[0], decode, api), label[0] if len(label) == 1 else label
        super().__init__(ListedRows(items, make_row), ["image", "label"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)

    def get_class_indexing(self) -> dict:
        """{label name: label}."""
        return dict(self._class_indexing)

    def num_classes(self) -> int:
        """The number of labels."""
        return len(self._class_indexing)
