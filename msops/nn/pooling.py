"""nn.MaxPool2d and nn.AvgPool2d: 2-D pooling layers with MindSpore's arguments."""
from __future__ import annotations

from msops import ops
from msops.nn.cell import Cell

__all__ = ["MaxPool2d", "AvgPool2d"]


class _Pool2d(Cell):
    """kernel_size, stride (an int or (h, w)), pad_mode 'valid' (default) or 'same',
    data_format 'NCHW', as `mindspore.nn.MaxPool2d`; `shard(((n, c, 1, 1),))` shards the pool."""

    _prim = ops.MaxPool

    def __init__(self, kernel_size: int | tuple = 1, stride: int | tuple = 1,
                 pad_mode: str = "valid", data_format: str = "NCHW") -> None:
        super().__init__()
        self.pool = type(self)._prim(kernel_size=kernel_size, strides=stride,
                                     pad_mode=pad_mode, data_format=data_format)
        self.kernel_size, self.stride, self.pad_mode = kernel_size, stride, self.pool.pad_mode

    def construct(self, x):
        return self.pool(x)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        self.pool.shard(in_strategy, out_strategy)

    def extend_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, pad_mode={self.pad_mode}"


class MaxPool2d(_Pool2d):
    """The max over each window of x (N, C, H, W) (`ops.MaxPool`)."""

    _prim = ops.MaxPool


class AvgPool2d(_Pool2d):
    """The mean over each window of x (N, C, H, W), padding not counted (`ops.AvgPool`)."""

    _prim = ops.AvgPool
