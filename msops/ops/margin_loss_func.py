"""Margin and likelihood losses as `mindspore.ops` functions: margin_ranking_loss,
soft_margin_loss, hinge_embedding_loss, multi_margin_loss, multilabel_soft_margin_loss,
triplet_margin_loss, gaussian_nll_loss (and the body of nn.PoissonNLLLoss).

As loss_func.py: each `<loss>_of(name, ...)` body is written with primitives (so it traces,
shards and differentiates as they do) and is shared with its nn layer (msops/nn/
margin_losses.py), which passes its own name, so an error names what the user called.
"""
from __future__ import annotations

import math
from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_broadcast, check_float, check_like, const
from msops.ops.loss_func import check_pair, check_reduction, reduce
from msops.primitives.elementwise_ops import (Greater, Maximum, Minimum, NotEqual, OnesLike, Pow,
                                              Select, Sqrt, ZerosLike)
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import (Add, Cast, Equal, Exp, Log, Mul, Neg, RealDiv,
                                       ReduceMean, ReduceSum, Square, Sub)
from msops.primitives.nn_ops import OneHot, ReLU
from msops.primitives.scan_ops import CumProd
from msops.primitives.shape_ops import ExpandDims, Squeeze
from msops.primitives.unary_ops import Abs, Softplus

__all__ = ["margin_ranking_loss", "soft_margin_loss", "hinge_embedding_loss",
           "multi_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_loss",
           "gaussian_nll_loss", "multilabel_margin_loss"]


def check_number(name: str, arg: str, value: Any) -> float:
    """A finite int or float argument (a margin, an eps)."""
    validator.check_value_type(arg, value, (int, float), name)
    if not math.isfinite(value):
        raise ValueError(f"For '{name}', the '{arg}' should be finite, but got {value}.")
    return float(value)


def _check_positive(name: str, arg: str, value: Any) -> float:
    value = check_number(name, arg, value)
    if value <= 0:
        raise ValueError(f"For '{name}', the '{arg}' should be > 0, but got {value}.")
    return value


def _signs(name: str, arg: str, target: Any, like: Any, like_arg: str) -> None:
    """A +-1 target Tensor of like's dtype broadcasting to like's shape."""
    check_like(name, arg, target, like, like_arg)
    check_broadcast(name, arg, tuple(target.shape), tuple(like.shape))


# -- margin ranking, soft margin, hinge embedding --------------------------------------------
def margin_ranking_loss_of(name: str, names: tuple, x1: Any, x2: Any, target: Any,
                           margin: float, reduction: str) -> Any:
    """max(0, -target * (x1 - x2) + margin), reduced."""
    check_pair(name, names[:2], x1, x2)
    _signs(name, names[2], target, x1, names[0])
    ranked = _prim(Mul)(_prim(Neg)(target), _prim(Sub)(x1, x2))
    return reduce(_prim(ReLU)(_prim(Add)(ranked, margin)), reduction)


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0,
                        reduction: str = "mean") -> Any:
    """max(0, -target * (input1 - input2) + margin) (target +-1: which input should rank
    higher), then `reduction`, as `mindspore.ops.margin_ranking_loss`."""
    name = "margin_ranking_loss"
    return margin_ranking_loss_of(name, ("input1", "input2", "target"), input1, input2, target,
                                  check_number(name, "margin", margin),
                                  check_reduction(name, reduction))


def soft_margin_loss_of(name: str, names: tuple, x: Any, y: Any, reduction: str) -> Any:
    """log(1 + exp(-y x)) as softplus(-y x) (no overflow), reduced."""
    check_pair(name, names, x, y)
    return reduce(_prim(Softplus)(_prim(Neg)(_prim(Mul)(y, x))), reduction)


def soft_margin_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """log(1 + exp(-target * input)) (target +-1, input's shape), then `reduction`, as
    `mindspore.ops.soft_margin_loss`."""
    name = "soft_margin_loss"
    return soft_margin_loss_of(name, ("input", "target"), input, target,
                               check_reduction(name, reduction))


