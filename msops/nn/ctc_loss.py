"""CTCLoss (as `mindspore.nn.CTCLoss`): the connectionist temporal classification loss
of `ops.ctc_loss` (msops/ops/ctc_func.py), with its own name in errors."""
from __future__ import annotations

from typing import Any

from msops.nn.losses import LossBase
from msops.ops import ctc_func
from msops.primitives.shape_ops import ExpandDims, Squeeze

__all__ = ["CTCLoss"]


class CTCLoss(LossBase):
    """`CTCLoss(blank=0, reduction='mean', zero_infinity=False)(log_probs, targets,
    input_lengths, target_lengths)`: log_probs (T, N, C) with targets (N, S), or one
    sequence (T, C) with targets (S,) (then a 0-d loss); the lengths (N,) as Tensors or
    tuples of ints. The loss only (`ops.ctc_loss` also returns log_alpha)."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank, _, self.zero_infinity = ctc_func.check_ctc(self.cls_name, blank,
                                                               self.reduction, zero_infinity)
        self.expand_dims, self.squeeze = ExpandDims(), Squeeze()

    def construct(self, log_probs: Any, targets: Any, input_lengths: Any,
                  target_lengths: Any) -> Any:
        one = len(getattr(log_probs, "shape", ())) == 2
        if one:
            if len(getattr(targets, "shape", ())) != 1:
                raise ValueError(f"For '{self.cls_name}', the 'targets' should be 1-D (S,) when "
                                 f"'log_probs' is (T, C), but got shape "
                                 f"{list(getattr(targets, 'shape', ()))}.")
            log_probs = self.expand_dims(log_probs, 1)
            targets = self.expand_dims(targets, 0)
        loss, _ = ctc_func.ctc_loss_of(self.cls_name, log_probs, targets, input_lengths,
                                       target_lengths, self.blank, self.reduction,
                                       self.zero_infinity)
        return self.squeeze(loss) if one else loss
