"""The CTC loss as `mindspore.ops.ctc_loss`, over the CTCLossV2 primitive
(msops/primitives/ctc_ops.py); `ctc_loss_of` is shared with `nn.CTCLoss`, which passes
its own name so an error names what the user called."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.loss_func import check_reduction
from msops.primitives.ctc_ops import CTCLossV2
from msops.primitives.elementwise_ops import Maximum
from msops.primitives.math_ops import Cast, RealDiv, ReduceMean, ReduceSum

__all__ = ["ctc_loss"]


def _lengths(name: str, arg: str, value: Any, dtype: mstype.Type) -> Any:
    """A (N,) Tensor of lengths, a tuple/list of ints becoming one of `dtype`."""
    if isinstance(value, (tuple, list)):
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            raise TypeError(f"For '{name}', the '{arg}' should be a Tensor or a tuple of ints, "
                            f"but got {value!r:.100}.")
        return Tensor(np.asarray(value, mstype.dtype_to_nptype(dtype)))
    return check_tensor(name, arg, value)


def ctc_loss_of(name: str, log_probs: Any, targets: Any, input_lengths: Any,
                target_lengths: Any, blank: int, reduction: str, zero_infinity: bool) -> tuple:
    """(loss, log_alpha): CTCLossV2's per-sample loss reduced ('mean': each divided by its
    target length, at least 1, then the batch mean; 'sum'; 'none')."""
    check_tensor(name, "log_probs", log_probs)
    check_tensor(name, "targets", targets)
    input_lengths = _lengths(name, "input_lengths", input_lengths, targets.dtype)
    target_lengths = _lengths(name, "target_lengths", target_lengths, targets.dtype)
    loss, log_alpha = _prim(CTCLossV2, blank, "none", zero_infinity)(
        log_probs, targets, input_lengths, target_lengths)
    if reduction == "sum":
        loss = _prim(ReduceSum)(loss)
    elif reduction == "mean":
        per_label = _prim(Maximum)(_prim(Cast)(target_lengths, loss.dtype), 1.0)
        loss = _prim(ReduceMean)(_prim(RealDiv)(loss, per_label))
    return loss, log_alpha


def check_ctc(name: str, blank: Any, reduction: Any, zero_infinity: Any) -> tuple:
    validator.check_value_type("blank", blank, (int,), name)
    if blank < 0:
        raise ValueError(f"For '{name}', the 'blank' should be >= 0, but got {blank}.")
    validator.check_bool("zero_infinity", zero_infinity, name)
    return blank, check_reduction(name, reduction), zero_infinity


def ctc_loss(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> tuple:
    """The connectionist temporal classification loss of log_probs (T, N, C) against padded
    targets (N, S), with input_lengths and target_lengths (N,) (Tensors or tuples of ints),
    as `mindspore.ops.ctc_loss`: (neg_log_likelihood, log_alpha (N, T, 2S+1)); the loss
    per sample ('none'), summed, or each divided by its target length then averaged
    ('mean'). `zero_infinity` zeroes the losses no alignment fits, and their gradients."""
    name = "ctc_loss"
    blank, reduction, zero_infinity = check_ctc(name, blank, reduction, zero_infinity)
    return ctc_loss_of(name, log_probs, targets, input_lengths, target_lengths, blank,
                       reduction, zero_infinity)
