"""LazyAdam (as `mindspore.nn.LazyAdam`): Adam that, for sparse gradients, updates only
the rows they hold. msops's gradients are dense, for which it is Adam (see
msops/nn/optim.py)."""
from __future__ import annotations

from typing import Any, Sequence

from msops.nn.optim import Adam, LearningRate

__all__ = ["LazyAdam"]


class LazyAdam(Adam):
    """Adam's update (ApplyAdam, bias-corrected; see `Adam`) under MindSpore's LazyAdam
    signature (no amsgrad). State: `moment1`, `moment2`, `beta1_power`, `beta2_power`."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 1e-3,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 use_locking: bool = False, use_nesterov: bool = False,
                 weight_decay: float = 0.0, loss_scale: float = 1.0) -> None:
        super().__init__(params, learning_rate, beta1, beta2, eps, use_locking, use_nesterov,
                         weight_decay, loss_scale)
