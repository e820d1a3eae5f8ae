"""Samplers, as `mindspore.dataset`: which row indices of a random-accessible source one
pass (epoch) reads, in which order.

    SequentialSampler(start_index, num_samples)   start_index, start_index + 1, ...
    RandomSampler(replacement, num_samples)        a permutation (or draws with replacement)
    SubsetSampler(indices, num_samples)            the indices, in order
    SubsetRandomSampler(indices, num_samples)      the indices, permuted
    PKSampler(num_val, num_class, shuffle, class_column, num_samples)
                                                   num_val draws (with replacement) from
                                                   each class, classes in label order
    WeightedRandomSampler(weights, num_samples, replacement)
                                                   num_samples draws of index i with
                                                   probability weights[i] / sum(weights)
    DistributedSampler(num_shards, shard_id, shuffle, num_samples, offset)
        the (permuted) order dealt round-robin: shard k takes positions k, k + num_shards,
        ..., wrapping around to the start so every shard has ceil(rows / num_shards)
        (offset=-1, MindSpore's even distribution); with offset >= 0 position p goes to
        shard (p + offset) % num_shards and nothing is padded

`num_samples` (None or 0: all) caps the indices of a pass. Random orders are drawn from
numpy's Generator seeded by (the dataset seed when the dataset was built, the epoch): the
same on every rank and every run, a new order each epoch. MindSpore draws its orders from
std::mt19937, so shuffled orders differ from MindSpore's; the sequential, subset and
round-robin assignments (and so which rows each shard holds unshuffled) are MindSpore's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_sampler", "Sampler", "BuiltinSampler", "SequentialSampler", "RandomSampler",
           "SubsetSampler", "SubsetRandomSampler", "DistributedSampler", "WeightedRandomSampler",
           "PKSampler"]


def _check_type(api: str, arg: str, value: Any, kind: type | tuple) -> None:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TypeError(f"For '{api}', the '{arg}' should be {want}, but got "
                        f"{type(value).__name__}: {value!r}.")


def _check_num_samples(api: str, num_samples: Any) -> int | None:
    if num_samples is None:
        return None
    _check_type(api, "num_samples", num_samples, int)
    if num_samples < 0:
        raise ValueError(f"For '{api}', the 'num_samples' should be None or an int >= 0, but "
                         f"got {num_samples}.")
    return num_samples or None           # 0: all, as MindSpore


class BuiltinSampler:
    """The base of the samplers: `indices(rows, seed, epoch)` gives one pass's row indices.

    `num_shards` / `shard_id`: which part of the data the sampler reads (1, 0 but for
    DistributedSampler), what a training loop checks against the parallel context."""

    num_shards, shard_id = 1, 0

    def __init__(self, num_samples: int | None = None) -> None:
        self.num_samples = _check_num_samples(type(self).__name__, num_samples)

    def indices(self, rows: int, seed: int, epoch: int) -> np.ndarray:
        """The row indices (int64) of pass `epoch` over a source of `rows` rows."""
        picks = self._order(rows, np.random.default_rng([seed, epoch]))
        return picks[:self.num_samples] if self.num_samples is not None else picks

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def bind(self, dataset: Any) -> None:
        """Called by the dataset that reads through this sampler, once it is built (a
        sampler that needs the rows' contents, as PKSampler its labels, reads them here)."""

    def get_num_samples(self) -> int | None:
        """The `num_samples` given (None: all)."""
        return self.num_samples

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_samples={self.num_samples})"


class Sampler(BuiltinSampler):
    """The base of a user's sampler: a subclass defines `__iter__`, yielding the row
    indices of one pass (called again each epoch)."""

    def __iter__(self):
        raise NotImplementedError(f"For '{type(self).__name__}', a Sampler subclass should "
                                  f"define __iter__ (yielding row indices).")

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        return _rows_of(type(self).__name__, list(iter(self)), rows)


class _IterSampler(Sampler):
    """Any other iterable given as a sampler: its items, read anew each pass."""

    def __init__(self, iterable: Any, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)


def _rows_of(api: str, values: Any, rows: int) -> np.ndarray:
    """`values` as int64 row indices of a source of `rows` rows (TypeError / ValueError
    naming `api` for a non-int or an index outside [0, rows))."""
    for i in values:
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"For '{api}', the indices should be ints, but got "
                            f"{type(i).__name__}: {i!r}.")
    out = np.asarray(values, np.int64).reshape(-1)
    bad = out[(out < 0) | (out >= rows)]
    if bad.size:
        raise ValueError(f"For '{api}', the indices should be rows in [0, {rows}), but got "
                         f"{int(bad[0])}.")
    return out


