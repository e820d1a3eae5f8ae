"""Channel dropout layers, as `mindspore.nn`: Dropout1d, Dropout2d, Dropout3d (whole channels
zeroed in training, `ops.dropout1d/2d/3d`; the identity otherwise)."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.nn.cell import Cell
from msops.ops import channel_func

__all__ = ["Dropout1d", "Dropout2d", "Dropout3d"]


class _ChannelDropout(Cell):
    """`(p=0.5)`: in training (`set_train()`) each channel of each sample is zeroed with
    probability p and the others scaled by 1 / (1 - p); the masks come from the global
    `ms.set_seed` seed, alike eager and compiled."""

    function = staticmethod(channel_func.dropout2d)

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        validator.check_value_type("p", p, float, self.cls_name)
        if not 0 <= p <= 1:
            raise ValueError(f"For '{self.cls_name}', the 'p' should be in [0, 1], but got "
                             f"{p}.")
        self.p = p

    def construct(self, x: Any) -> Any:
        return type(self).function(x, self.p, self.training)

    def extend_repr(self) -> str:
        return f"p={self.p}"


class Dropout1d(_ChannelDropout):
    """Channel dropout of x (N, C, L) or (C, L)."""

    function = staticmethod(channel_func.dropout1d)


class Dropout2d(_ChannelDropout):
    """Channel dropout of x (N, C, H, W)."""

    function = staticmethod(channel_func.dropout2d)


class Dropout3d(_ChannelDropout):
    """Channel dropout of x (N, C, D, H, W)."""

    function = staticmethod(channel_func.dropout3d)
