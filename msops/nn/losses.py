"""Losses: SoftmaxCrossEntropyWithLogits (MindSpore's nn version, with sparse labels), MSELoss,
L1Loss, CrossEntropyLoss and NLLLoss, built from primitives (their gradients come from the
primitives' rules)."""
from __future__ import annotations

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "NLLLoss"]


class LossBase(Cell):
    """A loss with `reduction` 'none' (per sample), 'mean' or 'sum' over every element."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        validator.check_value_type("reduction", reduction, str, self.cls_name)
        self.reduction = validator.check_string("reduction", reduction, ("none", "mean", "sum"),
                                                self.cls_name)
        self.reduce_mean = ops.ReduceMean()
        self.reduce_sum = ops.ReduceSum()

    def get_loss(self, x):
        if self.reduction == "mean":
            return self.reduce_mean(x)
        if self.reduction == "sum":
            return self.reduce_sum(x)
        return x


class SoftmaxCrossEntropyWithLogits(LossBase):
    """Cross entropy between softmax(logits) and labels.

    logits (N, C); labels (N, C) of the logits' dtype, or with `sparse=True` class
    indices (N,) (ints), one-hot encoded first. Output (N,) for reduction='none',
    a 0-d Tensor for 'mean' / 'sum'.
    """

    def __init__(self, sparse: bool = False, reduction: str = "none") -> None:
        super().__init__(reduction)
        self.sparse = validator.check_bool("sparse", sparse, self.cls_name)
        self.softmax_cross_entropy = ops.SoftmaxCrossEntropyWithLogits()
        self.one_hot = ops.OneHot()
        self._on_off: dict = {}

    def _on_off_values(self, dtype: mstype.Type) -> tuple:
        """1 and 0 as 0-d Tensors of the logits' dtype (built once per dtype)."""
        if dtype not in self._on_off:
            np_dtype = mstype.dtype_to_nptype(dtype)
            self._on_off[dtype] = (Tensor(np.ones((), np_dtype)), Tensor(np.zeros((), np_dtype)))
        return self._on_off[dtype]

    def construct(self, logits, labels):
        if self.sparse:
            if len(logits.shape) != 2:           # its class count is read before the op's check
                raise ValueError(f"For '{self.cls_name}', the 'logits' should be 2-D (N, C), "
                                 f"but got shape {list(logits.shape)}.")
            on, off = self._on_off_values(logits.dtype)
            labels = self.one_hot(labels, logits.shape[-1], on, off)
        loss = self.softmax_cross_entropy(logits, labels)[0]
        return self.get_loss(loss)


