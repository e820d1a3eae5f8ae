"""Dataset sources: `GeneratorDataset` (a Python source) and `NumpySlicesDataset` (arrays
cut along their first dim), with MindSpore's sampling: a `sampler`
(msops.dataset.samplers), or the one MindSpore makes from `shuffle`, `num_shards` /
`shard_id` and `num_samples` (a DistributedSampler when sharded, else a RandomSampler when
shuffled, else a SequentialSampler).

Sharding follows MindSpore's distributed sampler: the (shuffled, per epoch) index list is
dealt round-robin, shard k taking indices k, k + num_shards, ... and wrapping around to the
start so that every shard has ceil(rows / num_shards) rows. Equal shard sizes matter: every
rank of an SPMD program must run the same number of steps.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from msops.common import validator
from msops.dataset import config
from msops.dataset.engine import Dataset, Row
from msops.dataset.samplers import (BuiltinSampler, DistributedSampler, RandomSampler,
                                    SequentialSampler, as_sampler)

__all__ = ["GeneratorDataset", "NumpySlicesDataset", "PaddedDataset"]


class GeneratorDataset(Dataset):
    """Rows from a Python `source`: a random-accessible object (`__getitem__(i)` and
    `__len__`), an iterable, or a callable returning an iterable (a generator function).
    Each item is a tuple with one value per column (or one value for one column).

    `shuffle` (default: True for a random-accessible source, as MindSpore), `num_shards` /
    `shard_id` (this process's part of the rows), `num_samples` (rows per shard at most)
    and `sampler` (a sampler, or row indices; alone: with any of the others it is
    MindSpore's conflict ValueError) need a random-accessible source. Worker options are
    accepted at their defaults only.
    """

    def __init__(self, source: Any, column_names: str | Sequence[str] | None = None,
                 column_types: Any = None, schema: Any = None, num_samples: int | None = None,
                 num_parallel_workers: int = 1, shuffle: bool | None = None,
                 sampler: Any = None, num_shards: int | None = None,
                 shard_id: int | None = None, python_multiprocessing: bool = True,
                 max_rowsize: Any = None) -> None:
        api = type(self).__name__
        if column_names is None:
            raise ValueError(f"For '{api}', the 'column_names' should name the source's "
                             f"columns (msops has no schema files), but got None.")
        names = [column_names] if isinstance(column_names, str) else list(column_names)
        if not names or not all(isinstance(n, str) for n in names) or \
                len(set(names)) != len(names):
            raise ValueError(f"For '{api}', the 'column_names' should be distinct strings, "
                             f"but got {column_names!r}.")
        super().__init__(names)
        self.random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        if isinstance(sampler, BuiltinSampler) and \
                any(a is not None for a in (num_samples, num_shards, shard_id, shuffle)):
            raise ValueError(f"For '{api}', the 'sampler' should come alone: Conflicting "
                             f"arguments during sampler assignments. num_samples: "
                             f"{num_samples}, num_shards: {num_shards}, shard_id: {shard_id}, "
                             f"shuffle: {shuffle}.")
        if shuffle is not None:
            validator.check_bool("shuffle", shuffle, api)
        do_shuffle = self.random_access if shuffle is None else shuffle
        num_shards, shard_id = _check_shards(num_shards, shard_id, api)
        if num_samples is not None:
            validator.check_positive_int(num_samples, "num_samples", api)
        self.num_samples = num_samples
        if not self.random_access and (do_shuffle or num_shards > 1 or sampler is not None):
            raise ValueError(f"For '{api}', 'shuffle', 'num_shards' and 'sampler' need a "
                             f"random-accessible source (with __getitem__ and __len__), but "
                             f"got {type(source).__name__}.")
        if sampler is not None:
            self.sampler = as_sampler(sampler, num_samples, api)
        elif num_shards > 1:
            self.sampler = DistributedSampler(num_shards, shard_id, do_shuffle, num_samples)
        else:
            self.sampler = (RandomSampler if do_shuffle else SequentialSampler)(
                num_samples=num_samples)
        self.num_shards, self.shard_id = self.sampler.num_shards, self.sampler.shard_id
        self.source = source
        self.seed = config.get_seed()       # read when the dataset is built, as MindSpore
        if self.random_access:
            self.sampler.bind(self)

    def _indices(self, epoch: int) -> np.ndarray:
        """This shard's row indices for pass `epoch`."""
        return self.sampler.indices(len(self.source), self.seed, epoch)

    def _rows(self, epoch: int) -> Iterator[Row]:
        if self.random_access:
            for i in self._indices(epoch):
                yield self.read_row(int(i))
            return
        items = self.source() if callable(self.source) else self.source
        for k, item in enumerate(items):
            if self.num_samples is not None and k >= self.num_samples:
                return
            yield self._row(item)

    def column_values(self, k: int) -> list:
        """Column `k` of every row, in source order (a source may give it without reading
        whole rows, through its own `column_values(k)`)."""
        if hasattr(self.source, "column_values"):
            return list(self.source.column_values(k))
        return [self.read_row(i)[k] for i in range(len(self.source))]

    def read_row(self, index: int) -> Row:
        """Row `index` of a random-accessible source (what a sampler's index selects)."""
        return self._row(self.source[index])

    def _row(self, item: Any) -> Row:
        # a tuple is always a row; a list is a row only when there are several columns
        # (a one-column source may yield lists as values)
        several = isinstance(item, list) and len(self._column_names) > 1
        values = item if isinstance(item, tuple) or several else (item,)
        if len(values) != len(self._column_names):
            raise ValueError(f"For '{type(self).__name__}', every row should have one value "
                             f"per column {self._column_names}, but got {len(values)}.")
        return tuple(np.asarray(v) for v in values)

    def _num_rows(self) -> int | None:
        if not self.random_access:
            return None
        return len(self._indices(0))


class _Slices:
    """Random access to rows of equally long arrays."""

    def __init__(self, columns: list[np.ndarray]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns[0])

    def __getitem__(self, i: int) -> tuple:
        return tuple(c[i] for c in self.columns)


class NumpySlicesDataset(GeneratorDataset):
    """Rows cut from `data` along its first dim: an array or a list (one column), a tuple
    of arrays (one per column) or a dict {column name: array}. Column names default to
    `column_0`, ...; shuffled by default, as MindSpore."""

    def __init__(self, data: Any, column_names: str | Sequence[str] | None = None,
                 num_samples: int | None = None, num_parallel_workers: int = 1,
                 shuffle: bool | None = None, sampler: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None) -> None:
        if isinstance(data, dict):
            names = list(data) if column_names is None else column_names
            columns = [np.asarray(v) for v in data.values()]
        elif isinstance(data, tuple):             # a tuple: one column per item
            columns = [np.asarray(v) for v in data]
            names = column_names
        else:                                     # a list or an array: one column
            columns = [np.asarray(data)]
            names = column_names
        if names is None:
            names = [f"column_{k}" for k in range(len(columns))]
        lengths = {len(c) if c.ndim else -1 for c in columns}
        if len(lengths) != 1 or -1 in lengths:
            raise ValueError(f"For 'NumpySlicesDataset', every column should be an array with "
                             f"the same first dim, but got shapes {[c.shape for c in columns]}.")
        super().__init__(_Slices(columns), names, num_samples=num_samples,
                         num_parallel_workers=num_parallel_workers, shuffle=shuffle,
                         sampler=sampler, num_shards=num_shards, shard_id=shard_id)


class PaddedDataset(GeneratorDataset):
    """`padded_samples` (a list of dicts {column: value}, every dict with the same keys) as
    rows in their order, never shuffled: the filler concatenated to a dataset so that it
    divides evenly over shards (see `ConcatDataset.use_sampler`)."""

    def __init__(self, padded_samples: list) -> None:
        api = "PaddedDataset"
        if not isinstance(padded_samples, list) or not all(
                isinstance(d, dict) for d in padded_samples):
            raise TypeError(f"For '{api}', the 'padded_samples' should be a list of dicts, but "
                            f"got {type(padded_samples).__name__}.")
        if not padded_samples:
            raise ValueError(f"For '{api}', the 'padded_samples' should not be empty.")
        names = list(padded_samples[0])
        for d in padded_samples:
            if sorted(d) != sorted(names):
                raise ValueError(f"For '{api}', every padded sample should have the keys "
                                 f"{names}, but got {list(d)}.")
        super().__init__([tuple(d[c] for c in names) for d in padded_samples], names,
                         shuffle=False)


def _check_shards(num_shards: int | None, shard_id: int | None, api: str) -> tuple[int, int]:
    if (num_shards is None) != (shard_id is None):
        raise ValueError(f"For '{api}', the 'num_shards' and 'shard_id' should be given "
                         f"together, but got num_shards={num_shards}, shard_id={shard_id}.")
    if num_shards is None:
        return 1, 0
    validator.check_positive_int(num_shards, "num_shards", api)
    validator.check_non_negative_int(shard_id, "shard_id", api)
    if shard_id >= num_shards:
        raise ValueError(f"For '{api}', the 'shard_id' should be < num_shards: {num_shards}, "
                         f"but got {shard_id}.")
    return num_shards, shard_id
