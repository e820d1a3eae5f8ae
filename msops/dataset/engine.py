"""The dataset pipeline (as `mindspore.dataset`): a source, then `batch`, `shuffle`, `map`,
`repeat`, each a new Dataset wrapping the one before.

A dataset yields rows (a tuple of numpy arrays, one per column) epoch by epoch; every
new pass over it (a new iterator, or iterating an iterator again) is the next epoch,
and shuffling draws from (seed, epoch), so a run is replayed exactly from its seed and
every rank of an SPMD program that builds the same pipeline sees the same order.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.dataset import config
from msops.dataset.callback import DSRunContext, check_callbacks

__all__ = ["Dataset", "BatchDataset", "ShuffleDataset", "MapDataset", "RepeatDataset",
           "TupleIterator", "DictIterator"]

Row = tuple


class Dataset:
    """The base of every dataset: the pipeline operations and the iterators."""

    def __init__(self, column_names: Sequence[str]) -> None:
        self._column_names = list(column_names)
        self._epochs_started = 0           # passes begun: the next pass's epoch number

    # -- what a subclass defines ---------------------------------------------------------
    def _rows(self, epoch: int) -> Iterator[Row]:
        """The rows of pass `epoch`."""
        raise NotImplementedError

    def _num_rows(self) -> int | None:
        """Rows per pass, or None when unknown until iterated."""
        raise NotImplementedError

    # -- pipeline operations -------------------------------------------------------------
    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_workers: int | None = None, **kwargs: Any) -> "BatchDataset":
        """Stack `batch_size` consecutive rows per column; the last, smaller batch is kept
        unless `drop_remainder`."""
        _unsupported("batch", kwargs, ("per_batch_map", "input_columns", "output_columns",
                                       "python_multiprocessing", "max_rowsize"))
        return BatchDataset(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size: int) -> "ShuffleDataset":
        """MindSpore's buffer shuffle: keep `buffer_size` rows, emit a random one and refill
        (a buffer at least as large as the dataset is a full permutation). Seeded by
        `dataset.config.set_seed` / `msops.set_seed`; reshuffled every epoch."""
        return ShuffleDataset(self, buffer_size)

    def map(self, operations: Callable | Sequence[Callable], input_columns: Any = None,
            output_columns: Any = None, num_parallel_workers: int | None = None,
            callbacks: Any = None, **kwargs: Any) -> "MapDataset":
        """Apply `operations` (a callable or a list, applied in turn) to `input_columns`
        (default: the first column) of every row; their results become `output_columns`
        (default: the input columns), in the input columns' place. `callbacks`
        (DSCallbacks) run as rows pass (msops.dataset.callback)."""
        _unsupported("map", kwargs, ("python_multiprocessing", "max_rowsize", "cache",
                                     "offload"))
        return MapDataset(self, operations, input_columns, output_columns, callbacks)

    def repeat(self, count: int | None = None) -> "RepeatDataset":
        """Each pass runs `count` passes of this dataset (-1 / None: repeat without end)."""
        return RepeatDataset(self, count)

    def zip(self, datasets: "Dataset | Sequence[Dataset]") -> "Dataset":
        """Rows side by side: this dataset's columns then those of `datasets` (a dataset or
        a tuple of them; column names must be distinct), as many rows as the shortest."""
        from msops.dataset.combine import ZipDataset   # combine builds on this module
        others = [datasets] if isinstance(datasets, Dataset) else datasets
        return ZipDataset([self] + list(_datasets(others, "zip")))

    def concat(self, datasets: "Dataset | Sequence[Dataset]") -> "Dataset":
        """This dataset's rows, then those of `datasets` (a dataset or a list of them, with
        the same column names); `dataset_1 + dataset_2` is the same."""
        from msops.dataset.combine import ConcatDataset
        others = [datasets] if isinstance(datasets, Dataset) else datasets
        return ConcatDataset([self] + list(_datasets(others, "concat")))

    def __add__(self, other: "Dataset") -> "Dataset":
        return self.concat(other)

    # -- iteration -----------------------------------------------------------------------
    def create_tuple_iterator(self, columns: Sequence[str] | None = None, num_epochs: int = -1,
                              output_numpy: bool = False, do_copy: bool = True) -> "TupleIterator":
        """An iterator of lists (one item per column, Tensors unless `output_numpy`); each
        time it is exhausted and iterated again it runs the next epoch, `num_epochs` in all."""
        return TupleIterator(self, columns, num_epochs, output_numpy)

    def create_dict_iterator(self, num_epochs: int = -1, output_numpy: bool = False,
                             do_copy: bool = True) -> "DictIterator":
        """As `create_tuple_iterator`, yielding {column name: value} dicts."""
        return DictIterator(self, None, num_epochs, output_numpy)

    def __iter__(self) -> "TupleIterator":
        return self.create_tuple_iterator()

    def get_dataset_size(self) -> int:
        """Rows (batches, after `batch`) in one pass; counted by iterating once when the
        source does not know its length."""
        n = self._num_rows()
        if n is None:
            n = sum(1 for _ in self._rows(0))
        return n

    def get_col_names(self) -> list[str]:
        return list(self._column_names)

    def get_batch_size(self) -> int:
        return 1

    def _begin_epoch(self) -> int:
        epoch = self._epochs_started
        self._epochs_started += 1
        return epoch


class BatchDataset(Dataset):
    def __init__(self, child: Dataset, batch_size: int, drop_remainder: bool) -> None:
        super().__init__(child.get_col_names())
        self.child = child
        self.batch_size = validator.check_positive_int(batch_size, "batch_size", "batch")
        self.drop_remainder = validator.check_bool("drop_remainder", drop_remainder, "batch")

    def _rows(self, epoch: int) -> Iterator[Row]:
        pending: list[Row] = []
        for row in self.child._rows(epoch):
            pending.append(row)
            if len(pending) == self.batch_size:
                yield _stack(pending, self._column_names)
                pending = []
        if pending and not self.drop_remainder:
            yield _stack(pending, self._column_names)

    def _num_rows(self) -> int | None:
        n = self.child._num_rows()
        if n is None:
            return None
        return n // self.batch_size if self.drop_remainder else -(-n // self.batch_size)

    def get_batch_size(self) -> int:
        return self.batch_size


class ShuffleDataset(Dataset):
    def __init__(self, child: Dataset, buffer_size: int) -> None:
        super().__init__(child.get_col_names())
        self.child = child
        self.buffer_size = validator.check_int_range(buffer_size, 2, 2 ** 31 - 1,
                                                     validator.Rel.INC_BOTH, "buffer_size",
                                                     "shuffle")
        self.seed = config.get_seed()       # read when the pipeline is built, as MindSpore

    def _rows(self, epoch: int) -> Iterator[Row]:
        rng = np.random.default_rng([self.seed, epoch, 0x5EED])
        buffer: list[Row] = []
        for row in self.child._rows(epoch):
            if len(buffer) < self.buffer_size:
                buffer.append(row)
                continue
            k = int(rng.integers(len(buffer)))
            yield buffer[k]
            buffer[k] = row
        for k in rng.permutation(len(buffer)):
            yield buffer[k]

    def _num_rows(self) -> int | None:
        return self.child._num_rows()

    def get_batch_size(self) -> int:
        return self.child.get_batch_size()


class MapDataset(Dataset):
    def __init__(self, child: Dataset, operations: Any, input_columns: Any,
                 output_columns: Any, callbacks: Any = None) -> None:
        names = child.get_col_names()
        ops = list(operations) if isinstance(operations, (list, tuple)) else [operations]
        if not ops or not all(callable(op) for op in ops):
            raise TypeError(f"For 'map', the 'operations' should be a callable or a list of "
                            f"callables, but got {operations!r}.")
        ins = _names(input_columns, names[:1], "input_columns")
        outs = _names(output_columns, ins, "output_columns")
        for c in ins:
            if c not in names:
                raise ValueError(f"For 'map', every 'input_columns' name should be one of "
                                 f"{names}, but got '{c}'.")
        at = names.index(ins[0])
        kept = [c for c in names if c not in ins]
        new = kept[:at] + outs + kept[at:] if at <= len(kept) else kept + outs
        super().__init__(new)
        self.child, self.ops, self.ins, self.outs = child, ops, ins, outs
        self._take = [names.index(c) for c in ins]
        self._keep = [names.index(c) for c in kept]
        self._at = min(at, len(kept))
        self.callbacks = check_callbacks(callbacks)
        self._context: DSRunContext | None = None

    def _rows(self, epoch: int) -> Iterator[Row]:
        if self.callbacks:
            yield from self._rows_with_callbacks(epoch)
            return
        for row in self.child._rows(epoch):
            yield self._apply(row)

    def _rows_with_callbacks(self, epoch: int) -> Iterator[Row]:
        """The rows of pass `epoch`, running the DSCallbacks' hooks around them."""
        ctx = self._context
        if ctx is None:
            ctx = self._context = DSRunContext()
            for cb in self.callbacks:
                cb.ds_begin(ctx)
        ctx.cur_epoch_num, ctx.cur_step_num_in_epoch = epoch + 1, 0
        for cb in self.callbacks:
            cb.ds_epoch_begin(ctx)
        for row in self.child._rows(epoch):
            ctx.cur_step_num_in_epoch += 1
            ctx.cur_step_num += 1
            due = [cb for cb in self.callbacks
                   if (ctx.cur_step_num_in_epoch - 1) % cb.step_size == 0]
            for cb in due:
                cb.ds_step_begin(ctx)
            out = self._apply(row)
            for cb in due:
                cb.ds_step_end(ctx)
            yield out
        for cb in self.callbacks:
            cb.ds_epoch_end(ctx)

    def _apply(self, row: Row) -> Row:
        """The map's operations on one row."""
        values: Any = tuple(row[i] for i in self._take)
        for op in self.ops:
            values = op(*values)
            values = tuple(values) if isinstance(values, tuple) else (values,)
        if len(values) != len(self.outs):
            raise ValueError(f"For 'map', the operations should return one value per "
                             f"'output_columns' name {self.outs}, but got {len(values)}.")
        kept = [row[i] for i in self._keep]
        return tuple(kept[:self._at]) + tuple(np.asarray(v) for v in values) + \
            tuple(kept[self._at:])

    def _num_rows(self) -> int | None:
        return self.child._num_rows()

    def get_batch_size(self) -> int:
        return self.child.get_batch_size()


