"""The learning rate a callback reads and rewrites between steps: the optimizer's
`learning_rate` Parameter, which the training step (compiled or eager) reads every run."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common.tensor import Parameter

__all__ = ["lr_parameter", "read_lr", "write_lr"]


def lr_parameter(cb: Any, cls_name: str) -> Parameter:
    """The optimizer's one learning-rate Parameter (a ValueError naming `cls_name` for no
    optimizer, group rates or a list / schedule, which the host rewrites each step)."""
    optimizer = cb.get("optimizer")
    if optimizer is None:
        raise ValueError(f"For '{cls_name}', the training should have an optimizer "
                         f"(cb_params.optimizer), but got None.")
    lr = optimizer.learning_rate
    if optimizer.is_group_lr or not isinstance(lr, float):
        kind = "group learning rates" if optimizer.is_group_lr else \
            "a learning rate per step" if isinstance(lr, (tuple, list)) else "a schedule"
        raise ValueError(f"For '{cls_name}', the optimizer's learning rate should be one "
                         f"number (dynamic and group learning rates are not supported), but "
                         f"got {kind}.")
    return optimizer.get_lr_parameter(optimizer.parameters[0])


def read_lr(param: Parameter) -> float:
    return float(param.asnumpy())


def write_lr(param: Parameter, value: float) -> None:
    """Write `value` into the rate Parameter in place (the compiled step reads it)."""
    np.copyto(param._data, value)
    param.version += 1
