"""Losses as `mindspore.ops` functions: mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy_with_logits, binary_cross_entropy, kl_div and cosine_embedding_loss.

Each is written with primitives, so it traces, shards and differentiates as they do; the
nn losses (nn.MSELoss, nn.BCEWithLogitsLoss, nn.CrossEntropyLoss, ...) call the same
bodies with their own name, so an error names the layer or function the user called. The
class-index losses (cross_entropy, nll_loss) live in class_loss_func.py.
"""
from __future__ import annotations

import math
from typing import Any

from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_broadcast, check_float, check_like, const
from msops.primitives.math_ops import (Add, Cast, Equal, Log, Mul, Neg, ReduceMean, ReduceSum,
                                       Square, Sub)
from msops.primitives.elementwise_ops import Minimum
from msops.primitives.nn_ops import ReLU
from msops.primitives.unary_ops import Abs, Rsqrt, Softplus

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy_with_logits", "binary_cross_entropy", "kl_div",
           "cosine_embedding_loss"]

REDUCTIONS = ("none", "mean", "sum")

#: the argument names of the functions (`names`); the nn losses' are ("logits", "labels")
IN_TARGET = ("input", "target")

#: binary_cross_entropy's log(x + BCE_EPS), as MindSpore's CPU kernel: x = 0 or 1 stays finite
BCE_EPS = 1e-12


# -- shared checks and pieces -------------------------------------------------------------
def check_reduction(name: str, reduction: Any, valid: tuple = REDUCTIONS) -> str:
    """`reduction` as one of `valid` (a TypeError for a non-str, a ValueError otherwise)."""
    validator.check_value_type("reduction", reduction, str, name)
    return validator.check_string("reduction", reduction, valid, name)


def reduce(loss: Any, reduction: str) -> Any:
    """'mean' / 'sum' over every element, or the element-wise losses for 'none'."""
    if reduction == "mean":
        return _prim(ReduceMean)(loss)
    if reduction == "sum":
        return _prim(ReduceSum)(loss)
    return loss


def check_pair(name: str, names: tuple, x: Any, y: Any, broadcast: bool = False) -> None:
    """x and y: float Tensors of one dtype and of one shape (or broadcastable ones)."""
    check_float(name, names[0], x)
    check_float(name, names[1], y)
    if x.dtype != y.dtype:
        raise TypeError(f"For '{name}', the '{names[0]}' and '{names[1]}' should have the same "
                        f"dtype, but got {x.dtype} and {y.dtype}.")
    if broadcast:
        check_broadcast(name, names[1], tuple(y.shape), tuple(x.shape), mutual=True)
    elif tuple(x.shape) != tuple(y.shape):
        raise ValueError(f"For '{name}', the '{names[1]}' should have the shape of "
                         f"'{names[0]}' {list(x.shape)}, but got {list(y.shape)}.")


def check_optional_weight(name: str, arg: str, weight: Any, like: Any,
                          like_arg: str) -> None:
    """An optional rescaling Tensor: None, or a Tensor of like's dtype broadcasting to its
    shape."""
    if weight is None:
        return
    check_like(name, arg, weight, like, like_arg)
    check_broadcast(name, arg, tuple(weight.shape), tuple(like.shape))


# -- regression losses ----------------------------------------------------------------------
def mse_loss_of(name: str, names: tuple, x: Any, y: Any, reduction: str) -> Any:
    """(x - y)**2, broadcast, reduced."""
    check_pair(name, names, x, y, broadcast=True)
    return reduce(_prim(Square)(_prim(Sub)(x, y)), reduction)


def l1_loss_of(name: str, names: tuple, x: Any, y: Any, reduction: str) -> Any:
    """|x - y|, broadcast, reduced (the gradient is sign(x - y), 0 at a tie)."""
    check_pair(name, names, x, y, broadcast=True)
    return reduce(_prim(Abs)(_prim(Sub)(x, y)), reduction)


def _smooth_l1(d: Any, beta: float) -> Any:
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta; written with m = min(|d|, beta)
    as 0.5 m**2 / beta + (|d| - m), so no branch is selected and the gradient is continuous."""
    ad = _prim(Abs)(d)
    m = _prim(Minimum)(ad, beta)
    return _prim(Add)(_prim(Mul)(_prim(Square)(m), 0.5 / beta), _prim(Sub)(ad, m))


def smooth_l1_loss_of(name: str, names: tuple, x: Any, y: Any, beta: Any, reduction: str) -> Any:
    """Smooth L1 of x - y (one shape), reduced."""
    check_pair(name, names, x, y)
    return reduce(_smooth_l1(_prim(Sub)(x, y), beta), reduction)


def _positive(name: str, arg: str, value: Any, types: tuple) -> float:
    validator.check_value_type(arg, value, types, name)
    if not 0 < value < math.inf:
        raise ValueError(f"For '{name}', the '{arg}' should be > 0 and finite, but got "
                         f"{value}.")
    return float(value)


def check_beta(name: str, beta: Any) -> float:
    """smooth L1's beta: a finite float > 0."""
    return _positive(name, "beta", beta, (float,))


