"""`mindspore.dataset.Schema`: the columns (name, numpy dtype, shape) a dataset produces,
built with `add_column` or read from MindSpore's JSON schema file:

    {"datasetType": "...", "numRows": 8,
     "columns": {"image": {"type": "uint8", "rank": 3, "shape": [32, 32, 3]},
                 "label": {"type": "int32", "rank": 0}}}

A dim of -1 (or a column without a shape) is unknown. `RandomDataset` generates rows of a
schema.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from msops.dataset.transforms.transforms import to_np_dtype

__all__ = ["Schema"]

_KEYS = {"datasetType", "numRows", "columns"}


def _is_string(de_type: Any) -> bool:
    """MindSpore's string column type: 'string' or mstype.string."""
    from msops.common import dtype as mstype
    return (isinstance(de_type, str) and de_type == "string") or de_type is mstype.string


class Schema:
    """Columns as (name, numpy dtype, shape tuple): a shape given as None is (-1,), an
    unknown dim of rank 1 (as MindSpore); `num_rows` from a file's numRows (None when not
    given)."""

    def __init__(self, schema_file: str | None = None) -> None:
        self.columns: list = []
        self.num_rows: int | None = None
        self.dataset_type = ""
        if schema_file is not None:
            try:
                with open(schema_file, encoding="utf-8") as f:
                    obj = json.load(f)
            except (OSError, ValueError) as exc:
                raise RuntimeError(f"For 'Schema', the 'schema_file' should be a readable JSON "
                                   f"schema, but '{schema_file}' failed to load: {exc}") from exc
            self.from_json(obj)

    def add_column(self, name: str, de_type: Any, shape: Sequence[int] | None = None) -> None:
        """Add column `name` of dtype `de_type` (an msops dtype or a numpy dtype name such as
        'int64') and `shape` (None: unknown; -1: an unknown dim)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"For 'add_column', the 'name' should be a non-empty str, but got "
                            f"{name!r}.")
        try:
            dtype = np.dtype(np.str_) if _is_string(de_type) else \
                to_np_dtype(de_type, "add_column", "de_type")
        except TypeError:
            raise ValueError(f"For 'add_column', the 'de_type' should be a known numeric type "
                             f"(an msops dtype or a name such as 'int64'), but got "
                             f"{de_type!r}.") from None
        if shape is not None and (not isinstance(shape, (list, tuple)) or not all(
                isinstance(d, int) and not isinstance(d, bool) and (d > 0 or d == -1)
                for d in shape)):
            raise TypeError(f"For 'add_column', the 'shape' should be None or a list of ints "
                            f"(> 0, or -1 for unknown), but got {shape!r}.")
        if any(c[0] == name for c in self.columns):
            raise ValueError(f"For 'add_column', the column '{name}' is already in the schema.")
        self.columns.append((name, dtype, (-1,) if shape is None else tuple(shape)))

    def parse_columns(self, columns: Any) -> None:
        """Add columns from a schema file's decoded `columns`: a dict {name: {"type", "shape"
        (optional)}} or a list of dicts with "name", "type" and an optional "shape"."""
        if isinstance(columns, dict):
            items = [dict(value, name=name) if isinstance(value, dict) else value
                     for name, value in columns.items()]
        elif isinstance(columns, (list, tuple)):
            items = list(columns)
        else:
            raise TypeError(f"For 'parse_columns', the 'columns' should be a dict or a list of "
                            f"dicts, but got {type(columns).__name__}.")
        for item in items:
            if not isinstance(item, dict) or "name" not in item or "type" not in item:
                raise RuntimeError(f"For 'parse_columns', every column should have a 'name' "
                                   f"and a 'type', but got {item!r}.")
            shape = item.get("shape")
            rank = item.get("rank")
            if shape is None and isinstance(rank, int) and rank >= 0:
                shape = [-1] * rank             # a rank without a shape: unknown dims
            self.add_column(item["name"], item["type"], shape)

    def from_json(self, json_obj: dict) -> None:
        """Read a decoded JSON schema (module docstring)."""
        if not isinstance(json_obj, dict) or "columns" not in json_obj:
            raise RuntimeError("For 'from_json', the schema should be an object with "
                               "'columns', but they are missing.")
        unknown = sorted(set(json_obj) - _KEYS)
        if unknown:
            raise RuntimeError(f"For 'from_json', the schema should have only the items "
                               f"{sorted(_KEYS)}, but got unknown {unknown}.")
        self.dataset_type = json_obj.get("datasetType", "")
        rows = json_obj.get("numRows")
        if rows is not None and (not isinstance(rows, int) or rows < 0):
            raise RuntimeError(f"For 'from_json', the 'numRows' should be an int >= 0, but got "
                               f"{rows!r}.")
        self.num_rows = rows or None
        self.parse_columns(json_obj["columns"])

    def to_json(self) -> str:
        """The schema as MindSpore's JSON text."""
        columns = {}
        for name, dtype, shape in self.columns:
            name_ = "string" if np.dtype(dtype).kind == "U" else np.dtype(dtype).name
            entry: dict = {"type": name_, "rank": len(shape)}
            if shape:
                entry["shape"] = list(shape)
            columns[name] = entry
        obj: dict = {"datasetType": self.dataset_type, "columns": columns}
        if self.num_rows is not None:
            obj["numRows"] = self.num_rows
        return json.dumps(obj, indent=2)

    def __repr__(self) -> str:
        return self.to_json()
