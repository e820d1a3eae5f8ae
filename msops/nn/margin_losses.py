"""More losses, as `mindspore.nn`: MarginRankingLoss, SoftMarginLoss, HingeEmbeddingLoss,
MultiMarginLoss, MultiLabelSoftMarginLoss, TripletMarginLoss, PoissonNLLLoss,
GaussianNLLLoss, RMSELoss and MAELoss. Each calls the body of its `mindspore.ops` function
(ops/margin_loss_func.py, ops/loss_func.py) with its own name: one implementation, two
spellings."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.nn.losses import LOGITS_LABELS, LossBase
from msops.ops import loss_func, margin_loss_func as mlf
from msops.primitives.elementwise_ops import Sqrt

__all__ = ["MarginRankingLoss", "SoftMarginLoss", "HingeEmbeddingLoss", "MultiMarginLoss",
           "MultiLabelSoftMarginLoss", "TripletMarginLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "RMSELoss", "MAELoss", "MultilabelMarginLoss",
           "TripletMarginWithDistanceLoss"]


class MarginRankingLoss(LossBase):
    """max(0, -target * (input1 - input2) + margin), then `reduction`, as
    `mindspore.nn.MarginRankingLoss(margin=0.0, reduction='mean')`:
    `ops.margin_ranking_loss`."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = mlf.check_number(self.cls_name, "margin", margin)

    def construct(self, input1, input2, target):
        return mlf.margin_ranking_loss_of(self.cls_name, ("input1", "input2", "target"),
                                          input1, input2, target, self.margin, self.reduction)


class SoftMarginLoss(LossBase):
    """log(1 + exp(-labels * logits)), then `reduction`, as
    `mindspore.nn.SoftMarginLoss(reduction='mean')`: `ops.soft_margin_loss`."""

    def construct(self, logits, labels):
        return mlf.soft_margin_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                       self.reduction)