def check_delta(name: str, delta: Any) -> float:
    """Huber's delta: a finite int or float > 0."""
    return _positive(name, "delta", delta, (int, float))


def huber_loss_of(name: str, names: tuple, x: Any, y: Any, reduction: str, delta: float) -> Any:
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta), d = x - y broadcast: delta
    times smooth L1 with beta = delta."""
    check_pair(name, names, x, y, broadcast=True)
    return reduce(_prim(Mul)(_smooth_l1(_prim(Sub)(x, y), delta), delta), reduction)


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """(input - target)**2 element-wise (broadcast), then `reduction` ('mean', 'sum' or
    'none'), as `mindspore.ops.mse_loss`."""
    return mse_loss_of("mse_loss", IN_TARGET, input, target, check_reduction("mse_loss", reduction))


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """|input - target| element-wise (broadcast), then `reduction`, as
    `mindspore.ops.l1_loss`."""
    return l1_loss_of("l1_loss", IN_TARGET, input, target, check_reduction("l1_loss", reduction))


def smooth_l1_loss(input: Any, target: Any, beta: float = 1.0, reduction: str = "none") -> Any:
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target, one
    shape), then `reduction` ('none' by default), as `mindspore.ops.smooth_l1_loss`."""
    name = "smooth_l1_loss"
    return smooth_l1_loss_of(name, IN_TARGET, input, target, check_beta(name, beta),
                             check_reduction(name, reduction))


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0) -> Any:
    """0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target,
    broadcast), then `reduction`, as `mindspore.ops.huber_loss`."""
    name = "huber_loss"
    return huber_loss_of(name, IN_TARGET, input, target, check_reduction(name, reduction),
                         check_delta(name, delta))


# -- binary cross entropy -------------------------------------------------------------------
def bce_with_logits_of(name: str, names: tuple, x: Any, y: Any, weight: Any, pos_weight: Any,
                       reduction: str) -> Any:
    """-w [p y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], written stably as
    softplus(x) - x y + (p - 1) y softplus(-x) (softplus(x) = max(x, 0) + log1p(exp(-|x|)),
    the Softplus primitive); `weight` w and `pos_weight` p broadcast to x."""
    check_pair(name, names, x, y)
    check_optional_weight(name, "weight", weight, x, names[0])
    check_optional_weight(name, "pos_weight", pos_weight, x, names[0])
    loss = _prim(Sub)(_prim(Softplus)(x), _prim(Mul)(x, y))
    if pos_weight is not None:
        # (p - 1) y as p y - y: the labels, not the weight, are the ops' first inputs (the
        # data-parallel default splits a first input's dim 0)
        scale = _prim(Sub)(_prim(Mul)(y, pos_weight), y)
        extra = _prim(Mul)(scale, _prim(Softplus)(_prim(Neg)(x)))
        loss = _prim(Add)(loss, extra)
    if weight is not None:
        loss = _prim(Mul)(loss, weight)
    return reduce(loss, reduction)


def bce_of(name: str, names: tuple, x: Any, y: Any, weight: Any, reduction: str) -> Any:
    """-w [y log(x + eps) + (1 - y) log(1 - x + eps)] of probabilities x (MindSpore's CPU
    kernel's eps = 1e-12 keeps x = 0 and x = 1 finite)."""
    check_pair(name, names, x, y)
    check_optional_weight(name, "weight", weight, x, names[0])
    one = const(1.0, x.dtype)
    log_x = _prim(Log)(_prim(Add)(x, BCE_EPS))
    log_not_x = _prim(Log)(_prim(Add)(_prim(Sub)(one, x), BCE_EPS))
    loss = _prim(Neg)(_prim(Add)(_prim(Mul)(y, log_x),
                                 _prim(Mul)(_prim(Sub)(one, y), log_not_x)))
    if weight is not None:
        loss = _prim(Mul)(loss, weight)
    return reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     pos_weight: Any = None, reduction: str = "mean") -> Any:
    """Binary cross entropy of sigmoid(input) against `target` (input's shape and dtype),
    `weight` and `pos_weight` broadcasting to input, as
    `mindspore.ops.binary_cross_entropy_with_logits` (stable for large |input|)."""
    name = "binary_cross_entropy_with_logits"
    return bce_with_logits_of(name, IN_TARGET, input, target, weight, pos_weight,
                              check_reduction(name, reduction))


