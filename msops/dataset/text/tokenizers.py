"""The tokenizers of `mindspore.dataset.text`: a scalar string in, a 1-D str array of
tokens out; with `with_offsets`, also the tokens' UTF-8 byte offsets `offsets_start` and
`offsets_limit` (uint32), as MindSpore gives them. An input without tokens gives one empty
token at offsets (0, 0), as MindSpore. Patterns are Python `re` patterns (MindSpore uses
ICU's regex dialect; the common syntax is the same).

BasicTokenizer is BERT's basic tokenization: optional lower-casing (case folding, NFD,
accents dropped) or a normalization, control characters made spaces, then a split at
whitespace, at every punctuation character and around every CJK character, keeping the
special tokens [CLS], [SEP], [UNK], [PAD], [MASK] and [unusedN] whole
(`preserve_unused_token`). Its offsets index the text after those steps. WordpieceTokenizer
cuts each token into the longest vocab pieces from the left (continuations prefixed by
`suffix_indicator`); its offsets are within each token. BertTokenizer is the two in turn.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any, Callable

import numpy as np

from msops.dataset.text.utils import NormalizeForm, byte_offsets, string_array
from msops.dataset.text.vocab import Vocab
from msops.dataset.transforms.base import TensorOperation

__all__ = ["WhitespaceTokenizer", "UnicodeCharTokenizer", "RegexTokenizer", "BasicTokenizer",
           "WordpieceTokenizer", "BertTokenizer", "PythonTokenizer"]

_UNUSED = re.compile(r"\[CLS\]|\[SEP\]|\[UNK\]|\[PAD\]|\[MASK\]|\[unused\d+\]")


def _check_bool(value: Any, arg: str, api: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For '{api}', the '{arg}' should be bool, but got "
                        f"{type(value).__name__}: {value!r}.")
    return value


def _output(text: str, spans: list, with_offsets: bool) -> Any:
    """The tokens (and byte offsets) of character `spans` of `text`."""
    if not spans:
        spans, tokens = [(0, 0)], [""]
    else:
        tokens = [text[a:b] for a, b in spans]
    array = np.array(tokens, np.str_)
    if not with_offsets:
        return array
    return (array,) + byte_offsets(text, spans)


class _Tokenizer(TensorOperation):
    """A tokenizer of one scalar string: subclasses give `_spans(text)` -> (text the spans
    index, [(start, end), ...])."""

    with_offsets = False

    def __call__(self, *inputs: Any) -> Any:
        name = type(self).__name__
        if len(inputs) != 1:
            raise TypeError(f"For '{name}', the input should be one string, but got "
                            f"{len(inputs)} inputs.")
        array = string_array(inputs[0], name)
        if array.ndim != 0:
            raise ValueError(f"For '{name}', the input should be a scalar string, but got "
                             f"shape {array.shape}.")
        text, spans = self._spans(str(array))
        return _output(text, spans, self.with_offsets)

    def _spans(self, text: str) -> tuple[str, list]:
        raise NotImplementedError


def _regex_spans(text: str, delim: re.Pattern, keep: re.Pattern | None) -> list:
    """The pieces of `text` between matches of `delim`, and the matches `keep` matches."""
    spans, pos = [], 0
    for m in delim.finditer(text):
        if m.start() == m.end():
            continue
        if m.start() > pos:
            spans.append((pos, m.start()))
        if keep is not None and keep.fullmatch(m.group()):
            spans.append((m.start(), m.end()))
        pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))
    return spans


class WhitespaceTokenizer(_Tokenizer):
    """Split at runs of Unicode whitespace."""

    def __init__(self, with_offsets: bool = False) -> None:
        self.with_offsets = _check_bool(with_offsets, "with_offsets", "WhitespaceTokenizer")

    def _spans(self, text: str) -> tuple[str, list]:
        return text, [m.span() for m in re.finditer(r"\S+", text)]


class UnicodeCharTokenizer(_Tokenizer):
    """One token per Unicode code point."""

    def __init__(self, with_offsets: bool = False) -> None:
        self.with_offsets = _check_bool(with_offsets, "with_offsets", "UnicodeCharTokenizer")

    def _spans(self, text: str) -> tuple[str, list]:
        return text, [(k, k + 1) for k in range(len(text))]


def _compile(pattern: Any, arg: str, api: str) -> re.Pattern:
    if not isinstance(pattern, str):
        raise TypeError(f"For '{api}', the '{arg}' should be a str, but got "
                        f"{type(pattern).__name__}.")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"For '{api}', the '{arg}' should be a valid regular expression, but "
                         f"'{pattern}' is not: {exc}.") from exc


class RegexTokenizer(_Tokenizer):
    """Split at matches of `delim_pattern`; a delimiter that `keep_delim_pattern` matches
    (whole) is kept as a token."""

    def __init__(self, delim_pattern: str, keep_delim_pattern: str = "",
                 with_offsets: bool = False) -> None:
        api = "RegexTokenizer"
        self.delim_pattern, self.keep_delim_pattern = delim_pattern, keep_delim_pattern
        self._delim = _compile(delim_pattern, "delim_pattern", api)
        self._keep = _compile(keep_delim_pattern, "keep_delim_pattern", api) \
            if keep_delim_pattern else None
        self.with_offsets = _check_bool(with_offsets, "with_offsets", api)

    def _spans(self, text: str) -> tuple[str, list]:
        return text, _regex_spans(text, self._delim, self._keep)


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def normalize_text(text: str, form: NormalizeForm) -> str:
    """`text` in Unicode normalization `form` (NONE: unchanged)."""
    return text if form is NormalizeForm.NONE else unicodedata.normalize(form.value, text)


def case_fold(text: str) -> str:
    """NFKC case folding (ICU's NFKC_Casefold, as MindSpore's CaseFold)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _normalize_form(form: Any, api: str) -> NormalizeForm:
    try:
        return NormalizeForm(form)
    except ValueError:
        raise TypeError(f"For '{api}', the 'normalization_form' should be a NormalizeForm, but "
                        f"got {form!r}.") from None


