"""The string transforms of `mindspore.dataset.text`: Lookup, Ngram, ToNumber,
SlidingWindow, TruncateSequencePair, CaseFold, RegexReplace and NormalizeUTF8."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.dataset.text.tokenizers import _check_vocab, _compile, case_fold, normalize_text
from msops.dataset.text.utils import NormalizeForm, string_array
from msops.dataset.transforms.base import as_array
from msops.dataset.transforms.transforms import to_np_dtype

__all__ = ["Lookup", "Ngram", "ToNumber", "SlidingWindow", "TruncateSequencePair", "CaseFold",
           "RegexReplace", "NormalizeUTF8"]


def _one_input(inputs: tuple, api: str) -> Any:
    if len(inputs) != 1:
        raise TypeError(f"For '{api}', the input should be one array, but got {len(inputs)}.")
    return inputs[0]


class _StringMap:
    """A transform applying `_map(str) -> str` to every string of an array."""

    def __call__(self, *inputs: Any) -> np.ndarray:
        api = type(self).__name__
        array = string_array(_one_input(inputs, api), api)
        out = [self._map(str(s)) for s in array.reshape(-1)]
        return np.array(out, np.str_).reshape(array.shape)

    def _map(self, text: str) -> str:
        raise NotImplementedError


class CaseFold(_StringMap):
    """Unicode case folding (NFKC_Casefold) of every string."""

    def _map(self, text: str) -> str:
        return case_fold(text)


class NormalizeUTF8(_StringMap):
    """Every string in Unicode normalization form `normalize_form`."""

    def __init__(self, normalize_form: NormalizeForm = NormalizeForm.NFKC) -> None:
        try:
            self.normalize_form = NormalizeForm(normalize_form)
        except ValueError:
            raise TypeError(f"For 'NormalizeUTF8', the 'normalize_form' should be a "
                            f"NormalizeForm, but got {normalize_form!r}.") from None

    def _map(self, text: str) -> str:
        return normalize_text(text, self.normalize_form)


class RegexReplace(_StringMap):
    """Replace the matches of `pattern` by `replace` (all of them, or the first when
    `replace_all` is False) in every string; `replace` may name groups as \\1."""

    def __init__(self, pattern: str, replace: str, replace_all: bool = True) -> None:
        self._pattern = _compile(pattern, "pattern", "RegexReplace")
        if not isinstance(replace, str) or not isinstance(replace_all, bool):
            raise TypeError(f"For 'RegexReplace', the 'replace' should be a str and "
                            f"'replace_all' a bool, but got {replace!r}, {replace_all!r}.")
        self.pattern, self.replace, self.replace_all = pattern, replace, replace_all

    def _map(self, text: str) -> str:
        return self._pattern.sub(self.replace, text, count=0 if self.replace_all else 1)


class Lookup:
    """Token -> id by `vocab` (same shape, dtype `data_type`); a token not in the vocab
    takes the id of `unknown_token`, or is an error without one."""

    def __init__(self, vocab: Any, unknown_token: str | None = None,
                 data_type: Any = mstype.int32) -> None:
        api = "Lookup"
        self.vocab = _check_vocab(vocab, api)
        self.unknown_token = unknown_token
        self.data_type = to_np_dtype(data_type, api, "data_type")
        if unknown_token is not None and unknown_token not in vocab.vocab():
            raise ValueError(f"For '{api}', the 'unknown_token' should be in the vocab, but "
                             f"'{unknown_token}' is not.")

    def __call__(self, *inputs: Any) -> np.ndarray:
        array = string_array(_one_input(inputs, "Lookup"), "Lookup")
        ids = self.vocab.vocab()
        default = None if self.unknown_token is None else ids[self.unknown_token]
        out = []
        for token in array.reshape(-1).tolist():
            if token not in ids and default is None:
                raise RuntimeError(f"For 'Lookup', the token '{token}' is not in the vocab and "
                                   f"no 'unknown_token' is given.")
            out.append(ids.get(token, default))
        return np.array(out, np.int64).astype(self.data_type).reshape(array.shape)


def _pad(pad: Any, arg: str) -> tuple[str, int]:
    if not (isinstance(pad, (tuple, list)) and len(pad) == 2 and isinstance(pad[0], str) and
            isinstance(pad[1], int) and not isinstance(pad[1], bool) and pad[1] >= 0):
        raise TypeError(f"For 'Ngram', the '{arg}' should be a (str, int >= 0) pair, but got "
                        f"{pad!r}.")
    return pad[0], pad[1]


class Ngram:
    """The n-grams (n in `n`, in turn) of a 1-D str array, joined by `separator`. The
    sequence is padded with min(width, n - 1) `left_pad` / `right_pad` tokens; an n with a
    padded sequence shorter than n gives one empty string (as MindSpore)."""

    def __init__(self, n: int | Sequence[int], left_pad: tuple = ("", 0),
                 right_pad: tuple = ("", 0), separator: str = " ") -> None:
        ns = [n] if isinstance(n, int) and not isinstance(n, bool) else n
        if not isinstance(ns, (list, tuple)) or not ns or not all(
                isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in ns):
            raise ValueError(f"For 'Ngram', the 'n' should be a positive int or a list of "
                             f"them, but got {n!r}.")
        if not isinstance(separator, str):
            raise TypeError(f"For 'Ngram', the 'separator' should be a str, but got "
                            f"{type(separator).__name__}.")
        self.n, self.separator = list(ns), separator
        self.left_pad, self.right_pad = _pad(left_pad, "left_pad"), _pad(right_pad, "right_pad")

    def __call__(self, *inputs: Any) -> np.ndarray:
        array = string_array(_one_input(inputs, "Ngram"), "Ngram")
        if array.ndim != 1:
            raise ValueError(f"For 'Ngram', the input should be a 1-D str array, but got shape "
                             f"{array.shape}.")
        tokens, out = array.tolist(), []
        for n in self.n:
            seq = [self.left_pad[0]] * min(self.left_pad[1], n - 1) + tokens + \
                [self.right_pad[0]] * min(self.right_pad[1], n - 1)
            if len(seq) < n:
                out.append("")
            else:
                out += [self.separator.join(seq[i:i + n]) for i in range(len(seq) - n + 1)]
        return np.array(out, np.str_)


class ToNumber:
    """Strings parsed as numbers of `data_type` (same shape); a string that is not a
    number, or out of the dtype's range, is an error."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = to_np_dtype(data_type, "ToNumber", "data_type")
        if self.data_type.kind not in "iuf":
            raise TypeError(f"For 'ToNumber', the 'data_type' should be an integer or float "
                            f"type, but got {self.data_type}.")

    def __call__(self, *inputs: Any) -> np.ndarray:
        array = string_array(_one_input(inputs, "ToNumber"), "ToNumber")
        dtype, out = self.data_type, []
        for s in array.reshape(-1).tolist():
            try:
                value = int(s.strip()) if dtype.kind in "iu" else float(s.strip())
            except ValueError:
                raise RuntimeError(f"For 'ToNumber', the string '{s}' should be a number of "
                                   f"type {dtype}, but it is not.") from None
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                ok = info.min <= value <= info.max
            else:
                ok = not np.isfinite(value) or abs(value) <= np.finfo(dtype).max
            if not ok:
                raise RuntimeError(f"For 'ToNumber', the string '{s}' is out of the range of "
                                   f"{dtype}.")
            out.append(value)
        return np.array(out, dtype).reshape(array.shape)