def binary_cross_entropy(logits: Any, labels: Any, weight: Any = None,
                         reduction: str = "mean") -> Any:
    """Binary cross entropy of probabilities `logits` (in [0, 1]) against `labels` (their
    shape and dtype), `weight` broadcasting to logits, as `mindspore.ops.binary_cross_entropy`."""
    name = "binary_cross_entropy"
    return bce_of(name, ("logits", "labels"), logits, labels, weight,
                  check_reduction(name, reduction))


# -- KL divergence --------------------------------------------------------------------------
KL_REDUCTIONS = ("none", "mean", "batchmean", "sum")


def kl_div_of(name: str, x: Any, y: Any, reduction: str) -> Any:
    """y (log y - x) element-wise, 0 where y == 0 (the limit, as torch's xlogy); 'batchmean'
    divides the sum by x.shape[0]."""
    check_pair(name, ("logits", "labels"), x, y)
    zero = _prim(Cast)(_prim(Equal)(y, const(0.0, y.dtype)), y.dtype)
    y_log_y = _prim(Mul)(y, _prim(Log)(_prim(Add)(y, zero)))      # log(1) = 0 where y == 0
    loss = _prim(Sub)(y_log_y, _prim(Mul)(y, x))
    if reduction == "batchmean":
        batch = x.shape[0] if len(x.shape) else 1
        return _prim(Mul)(_prim(ReduceSum)(loss), 1.0 / batch)
    return reduce(loss, reduction)


def kl_div(logits: Any, labels: Any, reduction: str = "mean") -> Any:
    """KL divergence labels * (log(labels) - logits) of log-probabilities `logits` against
    probabilities `labels` (one shape and dtype), reduced by 'mean', 'batchmean' (the sum
    over the batch size: the mathematical KL divergence), 'sum' or 'none', as
    `mindspore.ops.kl_div`."""
    return kl_div_of("kl_div", logits, labels,
                     check_reduction("kl_div", reduction, KL_REDUCTIONS))


# -- cosine embedding -----------------------------------------------------------------------
#: added to each squared norm, so a zero vector gives cosine 0, not 0 / 0 (torch's EPSILON)
COSINE_EPS = 1e-12


def check_margin(name: str, margin: Any) -> float:
    """The cosine embedding margin: a float in [-1, 1]."""
    validator.check_value_type("margin", margin, float, name)
    if not -1.0 <= margin <= 1.0:
        raise ValueError(f"For '{name}', the 'margin' should be in [-1.0, 1.0], but got "
                         f"{margin}.")
    return margin


def cosine_embedding_loss_of(name: str, names: tuple, x1: Any, x2: Any, labels: Any,
                             margin: float, reduction: str) -> Any:
    """1 - cos(x1, x2) where labels == 1, max(0, cos(x1, x2) - margin) where labels == -1
    (0 elsewhere), the cosine over dim 1; labels have x1's shape without dim 1."""
    check_pair(name, names[:2], x1, x2)
    check_tensor(name, names[2], labels)
    shape = tuple(x1.shape)
    want = shape[:1] + shape[2:]
    if len(shape) < 2 or tuple(labels.shape) != want:
        raise ValueError(f"For '{name}', the '{names[2]}' should have the shape of "
                         f"'{names[0]}' {list(shape)} without dim 1 ({list(want)}, and "
                         f"'{names[0]}' at least 2-D), but got {list(labels.shape)}.")
    dot = _prim(ReduceSum)(_prim(Mul)(x1, x2), 1)
    norms = _prim(Mul)(_prim(Add)(_prim(ReduceSum)(_prim(Square)(x1), 1), COSINE_EPS),
                       _prim(Add)(_prim(ReduceSum)(_prim(Square)(x2), 1), COSINE_EPS))
    cosine = _prim(Mul)(dot, _prim(Rsqrt)(norms))
    dtype = x1.dtype

    def where(value: float) -> Any:
        return _prim(Cast)(_prim(Equal)(labels, const(value, labels.dtype)), dtype)
    similar = _prim(Mul)(_prim(Sub)(const(1.0, dtype), cosine), where(1.0))
    apart = _prim(Mul)(_prim(ReLU)(_prim(Sub)(cosine, margin)), where(-1.0))
    return reduce(_prim(Add)(similar, apart), reduction)


def cosine_embedding_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                          reduction: str = "mean") -> Any:
    """1 - cos(input1, input2) where target == 1, max(0, cos - margin) where target == -1,
    the cosine over dim 1 (target: input1's shape without dim 1), then `reduction`, as
    `mindspore.ops.cosine_embedding_loss`."""
    name = "cosine_embedding_loss"
    return cosine_embedding_loss_of(name, ("input1", "input2", "target"), input1, input2,
                                    target, check_margin(name, margin),
                                    check_reduction(name, reduction))