class RepeatDataset(Dataset):
    def __init__(self, child: Dataset, count: int | None) -> None:
        super().__init__(child.get_col_names())
        if count is None:
            count = -1
        validator.check_value_type("count", count, int, "repeat")
        if count == 0 or count < -1:
            raise ValueError(f"For 'repeat', the 'count' should be -1 (forever) or a positive "
                             f"int, but got {count}.")
        self.child, self.count = child, count

    def _rows(self, epoch: int) -> Iterator[Row]:
        k = 0
        while self.count == -1 or k < self.count:
            # each repetition is a fresh pass of the child (it reshuffles): pass `epoch` of
            # this dataset runs child passes epoch * count + k (endless: 2**20 per epoch)
            inner = epoch * self.count + k if self.count > 0 else epoch * 2 ** 20 + k
            yield from self.child._rows(inner)
            k += 1

    def _num_rows(self) -> int | None:
        n = self.child._num_rows()
        if self.count == -1:
            raise ValueError("For 'get_dataset_size', a dataset repeated without end has no "
                             "size: give 'repeat' a count.")
        return None if n is None else n * self.count

    def get_batch_size(self) -> int:
        return self.child.get_batch_size()


class TupleIterator:
    """Iterates a dataset; once exhausted, iterating it again runs the next epoch."""

    def __init__(self, dataset: Dataset, columns: Sequence[str] | None, num_epochs: int,
                 output_numpy: bool) -> None:
        validator.check_value_type("num_epochs", num_epochs, int, "create_tuple_iterator")
        if num_epochs == 0 or num_epochs < -1:
            raise ValueError(f"For 'create_tuple_iterator', the 'num_epochs' should be -1 or a "
                             f"positive int, but got {num_epochs}.")
        names = dataset.get_col_names()
        cols = _names(columns, names, "columns")
        for c in cols:
            if c not in names:
                raise ValueError(f"For 'create_tuple_iterator', every 'columns' name should "
                                 f"be one of {names}, but got '{c}'.")
        self.dataset, self.num_epochs, self.output_numpy = dataset, num_epochs, output_numpy
        self._names = cols
        self._take = [names.index(c) for c in cols]
        self._current: Iterator[Row] | None = None
        self._epochs_done = 0

    def __iter__(self) -> "TupleIterator":
        return self

    def __next__(self) -> Any:
        if self._current is None:
            if self.num_epochs != -1 and self._epochs_done >= self.num_epochs:
                raise StopIteration
            self._current = self.dataset._rows(self.dataset._begin_epoch())
        try:
            row = next(self._current)
        except StopIteration:
            self._current = None
            self._epochs_done += 1
            raise
        values = [row[i] for i in self._take]
        if not self.output_numpy:
            values = [Tensor(v) for v in values]
        return self._pack(values)

    def _pack(self, values: list) -> Any:
        return values


