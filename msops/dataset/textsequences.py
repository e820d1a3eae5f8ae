"""Readers of tagged, paired and question-answering text corpora, as MindSpore's readers
(files read when the dataset is built; `shuffle` modes, sharding and `num_samples` as
TextFileDataset's, linefiles.py):

    CoNLL2000Dataset  train.txt, test.txt: 'word pos chunk' per line, a blank line between
                      sentences -> one row per sentence: word, pos_tag, chunk_tag (1-D str)
    UDPOSDataset      en-ud-tag.v2.{train,dev,test}.txt (usage 'train', 'valid', 'test'):
                      'word<TAB>universal<TAB>stanford' lines, blank-line separated ->
                      word, universal, stanford (1-D str)
    Multi30kDataset   training/train.{en,de}, validation/val.{en,de},
                      mmt16_task1_test/test.{en,de}: line k of one language with line k of
                      the other -> text, translation (str), `language_pair` ['en', 'de']
                      or ['de', 'en'] choosing which is which
    SQuADDataset      train-v1.1.json / dev-v1.1.json (or the v2.0 names): one row per
                      question -> context, question (str), text (1-D str: the answers),
                      answer_start (1-D uint32); a question without answers (SQuAD 2.0)
                      gives text [''] and answer_start [4294967295] (MindSpore's -1 as
                      uint32)
    SST2Dataset       train.tsv, dev.tsv (header 'sentence<TAB>label') -> sentence, label
                      (str); test.tsv (header 'index<TAB>sentence') -> sentence

With usage 'all' the files are read in name order (as MindSpore sorts them).
"""
from __future__ import annotations

import json
import os
from typing import Any, Sequence

import numpy as np

from msops.dataset.files import check_dir, pick_usage
from msops.dataset.linefiles import LineFileDataset, Shuffle, read_text

__all__ = ["CoNLL2000Dataset", "UDPOSDataset", "Multi30kDataset", "SQuADDataset",
           "SST2Dataset"]


def _files(root: str, usage: str, names: dict, api: str) -> list[str]:
    """The existing files of `usage` ('all': every one, by name) from {usage: name}."""
    picked = sorted(names.values()) if usage == "all" else [names[usage]]
    paths = [os.path.join(root, n) for n in picked]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"For '{api}', the 'dataset_dir' should hold {picked} for usage "
                         f"'{usage}', but {missing} do not exist.")
    return paths


def _sentences(text: str, width: int, sep: str | None, path: str, api: str) -> list:
    """The blank-line separated sentences of `text`: per sentence, one list per field."""
    out, current = [], [[] for _ in range(width)]
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split(sep)
        if not line.strip():
            if current[0]:
                out.append(current)
                current = [[] for _ in range(width)]
            continue
        if len(fields) != width:
            raise RuntimeError(f"For '{api}', line {number} of '{path}' should have {width} "
                               f"fields, but got {len(fields)}.")
        for column, value in zip(current, fields):
            column.append(value.strip())
    if current[0]:
        out.append(current)
    return out


class _TaggedCorpus(LineFileDataset):
    """One row per sentence of `width`-field lines."""

    def _read(self, paths: list, width: int, sep: str | None, columns: list,
              num_samples: Any, shuffle: Any, num_shards: Any, shard_id: Any,
              cache: Any) -> None:
        api = type(self).__name__
        rows, counts = [], []
        for path in paths:
            found = _sentences(read_text(path, api), width, sep, path, api)
            rows += [tuple(np.array(c, np.str_) for c in s) for s in found]
            counts.append(len(found))
        super().__init__(rows, counts, columns, num_samples, shuffle, num_shards, shard_id,
                         cache)


class CoNLL2000Dataset(_TaggedCorpus):
    """CoNLL-2000 chunking as MindSpore's `CoNLL2000Dataset` (module docstring); usage
    'train', 'test' or 'all'/None."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, shuffle: bool | Shuffle = Shuffle.GLOBAL,
                 num_shards: int | None = None, shard_id: int | None = None,
                 num_parallel_workers: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        usage = pick_usage(usage, ["train", "test", "all"], api, "all")
        paths = _files(check_dir(dataset_dir, api), usage,
                       {"train": "train.txt", "test": "test.txt"}, api)
        self._read(paths, 3, None, ["word", "pos_tag", "chunk_tag"], num_samples, shuffle,
                   num_shards, shard_id, cache)


class UDPOSDataset(_TaggedCorpus):
    """UDPOS as MindSpore's `UDPOSDataset` (module docstring); usage 'train', 'valid',
    'test' or 'all'/None."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, shuffle: bool | Shuffle = Shuffle.GLOBAL,
                 num_shards: int | None = None, shard_id: int | None = None,
                 num_parallel_workers: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        usage = pick_usage(usage, ["train", "valid", "test", "all"], api, "all")
        names = {"train": "en-ud-tag.v2.train.txt", "valid": "en-ud-tag.v2.dev.txt",
                 "test": "en-ud-tag.v2.test.txt"}
        paths = _files(check_dir(dataset_dir, api), usage, names, api)
        self._read(paths, 3, "\t", ["word", "universal", "stanford"], num_samples, shuffle,
                   num_shards, shard_id, cache)


