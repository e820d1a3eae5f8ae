"""CTCLossV2 (as MindSpore's primitive) and its backward op: the connectionist temporal
classification loss by the forward-backward recursions in log space.

log_probs (T, N, C) are per-frame log-probabilities (a log_softmax's output; any reals are
accepted: the loss is -log of the sum over the alignments of exp(sum of their log_probs)),
targets (N, S) class indices padded past each target's length, input_lengths and
target_lengths (N,) of one int dtype. The extended target of length L is
l' = (blank, t1, blank, ..., tL, blank); log_alpha[n, t, s] (-inf outside the lengths) is the
log-probability of the prefixes ending in l'_s at frame t. The batch dim splits freely in
a parallel graph; frames, classes and target positions stay whole.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["CTCLossV2"]

_NEG_INF = -np.inf
_INDEX_TYPES = (mstype.int32, mstype.int64)


def _lse(*terms: np.ndarray) -> np.ndarray:
    """log(sum(exp(terms))) element-wise, -inf where every term is -inf (no NaN)."""
    stack = np.stack(terms)
    top = stack.max(axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(stack - safe).sum(axis=0)) + safe


def _shifted(row: np.ndarray, by: int) -> np.ndarray:
    """row moved `by` places right (left when negative), -inf filling the vacated ones."""
    out = np.full(row.shape, _NEG_INF)
    if by > 0:
        out[by:] = row[:-by]
    else:
        out[:by] = row[-by:]
    return out


def _extended(target: np.ndarray, blank: int) -> tuple[np.ndarray, np.ndarray]:
    """l' (blanks around and between the labels) and where a skip from s - 2 is allowed
    (l'_s not blank and unlike l'_{s-2})."""
    ext = np.full(2 * len(target) + 1, blank, np.int64)
    ext[1::2] = target
    skip = np.zeros(len(ext), bool)
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    return ext, skip


def ctc_alpha_beta(lp: np.ndarray, target: np.ndarray, length: int, blank: int,
                   with_beta: bool) -> tuple[np.ndarray, np.ndarray | None, float]:
    """One sample: lp (T, C) float64, its target labels, its input length. Returns
    log_alpha (T, 2L+1), log_beta (both including frame t's own log-probability; None
    unless `with_beta`) and the negative log-likelihood (inf when no alignment fits)."""
    ext, skip = _extended(target, blank)
    width, frames = len(ext), lp.shape[0]
    alpha = np.full((frames, width), _NEG_INF)
    if length == 0:
        return alpha, (alpha.copy() if with_beta else None), (0.0 if len(target) == 0
                                                              else np.inf)
    emit = lp[:length][:, ext]                                  # (length, 2L+1)
    alpha[0, 0] = emit[0, 0]
    if width > 1:
        alpha[0, 1] = emit[0, 1]
    for t in range(1, length):
        prev = alpha[t - 1]
        one, two = _shifted(prev, 1), np.where(skip, _shifted(prev, 2), _NEG_INF)
        alpha[t] = _lse(prev, one, two) + emit[t]
    ends = alpha[length - 1, -2:] if width > 1 else alpha[length - 1, -1:]
    nll = -float(_lse(*ends))
    beta = None
    if with_beta:
        beta = np.full((frames, width), _NEG_INF)
        beta[length - 1, -1] = emit[length - 1, -1]
        if width > 1:
            beta[length - 1, -2] = emit[length - 1, -2]
        skip_next = np.zeros(width, bool)                         # s -> s + 2 allowed
        skip_next[:-2] = skip[2:]
        for t in range(length - 2, -1, -1):
            nxt = beta[t + 1]
            one, two = _shifted(nxt, -1), np.where(skip_next, _shifted(nxt, -2), _NEG_INF)
            beta[t] = _lse(nxt, one, two) + emit[t]
    return alpha, beta, nll


class _CTC(PrimitiveWithInfer):
    """The shared checks of CTCLossV2 and its backward op."""

    def _check_lengths(self, lp: np.ndarray, targets: np.ndarray, input_lengths: np.ndarray,
                       target_lengths: np.ndarray) -> None:
        frames, _, classes = lp.shape
        width = targets.shape[1]
        for arg, values, top in (("input_lengths", input_lengths, frames),
                                 ("target_lengths", target_lengths, width)):
            if values.size and (values.min() < 0 or values.max() > top):
                raise ValueError(f"For '{self.name}', every '{arg}' should be in [0, {top}], "
                                 f"but got {values.tolist()}.")
        for n, length in enumerate(target_lengths):
            labels = targets[n, :length]
            if labels.size and (labels.min() < 0 or labels.max() >= classes
                                or (labels == self.blank).any()):
                raise ValueError(f"For '{self.name}', the 'targets' of sample {n} should be "
                                 f"class indices in [0, {classes}) other than the blank "
                                 f"{self.blank}, but got {labels.tolist()}.")

    def _check_shapes(self, lp: list, targets: list, input_lengths: list,
                      target_lengths: list) -> None:
        name = self.name
        if len(lp) != 3:
            raise ValueError(f"For '{name}', the 'log_probs' should be 3-D (T, N, C), but got "
                             f"shape {list(lp)}.")
        if len(targets) != 2 or targets[0] != lp[1]:
            raise ValueError(f"For '{name}', the 'targets' should be 2-D (N, S) with N = "
                             f"{lp[1]}, but got shape {list(targets)}.")
        for arg, shape in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
            if list(shape) != [lp[1]]:
                raise ValueError(f"For '{name}', the '{arg}' should have shape [{lp[1]}], but "
                                 f"got {list(shape)}.")
        if not 0 <= self.blank < lp[2]:
            raise ValueError(f"For '{name}', the 'blank' should be in [0, {lp[2]}), but got "
                             f"{self.blank}.")

    def _check_dtypes(self, lp: mstype.Type, targets: mstype.Type, input_lengths: mstype.Type,
                      target_lengths: mstype.Type) -> None:
        validator.check_tensor_dtype_valid("log_probs", lp, (mstype.float32, mstype.float64),
                                           self.name)
        validator.check_tensor_dtype_valid("targets", targets, _INDEX_TYPES, self.name)
        if not targets == input_lengths == target_lengths:
            raise TypeError(f"For '{self.name}', the 'targets', 'input_lengths' and "
                            f"'target_lengths' should have the same dtype, but got {targets}, "
                            f"{input_lengths} and {target_lengths}.")


class CTCLossV2(_CTC):
    """`CTCLossV2(blank=0, reduction='none', zero_infinity=False)(log_probs, targets,
    input_lengths, target_lengths)` -> (neg_log_likelihood (N,), log_alpha (N, T, 2S+1)).
    `zero_infinity`: an infinite loss (no alignment fits) is 0, and so is its gradient.
    The gradient flows from neg_log_likelihood only (log_alpha is a by-product, as in
    MindSpore)."""

    @prim_attr_register
    def __init__(self, blank: int = 0, reduction: str = "none",
                 zero_infinity: bool = False) -> None:
        validator.check_int("blank", blank, self.name)
        validator.check_string("reduction", reduction, ("none",), self.name)
        validator.check_bool("zero_infinity", zero_infinity, self.name)

    def infer_shape(self, lp: list, targets: list, input_lengths: list,
                    target_lengths: list) -> tuple:
        self._check_shapes(lp, targets, input_lengths, target_lengths)
        return [lp[1]], [lp[1], lp[0], 2 * targets[1] + 1]

    def infer_dtype(self, lp: mstype.Type, targets: mstype.Type, input_lengths: mstype.Type,
                    target_lengths: mstype.Type) -> tuple:
        self._check_dtypes(lp, targets, input_lengths, target_lengths)
        return lp, lp

    def kernel(self, lp: np.ndarray, targets: np.ndarray, input_lengths: np.ndarray,
               target_lengths: np.ndarray) -> tuple:
        self._check_lengths(lp, targets, input_lengths, target_lengths)
        frames, batch, _ = lp.shape
        nll = np.empty(batch, lp.dtype)
        log_alpha = np.full((batch, frames, 2 * targets.shape[1] + 1), _NEG_INF, lp.dtype)
        wide = lp.astype(np.float64)
        for n in range(batch):
            length = int(target_lengths[n])
            alpha, _, loss = ctc_alpha_beta(wide[:, n], targets[n, :length],
                                            int(input_lengths[n]), self.blank, False)
            log_alpha[n, :, :alpha.shape[1]] = alpha
            nll[n] = 0.0 if (self.zero_infinity and np.isinf(loss)) else loss
        return nll, log_alpha


class CTCLossV2Grad(_CTC):
    """`CTCLossV2Grad(blank=0, zero_infinity=False)(dout, log_probs, targets, input_lengths,
    target_lengths)` -> d(sum(dout * neg_log_likelihood)) / d(log_probs), (T, N, C):
    -dout[n] * exp(logsumexp over s with l'_s = c of (log_alpha + log_beta)[t, s]
    - log_probs[t, n, c] + nll[n]) for t < input_lengths[n], else 0 (0 for an infinite loss
    with zero_infinity). This is the exact gradient with respect to log_probs; a
    log_softmax before it gives the familiar softmax - posterior."""

    @prim_attr_register
    def __init__(self, blank: int = 0, zero_infinity: bool = False) -> None:
        validator.check_int("blank", blank, self.name)
        validator.check_bool("zero_infinity", zero_infinity, self.name)

    def infer_shape(self, dout: list, lp: list, targets: list, input_lengths: list,
                    target_lengths: list) -> list:
        self._check_shapes(lp, targets, input_lengths, target_lengths)
        return list(lp)

    def infer_dtype(self, dout: mstype.Type, lp: mstype.Type, targets: mstype.Type,
                    input_lengths: mstype.Type, target_lengths: mstype.Type) -> mstype.Type:
        self._check_dtypes(lp, targets, input_lengths, target_lengths)
        return lp

    def kernel(self, dout: np.ndarray, lp: np.ndarray, targets: np.ndarray,
               input_lengths: np.ndarray, target_lengths: np.ndarray) -> np.ndarray:
        self._check_lengths(lp, targets, input_lengths, target_lengths)
        frames, batch, classes = lp.shape
        grad = np.zeros(lp.shape, np.float64)
        wide = lp.astype(np.float64)
        for n in range(batch):
            length, steps = int(target_lengths[n]), int(input_lengths[n])
            labels = targets[n, :length]
            alpha, beta, nll = ctc_alpha_beta(wide[:, n], labels, steps, self.blank, True)
            if np.isinf(nll) or steps == 0:
                if self.zero_infinity or steps == 0:
                    continue
                grad[:steps, n] = np.nan        # -log 0: no finite gradient exists
                continue
            ext, _ = _extended(labels, self.blank)
            both = alpha[:steps] + beta[:steps]                  # (steps, 2L+1)
            per_class = np.full((steps, classes), _NEG_INF)
            for c in np.unique(ext):
                per_class[:, c] = _lse(*both[:, ext == c].T)
            with np.errstate(over="ignore"):
                grad[:steps, n] = -np.exp(per_class - wide[:steps, n] + nll) * float(dout[n])
        return grad.astype(lp.dtype)


def _batch_spec(lp_letters: tuple, extra_in: tuple = (), outs: tuple = ()) -> DimSpec:
    return DimSpec(extra_in + (lp_letters, ("n", "s"), ("n",), ("n",)), outs,
                   unsplittable=(("t", "CTC's recursions run over every frame"),
                                 ("c", "CTC reads every class of a frame"),
                                 ("s", "CTC reads a whole target"),
                                 ("a", "CTC's log_alpha holds every extended target place")),
                   batch_letter="n")


@sharding_rule(CTCLossV2)
def ctc_loss_spec(prim: CTCLossV2, ins: list, outs: list, consts: dict) -> DimSpec:
    """Each sample on its own: the batch dim N splits; T, C and S stay whole."""
    return _batch_spec(("t", "n", "c"), outs=(("n",), ("n", "t", "a")))


@sharding_rule(CTCLossV2Grad)
def ctc_loss_grad_spec(prim: CTCLossV2Grad, ins: list, outs: list, consts: dict) -> DimSpec:
    """As CTCLossV2: dout and the gradient split with the batch."""
    return _batch_spec(("t", "n", "c"), extra_in=(("n",),), outs=(("t", "n", "c"),))


@bprop(CTCLossV2)
def ctc_loss_bprop(prim: CTCLossV2, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """The loss's gradient (CTCLossV2Grad) for log_probs; none for the indices and
    lengths, and none flows from log_alpha."""
    grad = g.apply(CTCLossV2Grad(blank=prim.blank, zero_infinity=prim.zero_infinity),
                   [dout[0]] + list(inputs))
    return (grad, None, None, None)


declare_without("bprop", CTCLossV2Grad,
                reason="second-order gradients through the CTC loss are not implemented")
