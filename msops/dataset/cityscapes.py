"""`CityscapesDataset`: Cityscapes from its extracted layout, as MindSpore's reader.

    dataset_dir/leftImg8bit/<usage>/<city>/<stem>_leftImg8bit.png
    dataset_dir/gtFine|gtCoarse/<usage>/<city>/<stem>_gtFine_instanceIds.png
                                               ..._labelIds.png, _color.png, _polygons.json

Rows (image, task), images by path within each usage ('all': train, test, val for 'fine';
train, train_extra, val for 'coarse'): `task` 'instance', 'semantic' and 'color' give the
target image's bytes (decoded with `decode` as the image); 'polygon' gives the JSON file as
a compact str with sorted keys (as MindSpore's nlohmann::json dump).
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage, read_image
from msops.dataset.linefiles import read_text

__all__ = ["CityscapesDataset"]

_SUFFIX = {"instance": "instanceIds.png", "semantic": "labelIds.png", "color": "color.png",
           "polygon": "polygons.json"}


class CityscapesDataset(FileDataset):
    """Cityscapes as MindSpore's `CityscapesDataset` (module docstring): `quality_mode`
    'fine' (usage 'train', 'test', 'val', 'all') or 'coarse' (usage 'train',
    'train_extra', 'val', 'all'). Sampling as MnistDataset."""

    def __init__(self, dataset_dir: str, usage: str = "train", quality_mode: str = "fine",
                 task: str = "instance", num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 decode: bool = False, sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        validator.check_string("quality_mode", quality_mode, ["fine", "coarse"], api)
        validator.check_string("task", task, list(_SUFFIX), api)
        validator.check_bool("decode", decode, api)
        parts = ["train", "test", "val"] if quality_mode == "fine" else \
            ["train", "train_extra", "val"]
        usage = pick_usage(usage, parts + ["all"], api, "train")
        gt = "gtFine" if quality_mode == "fine" else "gtCoarse"
        items = []
        for part in (parts if usage == "all" else [usage]):
            images, targets = (os.path.join(root, d, part) for d in ("leftImg8bit", gt))
            for folder in (images, targets):
                if not os.path.isdir(folder):
                    raise ValueError(f"For '{api}', the folder '{folder}' does not exist.")
            found = []
            for city in os.listdir(images):
                if not os.path.isdir(os.path.join(images, city)):
                    continue
                for name in os.listdir(os.path.join(images, city)):
                    if not name.endswith(".png"):
                        continue
                    stem = name.split("_leftImg8bit")[0]
                    target = os.path.join(targets, city, f"{stem}_{gt}_{_SUFFIX[task]}")
                    if not os.path.isfile(target):
                        raise ValueError(f"For '{api}', the target '{target}' of '{name}' does "
                                         f"not exist.")
                    found.append((os.path.join(images, city, name), target))
            items += sorted(found)

        def make_row(item: tuple) -> tuple:
            image = read_image(item[0], decode, api)
            if task == "polygon":
                try:
                    tree = json.loads(read_text(item[1], api))
                except ValueError as exc:
                    raise RuntimeError(f"For '{api}', '{item[1]}' is not JSON: {exc}.") from exc
                return image, np.array(json.dumps(tree, sort_keys=True, separators=(",", ":"),
                                                  ensure_ascii=False))
            return image, read_image(item[1], decode, api)
        super().__init__(ListedRows(items, make_row), ["image", "task"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)