class HingeEmbeddingLoss(LossBase):
    """logits where labels == 1, max(0, margin - logits) where labels == -1, then
    `reduction`, as `mindspore.nn.HingeEmbeddingLoss(margin=1.0, reduction='mean')`:
    `ops.hinge_embedding_loss`."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = mlf.check_number(self.cls_name, "margin", margin)

    def construct(self, logits, labels):
        return mlf.hinge_embedding_loss_of(self.cls_name, LOGITS_LABELS, logits, labels,
                                           self.margin, self.reduction)


class MultiMarginLoss(LossBase):
    """The multi-class hinge loss of x (N, C) against class indices target (N,), as
    `mindspore.nn.MultiMarginLoss(p=1, margin=1.0, reduction='mean', weight=None)`:
    `ops.multi_margin_loss` (a `weight` given to construct replaces the layer's)."""

    def __init__(self, p: int = 1, margin: float = 1.0, reduction: str = "mean",
                 weight: Any = None) -> None:
        super().__init__(reduction)
        self.p = mlf.check_p(self.cls_name, p)
        self.margin = mlf.check_number(self.cls_name, "margin", margin)
        self.weight = weight

    def construct(self, x, target, weight=None):
        return mlf.multi_margin_loss_of(self.cls_name, ("x", "target"), x, target, self.p,
                                        self.margin, self.weight if weight is None else weight,
                                        self.reduction)


class MultiLabelSoftMarginLoss(LossBase):
    """The multi-label one-vs-all logistic loss, averaged over the classes, as
    `mindspore.nn.MultiLabelSoftMarginLoss(weight=None, reduction='mean')`:
    `ops.multilabel_soft_margin_loss`."""

    def __init__(self, weight: Any = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.weight = weight

    def construct(self, x, target):
        return mlf.multilabel_soft_margin_loss_of(self.cls_name, ("x", "target"), x, target,
                                                  self.weight, self.reduction)


class TripletMarginLoss(LossBase):
    """max(d(x, positive) - d(x, negative) + margin, 0), d the p-norm of the difference
    (+ eps) over dim 1, as `mindspore.nn.TripletMarginLoss(p=2, swap=False, eps=1e-06,
    reduction='mean', margin=1.0)`: `ops.triplet_margin_loss` (a `margin` given to construct
    replaces the layer's)."""

    def __init__(self, p: int = 2, swap: bool = False, eps: float = 1e-06,
                 reduction: str = "mean", margin: float = 1.0) -> None:
        super().__init__(reduction)
        self.p, self.eps, self.swap = mlf.check_triplet(self.cls_name, p, eps, swap)
        self.margin = mlf.check_number(self.cls_name, "margin", margin)

    def construct(self, x, positive, negative, margin=None):
        margin = self.margin if margin is None else mlf.check_number(self.cls_name, "margin",
                                                                     margin)
        return mlf.triplet_margin_loss_of(self.cls_name, ("x", "positive", "negative"), x,
                                          positive, negative, margin, self.p, self.eps,
                                          self.swap, self.reduction)


class PoissonNLLLoss(LossBase):
    """The Poisson negative log likelihood of target given the rate input (its log with
    `log_input`), as `mindspore.nn.PoissonNLLLoss(log_input=True, full=False, eps=1e-08,
    reduction='mean')`."""

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-08,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.log_input = validator.check_bool("log_input", log_input, self.cls_name)
        self.full = validator.check_bool("full", full, self.cls_name)
        validator.check_value_type("eps", eps, (float,), self.cls_name)
        self.eps = mlf.check_number(self.cls_name, "eps", eps)

    def construct(self, input, target):
        return mlf.poisson_nll_loss_of(self.cls_name, ("input", "target"), input, target,
                                       self.log_input, self.full, self.eps, self.reduction)


class GaussianNLLLoss(LossBase):
    """The Gaussian negative log likelihood of labels under N(logits, var), as
    `mindspore.nn.GaussianNLLLoss(*, full=False, eps=1e-06, reduction='mean')`:
    `ops.gaussian_nll_loss`."""

    def __init__(self, *, full: bool = False, eps: float = 1e-06,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full = validator.check_bool("full", full, self.cls_name)
        self.eps = mlf._check_positive(self.cls_name, "eps", eps)

    def construct(self, logits, labels, var):
        return mlf.gaussian_nll_loss_of(self.cls_name, ("logits", "labels", "var"), logits,
                                        labels, var, self.full, self.eps, self.reduction)


class RMSELoss(LossBase):
    """sqrt(mean((logits - label)**2)) over every element (broadcast), as
    `mindspore.nn.RMSELoss()`."""

    def __init__(self) -> None:
        super().__init__("mean")
        self.sqrt = Sqrt()

    def construct(self, logits, label):
        return self.sqrt(loss_func.mse_loss_of(self.cls_name, ("logits", "label"), logits,
                                               label, "mean"))


class MAELoss(LossBase):
    """|logits - label| (broadcast), then `reduction`, as `mindspore.nn.MAELoss(
    reduction='mean')`."""

    def construct(self, logits, label):
        return loss_func.l1_loss_of(self.cls_name, ("logits", "label"), logits, label,
                                    self.reduction)


class MultilabelMarginLoss(LossBase):
    """The multi-label hinge loss of x (C,) or (N, C) against int32 class indices of its
    shape (the first -1 ending them), as `mindspore.nn.MultilabelMarginLoss(reduction=
    'mean')`: `ops.multilabel_margin_loss`."""

    def construct(self, x, target):
        return mlf.multilabel_margin_loss_of(self.cls_name, ("x", "target"), x, target,
                                             self.reduction)


class TripletMarginWithDistanceLoss(LossBase):
    """max(d(x, positive) - d(x, negative) + margin, 0), d `distance_function` (a callable
    of two Tensors; None: the Euclidean distance over the last dim), `swap` using d(positive,
    negative) where it is smaller, then `reduction`, as `mindspore.nn.
    TripletMarginWithDistanceLoss(distance_function=None, swap=False, margin=1.0,
    reduction='mean')`."""

    def __init__(self, distance_function: Any = None, swap: bool = False, margin: float = 1.0,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.distance_function, self.swap, self.margin = mlf.check_distance_loss(
            self.cls_name, distance_function, swap, margin)

    def construct(self, x, positive, negative):
        return mlf.triplet_margin_with_distance_loss_of(
            self.cls_name, ("x", "positive", "negative"), x, positive, negative,
            self.distance_function, self.margin, self.swap, self.reduction)