def hinge_embedding_loss_of(name: str, names: tuple, x: Any, y: Any, margin: float,
                            reduction: str) -> Any:
    """x where y == 1, max(0, margin - x) where y == -1 (0 elsewhere), reduced."""
    check_float(name, names[0], x)
    _signs(name, names[1], y, x, names[0])
    dtype = x.dtype

    def where(value: float) -> Any:
        return _prim(Cast)(_prim(Equal)(y, const(value, y.dtype)), dtype)
    apart = _prim(ReLU)(_prim(Sub)(const(margin, dtype), x))
    return reduce(_prim(Add)(_prim(Mul)(x, where(1.0)), _prim(Mul)(apart, where(-1.0))),
                  reduction)


def hinge_embedding_loss(inputs: Any, targets: Any, margin: float = 1.0,
                         reduction: str = "mean") -> Any:
    """inputs where targets == 1, max(0, margin - inputs) where targets == -1, then
    `reduction`, as `mindspore.ops.hinge_embedding_loss`."""
    name = "hinge_embedding_loss"
    return hinge_embedding_loss_of(name, ("inputs", "targets"), inputs, targets,
                                   check_number(name, "margin", margin),
                                   check_reduction(name, reduction))


# -- multi-class margins ------------------------------------------------------------------
def _class_targets(name: str, names: tuple, x: Any, target: Any) -> int:
    """x (N, C) floats, target (N,) int class indices; returns C."""
    check_float(name, names[0], x)
    check_tensor(name, names[1], target)
    if len(x.shape) != 2:
        raise ValueError(f"For '{name}', the '{names[0]}' should be 2-D (N, C), but got shape "
                         f"{list(x.shape)}.")
    if target.dtype not in (mstype.int32, mstype.int64) or \
            tuple(target.shape) != tuple(x.shape[:1]):
        raise ValueError(f"For '{name}', the '{names[1]}' should be an int32/int64 Tensor of "
                         f"shape {list(x.shape[:1])}, but got {target.dtype} of shape "
                         f"{list(target.shape)}.")
    return x.shape[1]


def multi_margin_loss_of(name: str, names: tuple, x: Any, target: Any, p: int, margin: float,
                         weight: Any, reduction: str) -> Any:
    """sum over j != y of (weight[y] * max(0, margin - x[y] + x[j]))**p / C per sample
    (torch's and MindSpore's placement of the weight), reduced."""
    classes = _class_targets(name, names, x, target)
    dtype = x.dtype
    picked = _prim(OneHot, -1)(target, classes, const(1.0, dtype), const(0.0, dtype))
    own = _prim(ReduceSum, True)(_prim(Mul)(x, picked), 1)
    gaps = _prim(ReLU)(_prim(Add)(_prim(Sub)(x, own), margin))
    gaps = _prim(Mul)(gaps, _prim(Sub)(const(1.0, dtype), picked))     # j == y counts nothing
    if weight is not None:
        check_like(name, "weight", weight, x, names[0])
        if tuple(weight.shape) != (classes,):
            raise ValueError(f"For '{name}', the 'weight' should have shape [{classes}] (one "
                             f"per class), but got {list(weight.shape)}.")
        gaps = _prim(Mul)(gaps, _prim(ExpandDims)(_prim(Gather)(weight, target, 0), 1))
    if p == 2:
        gaps = _prim(Square)(gaps)
    return reduce(_prim(Mul)(_prim(ReduceSum)(gaps, 1), 1.0 / classes), reduction)


def check_p(name: str, p: Any, allowed: tuple = (1, 2)) -> int:
    validator.check_value_type("p", p, (int,), name)
    if p not in allowed:
        raise ValueError(f"For '{name}', the 'p' should be one of {list(allowed)}, but got "
                         f"{p}.")
    return p


def multi_margin_loss(input: Any, target: Any, p: int = 1, margin: float = 1,
                      weight: Any = None, reduction: str = "mean") -> Any:
    """The multi-class hinge loss of input (N, C) against class indices target (N,): sum
    over j != target of max(0, margin - input[target] + input[j])**p / C, weighted by
    weight[target] (p 1 or 2), then `reduction`, as `mindspore.ops.multi_margin_loss`."""
    name = "multi_margin_loss"
    return multi_margin_loss_of(name, ("input", "target"), input, target, check_p(name, p),
                                check_number(name, "margin", margin), weight,
                                check_reduction(name, reduction))


