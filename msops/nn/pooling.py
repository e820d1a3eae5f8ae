"""Pooling layers with MindSpore's arguments: nn.MaxPool2d and nn.AvgPool2d (the MaxPool /
AvgPool primitives), nn.MaxPool1d and nn.AvgPool1d (the same over an (N, C, 1, L) view),
nn.AdaptiveAvgPool1d/2d/3d and nn.AdaptiveMaxPool1d/2d/3d (`ops.adaptive_*`)."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import validator
from msops.nn.cell import Cell
from msops.ops import pool_func

__all__ = ["MaxPool2d", "AvgPool2d", "MaxPool1d", "AvgPool1d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d"]


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


class _Pool1d(Cell):
    """x (N, C, L) or (C, L) pooled along L: kernel_size and stride ints; pad_mode "valid",
    "same" (any case; padding never wins a max nor counts in a mean) or "pad" (`padding` on
    both sides, at most half the kernel); ceil_mode=False only."""

    kind = "max"

    def __init__(self, kernel_size: int = 1, stride: int = 1, pad_mode: str = "valid",
                 padding: Any = 0, ceil_mode: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("kernel_size", kernel_size, int, name)
        validator.check_value_type("stride", stride, int, name)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self.pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                               ("valid", "same", "pad"), name)
        self.kernel_size, self.stride, self.padding = pool_func.pool_args(
            name, kernel_size, stride, padding, ceil_mode)
        if self.pad_mode != "pad" and self.padding:
            raise ValueError(f"For '{name}', the 'padding' should be 0 unless pad_mode is "
                             f"'pad', but got {padding} with pad_mode '{pad_mode}'.")

    def construct(self, x: Any) -> Any:
        pool_func.input_of_rank(self.cls_name, x, (2, 3))
        return pool_func.pool1d(self.cls_name, x, self.kind, self.kernel_size, self.stride,
                                self.pad_mode, self.padding, self._count_pad())

    def _count_pad(self) -> bool:
        return True

    def extend_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}")


class MaxPool1d(_Pool1d):
    """`MaxPool1d(kernel_size=1, stride=1, pad_mode='valid', padding=0, dilation=1,
    return_indices=False, ceil_mode=False)`: the max of each window (dilation 1,
    return_indices False and ceil_mode False only)."""

    kind = "max"

    def __init__(self, kernel_size: int = 1, stride: int = 1, pad_mode: str = "valid",
                 padding: Any = 0, dilation: int = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode)
        name = self.cls_name
        if pool_func.one_int(name, "dilation", dilation, 1) != 1:
            raise ValueError(f"For '{name}', the 'dilation' should be 1 (msops pools "
                             f"contiguous windows), but got {dilation}.")
        validator.check_bool("return_indices", return_indices, name)
        if return_indices:
            raise ValueError(f"For '{name}', the 'return_indices' should be False (msops does "
                             f"not return the argmax indices), but got True.")


class AvgPool1d(_Pool1d):
    """`AvgPool1d(kernel_size=1, stride=1, pad_mode='valid', padding=0, ceil_mode=False,
    count_include_pad=True)`: the mean of each window (with pad_mode 'pad', the padding
    zeros count when count_include_pad)."""

    kind = "avg"

    def __init__(self, kernel_size: int = 1, stride: int = 1, pad_mode: str = "valid",
                 padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, pad_mode, padding, ceil_mode)
        self.count_include_pad = validator.check_bool("count_include_pad", count_include_pad,
                                                      self.cls_name)

    def _count_pad(self) -> bool:
        return self.count_include_pad


class _Adaptive(Cell):
    """`(output_size)`: each of output_size bins' mean or max (`ops.adaptive_*`)."""

    kind, dims, ranks = "avg", 1, (2, 3)

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        if self.dims == 1:
            validator.check_value_type("output_size", output_size, int, self.cls_name)
        self.output_size = output_size

    def construct(self, input: Any) -> Any:
        return pool_func.adaptive_pool(self.cls_name, input, self.output_size, self.kind,
                                       self.dims, self.ranks)

    def extend_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """`AdaptiveAvgPool1d(output_size)`: x (N, C, L) or (C, L) to (..., output_size)."""

    kind, dims, ranks = "avg", 1, (2, 3)


class AdaptiveMaxPool1d(_Adaptive):
    """`AdaptiveMaxPool1d(output_size)`: x (N, C, L) or (C, L) to (..., output_size)."""

    kind, dims, ranks = "max", 1, (2, 3)


class AdaptiveAvgPool2d(_Adaptive):
    """`AdaptiveAvgPool2d(output_size)`: x (N, C, H, W) or (C, H, W) to (..., OH, OW)
    (`output_size` an int or (OH, OW), None keeping a dim)."""

    kind, dims, ranks = "avg", 2, (3, 4)


class AdaptiveMaxPool2d(_Adaptive):
    """`AdaptiveMaxPool2d(output_size, return_indices=False)`: x (N, C, H, W) or (C, H, W)
    to (..., OH, OW) (return_indices=True is not supported)."""

    kind, dims, ranks = "max", 2, (3, 4)

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        pool_func.no_indices(self.cls_name, return_indices)


class AdaptiveAvgPool3d(_Adaptive):
    """`AdaptiveAvgPool3d(output_size)`: x (N, C, D, H, W) or (C, D, H, W) to (..., OD, OH,
    OW) (`output_size` an int or 3, None keeping a dim)."""

    kind, dims, ranks = "avg", 3, (4, 5)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """`AdaptiveMaxPool3d(output_size, return_indices=False)`: x (N, C, D, H, W) or (C, D,
    H, W) to (..., OD, OH, OW) (return_indices=True is not supported)."""

    kind, dims, ranks = "max", 3, (4, 5)
