"""Losses, as `mindspore.nn`: SoftmaxCrossEntropyWithLogits (with sparse labels), MSELoss,
L1Loss, SmoothL1Loss, HuberLoss, BCEWithLogitsLoss, BCELoss, KLDivLoss, CosineEmbeddingLoss,
CrossEntropyLoss and NLLLoss. Each but the first calls the body of its `mindspore.ops` function (ops/loss_func.py,
ops/class_loss_func.py) with its own name, so the two spellings are one implementation, built
from primitives (their gradients come from the primitives' rules)."""
from __future__ import annotations

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.ops import class_loss_func, loss_func
from msops.ops._tensor_args import check_float, const

__all__ = ["LossBase", "SoftmaxCrossEntropyWithLogits", "MSELoss", "L1Loss", "CrossEntropyLoss",
           "NLLLoss", "SmoothL1Loss", "HuberLoss", "BCEWithLogitsLoss", "BCELoss", "KLDivLoss",
           "CosineEmbeddingLoss"]

#: the nn losses' names of their two inputs (the functions call them input and target)
LOGITS_LABELS = ("logits", "labels")


class LossBase(Cell):
    """A loss with `reduction` 'none' (per sample), 'mean' or 'sum' over every element
    (`reductions`: the values a subclass takes)."""

    reductions = loss_func.REDUCTIONS

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = loss_func.check_reduction(self.cls_name, reduction, self.reductions)
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

    def construct(self, logits, labels):
        if self.sparse:
            if len(logits.shape) != 2:           # its class count is read before the op's check
                raise ValueError(f"For '{self.cls_name}', the 'logits' should be 2-D (N, C), "
                                 f"but got shape {list(logits.shape)}.")
            labels = self.one_hot(labels, logits.shape[-1], const(1.0, logits.dtype),
                                  const(0.0, logits.dtype))
        loss = self.softmax_cross_entropy(logits, labels)[0]
        return self.get_loss(loss)


class MSELoss(LossBase):
    """(logits - labels)**2 element-wise, broadcast, then `reduction` ('mean' by default):
    `ops.mse_loss`."""

    def construct(self, logits, labels):
        return loss_func.mse_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                     self.reduction)


class L1Loss(LossBase):
    """|logits - labels| element-wise, broadcast, then `reduction` ('mean' by default):
    `ops.l1_loss`; the gradient is sign(logits - labels) (0 at a tie)."""

    def construct(self, logits, labels):
        return loss_func.l1_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                    self.reduction)


class SmoothL1Loss(LossBase):
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta, d = logits - labels (one shape
    and dtype), then `reduction` ('none' by default), as `mindspore.nn.SmoothL1Loss(beta=1.0,
    reduction='none')`: `ops.smooth_l1_loss`."""

    def __init__(self, beta: float = 1.0, reduction: str = "none") -> None:
        super().__init__(reduction)
        self.beta = loss_func.check_beta(self.cls_name, beta)

    def construct(self, logits, labels):
        return loss_func.smooth_l1_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                           self.beta, self.reduction)


class HuberLoss(LossBase):
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta), d = logits - labels
    (broadcast, one dtype), then `reduction`, as `mindspore.nn.HuberLoss(reduction='mean',
    delta=1.0)`: `ops.huber_loss`."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = loss_func.check_delta(self.cls_name, delta)

    def construct(self, logits, labels):
        return loss_func.huber_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                       self.reduction, self.delta)


def _rescaling(name: str, arg: str, value: Tensor | None) -> Tensor | None:
    """A constructor's rescaling Tensor: None or a float Tensor, never a Parameter (as
    MindSpore: it is a constant of the loss, not trained)."""
    if value is None:
        return None
    if isinstance(value, Parameter):
        raise TypeError(f"For '{name}', the '{arg}' should be a Tensor, not a Parameter, but "
                        f"got Parameter '{value.name}'.")
    return check_float(name, arg, value)


class BCEWithLogitsLoss(LossBase):
    """Binary cross entropy of sigmoid(logits) against labels (one shape and dtype):
    l = -w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], with `weight` w and
    `pos_weight` p (Tensors broadcasting to logits; None for ones), then `reduction`, as
    `mindspore.nn.BCEWithLogitsLoss(reduction='mean', weight=None, pos_weight=None)`:
    `ops.binary_cross_entropy_with_logits`, stable for large |logits|."""

    def __init__(self, reduction: str = "mean", weight: Tensor | None = None,
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(reduction)
        self.weight = _rescaling(self.cls_name, "weight", weight)
        self.pos_weight = _rescaling(self.cls_name, "pos_weight", pos_weight)

    def construct(self, logits, labels):
        return loss_func.bce_with_logits_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                            self.weight, self.pos_weight, self.reduction)


class BCELoss(LossBase):
    """Binary cross entropy of probabilities logits (in [0, 1]) against labels (one shape and
    dtype): -w [y log x + (1 - y) log(1 - x)], then `reduction`, as
    `mindspore.nn.BCELoss(weight=None, reduction='mean')`: `ops.binary_cross_entropy`."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = _rescaling(self.cls_name, "weight", weight)

    def construct(self, logits, labels):
        return loss_func.bce_of(self.cls_name, LOGITS_LABELS, logits, labels, self.weight,
                                self.reduction)


