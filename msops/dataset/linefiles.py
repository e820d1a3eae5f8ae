"""Datasets read from text files line by line (`TextFileDataset` here, `CSVDataset` in
csvfile.py): the file list, MindSpore's `Shuffle` modes, and MindSpore's sharding of such
files.

`dataset_files` is a path, a glob pattern, or a list of them; the files are sorted by name
and their rows are read in that order when the dataset is built. Each pass then orders
the rows by `shuffle`:

    False            the file order
    Shuffle.FILES    the files in a random order, each file's rows in order
    Shuffle.INFILE   the files in order, each file's rows in a random order
    Shuffle.GLOBAL   (default, = True) the files in a random order, and then rows shuffled
                     (within this shard's rows when sharded)

Sharding is MindSpore's for these non-random-access readers: shard k of n takes a
contiguous block of ceil(rows / n) rows of that (file-shuffled) order, from position
k * ceil(rows / n), wrapping around to the start so that every shard has the same count
(a reader sharding by files, as TFRecordDataset without `shard_equal_rows`, gives shard k
the files at positions k, k + n, ... of that order instead).
Random orders draw from (dataset seed, epoch), the same on every rank.
"""
from __future__ import annotations

import glob
import os
from enum import Enum
from typing import Any, Sequence

import numpy as np

from msops.dataset.files import FileDataset
from msops.dataset.samplers import BuiltinSampler
from msops.dataset.sources import _check_shards

__all__ = ["Shuffle", "TextFileDataset", "LineFileDataset", "dataset_file_list", "read_text"]


class Shuffle(str, Enum):
    """How a file reader shuffles each epoch (module docstring)."""
    GLOBAL = "global"
    FILES = "files"
    INFILE = "infile"


def dataset_file_list(dataset_files: Any, api: str) -> list[str]:
    """`dataset_files` (a path or glob pattern, or a list of them) as the sorted list of the
    files it names; ValueError naming `api` for a name matching no file."""
    names = [dataset_files] if isinstance(dataset_files, (str, os.PathLike)) else dataset_files
    if not isinstance(names, (list, tuple)) or not names or not all(
            isinstance(n, (str, os.PathLike)) for n in names):
        raise TypeError(f"For '{api}', the 'dataset_files' should be a str or a non-empty list "
                        f"of str (paths or glob patterns), but got {dataset_files!r}.")
    files = set()
    for name in map(os.fspath, names):
        found = [name] if os.path.isfile(name) else \
            [f for f in glob.glob(name) if os.path.isfile(f)]
        if not found:
            raise ValueError(f"For '{api}', every 'dataset_files' entry should name an existing "
                             f"file (or a glob pattern matching files), but got '{name}'.")
        files.update(found)
    return sorted(files)


def read_text(path: str, api: str) -> str:
    """The UTF-8 text of `path` (ValueError naming `api` and the file when it is not)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"For '{api}', the file '{path}' should be UTF-8 text, but got: "
                         f"{exc}.") from exc
    except OSError as exc:
        raise ValueError(f"For '{api}', the file '{path}' could not be read: {exc}.") from exc


def _shuffle_mode(shuffle: Any, api: str) -> Shuffle | None:
    """`shuffle` as a Shuffle mode (None: no shuffling); True is Shuffle.GLOBAL."""
    if isinstance(shuffle, Shuffle):
        return shuffle
    if isinstance(shuffle, bool):
        return Shuffle.GLOBAL if shuffle else None
    raise TypeError(f"For '{api}', the 'shuffle' should be a bool or a dataset.Shuffle "
                    f"(GLOBAL, FILES, INFILE), but got {type(shuffle).__name__}: {shuffle!r}.")


class _LineSampler(BuiltinSampler):
    """One pass's rows over files of `counts` rows: ordered by the Shuffle `mode`, then this
    shard's contiguous block (module docstring)."""

    def __init__(self, counts: Sequence[int], mode: Shuffle | None, num_shards: int,
                 shard_id: int, num_samples: int | None, shard_files: bool = False) -> None:
        super().__init__(num_samples)
        self.starts = np.cumsum([0] + list(counts))
        self.mode, self.num_shards, self.shard_id = mode, num_shards, shard_id
        self.shard_files = shard_files

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        files = [np.arange(a, b, dtype=np.int64) for a, b in
                 zip(self.starts[:-1], self.starts[1:])]
        if self.mode in (Shuffle.FILES, Shuffle.GLOBAL):
            files = [files[int(k)] for k in rng.permutation(len(files))]
        if self.shard_files:                # shard k reads the files at k, k + n, ...
            files = files[self.shard_id::self.num_shards]
        if self.mode is Shuffle.INFILE:
            files = [rng.permutation(f) for f in files]
        order = np.concatenate(files) if files else np.zeros(0, np.int64)
        if rows and self.num_shards > 1 and not self.shard_files:
            per_shard = -(-rows // self.num_shards)
            order = order[(self.shard_id * per_shard + np.arange(per_shard)) % rows]
        if self.mode is Shuffle.GLOBAL:
            order = rng.permutation(order)
        return order


class LineFileDataset(FileDataset):
    """A reader of rows parsed from text files: `rows` (one tuple per row, in file order)
    with `counts` rows per file, sampled as the module docstring says."""

    def __init__(self, rows: Any, counts: Sequence[int], column_names: list[str],
                 num_samples: int | None, shuffle: Any, num_shards: int | None,
                 shard_id: int | None, cache: Any, shard_files: bool = False) -> None:
        api = type(self).__name__
        mode = _shuffle_mode(shuffle, api)
        num_shards, shard_id = _check_shards(num_shards, shard_id, api)
        if num_samples is not None and (not isinstance(num_samples, int) or
                                        isinstance(num_samples, bool) or num_samples < 0):
            raise ValueError(f"For '{api}', the 'num_samples' should be None or an int >= 0, "
                             f"but got {num_samples!r}.")
        sampler = _LineSampler(counts, mode, num_shards, shard_id, num_samples, shard_files)
        super().__init__(rows, column_names, None, None, sampler, None, None, cache)


class TextFileDataset(LineFileDataset):
    """One row per non-empty line of `dataset_files` (column `text`, a str; the line
    without its '\\n', as MindSpore's getline: a '\\r' before it is kept). Shuffling and
    sharding: the module docstring; `num_samples` caps each shard's rows;
    `num_parallel_workers` is accepted and ignored, `cache` must be None."""

    def __init__(self, dataset_files: str | Sequence[str], num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | Shuffle = Shuffle.GLOBAL,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        rows, counts = [], []
        for path in dataset_file_list(dataset_files, api):
            lines = [line for line in read_text(path, api).split("\n") if line]
            rows.extend((np.array(line),) for line in lines)
            counts.append(len(lines))
        super().__init__(rows, counts, ["text"], num_samples, shuffle, num_shards, shard_id,
                         cache)