class Multi30kDataset(LineFileDataset):
    """Multi30k as MindSpore's `Multi30kDataset` (module docstring); usage 'train',
    'valid', 'test' or 'all'/None; `shuffle` None is Shuffle.GLOBAL."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 language_pair: Sequence[str] | None = None, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: Any = None,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "valid", "test", "all"], api, "all")
        pair = ["en", "de"] if language_pair is None else list(language_pair)
        if pair not in (["en", "de"], ["de", "en"]):
            raise ValueError(f"For '{api}', the 'language_pair' should be ['en', 'de'] or "
                             f"['de', 'en'], but got {language_pair!r}.")
        stems = {"train": "training/train", "valid": "validation/val",
                 "test": "mmt16_task1_test/test"}
        rows, counts = [], []
        for stem in (sorted(stems.values()) if usage == "all" else [stems[usage]]):
            texts = []
            for lang in pair:
                path = os.path.join(root, f"{stem}.{lang}")
                if not os.path.isfile(path):
                    raise ValueError(f"For '{api}', the file '{path}' of usage '{usage}' does "
                                     f"not exist.")
                texts.append(read_text(path, api).splitlines())
            if len(texts[0]) != len(texts[1]):
                raise RuntimeError(f"For '{api}', the files of '{stem}' should have the same "
                                   f"number of lines, but got {len(texts[0])} and "
                                   f"{len(texts[1])}.")
            pairs = [(np.array(a), np.array(b)) for a, b in zip(*texts) if a or b]
            rows += pairs
            counts.append(len(pairs))
        super().__init__(rows, counts, ["text", "translation"], num_samples,
                         Shuffle.GLOBAL if shuffle is None else shuffle, num_shards, shard_id,
                         cache)


class SQuADDataset(LineFileDataset):
    """SQuAD 1.1 / 2.0 as MindSpore's `SQuADDataset` (module docstring); usage 'train',
    'dev' or 'all'/None."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "dev", "all"], api, "all")
        parts = ["train", "dev"] if usage == "all" else [usage]
        candidates = [os.path.join(root, f"{p}-v{v}.json") for p in parts for v in ("1.1", "2.0")]
        paths = sorted(p for p in candidates if os.path.isfile(p))
        if not paths:
            raise ValueError(f"For '{api}', the 'dataset_dir' should hold '<usage>-v1.1.json' "
                             f"or '<usage>-v2.0.json' for usage '{usage}', but '{root}' does "
                             f"not.")
        rows, counts = [], []
        for path in paths:
            found = self._questions(path, api)
            rows += found
            counts.append(len(found))
        super().__init__(rows, counts, ["context", "question", "text", "answer_start"],
                         num_samples, shuffle, num_shards, shard_id, cache)

    @staticmethod
    def _questions(path: str, api: str) -> list:
        try:
            tree = json.loads(read_text(path, api))
            rows = []
            for article in tree["data"]:
                for paragraph in article["paragraphs"]:
                    for qa in paragraph["qas"]:
                        answers = qa.get("answers", [])
                        texts = [a["text"] for a in answers] or [""]
                        starts = [a["answer_start"] for a in answers] or [2 ** 32 - 1]
                        rows.append((np.array(paragraph["context"]), np.array(qa["question"]),
                                     np.array(texts, np.str_), np.array(starts, np.uint32)))
            return rows
        except (ValueError, KeyError, TypeError) as exc:
            raise RuntimeError(f"For '{api}', the file '{path}' should be SQuAD JSON (data -> "
                               f"paragraphs -> context, qas -> question, answers), but it is "
                               f"not: {exc!r}.") from exc


class SST2Dataset(LineFileDataset):
    """SST-2 as MindSpore's `SST2Dataset` (module docstring); usage 'train' (default),
    'dev' or 'test'."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "dev", "test"], api, "train")
        path, = _files(root, usage, {usage: f"{usage}.tsv"}, api)
        rows = []
        for number, line in enumerate(read_text(path, api).splitlines()[1:], 2):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise RuntimeError(f"For '{api}', line {number} of '{path}' should have 2 "
                                   f"tab-separated fields, but got {len(fields)}.")
            rows.append((np.array(fields[1]),) if usage == "test" else
                        (np.array(fields[0]), np.array(fields[1])))
        columns = ["sentence"] if usage == "test" else ["sentence", "label"]
        super().__init__(rows, [len(rows)], columns, num_samples, shuffle, num_shards,
                         shard_id, cache)