class BasicTokenizer(_Tokenizer):
    """BERT's basic tokenization (module docstring)."""

    def __init__(self, lower_case: bool = False, keep_whitespace: bool = False,
                 normalization_form: NormalizeForm = NormalizeForm.NONE,
                 preserve_unused_token: bool = True, with_offsets: bool = False) -> None:
        api = type(self).__name__
        self.lower_case = _check_bool(lower_case, "lower_case", api)
        self.keep_whitespace = _check_bool(keep_whitespace, "keep_whitespace", api)
        self.normalization_form = _normalize_form(normalization_form, api)
        self.preserve_unused_token = _check_bool(preserve_unused_token,
                                                 "preserve_unused_token", api)
        self.with_offsets = _check_bool(with_offsets, "with_offsets", api)

    def _clean(self, text: str) -> str:
        if self.lower_case:
            def fold(piece: str) -> str:
                piece = unicodedata.normalize("NFD", case_fold(piece))
                return "".join(c for c in piece if unicodedata.category(c) != "Mn")
            if self.preserve_unused_token:
                out, pos = [], 0
                for m in _UNUSED.finditer(text):
                    out += [fold(text[pos:m.start()]), m.group()]
                    pos = m.end()
                text = "".join(out + [fold(text[pos:])])
            else:
                text = fold(text)
        else:
            text = normalize_text(text, self.normalization_form)
        return "".join(" " if unicodedata.category(c) in ("Cc", "Cf") and c not in "\t\n\r"
                       else c for c in text)

    def _spans(self, text: str) -> tuple[str, list]:
        text = self._clean(text)
        keep = {m.start(): m.end() for m in _UNUSED.finditer(text)} \
            if self.preserve_unused_token else {}
        spans, start, k = [], None, 0
        while k < len(text):
            ch = text[k]
            if k in keep:
                if start is not None:
                    spans.append((start, k))
                spans.append((k, keep[k]))
                start, k = None, keep[k]
                continue
            if ch.isspace() or _is_punctuation(ch) or _is_cjk(ch):
                if start is not None:
                    spans.append((start, k))
                    start = None
                if not ch.isspace() or self.keep_whitespace:
                    spans.append((k, k + 1))
            elif start is None:
                start = k
            k += 1
        if start is not None:
            spans.append((start, len(text)))
        return text, spans


def _check_vocab(vocab: Any, api: str) -> Vocab:
    if not isinstance(vocab, Vocab):
        raise TypeError(f"For '{api}', the 'vocab' should be a text.Vocab, but got "
                        f"{type(vocab).__name__}.")
    return vocab


