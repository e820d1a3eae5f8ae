"""What the built-in dataset readers (MnistDataset, Cifar10Dataset, ...) share: checking
`dataset_dir` and `usage`, and random access to fixed-size records across several files.

A reader checks every file's header and size when it is built (a truncated or foreign
file is an error naming the dataset and the file, before any step runs) and maps the
files with `np.memmap`, so a row is read from disk only when the pipeline asks for it.
Sampling (shuffle, shards, num_samples) is GeneratorDataset's, over these records.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from msops.dataset.sources import GeneratorDataset

__all__ = ["RecordFiles", "ListedRows", "FileDataset", "check_dir", "check_usage",
           "matching_files", "read_image", "pick_usage"]


def check_dir(dataset_dir: Any, api: str) -> str:
    """`dataset_dir` as a str naming an existing directory."""
    if not isinstance(dataset_dir, (str, os.PathLike)):
        raise TypeError(f"For '{api}', the type of 'dataset_dir' should be str, but got "
                        f"{type(dataset_dir).__name__}.")
    path = os.fspath(dataset_dir)
    if not os.path.isdir(path):
        raise ValueError(f"For '{api}', the 'dataset_dir' should be an existing directory, but "
                         f"got '{path}'.")
    return path


def check_usage(usage: Any, api: str) -> str:
    """MindSpore's `usage`: None (= 'all'), 'train', 'test' or 'all'."""
    if usage is None:
        return "all"
    if not isinstance(usage, str) or usage not in ("train", "test", "all"):
        raise ValueError(f"For '{api}', the 'usage' should be one of ['train', 'test', 'all'], "
                         f"but got {usage!r}.")
    return usage


def read_image(path: str, decode: bool, api: str, decrypt: Callable | None = None) -> np.ndarray:
    """The bytes of the image file `path` as a 1-D uint8 array (read through `decrypt(path)
    -> bytes` when given), decoded to (H, W, 3) uint8 RGB when `decode`: what MindSpore's
    image readers put in their `image` column."""
    from msops.dataset.vision.decode import decode_image
    try:
        if decrypt is not None:
            raw = decrypt(path)
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except OSError as exc:
        raise RuntimeError(f"For '{api}', the image file '{path}' could not be read: "
                           f"{exc}") from exc
    if not isinstance(raw, (bytes, bytearray)):
        raise TypeError(f"For '{api}', the 'decrypt' should return the file's bytes, "
                        f"but got {type(raw).__name__} for '{path}'.")
    image = np.frombuffer(bytes(raw), np.uint8).copy()
    return decode_image(image, api, where=path) if decode else image


def pick_usage(usage: Any, valid: Sequence[str], api: str, default: str = "all") -> str:
    """`usage` (None: `default`) checked to be one of `valid` (ValueError naming `api`)."""
    usage = default if usage is None else usage
    if not isinstance(usage, str) or usage not in valid:
        raise ValueError(f"For '{api}', the 'usage' should be one of {list(valid)}, but got "
                         f"{usage!r}.")
    return usage


def matching_files(path: str, accept: Callable[[str], bool]) -> list[str]:
    """The files directly under `path` whose name `accept`s, sorted by name (MindSpore's
    readers sort, so 'all' reads MNIST's t10k files before the train files)."""
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if accept(name) and os.path.isfile(os.path.join(path, name))]


class RecordFiles:
    """Random access to the records of several files, in file order: `columns[k]` holds one
    array per file whose first dim indexes the records; `decode(values)` turns the k
    values of one record into its row."""

    def __init__(self, columns: Sequence[list], decode: Callable[..., tuple]) -> None:
        self.columns = [list(c) for c in columns]
        self.decode = decode
        counts = [len(a) for a in self.columns[0]]
        self.starts = np.cumsum([0] + counts)

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __getitem__(self, i: int) -> tuple:
        f = int(np.searchsorted(self.starts, i, side="right")) - 1
        k = i - int(self.starts[f])
        return self.decode(*(np.array(c[f][k]) for c in self.columns))


class ListedRows:
    """Random access to rows made on demand: row i is `make_row(items[i])` (an image
    listing read when the row is asked for, a parsed annotation, ...)."""

    def __init__(self, items: Sequence, make_row: Callable[[Any], tuple]) -> None:
        self.items, self.make_row = list(items), make_row

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple:
        return self.make_row(self.items[i])


class FileDataset(GeneratorDataset):
    """A GeneratorDataset over a reader's random-access rows (`RecordFiles`, an image
    listing, parsed lines, ...), with the readers' common arguments: shuffled by default (as
    MindSpore's readers); `cache` is accepted only as None."""

    def __init__(self, records: Any, column_names: list[str], num_samples: int | None,
                 shuffle: bool | None, sampler: Any, num_shards: int | None,
                 shard_id: int | None, cache: Any) -> None:
        api = type(self).__name__
        if cache is not None:
            raise ValueError(f"For '{api}', the 'cache' is not supported by msops (leave it "
                             f"None), but got {cache!r}.")
        if len(records) == 0:
            raise ValueError(f"For '{api}', the dataset files hold no records.")
        super().__init__(records, column_names, num_samples=num_samples, shuffle=shuffle,
                         sampler=sampler, num_shards=num_shards, shard_id=shard_id)
