"""`FakeImageDataset`: random images with random labels, for trying a pipeline or a network
without data (as MindSpore's).

Row i is drawn from a generator seeded by (base_seed, i) alone, so a row's values do not
depend on the order, the shard or the epoch that reads it: shards of the dataset hold the
same images as the whole. The pixels differ from MindSpore's (its generator is mt19937).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.files import FileDataset

__all__ = ["FakeImageDataset"]


class _FakeImages:
    def __init__(self, count: int, shape: tuple, num_classes: int, base_seed: int) -> None:
        self.count, self.shape = count, shape
        self.num_classes, self.base_seed = num_classes, base_seed

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> tuple:
        rng = np.random.default_rng([self.base_seed, i])
        image = rng.integers(0, 256, self.shape, dtype=np.uint8)
        return image, np.uint32(rng.integers(self.num_classes))


class FakeImageDataset(FileDataset):
    """`num_images` random uint8 images of shape `image_size` (H, W, C) with uint32 labels
    in [0, num_classes): columns `image` and `label`. Sampling as the readers (shuffled by
    default, `num_shards`/`shard_id`, `num_samples`, `sampler`)."""

    def __init__(self, num_images: int = 1000, image_size: Sequence[int] = (224, 224, 3),
                 num_classes: int = 10, base_seed: int = 0, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = "FakeImageDataset"
        validator.check_positive_int(num_images, "num_images", api)
        if not isinstance(image_size, (list, tuple)) or len(image_size) != 3 or not all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in image_size):
            raise ValueError(f"For '{api}', the 'image_size' should be three positive ints "
                             f"(height, width, channels), but got {image_size!r}.")
        validator.check_positive_int(num_classes, "num_classes", api)
        validator.check_non_negative_int(base_seed, "base_seed", api)
        source = _FakeImages(num_images, tuple(image_size), num_classes, base_seed)
        super().__init__(source, ["image", "label"], num_samples, shuffle, sampler, num_shards,
                         shard_id, cache)