class DictIterator(TupleIterator):
    def _pack(self, values: list) -> Any:
        return dict(zip(self._names, values))


def _stack(rows: list[Row], names: list[str]) -> Row:
    out = []
    for k in range(len(rows[0])):
        column = [r[k] for r in rows]
        shapes = {np.shape(v) for v in column}
        if len(shapes) > 1:
            raise ValueError(f"For 'batch', every row of column '{names[k]}' should have the "
                             f"same shape to be stacked, but got shapes {sorted(shapes)}.")
        out.append(np.stack(column))
    return tuple(out)


def _names(value: Any, default: list[str], arg: str) -> list[str]:
    if value is None:
        return list(default)
    names = [value] if isinstance(value, str) else list(value)
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"For the dataset, the '{arg}' should be a str or a list of str, but "
                        f"got {value!r}.")
    return names


def _datasets(value: Any, api: str) -> list:
    """`value` as a non-empty list of Datasets (TypeError naming `api` otherwise)."""
    items = list(value) if isinstance(value, (list, tuple)) else None
    if not items or not all(isinstance(d, Dataset) for d in items):
        raise TypeError(f"For '{api}', the 'datasets' should be a Dataset or a non-empty list / "
                        f"tuple of Datasets, but got {value!r:.80}.")
    return items


def _unsupported(api: str, kwargs: dict, known: tuple) -> None:
    """MindSpore arguments this pipeline has no use for are accepted only at their default."""
    for key, value in kwargs.items():
        if key not in known:
            raise TypeError(f"For '{api}', got an unexpected argument '{key}'.")
        if value not in (None, False) and key not in ("python_multiprocessing", "max_rowsize"):
            raise ValueError(f"For '{api}', the '{key}' is not supported by msops's dataset "
                             f"pipeline (leave it None), but got {value!r}.")
