"""nn.TimeDistributed, as `mindspore.nn.TimeDistributed`: a layer applied to every time step
of its input."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["TimeDistributed"]


class TimeDistributed(Cell):
    """`TimeDistributed(layer, time_axis, reshape_with_axis=None)`: x (of rank >= 3) ->
    layer(x's slice at each index of `time_axis`), stacked along `time_axis`.

    With `reshape_with_axis` (an axis the layer treats as a batch, e.g. 0) the time steps
    run in one call instead: the time axis is merged into that axis, the layer applied once,
    and the result split back, so the layer must keep that axis in place."""

    def __init__(self, layer: Any, time_axis: int, reshape_with_axis: int | None = None
                 ) -> None:
        super().__init__()
        name = self.cls_name
        if not isinstance(layer, Cell) and not callable(layer):
            raise TypeError(f"For '{name}', the 'layer' should be a Cell or a Primitive, but "
                            f"got {type(layer).__name__}.")
        self.layer = layer
        self.time_axis = validator.check_int("time_axis", time_axis, name)
        if reshape_with_axis is not None:
            validator.check_int("reshape_with_axis", reshape_with_axis, name)
        self.reshape_with_axis = reshape_with_axis
        self.reshape, self.transpose = ops.Reshape(), ops.Transpose()

    def _axes(self, rank: int) -> tuple:
        name = self.cls_name
        if rank < 3:
            raise ValueError(f"For '{name}', the 'inputs' should be at least 3-D, but got "
                             f"rank {rank}.")
        t = validator.check_axis_in_range(self.time_axis, rank, "time_axis", name)
        if self.reshape_with_axis is None:
            return t, None
        r = validator.check_axis_in_range(self.reshape_with_axis, rank, "reshape_with_axis",
                                          name)
        if r == t:
            raise ValueError(f"For '{name}', the 'reshape_with_axis' should differ from "
                             f"'time_axis' {self.time_axis}, but got {self.reshape_with_axis}.")
        return t, r

    def construct(self, inputs: Any) -> Any:
        if not isinstance(inputs, Tensor) and not hasattr(inputs, "shape"):
            raise TypeError(f"For '{self.cls_name}', the 'inputs' should be a Tensor, but got "
                            f"{type(inputs).__name__}.")
        shape = tuple(inputs.shape)
        t, r = self._axes(len(shape))
        if r is None:
            steps = ops.unstack(inputs, t)
            return ops.stack([self.layer(step) for step in steps], t)
        # time axis right after r, then merged into it: (..., R * T, ...)
        order = [d for d in range(len(shape)) if d != t]
        at = order.index(r)
        order.insert(at + 1, t)
        merged = list(shape[d] for d in order)
        merged[at:at + 2] = [shape[r] * shape[t]]
        y = self.layer(self.reshape(self.transpose(inputs, tuple(order)), tuple(merged)))
        out = tuple(y.shape)
        if len(out) <= at or out[at] != shape[r] * shape[t]:
            raise ValueError(f"For '{self.cls_name}', the layer should keep axis {at} "
                             f"(reshape_with_axis merged with time_axis, size "
                             f"{shape[r] * shape[t]}), but its output has shape {list(out)}.")
        y = self.reshape(y, out[:at] + (shape[r], shape[t]) + out[at + 1:])
        # move the time axis (at + 1) back to time_axis
        back = [d for d in range(len(out) + 1) if d != at + 1]
        back.insert(min(t, len(out)), at + 1)
        return self.transpose(y, tuple(back))
