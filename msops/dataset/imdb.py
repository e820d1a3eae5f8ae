"""`IMDBDataset`: the IMDb reviews from their extracted layout, as MindSpore's reader.

    dataset_dir/train/pos/*.txt, train/neg/*.txt, test/pos/*.txt, test/neg/*.txt

Rows (text, label): a review file's last non-empty line (a review is one line) as a str,
and 1 for pos, 0 for neg (a uint32 scalar). Order: usage 'train' then 'test' (for 'all'
or None), in each pos then neg, the files by name.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from msops.dataset.files import FileDataset, ListedRows, check_dir, pick_usage
from msops.dataset.linefiles import read_text

__all__ = ["IMDBDataset"]


class IMDBDataset(FileDataset):
    """IMDb as MindSpore's `IMDBDataset` (module docstring). Sampling as every reader's
    (shuffled by default, `num_shards`/`shard_id`, `num_samples`, `sampler`);
    `num_parallel_workers` is accepted, `cache` must be None."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "test", "all"], api, "all")
        items = []
        for part in (["train", "test"] if usage == "all" else [usage]):
            for name, label in (("pos", 1), ("neg", 0)):
                folder = os.path.join(root, part, name)
                if not os.path.isdir(folder):
                    raise ValueError(f"For '{api}', the 'dataset_dir' should hold the folder "
                                     f"'{part}/{name}', but '{folder}' does not exist.")
                items += [(os.path.join(folder, f), label) for f in sorted(os.listdir(folder))]

        def make_row(item: tuple) -> tuple:
            lines = [line for line in read_text(item[0], api).splitlines() if line]
            return np.array(lines[-1] if lines else ""), np.uint32(item[1])
        super().__init__(ListedRows(items, make_row), ["text", "label"], num_samples, shuffle,
                         sampler, num_shards, shard_id, cache)
