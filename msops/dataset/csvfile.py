"""`CSVDataset`: rows of comma- (or `field_delim`-) separated files, as MindSpore's reader.

Fields follow RFC 4180 quoting ("a, b" is one field, "" inside quotes is a quote). Without
`column_names` the first line of every file is its header and the first file's header
names the columns. `column_defaults` gives each column's type by its value's type (int ->
int32, float -> float32, str -> str; columns beyond the list, and every column without
it, are str) and the value an empty field takes. Every row is a tuple of scalars.
Files, shuffling and sharding are linefiles.py's.
"""
from __future__ import annotations

import csv
import io
from typing import Any, Sequence

import numpy as np

from msops.dataset.linefiles import LineFileDataset, Shuffle, dataset_file_list, read_text

__all__ = ["CSVDataset"]

_TYPES = {int: np.int32, float: np.float32, str: np.str_}


def _check_defaults(column_defaults: Any, api: str) -> list:
    if column_defaults is None:
        return []
    if not isinstance(column_defaults, (list, tuple)) or not all(
            type(v) in _TYPES for v in column_defaults):
        raise TypeError(f"For '{api}', the 'column_defaults' should be a list of int, float or "
                        f"str values (one per column), but got {column_defaults!r}.")
    return list(column_defaults)


def _check_names(column_names: Any, api: str) -> list | None:
    if column_names is None:
        return None
    if not isinstance(column_names, (list, tuple)) or not column_names or not all(
            isinstance(n, str) and n for n in column_names):
        raise TypeError(f"For '{api}', the 'column_names' should be a non-empty list of "
                        f"non-empty str, but got {column_names!r}.")
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"For '{api}', the 'column_names' should be distinct, but got "
                         f"{list(column_names)}.")
    return list(column_names)


def _field(text: str, default: Any, api: str, where: str) -> np.ndarray:
    """One field as a scalar of its column's type (an empty field: the default)."""
    kind = type(default)
    if text == "":
        return np.array(default, _TYPES[kind])
    try:
        value = kind(text.strip()) if kind is not str else text
        if kind is int and not -2 ** 31 <= value < 2 ** 31:
            raise ValueError("out of the int32 range")
    except ValueError as exc:
        article = "an" if kind is int else "a"
        raise RuntimeError(f"For '{api}', the field '{text}' at {where} should be {article} "
                           f"{kind.__name__} (as its 'column_defaults' value {default!r}), but it "
                           f"is not: {exc}.") from None
    return np.array(value, _TYPES[kind])


class CSVDataset(LineFileDataset):
    """Rows of the CSV files `dataset_files` (module docstring), one column per field.
    `field_delim` is one character (not '"', '\\r' or '\\n'); a row with a different
    number of fields than the columns is a RuntimeError naming the file and line. Sampling:
    linefiles.py (`shuffle` default Shuffle.GLOBAL; `num_shards`/`shard_id`; `num_samples`
    per shard); `num_parallel_workers` is accepted and ignored, `cache` must be None."""

    def __init__(self, dataset_files: str | Sequence[str], field_delim: str = ",",
                 column_defaults: Sequence[Any] | None = None,
                 column_names: Sequence[str] | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | Shuffle = Shuffle.GLOBAL,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        if not isinstance(field_delim, str) or len(field_delim) != 1 or field_delim in '"\r\n':
            raise ValueError(f"For '{api}', the 'field_delim' should be one character other than "
                             f"'\"', '\\r' and '\\n', but got {field_delim!r}.")
        defaults = _check_defaults(column_defaults, api)
        names = _check_names(column_names, api)
        rows, counts = [], []
        for path in dataset_file_list(dataset_files, api):
            records = self._records(path, field_delim, api)
            if names is None:                    # this file's header names the columns
                if not records:
                    raise ValueError(f"For '{api}', the file '{path}' should start with a "
                                     f"header line naming the columns, but it is empty.")
                header = [h.rstrip("\r") for h in records[0][1]]
                names = _check_names(header, api)
            if column_names is None:
                records = records[1:]
            if len(defaults) > len(names):
                raise ValueError(f"For '{api}', the 'column_defaults' should have at most one "
                                 f"value per column ({len(names)}), but got {len(defaults)}.")
            kinds = defaults + [""] * (len(names) - len(defaults))
            for line, fields in records:
                where = f"'{path}' line {line}"
                if len(fields) != len(names):
                    raise RuntimeError(f"For '{api}', every row should have one field per "
                                       f"column ({len(names)}: {names}), but got "
                                       f"{len(fields)} at {where}.")
                rows.append(tuple(_field(f, d, api, where) for f, d in zip(fields, kinds)))
            counts.append(len(records))
        super().__init__(rows, counts, names, num_samples, shuffle, num_shards, shard_id, cache)

    @staticmethod
    def _records(path: str, delim: str, api: str) -> list:
        """(line number, fields) of each non-blank record of `path`."""
        reader = csv.reader(io.StringIO(read_text(path, api)), delimiter=delim, strict=True)
        out = []
        try:
            for fields in reader:
                if fields:
                    out.append((reader.line_num, fields))
        except csv.Error as exc:
            raise RuntimeError(f"For '{api}', the file '{path}' is not valid CSV at line "
                               f"{reader.line_num}: {exc}.") from exc
        return out