class SlidingWindow:
    """Windows of `width` consecutive items along `axis` of an array: shape
    (..., n - width + 1, width, ...) with the windows' axis at `axis`."""

    def __init__(self, width: int, axis: int = 0) -> None:
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise ValueError(f"For 'SlidingWindow', the 'width' should be an int >= 1, but got "
                             f"{width!r}.")
        if not isinstance(axis, int) or isinstance(axis, bool):
            raise TypeError(f"For 'SlidingWindow', the 'axis' should be an int, but got "
                            f"{axis!r}.")
        self.width, self.axis = width, axis

    def __call__(self, *inputs: Any) -> np.ndarray:
        value = _one_input(inputs, "SlidingWindow")
        array = np.asarray(value) if isinstance(value, (str, list)) else \
            (value if isinstance(value, np.ndarray) and value.dtype.kind == "U"
             else as_array(value, "SlidingWindow"))
        if array.ndim == 0 or not -array.ndim <= self.axis < array.ndim:
            raise ValueError(f"For 'SlidingWindow', the 'axis' should be in [-{array.ndim}, "
                             f"{array.ndim}) of an array with a dim, but got {self.axis} for "
                             f"shape {array.shape}.")
        axis = self.axis % array.ndim
        n = array.shape[axis]
        count = max(n - self.width + 1, 0)
        moved = np.moveaxis(array, axis, 0)
        windows = np.stack([moved[i:i + self.width] for i in range(count)]) if count else \
            np.zeros((0, self.width) + moved.shape[1:], array.dtype)
        return np.moveaxis(windows, (0, 1), (axis, axis + 1))


class TruncateSequencePair:
    """Two 1-D arrays cut to at most `max_length` items together, dropping the last item of
    the longer one (the first on a tie) in turn."""

    def __init__(self, max_length: int) -> None:
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0:
            raise ValueError(f"For 'TruncateSequencePair', the 'max_length' should be an int "
                             f">= 0, but got {max_length!r}.")
        self.max_length = max_length

    def __call__(self, *inputs: Any) -> tuple:
        if len(inputs) != 2:
            raise TypeError(f"For 'TruncateSequencePair', the input should be two arrays, but "
                            f"got {len(inputs)}.")
        a, b = (np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x) for x in inputs)
        if a.ndim != 1 or b.ndim != 1:
            raise ValueError(f"For 'TruncateSequencePair', the inputs should be 1-D, but got "
                             f"shapes {a.shape} and {b.shape}.")
        la, lb = len(a), len(b)
        while la + lb > self.max_length:
            if la >= lb:
                la -= 1
            else:
                lb -= 1
        return a[:la], b[:lb]
