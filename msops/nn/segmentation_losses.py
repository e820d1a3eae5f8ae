"""Class-imbalance losses, as `mindspore.nn`: FocalLoss, DiceLoss and MultiClassDiceLoss
(nn-only in MindSpore: no `mindspore.ops` spelling). Built from primitives, so they trace,
shard and differentiate as those do."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.nn.cell import Cell
from msops.nn.losses import LOGITS_LABELS, LossBase
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, const
from msops.ops.loss_func import check_pair
from msops.ops.margin_loss_func import check_number
from msops.primitives.activation_ops import LogSoftmax
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import Pow, Sigmoid
from msops.primitives.math_ops import Add, Exp, Mul, RealDiv, ReduceSum, Square, Sub
from msops.primitives.nn_ops import OneHot, Softmax
from msops.primitives.shape_ops import Squeeze

__all__ = ["FocalLoss", "DiceLoss", "MultiClassDiceLoss"]


class FocalLoss(LossBase):
    """-(1 - p)**gamma * log(p) of the labelled class's softmax probability p (over dim 1
    of logits (N, C), (N, C, H) or (N, C, H, W); labels int class indices of logits' shape
    without dim 1, or with it as 1), times weight[class], then `reduction` over the samples
    and positions, as `mindspore.nn.FocalLoss(weight=None, gamma=2.0, reduction='mean')`."""

    def __init__(self, weight: Tensor | None = None, gamma: float = 2.0,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        validator.check_value_type("gamma", gamma, (float,), self.cls_name)
        self.gamma = check_number(self.cls_name, "gamma", gamma)
        if weight is not None:
            check_float(self.cls_name, "weight", weight)
            if len(weight.shape) != 1:
                raise ValueError(f"For '{self.cls_name}', the 'weight' should be 1-D (one per "
                                 f"class), but got shape {list(weight.shape)}.")
        self.weight = weight

    def construct(self, logits, labels):
        name = self.cls_name
        check_float(name, "logits", logits)
        check_tensor(name, "labels", labels)
        shape, lshape = tuple(logits.shape), tuple(labels.shape)
        if not 2 <= len(shape) <= 4:
            raise ValueError(f"For '{name}', the 'logits' should be (N, C), (N, C, H) or (N, C, "
                             f"H, W), but got shape {list(shape)}.")
        if lshape == shape[:1] + (1,) + shape[2:]:
            labels = _prim(Squeeze, 1)(labels)
        elif lshape != shape[:1] + shape[2:]:
            raise ValueError(f"For '{name}', the 'labels' should have the shape of 'logits' "
                             f"{list(shape)} without dim 1 (or with it 1), but got "
                             f"{list(lshape)}.")
        if labels.dtype not in (mstype.int32, mstype.int64):
            raise TypeError(f"For '{name}', the 'labels' should be int32 or int64 class "
                            f"indices, but got {labels.dtype}.")
        classes, dtype = shape[1], logits.dtype
        picked = _prim(OneHot, 1)(labels, classes, const(1.0, dtype), const(0.0, dtype))
        log_p = _prim(LogSoftmax, 1)(logits)
        focal = _prim(Pow)(_prim(Sub)(const(1.0, dtype), _prim(Exp)(log_p)), self.gamma)
        loss = _prim(Mul)(_prim(Mul)(focal, log_p), picked)
        if self.weight is not None:
            if tuple(self.weight.shape) != (classes,):
                raise ValueError(f"For '{name}', the 'weight' should have {classes} values (the "
                                 f"classes), but got {list(self.weight.shape)}.")
            loss = _prim(Mul)(loss, _prim(Reshape)(self.weight, (classes,) + (1,) * (
                len(shape) - 2)))
        return self.get_loss(_prim(Mul)(_prim(ReduceSum)(loss, 1), -1.0))


def _dice(logits: Any, labels: Any, smooth: float) -> Any:
    """1 - 2 sum(x y) / (sum(x**2) + sum(y**2) + smooth) over every element."""
    both = _prim(ReduceSum)(_prim(Mul)(logits, labels))
    union = _prim(Add)(_prim(ReduceSum)(_prim(Square)(logits)),
                       _prim(ReduceSum)(_prim(Square)(labels)))
    coeff = _prim(RealDiv)(_prim(Mul)(both, 2.0), _prim(Add)(union, smooth))
    return _prim(Sub)(const(1.0, logits.dtype), coeff)


class DiceLoss(LossBase):
    """1 - 2 |logits * labels| / (|logits| + |labels| + smooth) over every element, |v| the
    sum of squares, as `mindspore.nn.DiceLoss(smooth=1e-5)` (a 0-d Tensor)."""

    def __init__(self, smooth: float = 1e-5) -> None:
        super().__init__()
        validator.check_value_type("smooth", smooth, (float,), self.cls_name)
        if not smooth > 0:
            raise ValueError(f"For '{self.cls_name}', the 'smooth' should be > 0, but got "
                             f"{smooth}.")
        self.smooth = smooth

    def construct(self, logits, labels):
        check_pair(self.cls_name, LOGITS_LABELS, logits, labels)
        return _dice(logits, labels, self.smooth)


class MultiClassDiceLoss(LossBase):
    """The mean over the classes (dim 1, one-hot labels of logits' shape (N, C, ...)) of the
    Dice loss of each class, weighted by `weights` (one per class), `ignore_indiex` a class
    left out (still counted in the mean, as MindSpore), after `activation` ('softmax' over
    dim 1, 'sigmoid', None or a Cell), as `mindspore.nn.MultiClassDiceLoss(weights=None,
    ignore_indiex=None, activation='softmax')`."""

    def __init__(self, weights: Tensor | None = None, ignore_indiex: int | None = None,
                 activation: Any = "softmax") -> None:
        super().__init__()
        name = self.cls_name
        if weights is not None:
            check_float(name, "weights", weights)
        if ignore_indiex is not None:
            validator.check_int("ignore_indiex", ignore_indiex, name)
        if isinstance(activation, str):
            if activation not in ("softmax", "sigmoid"):
                raise ValueError(f"For '{name}', the 'activation' should be 'softmax', "
                                 f"'sigmoid', None or a Cell, but got {activation!r}.")
            activation = Softmax(1) if activation == "softmax" else Sigmoid()
        elif activation is not None and not isinstance(activation, Cell):
            raise TypeError(f"For '{name}', the 'activation' should be 'softmax', 'sigmoid', "
                            f"None or a Cell, but got {type(activation).__name__}.")
        self.weights, self.ignore_indiex, self.activation = weights, ignore_indiex, activation

    def construct(self, logits, labels):
        name = self.cls_name
        check_pair(name, LOGITS_LABELS, logits, labels)
        if len(logits.shape) < 2:
            raise ValueError(f"For '{name}', the 'logits' should be (N, C, ...), but got shape "
                             f"{list(logits.shape)}.")
        classes = logits.shape[1]
        if self.weights is not None and tuple(self.weights.shape) != (classes,):
            raise ValueError(f"For '{name}', the 'weights' should have {classes} values (the "
                             f"classes), but got {list(self.weights.shape)}.")
        if self.activation is not None:
            logits = self.activation(logits)
        total = None
        for i in range(classes):
            if i == self.ignore_indiex:
                continue
            loss = _dice(logits[:, i], labels[:, i], 1e-5)
            if self.weights is not None:
                loss = _prim(Mul)(loss, self.weights[i])
            total = loss if total is None else _prim(Add)(total, loss)
        return _prim(Mul)(total, 1.0 / classes)
