"""`CLUEDataset`: the CLUE benchmark's JSON-lines files, as MindSpore's reader.

Each line of `dataset_files` is a JSON object; the columns are chosen by `task` and
`usage`, and come in name order (MindSpore keeps them in a sorted map):

    AFQMC, CMNLI  train/eval: label, sentence1, sentence2    test: id, sentence1, sentence2
    TNEWS         train/eval: keywords, label, label_desc, sentence
                  test: id, keywords, sentence
    IFLYTEK       train/eval: label, label_des, sentence      test: id, sentence
    CSL           train/eval: abst, id, keyword, label        test: abst, id, keyword
    WSC           train/eval: idx, label, span1_index, span1_text, span2_index, span2_text,
                  text (span* from the object's 'target')     test: the same without label

A value keeps its JSON type as MindSpore's reader does: a string is a str scalar, an
integer >= 0 a uint32, a negative integer an int32, a number with a fraction a float32, a
list a 1-D array of its items. Files, `shuffle` modes and sharding are linefiles.py's.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.linefiles import LineFileDataset, Shuffle, dataset_file_list, read_text

__all__ = ["CLUEDataset"]


def _keys(task: str, usage: str) -> dict:
    """{column: key path} of `task` and `usage`."""
    labelled = usage in ("train", "eval")
    if task in ("AFQMC", "CMNLI"):
        keys = {"label": "label"} if labelled else {"id": "id"}
        keys.update(sentence1="sentence1", sentence2="sentence2")
    elif task == "TNEWS":
        keys = {"label": "label", "label_desc": "label_desc"} if labelled else {"id": "id"}
        keys.update(sentence="sentence", keywords="keywords")
    elif task == "IFLYTEK":
        keys = {"label": "label", "label_des": "label_des"} if labelled else {"id": "id"}
        keys.update(sentence="sentence")
    elif task == "CSL":
        keys = {"label": "label"} if labelled else {}
        keys.update(id="id", abst="abst", keyword="keyword")
    else:                                                             # WSC
        keys = {"label": "label"} if labelled else {}
        keys.update({f"span{k}_{f}": f"target/span{k}_{f}" for k in (1, 2)
                     for f in ("index", "text")}, idx="idx", text="text")
    return dict(sorted(keys.items()))


def _value(value: Any, where: str, api: str) -> np.ndarray:
    if isinstance(value, str):
        return np.array(value)
    if isinstance(value, bool) or value is None or isinstance(value, dict):
        raise RuntimeError(f"For '{api}', {where} should be a string, a number or a list, but "
                           f"got {value!r}.")
    if isinstance(value, int):
        return np.array(value, np.uint32 if value >= 0 else np.int32)
    if isinstance(value, float):
        return np.array(value, np.float32)
    items = [_value(v, where, api) for v in value]
    return np.array([i.item() for i in items]) if items else np.array([], np.str_)


class CLUEDataset(LineFileDataset):
    """CLUE as MindSpore's `CLUEDataset` (module docstring): `task` 'AFQMC' (default),
    'TNEWS', 'IFLYTEK', 'CMNLI', 'WSC' or 'CSL'; `usage` 'train' (default), 'test' or
    'eval'. A line missing one of the task's keys is a RuntimeError naming it."""

    def __init__(self, dataset_files: str | Sequence[str], task: str = "AFQMC",
                 usage: str = "train", num_samples: int | None = None,
                 num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        validator.check_string("task", task, ["AFQMC", "TNEWS", "IFLYTEK", "CMNLI", "WSC",
                                              "CSL"], api)
        validator.check_string("usage", usage, ["train", "test", "eval"], api)
        keys = _keys(task, usage)
        rows, counts = [], []
        for path in dataset_file_list(dataset_files, api):
            found = 0
            for number, line in enumerate(read_text(path, api).splitlines(), 1):
                if not line.strip():
                    continue
                where = f"line {number} of '{path}'"
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    raise RuntimeError(f"For '{api}', {where} should be a JSON object: "
                                       f"{exc}.") from exc
                row = []
                for column, chain in keys.items():
                    cursor = obj
                    for key in chain.split("/"):
                        if not isinstance(cursor, dict) or key not in cursor:
                            raise RuntimeError(f"For '{api}', {where} should have the key "
                                               f"'{chain}' (task {task}, usage {usage}), but "
                                               f"it is missing.")
                        cursor = cursor[key]
                    row.append(_value(cursor, f"'{chain}' at {where}", api))
                rows.append(tuple(row))
                found += 1
            counts.append(found)
        super().__init__(rows, counts, list(keys), num_samples, shuffle, num_shards, shard_id,
                         cache)