def multilabel_soft_margin_loss_of(name: str, names: tuple, x: Any, y: Any, weight: Any,
                                   reduction: str) -> Any:
    """-mean over the classes (last dim) of weight * (y log sigmoid(x) + (1 - y) log
    sigmoid(-x)), as y softplus(-x) + (1 - y) softplus(x), reduced over the samples."""
    check_pair(name, names, x, y)
    if len(x.shape) < 1:
        raise ValueError(f"For '{name}', the '{names[0]}' should have a class dim, but got "
                         f"shape [].")
    dtype = x.dtype
    per_class = _prim(Add)(_prim(Mul)(y, _prim(Softplus)(_prim(Neg)(x))),
                           _prim(Mul)(_prim(Sub)(const(1.0, dtype), y), _prim(Softplus)(x)))
    if weight is not None:
        check_like(name, "weight", weight, x, names[0])
        check_broadcast(name, "weight", tuple(weight.shape), tuple(x.shape))
        per_class = _prim(Mul)(per_class, weight)
    return reduce(_prim(ReduceMean)(per_class, -1), reduction)


def multilabel_soft_margin_loss(input: Any, target: Any, weight: Any = None,
                                reduction: str = "mean") -> Any:
    """The multi-label one-vs-all logistic loss of input (N, C) against 0/1 targets of its
    shape, averaged over C (each class weighted by `weight`), then `reduction`, as
    `mindspore.ops.multilabel_soft_margin_loss`."""
    name = "multilabel_soft_margin_loss"
    return multilabel_soft_margin_loss_of(name, ("input", "target"), input, target, weight,
                                          check_reduction(name, reduction))


# -- triplet margin --------------------------------------------------------------------------
def _distance(a: Any, b: Any, p: int, eps: float) -> Any:
    """||a - b + eps||_p over dim 1 (torch's pairwise_distance)."""
    diff = _prim(Abs)(_prim(Add)(_prim(Sub)(a, b), eps))
    if p == 1:
        return _prim(ReduceSum)(diff, 1)
    return _prim(Pow)(_prim(ReduceSum)(_prim(Pow)(diff, float(p)), 1), 1.0 / p)


def triplet_margin_loss_of(name: str, names: tuple, a: Any, pos: Any, neg: Any, margin: float,
                           p: int, eps: float, swap: bool, reduction: str) -> Any:
    """max(d(a, pos) - d(a, neg) + margin, 0) per sample (d: the p-norm over dim 1; `swap`:
    d(a, neg) replaced by d(pos, neg) where smaller), reduced."""
    check_pair(name, names[:2], a, pos)
    check_pair(name, (names[0], names[2]), a, neg)
    if len(a.shape) < 2:
        raise ValueError(f"For '{name}', the '{names[0]}' should be at least 2-D (N, D, ...), "
                         f"but got shape {list(a.shape)}.")
    d_pos, d_neg = _distance(a, pos, p, eps), _distance(a, neg, p, eps)
    if swap:
        d_neg = _prim(Minimum)(d_neg, _distance(pos, neg, p, eps))
    return reduce(_prim(ReLU)(_prim(Add)(_prim(Sub)(d_pos, d_neg), margin)), reduction)


def check_triplet(name: str, p: Any, eps: Any, swap: Any) -> tuple:
    validator.check_value_type("p", p, (int,), name)
    if p <= 0:
        raise ValueError(f"For '{name}', the 'p' should be a positive int, but got {p}.")
    validator.check_value_type("eps", eps, (float,), name)
    validator.check_bool("swap", swap, name)
    return p, check_number(name, "eps", eps), swap


def triplet_margin_loss(anchor: Any, positive: Any, negative: Any, margin: float = 1.0,
                        p: int = 2, eps: float = 1e-06, swap: bool = False,
                        reduction: str = "mean") -> Any:
    """max(||anchor - positive + eps||_p - ||anchor - negative + eps||_p + margin, 0), the
    norms over dim 1, then `reduction`, as `mindspore.ops.triplet_margin_loss`."""
    name = "triplet_margin_loss"
    p, eps, swap = check_triplet(name, p, eps, swap)
    return triplet_margin_loss_of(name, ("anchor", "positive", "negative"), anchor, positive,
                                  negative, check_number(name, "margin", margin), p, eps, swap,
                                  check_reduction(name, reduction))


