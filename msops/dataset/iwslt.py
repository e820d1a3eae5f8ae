"""`IWSLT2016Dataset` and `IWSLT2017Dataset`: the IWSLT TED talk translation sets from their
extracted layout, as MindSpore's readers.

    IWSLT2016: dataset_dir/texts/<src>/<tgt>/<src>-<tgt>/train.tags.<src>-<tgt>.<lang>
               and IWSLT16.TED.<set>.<src>-<tgt>.<lang>.xml
    IWSLT2017: dataset_dir/texts/DeEnItNlRo/DeEnItNlRo/DeEnItNlRo-DeEnItNlRo/
               train.tags.<src>-<tgt>.<lang> and IWSLT17.TED.<set>.<src>-<tgt>.<lang>.xml

Rows (text, translation), usage 'train' (the tags files, line k with line k, leaving out
the pairs where either line holds a talk's metadata tag: <url, <keywords, <talkid,
<description, <reviewer, <translator, <title, <speaker, <doc, </doc), 'valid' / 'test' (the
XML files' <seg> elements of each <doc>, in turn) or 'all' (train, valid, test); every text
has its surrounding spaces removed. MindSpore's reader writes the cleaned pairs to new
files beside the originals; msops reads them in memory and writes nothing. Shuffling and
sharding as TextFileDataset (linefiles.py).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.dataset.files import check_dir, pick_usage
from msops.dataset.linefiles import LineFileDataset, Shuffle, read_text

__all__ = ["IWSLT2016Dataset", "IWSLT2017Dataset"]

_TAGS = ("<url", "<keywords", "<talkid", "<description", "<reviewer", "<translator", "<title",
         "<speaker", "<doc", "</doc")


def _tag_pairs(src: str, tgt: str, api: str) -> list:
    out = []
    for a, b in zip(read_text(src, api).splitlines(), read_text(tgt, api).splitlines()):
        if any(t in a for t in _TAGS) or any(t in b for t in _TAGS):
            continue
        a, b = a.strip(" "), b.strip(" ")
        if a or b:
            out.append((np.array(a), np.array(b)))
    return out


def _docs(path: str, api: str) -> list:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise RuntimeError(f"For '{api}', the XML file '{path}' could not be parsed: "
                           f"{exc}") from exc
    first = next(iter(root), None)
    if first is None:
        raise RuntimeError(f"For '{api}', the XML file '{path}' has no <doc> elements.")
    return first.findall("doc")


def _xml_pairs(src: str, tgt: str, api: str) -> list:
    out = []
    for doc_a, doc_b in zip(_docs(src, api), _docs(tgt, api)):
        for seg_a, seg_b in zip(doc_a.findall("seg"), doc_b.findall("seg")):
            out.append((np.array((seg_a.text or "").strip(" ")),
                        np.array((seg_b.text or "").strip(" "))))
    return out


class _IWSLT(LineFileDataset):
    """The readers' common body: `_dir` the folder of a pair's files, `_prefix` the XML
    files' prefix."""
    _prefix: str

    def _dir(self, root: str, src: str, tgt: str) -> str:
        raise NotImplementedError

    def _read(self, dataset_dir: str, usage: Any, pair: list, valid_set: str, test_set: str,
              num_samples: Any, shuffle: Any, num_shards: Any, shard_id: Any,
              cache: Any) -> None:
        api = type(self).__name__
        root = check_dir(dataset_dir, api)
        usage = pick_usage(usage, ["train", "valid", "test", "all"], api)
        src, tgt = pair
        folder = self._dir(root, src, tgt)
        rows, counts = [], []
        for part in (["train", "valid", "test"] if usage == "all" else [usage]):
            if part == "train":
                paths = [os.path.join(folder, f"train.tags.{src}-{tgt}.{lang}")
                         for lang in pair]
            else:
                name = valid_set if part == "valid" else test_set
                paths = [os.path.join(folder, f"{self._prefix}.TED.{name}.{src}-{tgt}.{lang}.xml")
                         for lang in pair]
            for path in paths:
                if not os.path.isfile(path):
                    raise ValueError(f"For '{api}', the file '{path}' of usage '{part}' does not "
                                     f"exist.")
            found = (_tag_pairs if part == "train" else _xml_pairs)(*paths, api)
            rows += found
            counts.append(len(found))
        super().__init__(rows, counts, ["text", "translation"], num_samples, shuffle, num_shards,
                         shard_id, cache)


_PAIRS_2016 = {"en": ("ar", "de", "fr", "cs"), "ar": ("en",), "de": ("en",), "fr": ("en",),
               "cs": ("en",)}
_SETS_2016 = ("dev2010", "tst2010", "tst2011", "tst2012", "tst2013", "tst2014")


def _pair(language_pair: Any, default: list, allowed: dict, api: str) -> list:
    pair = default if language_pair is None else list(language_pair)
    if len(pair) != 2 or pair[0] not in allowed or pair[1] not in allowed[pair[0]]:
        raise ValueError(f"For '{api}', the 'language_pair' should be [src, tgt] with tgt in "
                         f"{allowed}, but got {language_pair!r}.")
    return pair


class IWSLT2016Dataset(_IWSLT):
    """IWSLT 2016 as MindSpore's `IWSLT2016Dataset` (module docstring): `language_pair`
    (default ['de', 'en']) between English and ar, de, fr, cs; `valid_set` (default
    'tst2013') and `test_set` ('tst2014') among dev2010, tst2010 ... tst2014."""
    _prefix = "IWSLT16"

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 language_pair: Sequence[str] | None = None, valid_set: str | None = None,
                 test_set: str | None = None, num_samples: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, num_parallel_workers: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        pair = _pair(language_pair, ["de", "en"], _PAIRS_2016, api)
        valid_set = "tst2013" if valid_set is None else valid_set
        test_set = "tst2014" if test_set is None else test_set
        validator.check_string("valid_set", valid_set, list(_SETS_2016), api)
        validator.check_string("test_set", test_set, list(_SETS_2016), api)
        self._read(dataset_dir, usage, pair, valid_set, test_set, num_samples, shuffle,
                   num_shards, shard_id, cache)

    def _dir(self, root: str, src: str, tgt: str) -> str:
        return os.path.join(root, "texts", src, tgt, f"{src}-{tgt}")


_LANGS_2017 = ("de", "en", "it", "nl", "ro")


class IWSLT2017Dataset(_IWSLT):
    """IWSLT 2017 as MindSpore's `IWSLT2017Dataset` (module docstring): `language_pair`
    (default ['de', 'en']) between two of de, en, it, nl, ro; valid set dev2010, test set
    tst2010."""
    _prefix = "IWSLT17"

    def __init__(self, dataset_dir: str, usage: str | None = None,
                 language_pair: Sequence[str] | None = None, num_samples: int | None = None,
                 shuffle: bool | Shuffle = Shuffle.GLOBAL, num_shards: int | None = None,
                 shard_id: int | None = None, num_parallel_workers: int | None = None,
                 cache: Any = None) -> None:
        api = type(self).__name__
        allowed = {a: tuple(b for b in _LANGS_2017 if b != a) for a in _LANGS_2017}
        pair = _pair(language_pair, ["de", "en"], allowed, api)
        self._read(dataset_dir, usage, pair, "dev2010", "tst2010", num_samples, shuffle,
                   num_shards, shard_id, cache)

    def _dir(self, root: str, src: str, tgt: str) -> str:
        return os.path.join(root, "texts", "DeEnItNlRo", "DeEnItNlRo", "DeEnItNlRo-DeEnItNlRo")
