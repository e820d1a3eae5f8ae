"""`msops.amp`, as `mindspore.amp`: the loss-scale managers (MindSpore 2.x's spelling,
`amp.DynamicLossScaleManager()`), `build_train_network` and `all_finite`."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.nn.loss_scale import nonfinite_count
from msops.train.amp import build_train_network
from msops.train.loss_scale_manager import (DynamicLossScaleManager, FixedLossScaleManager,
                                            LossScaleManager)

__all__ = ["LossScaleManager", "FixedLossScaleManager", "DynamicLossScaleManager",
           "all_finite", "build_train_network"]


def all_finite(inputs: Any) -> Any:
    """A bool scalar Tensor: True when no element of `inputs` (a tuple or list of Tensors,
    such as gradients) is inf or NaN. Ops only: eager, or traced into a compiled step."""
    if not isinstance(inputs, (tuple, list)):
        raise TypeError(f"For 'all_finite', the 'inputs' should be a tuple or list of "
                        f"Tensors, but got {type(inputs).__name__}.")
    return ops.equal(nonfinite_count(inputs), 0.0)
