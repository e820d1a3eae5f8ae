"""The class-dim losses as `mindspore.ops` functions: cross_entropy and nll_loss, one body
each, shared with nn.CrossEntropyLoss and nn.NLLLoss (which pass their own name and
argument names, so an error names what the user called).

Logits (N, C) or (N, C, d1, ..., dK) (class dim 1, as torch/MindSpore) are moved to rows of
(N * d1 * ... * dK, C) (a Transpose and a Reshape, which differentiate), the per-row losses
computed there, and 'none' gives them back as (N, d1, ..., dK).

Class-index targets (ints, shape (N, d1, ..., dK)) with class weights w (ones by default),
ignore_index and label smoothing s, per row r with y_r its class:
    l_r = m_r * ((1 - s) * -w[y_r] logp[r, y_r] + s / C * -sum_c w_c logp[r, c]),
m_r = 0 where y_r == ignore_index; 'mean' divides sum(l) by sum(m_r * w[y_r]).
Probability targets (cross_entropy only, the logits' shape and dtype):
    l_r = -sum_c w_c ((1 - s) t[r, c] + s / C) logp[r, c]; 'mean' divides by the row count.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, check_like, const
from msops.ops.loss_func import check_reduction, reduce
from msops.primitives.array_ops import Reshape, StopGradient, Transpose
from msops.primitives.math_ops import (Add, Cast, Equal, Exp, Log, Mul, Neg, RealDiv,
                                       ReduceMax, ReduceSum, Sub)
from msops.primitives.nn_ops import OneHot

__all__ = ["cross_entropy", "nll_loss"]

_INDEX_TYPES = mstype.int_type + mstype.uint_type


def check_class_weight(name: str, weight: Any) -> Any:
    """The class `weight`: None or a 1-D float Tensor (C,)."""
    if weight is None:
        return None
    check_float(name, "weight", weight)
    if len(weight.shape) != 1:
        raise ValueError(f"For '{name}', the 'weight' should be 1-D (C,), but got shape "
                         f"{list(weight.shape)}.")
    return weight


def check_smoothing(name: str, label_smoothing: Any) -> float:
    """label_smoothing: a number in [0, 1]."""
    validator.check_value_type("label_smoothing", label_smoothing, (int, float), name)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"For '{name}', the 'label_smoothing' should be in [0, 1], but got "
                         f"{label_smoothing}.")
    return float(label_smoothing)


def _rows(name: str, names: tuple, logits: Any, labels: Any, weight: Any) -> tuple:
    """(logits as (M, C) rows, labels as (M,) or (M, C), the shape of 'none', C)."""
    what, target = names
    check_float(name, what, logits)
    check_tensor(name, target, labels)
    shape = tuple(logits.shape)
    if len(shape) < 2:
        raise ValueError(f"For '{name}', the '{what}' should be (N, C) or (N, C, d1, ..., "
                         f"dK), but got shape {list(shape)}.")
    classes = shape[1]
    if weight is not None:
        check_like(name, "weight", weight, logits, what)
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ValueError(f"For '{name}', the 'weight' should have shape [C] for the "
                         f"{classes} classes of '{what}': [{classes}], but got "
                         f"{list(weight.shape)}.")
    out_shape = shape[:1] + shape[2:]
    indices = labels.dtype in _INDEX_TYPES
    want = out_shape if indices else shape
    if tuple(labels.shape) != want:
        kind = f"class-index '{target}'" if indices else f"probability '{target}'"
        raise ValueError(f"For '{name}', the {kind} should have shape {list(want)}, but "
                         f"got {list(labels.shape)}.")
    if not indices and labels.dtype != logits.dtype:
        raise TypeError(f"For '{name}', the probability '{target}' should have the dtype of "
                        f"'{what}' {logits.dtype}, but got {labels.dtype}.")
    if len(shape) == 2:
        return logits, labels, out_shape, classes
    rows = math.prod(out_shape)
    perm = (0,) + tuple(range(2, len(shape))) + (1,)          # the class dim last
    reshape, transpose = _prim(Reshape), _prim(Transpose)
    logits = reshape(transpose(logits, perm), (rows, classes))
    labels = reshape(labels, (rows,)) if indices else \
        reshape(transpose(labels, perm), (rows, classes))
    return logits, labels, out_shape, classes


def _index_loss(logp: Any, labels: Any, classes: int, weight: Any, ignore_index: int,
                s: float) -> tuple:
    """(per-row loss (M,), the 'mean' denominator sum(m_r * w[y_r])) of class indices."""
    dtype, rows = logp.dtype, logp.shape[0]
    one, zero = const(1.0, dtype), const(0.0, dtype)
    w = one if weight is None else weight
    ignored = _prim(Equal)(labels, Tensor(np.array(ignore_index,
                                                   mstype.dtype_to_nptype(labels.dtype))))
    mask = _prim(Sub)(one, _prim(Cast)(ignored, dtype))                           # (M,)
    hot = _prim(OneHot)(labels, classes, one, zero)
    hot = _prim(Mul)(_prim(Mul)(hot, _prim(Reshape)(mask, (rows, 1))), w)          # m w[y]
    loss = _prim(Neg)(_prim(ReduceSum)(_prim(Mul)(hot, logp), -1))                 # (M,)
    if s:
        smooth = _prim(Neg)(_prim(ReduceSum)(_prim(Mul)(logp, w), -1))
        loss = _prim(Add)(_prim(Mul)(loss, 1.0 - s),
                          _prim(Mul)(_prim(Mul)(smooth, mask), s / classes))
    return loss, _prim(ReduceSum)(hot)


def _reduced(loss: Any, out_shape: tuple, reduction: str, denominator: Any = None) -> Any:
    """'none': the losses as out_shape; 'sum'; 'mean' (over `denominator` when given)."""
    if reduction == "none":
        return loss if len(out_shape) == 1 else _prim(Reshape)(loss, out_shape)
    if reduction == "mean" and denominator is not None:
        return _prim(RealDiv)(_prim(ReduceSum)(loss), denominator)
    return reduce(loss, reduction)


def _log_softmax(x: Any) -> Any:
    """x - max - log(sum(exp(x - max))) over the class axis (the max carries no gradient:
    the result does not depend on it)."""
    peak = _prim(StopGradient)(_prim(ReduceMax, True)(x, -1))
    shifted = _prim(Sub)(x, peak)
    return _prim(Sub)(shifted, _prim(Log)(_prim(ReduceSum, True)(_prim(Exp)(shifted), -1)))


def cross_entropy_of(name: str, names: tuple, logits: Any, labels: Any, weight: Any,
                     ignore_index: int, reduction: str, s: float) -> Any:
    """The cross entropy of softmax(logits) (the module docstring's formulas)."""
    logits, labels, out_shape, classes = _rows(name, names, logits, labels, weight)
    logp = _log_softmax(logits)
    if labels.dtype in _INDEX_TYPES:
        loss, denominator = _index_loss(logp, labels, classes, weight, ignore_index, s)
        return _reduced(loss, out_shape, reduction, denominator)
    if s:
        labels = _prim(Add)(_prim(Mul)(labels, 1.0 - s), s / classes)
    if weight is not None:
        labels = _prim(Mul)(labels, weight)
    loss = _prim(Neg)(_prim(ReduceSum)(_prim(Mul)(labels, logp), -1))
    return _reduced(loss, out_shape, reduction)


def nll_loss_of(name: str, names: tuple, logits: Any, labels: Any, weight: Any,
                ignore_index: int, reduction: str, s: float) -> Any:
    """The negative log-likelihood of log-probabilities `logits` at class indices."""
    if isinstance(labels, Tensor) and labels.dtype not in _INDEX_TYPES:
        raise TypeError(f"For '{name}', the '{names[1]}' should be class indices (an int "
                        f"Tensor), but got {labels.dtype}.")
    logits, labels, out_shape, classes = _rows(name, names, logits, labels, weight)
    loss, denominator = _index_loss(logits, labels, classes, weight, ignore_index, s)
    return _reduced(loss, out_shape, reduction, denominator)


def _arguments(name: str, weight: Any, ignore_index: Any, reduction: Any,
               label_smoothing: Any) -> tuple:
    validator.check_int("ignore_index", ignore_index, name)
    return (check_class_weight(name, weight), ignore_index, check_reduction(name, reduction),
            check_smoothing(name, label_smoothing))


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    """Cross entropy of logits `input` (N, C) or (N, C, d1, ..., dK) against class indices
    `target` (N,) / (N, d1, ..., dK) (ints) or class probabilities of input's shape and
    dtype, as `mindspore.ops.cross_entropy` (the module docstring's formulas). Output
    (N, d1, ..., dK) for reduction='none', else a 0-d Tensor."""
    name = "cross_entropy"
    return cross_entropy_of(name, ("input", "target"), input, target,
                            *_arguments(name, weight, ignore_index, reduction,
                                        label_smoothing))


def nll_loss(inputs: Any, target: Any, weight: Any = None, ignore_index: int = -100,
             reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    """Negative log-likelihood of log-probabilities `inputs` (N, C) or (N, C, d1, ..., dK)
    at class indices `target` (N,) / (N, d1, ..., dK): -w[y] inputs[n, y], 0 where y ==
    ignore_index; 'mean' divides by the summed weights of the samples kept, as
    `mindspore.ops.nll_loss` (with MindSpore's label smoothing)."""
    name = "nll_loss"
    return nll_loss_of(name, ("inputs", "target"), inputs, target,
                       *_arguments(name, weight, ignore_index, reduction, label_smoothing))