# -- likelihoods ---------------------------------------------------------------------------
def poisson_nll_loss_of(name: str, names: tuple, x: Any, y: Any, log_input: bool, full: bool,
                        eps: float, reduction: str) -> Any:
    """exp(x) - y x (log_input) or x - y log(x + eps); `full` adds Stirling's approximation
    y log y - y + log(2 pi y) / 2 where y > 1; reduced."""
    check_pair(name, names, x, y)
    if log_input:
        loss = _prim(Sub)(_prim(Exp)(x), _prim(Mul)(y, x))
    else:
        loss = _prim(Sub)(x, _prim(Mul)(y, _prim(Log)(_prim(Add)(x, eps))))
    if full:
        big = _prim(Greater)(y, 1.0)
        safe = _prim(Select)(big, y, _prim(Add)(_prim(ZerosLike)(y), 1.0))
        stirling = _prim(Add)(_prim(Sub)(_prim(Mul)(safe, _prim(Log)(safe)), safe),
                              _prim(Mul)(_prim(Log)(_prim(Mul)(safe, 2 * math.pi)), 0.5))
        loss = _prim(Add)(loss, _prim(Select)(big, stirling, _prim(ZerosLike)(stirling)))
    return reduce(loss, reduction)


def gaussian_nll_loss_of(name: str, names: tuple, x: Any, y: Any, var: Any, full: bool,
                         eps: float, reduction: str) -> Any:
    """(log(max(var, eps)) + (x - y)**2 / max(var, eps)) / 2 (+ log(2 pi) / 2 if `full`),
    var of x's shape, or with its last dim 1 or missing (one variance per sample)."""
    check_pair(name, names[:2], x, y, broadcast=True)
    check_like(name, names[2], var, x, names[0])
    shape, vshape = tuple(x.shape), tuple(var.shape)
    if shape and vshape == shape[:-1]:
        var = _prim(ExpandDims)(var, -1)
    elif vshape != shape and not (shape and vshape == shape[:-1] + (1,)):
        raise ValueError(f"For '{name}', the '{names[2]}' should have the shape of "
                         f"'{names[0]}' {list(shape)}, or it with the last dim 1 or dropped, "
                         f"but got {list(vshape)}.")
    v = _prim(Maximum)(var, eps)
    loss = _prim(Mul)(_prim(Add)(_prim(Log)(v), _prim(RealDiv)(
        _prim(Square)(_prim(Sub)(x, y)), v)), 0.5)
    if full:
        loss = _prim(Add)(loss, 0.5 * math.log(2 * math.pi))
    return reduce(loss, reduction)


