"""`mindspore.dataset.text.Vocab`: a bijection between tokens (str) and ids (int >= 0),
built from a list, a dict, a file (one token a line) or the token counts of a dataset."""
from __future__ import annotations

import collections
from typing import Any, Sequence

import numpy as np

__all__ = ["Vocab"]


def _check_specials(special_tokens: Any, special_first: Any, api: str) -> list:
    if special_tokens is None:
        special_tokens = []
    if not isinstance(special_tokens, (list, tuple)) or not all(
            isinstance(t, str) for t in special_tokens):
        raise TypeError(f"For '{api}', the 'special_tokens' should be a list of str, but got "
                        f"{special_tokens!r}.")
    if len(set(special_tokens)) != len(special_tokens):
        raise ValueError(f"For '{api}', the 'special_tokens' should be distinct, but got "
                         f"{list(special_tokens)}.")
    if not isinstance(special_first, bool):
        raise TypeError(f"For '{api}', the 'special_first' should be bool, but got "
                        f"{type(special_first).__name__}.")
    return list(special_tokens)


class Vocab:
    """Tokens and their ids. Build it with the `from_*` class methods."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._tokens: dict[int, str] = {}

    @classmethod
    def _of(cls, words: Sequence[str], special_tokens: list, special_first: bool,
            api: str) -> "Vocab":
        """Ids 0, 1, ... for `words` (special tokens first or last; a word that is also a
        special token takes the special token's place)."""
        words = [w for w in words if w not in special_tokens]
        order = special_tokens + words if special_first else words + special_tokens
        if len(set(order)) != len(order):
            dup = [w for w, n in collections.Counter(order).items() if n > 1]
            raise ValueError(f"For '{api}', every word should appear once, but got "
                             f"duplicates {dup[:5]}.")
        return cls._from_ids({w: k for k, w in enumerate(order)})

    @classmethod
    def _from_ids(cls, ids: dict) -> "Vocab":
        vocab = cls()
        vocab._ids = dict(ids)
        vocab._tokens = {i: w for w, i in ids.items()}
        return vocab

    @classmethod
    def from_list(cls, word_list: Sequence[str], special_tokens: Sequence[str] | None = None,
                  special_first: bool = True) -> "Vocab":
        """Ids in list order (after `special_tokens` when `special_first`, else before)."""
        api = "Vocab.from_list"
        if not isinstance(word_list, (list, tuple)) or not all(
                isinstance(w, str) for w in word_list):
            raise TypeError(f"For '{api}', the 'word_list' should be a list of str, but got "
                            f"{word_list!r}.")
        return cls._of(list(word_list), _check_specials(special_tokens, special_first, api),
                       special_first, api)

    @classmethod
    def from_dict(cls, word_dict: dict) -> "Vocab":
        """The given {word: id} (ids int >= 0, distinct)."""
        api = "Vocab.from_dict"
        if not isinstance(word_dict, dict) or not all(
                isinstance(w, str) and isinstance(i, int) and not isinstance(i, bool) and i >= 0
                for w, i in word_dict.items()):
            raise TypeError(f"For '{api}', the 'word_dict' should be a dict from str to int >= "
                            f"0, but got {word_dict!r}.")
        if len(set(word_dict.values())) != len(word_dict):
            raise ValueError(f"For '{api}', the ids of 'word_dict' should be distinct.")
        return cls._from_ids(word_dict)

    @classmethod
    def from_file(cls, file_path: str, delimiter: str = "", vocab_size: int | None = None,
                  special_tokens: Sequence[str] | None = None,
                  special_first: bool = True) -> "Vocab":
        """One word a line of `file_path` (the part before `delimiter` when given; blank
        lines skipped), the first `vocab_size` lines."""
        api = "Vocab.from_file"
        specials = _check_specials(special_tokens, special_first, api)
        if vocab_size is not None and (not isinstance(vocab_size, int) or vocab_size <= 0):
            raise ValueError(f"For '{api}', the 'vocab_size' should be None or an int > 0, but "
                             f"got {vocab_size!r}.")
        try:
            with open(file_path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise ValueError(f"For '{api}', the 'file_path' '{file_path}' could not be read: "
                             f"{exc}.") from exc
        words = []
        for line in lines:
            word = line.split(delimiter)[0] if delimiter else line
            if word:
                words.append(word)
            if vocab_size is not None and len(words) == vocab_size:
                break
        return cls._of(words, specials, special_first, api)

    @classmethod
    def from_dataset(cls, dataset: Any, columns: str | Sequence[str] | None = None,
                     freq_range: tuple | None = None, top_k: int | None = None,
                     special_tokens: Sequence[str] | None = None,
                     special_first: bool = True) -> "Vocab":
        """The tokens of `columns` (default: all) of `dataset`, counted over one pass:
        those with a count in `freq_range` (min, max; None ends: unbounded), the `top_k`
        most frequent, ordered by count (high first), ties by token."""
        api = "Vocab.from_dataset"
        specials = _check_specials(special_tokens, special_first, api)
        names = dataset.get_col_names()
        columns = names if columns is None else [columns] if isinstance(columns, str) else \
            list(columns)
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise ValueError(f"For '{api}', the 'columns' should be columns of the dataset "
                             f"{names}, but got {unknown}.")
        low, high = (None, None) if freq_range is None else freq_range
        if top_k is not None and (not isinstance(top_k, int) or top_k <= 0):
            raise ValueError(f"For '{api}', the 'top_k' should be None or an int > 0, but got "
                             f"{top_k!r}.")
        counts: collections.Counter = collections.Counter()
        for row in dataset.create_dict_iterator(num_epochs=1, output_numpy=True):
            for c in columns:
                value = np.asarray(row[c])
                if value.dtype.kind != "U":
                    raise TypeError(f"For '{api}', the column '{c}' should hold strings, but "
                                    f"got dtype {value.dtype}.")
                counts.update(str(v) for v in value.reshape(-1))
        kept = [(w, n) for w, n in counts.items()
                if (low is None or n >= low) and (high is None or n <= high)]
        kept.sort(key=lambda wn: (-wn[1], wn[0]))
        if top_k is not None:
            kept = kept[:top_k]
        return cls._of([w for w, _ in kept], specials, special_first, api)

    def vocab(self) -> dict:
        """{token: id}."""
        return dict(self._ids)

    def tokens_to_ids(self, tokens: str | Sequence[str] | np.ndarray) -> int | list:
        """The id of a token (-1 when absent), or the ids of a list of tokens."""
        if isinstance(tokens, np.ndarray):
            tokens = tokens.tolist()
        if isinstance(tokens, str):
            return self._ids.get(tokens, -1)
        return [self._ids.get(str(t), -1) for t in tokens]

    def ids_to_tokens(self, ids: int | Sequence[int] | np.ndarray) -> str | list:
        """The token of an id ('' when absent), or the tokens of a list of ids."""
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        if isinstance(ids, (int, np.integer)):
            if ids < 0:
                raise ValueError(f"For 'Vocab.ids_to_tokens', the 'ids' should be >= 0, but "
                                 f"got {ids}.")
            return self._tokens.get(int(ids), "")
        return [self.ids_to_tokens(i) for i in ids]