class MSELoss(LossBase):
    """(logits - labels)**2 element-wise, broadcast, then `reduction` ('mean' by default)."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.square = ops.Square()
        self.sub = ops.Sub()

    def construct(self, logits, labels):
        return self.get_loss(self.square(self.sub(logits, labels)))


class _Constants:
    """0-d Tensors of a given value and dtype, built once each (the losses' scalars)."""

    def __init__(self) -> None:
        self._made: dict = {}

    def __call__(self, value: float, dtype: mstype.Type) -> Tensor:
        key = (value, dtype)
        if key not in self._made:
            self._made[key] = Tensor(np.array(value, mstype.dtype_to_nptype(dtype)))
        return self._made[key]


class L1Loss(LossBase):
    """|logits - labels| element-wise, broadcast, then `reduction` ('mean' by default).
    |d| is built as relu(d) + relu(-d), so its gradient is sign(d) (0 at d == 0)."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.sub, self.add, self.neg, self.relu = ops.Sub(), ops.Add(), ops.Neg(), ops.ReLU()

    def construct(self, logits, labels):
        d = self.sub(logits, labels)
        return self.get_loss(self.add(self.relu(d), self.relu(self.neg(d))))


class _ClassLoss(LossBase):
    """The machinery of the class-dim losses: logits (N, C) or (N, C, d1, ..., dK) (class
    dim 1, as torch/MindSpore) are moved to rows of (N * d1 * ... * dK, C) (a Transpose and
    a Reshape, which differentiate), the per-row losses computed there, and 'none' gives
    them back as (N, d1, ..., dK).

    Class-index labels (ints, shape (N, d1, ..., dK)) with class weights w (ones by
    default), ignore_index and label smoothing s, per row r with y_r its class:
        l_r = m_r * ((1 - s) * -w[y_r] logp[r, y_r] + s / C * -sum_c w_c logp[r, c]),
    m_r = 0 where y_r == ignore_index; 'mean' divides sum(l) by sum(m_r * w[y_r]).
    """

    def __init__(self, weight: Tensor | None, ignore_index: int, reduction: str,
                 label_smoothing: float) -> None:
        super().__init__(reduction)
        name = self.cls_name
        if weight is not None:
            validator.check_value_type("weight", weight, Tensor, name)
            if len(weight.shape) != 1:
                raise ValueError(f"For '{name}', the 'weight' should be 1-D (C,), but got shape "
                                 f"{list(weight.shape)}.")
        validator.check_int("ignore_index", ignore_index, name)
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = float(label_smoothing)
        self.sub, self.mul, self.div, self.neg = ops.Sub(), ops.Mul(), ops.RealDiv(), ops.Neg()
        self.add, self.exp, self.log, self.equal, self.cast = (
            ops.Add(), ops.Exp(), ops.Log(), ops.Equal(), ops.Cast())
        self.reduce_max, self.sum_keep = ops.ReduceMax(keep_dims=True), ops.ReduceSum(True)
        self.one_hot, self.reshape, self.transpose = ops.OneHot(), ops.Reshape(), ops.Transpose()
        self._const = _Constants()

    def _rows(self, logits, labels, what: str) -> tuple:
        """(logits as (M, C) rows, labels as (M,) or (M, C), the shape of 'none', C)."""
        name, shape = self.cls_name, tuple(logits.shape)
        if len(shape) < 2:
            raise ValueError(f"For '{name}', the '{what}' should be (N, C) or (N, C, d1, ..., "
                             f"dK), but got shape {list(shape)}.")
        classes = shape[1]
        if self.weight is not None and tuple(self.weight.shape) != (classes,):
            raise ValueError(f"For '{name}', the 'weight' should have shape [C] for the "
                             f"{classes} classes of '{what}': [{classes}], but got "
                             f"{list(self.weight.shape)}.")
        out_shape = shape[:1] + shape[2:]
        indices = labels.dtype in mstype.int_type + mstype.uint_type
        want = out_shape if indices else shape
        if tuple(labels.shape) != want:
            kind = "class-index 'labels'" if indices else "probability 'labels'"
            raise ValueError(f"For '{name}', the {kind} should have shape {list(want)}, but "
                             f"got {list(labels.shape)}.")
        if len(shape) == 2:
            return logits, labels, out_shape, classes
        rows = int(np.prod(out_shape))
        perm = (0,) + tuple(range(2, len(shape))) + (1,)          # the class dim last
        logits = self.reshape(self.transpose(logits, perm), (rows, classes))
        labels = self.reshape(labels, (rows,)) if indices else \
            self.reshape(self.transpose(labels, perm), (rows, classes))
        return logits, labels, out_shape, classes

    def _index_loss(self, logp, labels, classes: int) -> tuple:
        """(per-row loss (M,), the 'mean' denominator sum(m_r * w[y_r])) of class indices."""
        dtype, rows, s = logp.dtype, logp.shape[0], self.label_smoothing
        weight = self.weight if self.weight is not None else self._const(1.0, dtype)
        ignored = self.equal(labels, Tensor(np.array(self.ignore_index,
                                                     mstype.dtype_to_nptype(labels.dtype))))
        mask = self.sub(self._const(1.0, dtype), self.cast(ignored, dtype))         # (M,)
        hot = self.one_hot(labels, classes, self._const(1.0, dtype), self._const(0.0, dtype))
        hot = self.mul(self.mul(hot, self.reshape(mask, (rows, 1))), weight)        # m w[y]
        loss = self.neg(self.reduce_sum(self.mul(hot, logp), -1))                   # (M,)
        if s:
            smooth = self.neg(self.reduce_sum(self.mul(logp, weight), -1))
            loss = self.add(self.mul(loss, self._const(1.0 - s, dtype)),
                            self.mul(self.mul(smooth, mask), self._const(s / classes, dtype)))
        return loss, self.reduce_sum(hot)

    def _reduced(self, loss, out_shape: tuple, denominator=None):
        """'none': the losses as out_shape; 'sum'; 'mean' (over `denominator` when given)."""
        if self.reduction == "none":
            return loss if len(out_shape) == 1 else self.reshape(loss, out_shape)
        if self.reduction == "mean" and denominator is not None:
            return self.div(self.reduce_sum(loss), denominator)
        return self.get_loss(loss)


class CrossEntropyLoss(_ClassLoss):
    """Cross entropy of logits (N, C) or (N, C, d1, ..., dK) against class indices (N,) /
    (N, d1, ..., dK) (ints) or class probabilities of the logits' shape (the logits'
    dtype), as `mindspore.nn.CrossEntropyLoss` / torch.

    With p = log_softmax(logits) over the class dim 1, w the class `weight` (C,) (ones by
    default), s the `label_smoothing` and C the number of classes, per sample n (each
    position of d1..dK is a sample too):
    indices:  l_n = m_n * ((1 - s) * -w[y_n] p[n, y_n] + s / C * -sum_c w_c p[n, c]), where
              m_n = 0 for y_n == ignore_index; 'mean' divides sum(l) by sum(m_n * w[y_n]);
    probabilities: l_n = -sum_c w_c ((1 - s) t[n, c] + s / C) p[n, c]; 'mean' divides by
              the number of samples (N * d1 * ... * dK).
    Output (N, d1, ..., dK) for reduction='none', else a 0-d Tensor.
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        validator.check_value_type("label_smoothing", label_smoothing, (int, float),
                                   type(self).__name__)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"For '{type(self).__name__}', the 'label_smoothing' should be in "
                             f"[0, 1], but got {label_smoothing}.")
        super().__init__(weight, ignore_index, reduction, label_smoothing)

    def _log_softmax(self, x):
        """x - max - log(sum(exp(x - max))) over the class axis (the max carries no gradient:
        the result does not depend on it)."""
        shifted = self.sub(x, ops.stop_gradient(self.reduce_max(x, -1)))
        return self.sub(shifted, self.log(self.sum_keep(self.exp(shifted), -1)))

    def construct(self, logits, labels):
        dtype = logits.dtype
        logits, labels, out_shape, classes = self._rows(logits, labels, "logits")
        logp = self._log_softmax(logits)
        if labels.dtype in mstype.int_type + mstype.uint_type:
            loss, denominator = self._index_loss(logp, labels, classes)
            return self._reduced(loss, out_shape, denominator)
        s = self.label_smoothing
        weight = self.weight if self.weight is not None else self._const(1.0, dtype)
        if s:
            labels = self.add(self.mul(labels, self._const(1.0 - s, dtype)),
                              self._const(s / classes, dtype))
        loss = self.neg(self.reduce_sum(self.mul(self.mul(labels, weight), logp), -1))
        return self._reduced(loss, out_shape)


class NLLLoss(_ClassLoss):
    """Negative log-likelihood of log-probabilities (N, C) or (N, C, d1, ..., dK) against
    class indices (N,) / (N, d1, ..., dK), as `mindspore.nn.NLLLoss` / torch:
    l_n = -w[y_n] * logits[n, y_n], 0 where y_n == ignore_index; 'mean' divides sum(l) by
    the summed weights of the samples not ignored. Output (N, d1, ..., dK) for 'none'.
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(weight, ignore_index, reduction, 0.0)

    def construct(self, logits, labels):
        if labels.dtype not in mstype.int_type + mstype.uint_type:
            raise TypeError(f"For '{self.cls_name}', the 'labels' should be class indices (an "
                            f"int Tensor), but got {labels.dtype}.")
        logits, labels, out_shape, classes = self._rows(logits, labels, "logits")
        loss, denominator = self._index_loss(logits, labels, classes)
        return self._reduced(loss, out_shape, denominator)
