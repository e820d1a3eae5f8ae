"""`nn.Upsample`: `ops.interpolate` as a Cell, its arguments fixed at construction."""
from __future__ import annotations

from typing import Any

from msops.nn.cell import Cell
from msops.ops.resize_func import interpolate


class Upsample(Cell):
    """Resizes (N, C, [D], [H], W) inputs to `size` or by `scale_factor` with `mode`
    ('nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area')."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def construct(self, x: Any) -> Any:
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)
