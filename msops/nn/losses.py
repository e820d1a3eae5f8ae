"""Losses: SoftmaxCrossEntropyWithLogits (MindSpore's nn version, with sparse labels), MSELoss."""
from __future__ import annotations

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss"]


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