class WordpieceTokenizer(TensorOperation):
    """Cut each token of a 1-D str array (or a scalar) into vocab pieces (module
    docstring): a token longer than `max_bytes_per_token` UTF-8 bytes, or one that cannot be
    cut, becomes `unknown_token` (itself when `unknown_token` is '')."""

    def __init__(self, vocab: Vocab, suffix_indicator: str = "##",
                 max_bytes_per_token: int = 100, unknown_token: str = "[UNK]",
                 with_offsets: bool = False) -> None:
        api = type(self).__name__
        self.vocab = _check_vocab(vocab, api)
        for arg, value in (("suffix_indicator", suffix_indicator),
                           ("unknown_token", unknown_token)):
            if not isinstance(value, str):
                raise TypeError(f"For '{api}', the '{arg}' should be a str, but got "
                                f"{type(value).__name__}.")
        if not isinstance(max_bytes_per_token, int) or isinstance(max_bytes_per_token, bool) \
                or max_bytes_per_token < 0:
            raise ValueError(f"For '{api}', the 'max_bytes_per_token' should be an int >= 0, "
                             f"but got {max_bytes_per_token!r}.")
        self.suffix_indicator, self.unknown_token = suffix_indicator, unknown_token
        self.max_bytes_per_token = max_bytes_per_token
        self.with_offsets = _check_bool(with_offsets, "with_offsets", api)

    def pieces(self, word: str) -> list:
        """(piece, byte start, byte limit within `word`) of one token."""
        size = len(word.encode("utf-8"))
        unknown = [(self.unknown_token or word, 0, size)]
        if size > self.max_bytes_per_token:
            return unknown
        ids, out, start = self.vocab.vocab(), [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.suffix_indicator + word[start:end]
                if piece in ids:
                    break
                end -= 1
            if end == start:
                return unknown
            a = len(word[:start].encode("utf-8"))
            out.append((piece, a, a + len(word[start:end].encode("utf-8"))))
            start = end
        return out

    def __call__(self, *inputs: Any) -> Any:
        name = type(self).__name__
        if len(inputs) != 1:
            raise TypeError(f"For '{name}', the input should be one str array, but got "
                            f"{len(inputs)} inputs.")
        words = string_array(inputs[0], name).reshape(-1)
        pieces = [p for w in words for p in self.pieces(str(w))]
        tokens = np.array([p[0] for p in pieces], np.str_)
        if not self.with_offsets:
            return tokens
        return (tokens, np.array([p[1] for p in pieces], np.uint32),
                np.array([p[2] for p in pieces], np.uint32))


class BertTokenizer(_Tokenizer):
    """BasicTokenizer then WordpieceTokenizer (module docstring); offsets are bytes of the
    basic tokenizer's text."""

    def __init__(self, vocab: Vocab, suffix_indicator: str = "##",
                 max_bytes_per_token: int = 100, unknown_token: str = "[UNK]",
                 lower_case: bool = False, keep_whitespace: bool = False,
                 normalization_form: NormalizeForm = NormalizeForm.NONE,
                 preserve_unused_token: bool = True, with_offsets: bool = False) -> None:
        self._basic = BasicTokenizer(lower_case, keep_whitespace, normalization_form,
                                     preserve_unused_token, True)
        self._wordpiece = WordpieceTokenizer(vocab, suffix_indicator, max_bytes_per_token,
                                             unknown_token, True)
        self.with_offsets = _check_bool(with_offsets, "with_offsets", "BertTokenizer")

    def __call__(self, *inputs: Any) -> Any:
        words, starts, _ = self._basic(*inputs)
        out = [(p, int(s) + a, int(s) + b) for w, s in zip(words, starts)
               for p, a, b in self._wordpiece.pieces(str(w))]
        tokens = np.array([p[0] for p in out], np.str_)
        if not self.with_offsets:
            return tokens
        return (tokens, np.array([p[1] for p in out], np.uint32),
                np.array([p[2] for p in out], np.uint32))


class PythonTokenizer:
    """Tokens of a scalar string by a Python function `tokenizer(str) -> list of str`."""

    def __init__(self, tokenizer: Callable[[str], list]) -> None:
        if not callable(tokenizer):
            raise TypeError(f"For 'PythonTokenizer', the 'tokenizer' should be callable, but "
                            f"got {type(tokenizer).__name__}.")
        self.tokenizer = tokenizer

    def __call__(self, *inputs: Any) -> np.ndarray:
        if len(inputs) != 1:
            raise TypeError(f"For 'PythonTokenizer', the input should be one string, but got "
                            f"{len(inputs)} inputs.")
        array = string_array(inputs[0], "PythonTokenizer")
        if array.ndim != 0:
            raise ValueError(f"For 'PythonTokenizer', the input should be a scalar string, but "
                             f"got shape {array.shape}.")
        tokens = self.tokenizer(str(array))
        if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"For 'PythonTokenizer', the 'tokenizer' should return a list of "
                            f"str, but got {tokens!r}.")
        return np.array(list(tokens), np.str_)
