"""BleuScore (as `mindspore.train.BleuScore`): the BLEU score of machine translations
against their references, accumulated over updates."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.nn.metrics import _BY_NAME, Metric, rearrange_inputs

__all__ = ["BleuScore"]


def ngram_counts(tokens: Sequence[Any], n_gram: int) -> Counter:
    """How often each 1- to n_gram-gram (a tuple of tokens) occurs in `tokens`."""
    counts: Counter = Counter()
    for n in range(1, n_gram + 1):
        for start in range(len(tokens) - n + 1):
            counts[tuple(tokens[start:start + n])] += 1
    return counts


class BleuScore(Metric):
    """`BleuScore(n_gram=4, smooth=False)`: `update(candidate_corpus, reference_corpus)`
    (a list of token lists, and for each candidate a list of reference token lists).
    Each n-gram's count in a candidate is clipped to its largest count in one of its
    references; p_n = clipped / total candidate n-grams over the corpus ((+1)/(+1) with
    `smooth`); BLEU = BP * exp(mean_n log p_n), BP = 1 when the candidates are longer than
    the references (each the reference nearest in length, the first on a tie), else
    exp(1 - r / c); 0 when some order has no clipped match (as MindSpore, smooth or not)."""

    def __init__(self, n_gram: int = 4, smooth: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        validator.check_value_type("n_gram", n_gram, (int,), name)
        if not 1 <= n_gram <= 4:
            raise ValueError(f"For '{name}', the 'n_gram' should be in [1, 4], but got "
                             f"{n_gram}.")
        self.n_gram = n_gram
        self.smooth = validator.check_bool("smooth", smooth, name)
        self.clear()

    def clear(self) -> None:
        self._numerator = np.zeros(self.n_gram)
        self._denominator = np.zeros(self.n_gram)
        self._c = 0.0
        self._r = 0.0
        self._is_update = False

    @rearrange_inputs
    def update(self, *inputs: Any) -> None:
        name = type(self).__name__
        if len(inputs) != 2:
            raise ValueError(f"For '{name}.update', it needs 2 inputs (candidate_corpus, "
                             f"reference_corpus), but got {len(inputs)}.")
        candidates, references_corpus = inputs
        if len(candidates) != len(references_corpus):
            raise ValueError(f"For '{name}.update', the 'candidate_corpus' and "
                             f"'reference_corpus' should have one entry per sentence, but got "
                             f"{len(candidates)} and {len(references_corpus)}.")
        for candidate, references in zip(candidates, references_corpus):
            if not len(references):
                raise ValueError(f"For '{name}.update', every candidate should have at least "
                                 f"one reference, but got none.")
            self._c += len(candidate)
            lengths = [len(ref) for ref in references]
            gaps = [abs(len(candidate) - n) for n in lengths]
            self._r += lengths[gaps.index(min(gaps))]
            counts = ngram_counts(candidate, self.n_gram)
            best: Counter = Counter()
            for ref in references:
                best |= ngram_counts(ref, self.n_gram)           # the max count per n-gram
            for gram, count in (counts & best).items():
                self._numerator[len(gram) - 1] += count
            for gram, count in counts.items():
                self._denominator[len(gram) - 1] += count
        self._is_update = True

    def eval(self) -> np.ndarray:
        if not self._is_update:
            raise RuntimeError(f"For '{type(self).__name__}', call 'update' before 'eval'.")
        if self._numerator.min() == 0.0:
            return np.array(0.0)
        if self.smooth:
            precision = (self._numerator + 1.0) / (self._denominator + 1.0)
        else:
            precision = self._numerator / self._denominator
        geometric_mean = np.exp(np.mean(np.log(precision)))
        brevity = 1.0 if self._c > self._r else np.exp(1.0 - self._r / self._c)
        return np.array(brevity * geometric_mean)


_BY_NAME.update({"bleu_score": BleuScore})
