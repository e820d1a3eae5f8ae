"""`RandomDataset`: rows of random values shaped by a `Schema`, for trying a pipeline (as
MindSpore's).

Without a schema, one is drawn: 1-4 columns `c0`, `c1`, ... of dtypes among uint8, int32,
int64, float32, float64 and bool, ranks 1-3, dims 1-8. A dim the schema leaves unknown
(-1, or no shape) is drawn in 1-8 per row. `total_rows` defaults to the schema file's
numRows, else a draw in [1, 1024]. Values: integers uniform over their dtype's range,
floats uniform in [0, 1), bools fair. Row i is drawn from (the dataset seed when built, i)
alone, so every shard and order holds the same rows; the values differ from MindSpore's.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset import config
from msops.dataset.files import FileDataset
from msops.dataset.schema import Schema

__all__ = ["RandomDataset"]

_RANDOM_TYPES = [np.uint8, np.int32, np.int64, np.float32, np.float64, np.bool_]


def _random_schema(rng: np.random.Generator) -> Schema:
    schema = Schema()
    for k in range(int(rng.integers(1, 5))):
        dtype = _RANDOM_TYPES[int(rng.integers(len(_RANDOM_TYPES)))]
        shape = [int(d) for d in rng.integers(1, 9, int(rng.integers(1, 4)))]
        schema.add_column(f"c{k}", dtype, shape)
    return schema


def _values(dtype: np.dtype, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    return rng.random(shape).astype(dtype)


class _RandomRows:
    def __init__(self, count: int, columns: list, seed: int) -> None:
        self.count, self.columns, self.seed = count, columns, seed

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> tuple:
        rng = np.random.default_rng([self.seed, i, 0xDA7A5E7])
        row = []
        for _, dtype, shape in self.columns:
            dims = tuple(int(rng.integers(1, 9)) if d == -1 else d for d in shape)
            row.append(_values(np.dtype(dtype), dims, rng))
        return tuple(row)


class RandomDataset(FileDataset):
    """Random rows of `schema` (a Schema, a schema file's path, or None: drawn; module
    docstring), `columns_list` choosing and ordering its columns, `total_rows` rows.
    Sampling as the readers (shuffled by default, `num_shards`/`shard_id`,
    `num_samples`); `num_parallel_workers` is ignored, `cache` must be None."""

    def __init__(self, total_rows: int | None = None, schema: Schema | str | None = None,
                 columns_list: Sequence[str] | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, cache: Any = None,
                 shuffle: bool | None = None, num_shards: int | None = None,
                 shard_id: int | None = None) -> None:
        api = "RandomDataset"
        seed = config.get_seed()
        rng = np.random.default_rng([seed, 0x5C4E4A])
        if schema is None:
            schema = _random_schema(rng)
        elif isinstance(schema, str):
            schema = Schema(schema)
        elif not isinstance(schema, Schema):
            raise TypeError(f"For '{api}', the 'schema' should be a Schema, a schema file path "
                            f"or None, but got {type(schema).__name__}.")
        if not schema.columns:
            raise ValueError(f"For '{api}', the 'schema' should have at least one column.")
        columns = schema.columns
        if columns_list is not None:
            names = [c[0] for c in columns]
            if not isinstance(columns_list, (list, tuple)) or not columns_list or not all(
                    c in names for c in columns_list):
                raise ValueError(f"For '{api}', the 'columns_list' should name columns of the "
                                 f"schema {names}, but got {columns_list!r}.")
            columns = [columns[names.index(c)] for c in columns_list]
        strings = [c[0] for c in columns if np.dtype(c[1]).kind == "U"]
        if strings:
            raise ValueError(f"For '{api}', the schema's columns should be numeric (random "
                             f"strings are not generated), but {strings} are strings.")
        if total_rows is None:
            total_rows = schema.num_rows or int(rng.integers(1, 1025))
        validator.check_positive_int(total_rows, "total_rows", api)
        super().__init__(_RandomRows(total_rows, columns, seed), [c[0] for c in columns],
                         num_samples, shuffle, None, num_shards, shard_id, cache)
