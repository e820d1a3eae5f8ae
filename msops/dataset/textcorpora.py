"""MindSpore's readers of text corpora kept as local files in their published layouts.

CSV corpora (no header line, every field a str column; usage 'train', 'test' or 'all',
the files sorted by name, so 'all' reads test.csv before train.csv, as MindSpore):

    AGNewsDataset         train.csv, test.csv     index, title, description
    AmazonReviewDataset   train.csv, test.csv     label, title, content
    DBpediaDataset        train.csv, test.csv     class, title, content
    SogouNewsDataset      train.csv, test.csv     index, title, content
    YahooAnswersDataset   train.csv, test.csv     class, title, content, answer
    YelpReviewDataset     train.csv, test.csv     label, text

Line corpora (one `text` row per non-empty line):

    WikiTextDataset       wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens
    PennTreebankDataset   ptb.train.txt, ptb.valid.txt, ptb.test.txt
    EnWik9Dataset         enwik9

Their `shuffle` (default Shuffle.GLOBAL, EnWik9 True), sharding and `num_samples` are
linefiles.py's, as CSVDataset and TextFileDataset.
"""
from __future__ import annotations

import os
from typing import Any

from msops.dataset.csvfile import CSVDataset
from msops.dataset.files import check_dir, pick_usage
from msops.dataset.linefiles import Shuffle, TextFileDataset

__all__ = ["AGNewsDataset", "AmazonReviewDataset", "DBpediaDataset", "SogouNewsDataset",
           "YahooAnswersDataset", "YelpReviewDataset", "WikiTextDataset",
           "PennTreebankDataset", "EnWik9Dataset"]


def corpus_files(dataset_dir: Any, usage: str | None, files: dict, api: str) -> list[str]:
    """The existing files of `usage` (None: 'all') under `dataset_dir`, by name: `files` maps
    each usage but 'all' to its file name."""
    root = check_dir(dataset_dir, api)
    usage = pick_usage(usage, list(files) + ["all"], api, "all")
    names = list(files.values()) if usage == "all" else [files[usage]]
    paths = sorted(os.path.join(root, n) for n in names)
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"For '{api}', the 'dataset_dir' should hold {names} for usage "
                         f"'{usage}', but {missing} do not exist.")
    return paths


class _CsvCorpus(CSVDataset):
    """A headerless CSV corpus (module docstring): its `_columns`."""
    _columns: list

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        files = corpus_files(dataset_dir, usage, {"train": "train.csv", "test": "test.csv"},
                             type(self).__name__)
        super().__init__(files, column_names=list(self._columns), num_samples=num_samples,
                         shuffle=shuffle, num_shards=num_shards, shard_id=shard_id, cache=cache)


class _CsvCorpusShuffleFirst(_CsvCorpus):
    """A CSV corpus whose MindSpore signature puts `shuffle`, `num_shards` and `shard_id`
    before `num_parallel_workers`."""

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, shuffle: bool | Shuffle = Shuffle.GLOBAL,
                 num_shards: int | None = None, shard_id: int | None = None,
                 num_parallel_workers: int | None = None, cache: Any = None) -> None:
        super().__init__(dataset_dir, usage, num_samples, num_parallel_workers, shuffle,
                         num_shards, shard_id, cache)


class AGNewsDataset(_CsvCorpus):
    """AG's News as MindSpore's `AGNewsDataset`: columns index, title, description (str)."""
    _columns = ["index", "title", "description"]


class AmazonReviewDataset(_CsvCorpus):
    """Amazon reviews (Polarity or Full) as MindSpore's `AmazonReviewDataset`: columns
    label, title, content (str)."""
    _columns = ["label", "title", "content"]


class DBpediaDataset(_CsvCorpus):
    """DBpedia as MindSpore's `DBpediaDataset`: columns class, title, content (str)."""
    _columns = ["class", "title", "content"]


class SogouNewsDataset(_CsvCorpusShuffleFirst):
    """Sogou News as MindSpore's `SogouNewsDataset`: columns index, title, content (str)."""
    _columns = ["index", "title", "content"]


class YahooAnswersDataset(_CsvCorpus):
    """Yahoo! Answers as MindSpore's `YahooAnswersDataset`: columns class, title, content,
    answer (str)."""
    _columns = ["class", "title", "content", "answer"]


class YelpReviewDataset(_CsvCorpusShuffleFirst):
    """Yelp reviews (Polarity or Full) as MindSpore's `YelpReviewDataset`: columns label,
    text (str)."""
    _columns = ["label", "text"]


class _LineCorpus(TextFileDataset):
    """A corpus of lines split by usage into `_files`."""
    _files: dict

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 num_samples: int | None = None, num_parallel_workers: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, cache: Any = None) -> None:
        files = corpus_files(dataset_dir, usage, self._files, type(self).__name__)
        super().__init__(files, num_samples=num_samples, shuffle=shuffle,
                         num_shards=num_shards, shard_id=shard_id, cache=cache)


class WikiTextDataset(_LineCorpus):
    """WikiText-2/103 as MindSpore's `WikiTextDataset`: column text (str), one row per
    non-empty line; usage 'train', 'valid', 'test' or 'all'."""
    _files = {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens",
              "test": "wiki.test.tokens"}


class PennTreebankDataset(_LineCorpus):
    """Penn Treebank as MindSpore's `PennTreebankDataset`: column text (str), one row per
    non-empty line; usage 'train', 'valid', 'test' or 'all'."""
    _files = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}


class EnWik9Dataset(TextFileDataset):
    """enwik9 as MindSpore's `EnWik9Dataset`: column text (str), one row per non-empty line
    of `dataset_dir`/enwik9; shuffled by default (True: Shuffle.GLOBAL)."""

    def __init__(self, dataset_dir: str, num_samples: int | None = None,
                 num_parallel_workers: int | None = None, shuffle: bool | Shuffle = True,
                 num_shards: int | None = None, shard_id: int | None = None,
                 cache: Any = None) -> None:
        path = os.path.join(check_dir(dataset_dir, type(self).__name__), "enwik9")
        if not os.path.isfile(path):
            raise ValueError(f"For '{type(self).__name__}', the 'dataset_dir' should hold the "
                             f"file 'enwik9', but '{path}' does not exist.")
        super().__init__(path, num_samples=num_samples, shuffle=shuffle, num_shards=num_shards,
                         shard_id=shard_id, cache=cache)