def gaussian_nll_loss(x: Any, target: Any, var: Any, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Any:
    """The Gaussian negative log likelihood of target under N(x, var), var clamped to >= eps
    (no gradient below it), then `reduction`, as `mindspore.ops.gaussian_nll_loss`."""
    name = "gaussian_nll_loss"
    validator.check_bool("full", full, name)
    return gaussian_nll_loss_of(name, ("x", "target", "var"), x, target, var, full,
                                _check_positive(name, "eps", eps),
                                check_reduction(name, reduction))


# -- multi-label margin, triplet with a distance function ------------------------------------
def multilabel_margin_loss_of(name: str, names: tuple, x: Any, target: Any,
                              reduction: str) -> Any:
    """sum over the sample's targets j and its other classes i of max(0, 1 - (x[j] - x[i])),
    divided by C, per sample (the targets: target's entries before its first -1)."""
    check_float(name, names[0], x)
    check_tensor(name, names[1], target)
    shape = tuple(x.shape)
    if len(shape) not in (1, 2) or not shape[-1]:
        raise ValueError(f"For '{name}', the '{names[0]}' should be 1-D (C,) or 2-D (N, C) "
                         f"with C > 0, but got shape {list(shape)}.")
    if target.dtype != mstype.int32 or tuple(target.shape) != shape:
        raise ValueError(f"For '{name}', the '{names[1]}' should be an int32 Tensor of shape "
                         f"{list(shape)}, but got {target.dtype} of shape "
                         f"{list(target.shape)}.")
    if len(shape) == 1:
        x, target = _prim(ExpandDims)(x, 0), _prim(ExpandDims)(target, 0)
    classes, dtype = shape[-1], x.dtype
    one = const(1.0, dtype)
    # 1 for the entries before the first -1 (the sample's targets), 0 from it on
    listed = _prim(CumProd)(_prim(Cast)(_prim(NotEqual)(target, const(-1, mstype.int32)),
                                        dtype), 1)
    hot = _prim(Mul)(_prim(OneHot, -1)(target, classes, one, const(0.0, dtype)),
                     _prim(ExpandDims)(listed, 2))                  # (N, S, C)
    is_target = _prim(Minimum)(_prim(ReduceSum)(hot, 1), one)      # (N, C)
    picked = _prim(ReduceSum)(_prim(Mul)(hot, _prim(ExpandDims)(x, 1)), 2)   # x[j], (N, S)
    gaps = _prim(ReLU)(_prim(Add)(_prim(Sub)(_prim(ExpandDims)(x, 1),
                                             _prim(ExpandDims)(picked, 2)), one))
    counted = _prim(Mul)(_prim(ExpandDims)(listed, 2),
                         _prim(ExpandDims)(_prim(Sub)(one, is_target), 1))
    loss = _prim(Mul)(_prim(ReduceSum)(_prim(Mul)(gaps, counted), (1, 2)), 1.0 / classes)
    if len(shape) == 1:
        loss = _prim(Squeeze, 0)(loss)
    return reduce(loss, reduction)


def multilabel_margin_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """The multi-label hinge loss of input (C,) or (N, C) against int32 targets of its shape
    (class indices, the first -1 ending them): per sample, the sum over its targets j and
    its other classes i of max(0, 1 - (input[j] - input[i])), over C; then `reduction`, as
    `mindspore.ops.multilabel_margin_loss`. Indices outside [0, C) before the first -1
    count as no class."""
    name = "multilabel_margin_loss"
    return multilabel_margin_loss_of(name, ("input", "target"), input, target,
                                     check_reduction(name, reduction))


def euclidean_distance(a: Any, b: Any) -> Any:
    """||a - b||_2 over the last dim, with a 0 gradient where a == b (no NaN)."""
    squares = _prim(ReduceSum)(_prim(Square)(_prim(Sub)(a, b)), -1)
    apart = _prim(Greater)(squares, const(0.0, squares.dtype))
    safe = _prim(Select)(apart, squares, _prim(OnesLike)(squares))
    return _prim(Select)(apart, _prim(Sqrt)(safe), _prim(ZerosLike)(squares))


def triplet_margin_with_distance_loss_of(name: str, names: tuple, a: Any, pos: Any, neg: Any,
                                         distance: Any, margin: float, swap: bool,
                                         reduction: str) -> Any:
    """max(d(a, pos) - d(a, neg) + margin, 0) with d `distance` (None: the Euclidean
    distance over the last dim; `swap`: d(a, neg) replaced by d(pos, neg) where smaller),
    reduced."""
    for arg, t in zip(names, (a, pos, neg)):
        check_tensor(name, arg, t)
    distance = euclidean_distance if distance is None else distance
    if distance is euclidean_distance:
        check_pair(name, names[:2], a, pos)
        check_pair(name, (names[0], names[2]), a, neg)
        if not a.shape:
            raise ValueError(f"For '{name}', the '{names[0]}' should have at least 1 dim, but "
                             f"got shape [].")
    d_pos, d_neg = distance(a, pos), distance(a, neg)
    if swap:
        d_neg = _prim(Minimum)(d_neg, distance(pos, neg))
    return reduce(_prim(ReLU)(_prim(Add)(_prim(Sub)(d_pos, d_neg), margin)), reduction)


def check_distance_loss(name: str, distance_function: Any, swap: Any, margin: Any) -> tuple:
    if distance_function is not None and not callable(distance_function):
        raise TypeError(f"For '{name}', the 'distance_function' should be None or a callable "
                        f"of two Tensors, but got {type(distance_function).__name__}.")
    validator.check_bool("swap", swap, name)
    margin = check_number(name, "margin", margin)
    if margin < 0:
        raise ValueError(f"For '{name}', the 'margin' should be >= 0, but got {margin}.")
    return distance_function, swap, margin
