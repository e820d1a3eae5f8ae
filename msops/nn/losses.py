"""Losses: SoftmaxCrossEntropyWithLogits (MindSpore's nn version, with sparse labels), MSELoss,
L1Loss and CrossEntropyLoss, built from primitives (their gradients come from the
primitives' rules)."""
from __future__ import annotations

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "CrossEntropyLoss"]


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


class CrossEntropyLoss(LossBase):
    """Cross entropy of logits (N, C) against class indices (N,) (ints) or class
    probabilities (N, C) (the logits' dtype), as `mindspore.nn.CrossEntropyLoss` / torch.

    With p = log_softmax(logits), w the class `weight` (C,) (ones by default), s the
    `label_smoothing` and C the number of classes, per sample n:
    indices:  l_n = m_n * ((1 - s) * -w[y_n] p[n, y_n] + s / C * -sum_c w_c p[n, c]), where
              m_n = 0 for y_n == ignore_index; 'mean' divides sum(l) by sum(m_n * w[y_n]);
    probabilities: l_n = -sum_c w_c ((1 - s) t[n, c] + s / C) p[n, c]; 'mean' divides by N.
    Output (N,) for reduction='none', else a 0-d Tensor.
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        name = self.cls_name
        if weight is not None:
            validator.check_value_type("weight", weight, Tensor, name)
        validator.check_int("ignore_index", ignore_index, name)
        validator.check_value_type("label_smoothing", label_smoothing, (int, float), name)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"For '{name}', the 'label_smoothing' should be in [0, 1], but "
                             f"got {label_smoothing}.")
        self.weight, self.ignore_index = weight, ignore_index
        self.label_smoothing = float(label_smoothing)
        self.sub, self.mul, self.div, self.neg = ops.Sub(), ops.Mul(), ops.RealDiv(), ops.Neg()
        self.add, self.exp, self.log, self.equal, self.cast = (
            ops.Add(), ops.Exp(), ops.Log(), ops.Equal(), ops.Cast())
        self.reduce_max, self.sum_keep = ops.ReduceMax(keep_dims=True), ops.ReduceSum(True)
        self.one_hot, self.reshape = ops.OneHot(), ops.Reshape()
        self._const = _Constants()

    def _log_softmax(self, x):
        """x - max - log(sum(exp(x - max))) over the class axis (the max carries no gradient:
        the result does not depend on it)."""
        shifted = self.sub(x, ops.stop_gradient(self.reduce_max(x, -1)))
        return self.sub(shifted, self.log(self.sum_keep(self.exp(shifted), -1)))

    def construct(self, logits, labels):
        name, dtype = self.cls_name, logits.dtype
        if len(logits.shape) != 2:
            raise ValueError(f"For '{name}', the 'logits' should be 2-D (N, C), but got shape "
                             f"{list(logits.shape)}.")
        n, classes = logits.shape
        logp = self._log_softmax(logits)
        weight = self.weight if self.weight is not None else self._const(1.0, dtype)
        s = self.label_smoothing
        if labels.dtype in mstype.int_type + mstype.uint_type:
            if list(labels.shape) != [n]:
                raise ValueError(f"For '{name}', the class-index 'labels' should have shape "
                                 f"{[n]}, but got {list(labels.shape)}.")
            ignored = self.equal(labels, Tensor(np.array(self.ignore_index,
                                                         mstype.dtype_to_nptype(labels.dtype))))
            mask = self.sub(self._const(1.0, dtype), self.cast(ignored, dtype))       # (N,)
            hot = self.one_hot(labels, classes, self._const(1.0, dtype), self._const(0.0, dtype))
            hot = self.mul(self.mul(hot, self.reshape(mask, (n, 1))), weight)      # m w[y]
            loss = self.neg(self.reduce_sum(self.mul(hot, logp), -1))              # (N,)
            if s:
                smooth = self.neg(self.reduce_sum(self.mul(logp, weight), -1))
                loss = self.add(self.mul(loss, self._const(1.0 - s, dtype)),
                                self.mul(self.mul(smooth, mask), self._const(s / classes, dtype)))
            if self.reduction == "mean":
                return self.div(self.reduce_sum(loss), self.reduce_sum(hot))
            return self.get_loss(loss)
        if list(labels.shape) != [n, classes]:
            raise ValueError(f"For '{name}', the probability 'labels' should have the logits' "
                             f"shape {[n, classes]}, but got {list(labels.shape)}.")
        if s:
            labels = self.add(self.mul(labels, self._const(1.0 - s, dtype)),
                              self._const(s / classes, dtype))
        loss = self.neg(self.reduce_sum(self.mul(self.mul(labels, weight), logp), -1))
        return self.get_loss(loss)