class KLDivLoss(LossBase):
    """labels * (log(labels) - logits) of log-probabilities logits (0 where labels == 0),
    reduced by 'mean' (default), 'batchmean' (the KL divergence), 'sum' or 'none', as
    `mindspore.nn.KLDivLoss(reduction='mean')`: `ops.kl_div`."""

    reductions = loss_func.KL_REDUCTIONS

    def construct(self, logits, labels):
        return loss_func.kl_div_of(self.cls_name, logits, labels, self.reduction)


class CosineEmbeddingLoss(LossBase):
    """1 - cos(x1, x2) where labels == 1, max(0, cos(x1, x2) - margin) where labels == -1,
    the cosine over dim 1 of logits_x1 and logits_x2 (N, *) (labels (N, *) without dim 1),
    then `reduction`, as `mindspore.nn.CosineEmbeddingLoss(margin=0.0, reduction='mean')`:
    `ops.cosine_embedding_loss`."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = loss_func.check_margin(self.cls_name, margin)

    def construct(self, logits_x1, logits_x2, labels):
        return loss_func.cosine_embedding_loss_of(
            self.cls_name, ("logits_x1", "logits_x2", "labels"), logits_x1, logits_x2, labels,
            self.margin, self.reduction)


class _ClassLoss(LossBase):
    """The class-dim losses' arguments (ops/class_loss_func.py holds their bodies)."""

    def __init__(self, weight: Tensor | None, ignore_index: int, reduction: str,
                 label_smoothing: float) -> None:
        super().__init__(reduction)
        name = self.cls_name
        self.weight = class_loss_func.check_class_weight(name, weight)
        self.ignore_index = validator.check_int("ignore_index", ignore_index, name)
        self.label_smoothing = class_loss_func.check_smoothing(name, label_smoothing)


class CrossEntropyLoss(_ClassLoss):
    """Cross entropy of logits (N, C) or (N, C, d1, ..., dK) against class indices (N,) /
    (N, d1, ..., dK) (ints) or class probabilities of the logits' shape and dtype, as
    `mindspore.nn.CrossEntropyLoss` / torch: `ops.cross_entropy` (ops/class_loss_func.py has
    the formulas of `weight`, `ignore_index` and `label_smoothing`). Output (N, d1, ..., dK)
    for reduction='none', else a 0-d Tensor.
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, ignore_index, reduction, label_smoothing)

    def construct(self, logits, labels):
        return class_loss_func.cross_entropy_of(
            self.cls_name, LOGITS_LABELS, logits, labels, self.weight, self.ignore_index,
            self.reduction, self.label_smoothing)


class NLLLoss(_ClassLoss):
    """Negative log-likelihood of log-probabilities (N, C) or (N, C, d1, ..., dK) against
    class indices (N,) / (N, d1, ..., dK), as `mindspore.nn.NLLLoss` / torch:
    l_n = -w[y_n] * logits[n, y_n], 0 where y_n == ignore_index; 'mean' divides sum(l) by
    the summed weights of the samples not ignored: `ops.nll_loss`.
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(weight, ignore_index, reduction, 0.0)

    def construct(self, logits, labels):
        return class_loss_func.nll_loss_of(
            self.cls_name, LOGITS_LABELS, logits, labels, self.weight, self.ignore_index,
            self.reduction, 0.0)