def as_sampler(sampler: Any, num_samples: int | None, api: str) -> BuiltinSampler:
    """A dataset's `sampler` argument as a sampler, as MindSpore: a sampler itself, a
    list / tuple / array of indices (a SubsetSampler), or another iterable of indices."""
    if isinstance(sampler, BuiltinSampler):
        return sampler
    if isinstance(sampler, (list, tuple, np.ndarray)):
        return SubsetSampler(sampler, num_samples)
    if not isinstance(sampler, str) and hasattr(sampler, "__iter__"):
        return _IterSampler(sampler, num_samples)
    raise TypeError(f"For '{api}', the 'sampler' should be a sampler or an iterable of row "
                    f"indices, but got {type(sampler).__name__}: {sampler!r:.80}.")


class SequentialSampler(BuiltinSampler):
    """Rows start_index (default 0), start_index + 1, ... in order."""

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        if start_index is not None:
            _check_type("SequentialSampler", "start_index", start_index, int)
            if start_index < 0:
                raise ValueError(f"For 'SequentialSampler', the 'start_index' should be >= 0, "
                                 f"but got {start_index}.")
        self.start_index = start_index or 0

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        if rows and self.start_index >= rows:
            raise ValueError(f"For 'SequentialSampler', the 'start_index' should be < the "
                             f"dataset size {rows}, but got {self.start_index}.")
        return np.arange(self.start_index, rows, dtype=np.int64)


class RandomSampler(BuiltinSampler):
    """A random permutation of the rows; with `replacement`, num_samples (default: the
    number of rows) independent uniform draws."""

    def __init__(self, replacement: bool = False, num_samples: int | None = None) -> None:
        _check_type("RandomSampler", "replacement", replacement, bool)
        super().__init__(num_samples)
        self.replacement = replacement

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        if self.replacement:
            count = rows if self.num_samples is None else self.num_samples
            return rng.integers(0, rows, count, dtype=np.int64) if rows else \
                np.zeros(0, np.int64)
        return rng.permutation(rows).astype(np.int64)


class SubsetSampler(BuiltinSampler):
    """The given row indices, in their order (each must be a row of the source)."""

    _shuffled = False

    def __init__(self, indices: Any, num_samples: int | None = None) -> None:
        api = type(self).__name__
        super().__init__(num_samples)
        if isinstance(indices, np.ndarray):
            indices = indices.tolist()
        _check_type(api, "indices", indices, (list, tuple))
        self.subset = list(indices)
        _rows_of(api, self.subset, np.iinfo(np.int64).max)     # ints, >= 0

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        order = _rows_of(type(self).__name__, self.subset, rows)
        return rng.permutation(order) if self._shuffled else order


class SubsetRandomSampler(SubsetSampler):
    """The given row indices, in a random order."""

    _shuffled = True


