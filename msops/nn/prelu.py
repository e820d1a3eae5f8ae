"""nn.PReLU: a leaky ReLU whose negative slopes (one per channel, or one) are trained."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["PReLU"]


class PReLU(Cell):
    """max(x, 0) + w * min(x, 0) with w (channel,) along x's dim 1, as `mindspore.nn.PReLU`:
    `channel` 1 (one shared slope) or C; `w` the initial slope(s) (a float, a Tensor or an
    initializer). `shard(((n, c, ...),))` shards the PReLU primitive."""

    def __init__(self, channel: int = 1, w: Any = 0.25) -> None:
        super().__init__()
        name = self.cls_name
        self.channel = validator.check_positive_int(channel, "channel", name)
        if isinstance(w, (int, float)) and not isinstance(w, bool):
            if not np.isfinite(w):
                raise ValueError(f"For '{name}', the 'w' should be a finite number, but got "
                                 f"{w}.")
            w = Tensor(np.full((channel,), w, np.float32))
        self.w = Parameter(initializer(w, (channel,), mstype.float32, "w", name), name="a")
        self.prelu = ops.PReLU()

    def construct(self, x):
        return self.prelu(x, self.w)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        self.prelu.shard((x, (x[1] if self.channel > 1 else 1,)), out_strategy)
