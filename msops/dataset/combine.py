"""Datasets made of datasets, as MindSpore's: `zip` (rows side by side) and `concat` / `+`
(rows one dataset after another).

A concatenation reads its children in turn, each pass being the same epoch of every child.
`use_sampler` makes it one random-access dataset instead: the sampler draws indices over
all the children's rows (child 0's first), which is how MindSpore pads a dataset to divide
evenly over shards: `(data + PaddedDataset(samples)).use_sampler(DistributedSampler(n, k,
shuffle=False))`. That needs every child to be a random-access source read in order.
"""
from __future__ import annotations

import builtins
from typing import Iterator, Sequence

import numpy as np

from msops.dataset import config
from msops.dataset.engine import Dataset, Row, _datasets
from msops.dataset.samplers import BuiltinSampler, SequentialSampler
from msops.dataset.sources import GeneratorDataset

__all__ = ["ZipDataset", "ConcatDataset", "zip"]


class ZipDataset(Dataset):
    """The children's rows side by side, as many as the shortest child has."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        names = [c for d in datasets for c in d.get_col_names()]
        repeated = sorted({c for c in names if names.count(c) > 1})
        if repeated:
            raise ValueError(f"For 'zip', the datasets' column names should be distinct, but "
                             f"got {repeated} more than once (rename them with map's "
                             f"output_columns).")
        super().__init__(names)
        self.children = list(datasets)

    def _rows(self, epoch: int) -> Iterator[Row]:
        # builtins.zip: this module's `zip` is MindSpore's dataset function
        for parts in builtins.zip(*(d._rows(epoch) for d in self.children)):
            yield tuple(v for part in parts for v in part)

    def _num_rows(self) -> int | None:
        counts = [d._num_rows() for d in self.children]
        return None if None in counts else min(counts)


class ConcatDataset(Dataset):
    """The children's rows one child after another (module docstring)."""

    def __init__(self, datasets: Sequence[Dataset]) -> None:
        names = datasets[0].get_col_names()
        for d in datasets[1:]:
            if d.get_col_names() != names:
                raise ValueError(f"For 'concat', every dataset should have the columns {names}, "
                                 f"but got {d.get_col_names()}.")
        super().__init__(names)
        self.children = list(datasets)
        self.sampler: BuiltinSampler | None = None
        self.num_shards, self.shard_id = 1, 0

    def use_sampler(self, sampler: BuiltinSampler) -> None:
        """Read the concatenation through `sampler` (a DistributedSampler to shard it, a
        RandomSampler to mix the children, ...): its indices run over all the children's
        rows, child 0's first."""
        if not isinstance(sampler, BuiltinSampler):
            raise TypeError(f"For 'use_sampler', the 'sampler' should be a sampler such as "
                            f"DistributedSampler, but got {type(sampler).__name__}.")
        for d in self.children:
            plain = isinstance(d, GeneratorDataset) and d.random_access and \
                type(d.sampler) is SequentialSampler and d.sampler.start_index == 0 and \
                d.sampler.num_samples is None
            if not plain:
                raise ValueError(f"For 'use_sampler', every concatenated dataset should be a "
                                 f"random-access source read in order (shuffle=False, no "
                                 f"sampler, shards or num_samples), but got "
                                 f"{type(d).__name__}.")
        self.sampler, self.seed = sampler, config.get_seed()
        self.num_shards, self.shard_id = sampler.num_shards, sampler.shard_id
        self._starts = np.cumsum([0] + [len(d.source) for d in self.children])

    def _indices(self, epoch: int) -> np.ndarray:
        return self.sampler.indices(int(self._starts[-1]), self.seed, epoch)

    def _rows(self, epoch: int) -> Iterator[Row]:
        if self.sampler is None:
            for d in self.children:
                yield from d._rows(epoch)
            return
        for i in self._indices(epoch):
            k = int(np.searchsorted(self._starts, i, side="right")) - 1
            yield self.children[k].read_row(int(i - self._starts[k]))

    def _num_rows(self) -> int | None:
        if self.sampler is not None:
            return len(self._indices(0))
        counts = [d._num_rows() for d in self.children]
        return None if None in counts else sum(counts)


def zip(datasets: Sequence[Dataset]) -> ZipDataset:  # noqa: A001 - MindSpore's name
    """`mindspore.dataset.zip`: the rows of a tuple of datasets side by side."""
    items = _datasets(datasets, "zip")
    if len(items) < 2:
        raise ValueError(f"For 'zip', the 'datasets' should hold at least 2 datasets, but got "
                         f"{len(items)}.")
    return ZipDataset(items)