class DistributedSampler(BuiltinSampler):
    """Shard `shard_id` of `num_shards` of the (shuffled) rows, dealt round-robin (see the
    module docstring for the padding and `offset`)."""

    def __init__(self, num_shards: int, shard_id: int, shuffle: bool = True,
                 num_samples: int | None = None, offset: int = -1) -> None:
        api = "DistributedSampler"
        for arg, value in (("num_shards", num_shards), ("shard_id", shard_id),
                           ("offset", offset)):
            _check_type(api, arg, value, int)
        _check_type(api, "shuffle", shuffle, bool)
        super().__init__(num_samples)
        if num_shards <= 0:
            raise RuntimeError(f"For '{api}', the 'num_shards' should be > 0, but got "
                               f"{num_shards}.")
        if not 0 <= shard_id < num_shards:
            raise RuntimeError(f"For '{api}', the 'shard_id' should be in [0, {num_shards - 1}], "
                               f"but got {shard_id}.")
        if not -1 <= offset <= num_shards:
            raise RuntimeError(f"For '{api}', the 'offset' should be in [-1, {num_shards}], but "
                               f"got {offset}.")
        self.num_shards, self.shard_id = num_shards, shard_id
        self.shuffle, self.offset = shuffle, offset

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        order = rng.permutation(rows).astype(np.int64) if self.shuffle else \
            np.arange(rows, dtype=np.int64)
        k = self.num_shards
        if not rows:
            return order
        if self.offset == -1:                # even: ceil(rows / k) each, wrapping around
            per_shard = -(-rows // k)
            return order[(np.arange(per_shard) * k + self.shard_id) % rows]
        first = (self.shard_id - self.offset) % k   # position p goes to (p + offset) % k
        return order[first::k]


class WeightedRandomSampler(BuiltinSampler):
    """`num_samples` (default: len(weights)) random row indices, index i drawn with
    probability weights[i] / sum(weights); with `replacement=False` no index twice (so
    num_samples <= the number of non-zero weights)."""

    def __init__(self, weights: Any, num_samples: int | None = None,
                 replacement: bool = True) -> None:
        api = "WeightedRandomSampler"
        if isinstance(weights, np.ndarray):
            weights = weights.tolist()
        _check_type(api, "weights", weights, (list, tuple))
        if not weights or not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                                  for w in weights):
            raise TypeError(f"For '{api}', the 'weights' should be a non-empty list of numbers, "
                            f"but got {weights!r:.80}.")
        probs = np.asarray(weights, np.float64)
        if not np.isfinite(probs).all() or (probs < 0).any() or probs.sum() <= 0:
            raise ValueError(f"For '{api}', the 'weights' should be finite, >= 0 and not all 0, "
                             f"but got {weights!r:.80}.")
        _check_type(api, "replacement", replacement, bool)
        super().__init__(num_samples)
        count = len(weights) if self.num_samples is None else self.num_samples
        if not replacement and count > int((probs > 0).sum()):
            raise ValueError(f"For '{api}', the 'num_samples' should be <= the number of "
                             f"non-zero weights ({int((probs > 0).sum())}) without replacement, "
                             f"but got {count}.")
        self.weights, self.replacement = list(weights), replacement
        self._probs, self._count = probs / probs.sum(), count

    def _order(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        picks = rng.choice(len(self._probs), self._count, replace=self.replacement,
                           p=self._probs).astype(np.int64)
        return _rows_of("WeightedRandomSampler", picks.tolist(), rows)


class PKSampler(BuiltinSampler):
    """P classes x K samples (metric learning batches): for each class of the dataset's
    `class_column`, in label order (a seeded random order fixed for the run when
    `shuffle`), `num_val` row indices drawn uniformly with replacement from that class's
    rows, anew each epoch; `num_samples` caps the total (num_val x classes). `num_class`
    is not supported (as MindSpore). The labels are read when the dataset is built."""

    def __init__(self, num_val: int, num_class: int | None = None, shuffle: bool = False,
                 class_column: str = "label", num_samples: int | None = None) -> None:
        api = "PKSampler"
        _check_type(api, "num_val", num_val, int)
        if num_val <= 0:
            raise ValueError(f"For '{api}', the 'num_val' should be > 0, but got {num_val}.")
        if num_class is not None:
            raise NotImplementedError(f"For '{api}', the 'num_class' is not supported (as "
                                      f"MindSpore): leave it None, but got {num_class!r}.")
        _check_type(api, "shuffle", shuffle, bool)
        _check_type(api, "class_column", class_column, str)
        super().__init__(num_samples)
        self.num_val, self.num_class, self.shuffle = num_val, num_class, shuffle
        self.class_column = class_column
        self._classes: list | None = None

    def bind(self, dataset: Any) -> None:
        api = "PKSampler"
        names = dataset.get_col_names()
        if self.class_column not in names or not hasattr(dataset, "column_values"):
            raise ValueError(f"For '{api}', the 'class_column' should be a column of a "
                             f"random-access dataset {names}, but got '{self.class_column}'.")
        labels = dataset.column_values(names.index(self.class_column))
        if not all(np.ndim(v) == 0 and np.asarray(v).dtype.kind in "iub" for v in labels):
            raise ValueError(f"For '{api}', the '{self.class_column}' column should hold integer "
                             f"scalars (class ids), but got {np.asarray(labels[0])!r:.60}.")
        ids = np.asarray([int(v) for v in labels], np.int64)
        self._classes = [np.flatnonzero(ids == c) for c in np.unique(ids)]

    def indices(self, rows: int, seed: int, epoch: int) -> np.ndarray:
        if self._classes is None:
            raise ValueError("For 'PKSampler', the sampler should be given to a dataset (it "
                             "reads the dataset's labels), but it was not bound to one.")
        order = list(range(len(self._classes)))
        if self.shuffle:                 # once for the run, as MindSpore shuffles at init
            order = np.random.default_rng([seed, 0x9C]).permutation(len(order)).tolist()
        rng = np.random.default_rng([seed, epoch])
        picks = [members[rng.integers(len(members), size=self.num_val)]
                 for members in (self._classes[k] for k in order)]
        out = np.concatenate(picks).astype(np.int64) if picks else np.zeros(0, np.int64)
        return out[:self.num_samples] if self.num_samples is not None else out
