"""3-D, Lp and unpooling layers with MindSpore's arguments: nn.AvgPool3d and nn.MaxPool3d
(`ops.avg_pool3d` / `ops.max_pool3d`), nn.LPPool1d/2d (`ops.lp_pool1d/2d`) and
nn.MaxUnpool1d/2d/3d (`ops.max_unpool*`). The primitives carry the sharding (batch and
channel splits); these layers check their arguments once and call the functions."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.nn.cell import Cell
from msops.ops import pool_nd_func as F

__all__ = ["AvgPool3d", "MaxPool3d", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d"]


class AvgPool3d(Cell):
    """`AvgPool3d(kernel_size=1, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)`: the mean of each window of x (N, C, D,
    H, W) or (C, D, H, W), as `mindspore.nn.AvgPool3d` (stride None: the kernel)."""

    def __init__(self, kernel_size: Any = 1, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        name = self.cls_name
        self.kernel_size = F.ints(name, "kernel_size", kernel_size, 3, 1)
        self.stride = self.kernel_size if stride is None else F.ints(name, "stride", stride, 3, 1)
        self.padding = padding
        self.ceil_mode = validator.check_bool("ceil_mode", ceil_mode, name)
        self.count_include_pad = validator.check_bool("count_include_pad", count_include_pad,
                                                      name)
        if divisor_override is not None:
            validator.check_positive_int(divisor_override, "divisor_override", name)
        self.divisor_override = divisor_override or 0

    def construct(self, x: Any) -> Any:
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extend_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(Cell):
    """`MaxPool3d(kernel_size=1, stride=None, padding=0, dilation=1, return_indices=False,
    ceil_mode=False)`: the max of each window of x (N, C, D, H, W) or (C, D, H, W), as
    `mindspore.nn.MaxPool3d`; with return_indices, (values, each maximum's flat index in its
    (n, c) plane), the indices nn.MaxUnpool3d takes."""

    def __init__(self, kernel_size: Any = 1, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        self.kernel_size = F.ints(name, "kernel_size", kernel_size, 3, 1)
        self.stride = self.kernel_size if stride is None else F.ints(name, "stride", stride, 3, 1)
        self.padding = F.ints(name, "padding", padding, 3, 0)
        self.dilation = F.ints(name, "dilation", dilation, 3, 1)
        self.return_indices = validator.check_bool("return_indices", return_indices, name)
        self.ceil_mode = validator.check_bool("ceil_mode", ceil_mode, name)

    def construct(self, x: Any) -> Any:
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extend_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}")


class _LPPool(Cell):
    """`(norm_type, kernel_size, stride=None, ceil_mode=False)`: the Lp pool of x."""

    dims = 1

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("norm_type", norm_type, (int, float), name)
        self.norm_type = norm_type
        self.kernel_size = F.ints(name, "kernel_size", kernel_size, self.dims, 1)
        self.stride = None if stride is None else F.ints(name, "stride", stride, self.dims, 1)
        self.ceil_mode = validator.check_bool("ceil_mode", ceil_mode, name)

    def construct(self, x: Any) -> Any:
        return F.lp_pool(self.cls_name, x, self.norm_type, self.kernel_size, self.stride,
                         self.ceil_mode, self.dims)

    def extend_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    """`LPPool1d(norm_type, kernel_size, stride=None, ceil_mode=False)`: x (N, C, L) or
    (C, L) pooled along L by (sum of x ** p over each window) ** (1 / p)."""

    dims = 1


class LPPool2d(_LPPool):
    """`LPPool2d(norm_type, kernel_size, stride=None, ceil_mode=False)`: x (N, C, H, W) or
    (C, H, W) pooled by (sum of x ** p over each window) ** (1 / p)."""

    dims = 2


class _MaxUnpool(Cell):
    """`(kernel_size, stride=None, padding=0)`; `construct(x, indices, output_size=None)`:
    x's values at their indices (a max pool's) in a zero output."""

    dims = 1

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        name = self.cls_name
        self.kernel_size = F.ints(name, "kernel_size", kernel_size, self.dims, 1)
        self.stride = self.kernel_size if stride is None else \
            F.ints(name, "stride", stride, self.dims, 1)
        self.padding = F.ints(name, "padding", padding, self.dims, 0)

    def construct(self, x: Any, indices: Any, output_size: Any = None) -> Any:
        return F.max_unpool(self.cls_name, x, indices, self.kernel_size, self.stride,
                            self.padding, output_size, self.dims)

    def extend_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """`MaxUnpool1d(kernel_size, stride=None, padding=0)`: x (N, C, L) or (C, L) to length
    (L - 1) * stride - 2 * padding + kernel_size (or output_size)."""

    dims = 1


class MaxUnpool2d(_MaxUnpool):
    """`MaxUnpool2d(kernel_size, stride=None, padding=0)`: x (N, C, H, W) or (C, H, W)."""

    dims = 2


class MaxUnpool3d(_MaxUnpool):
    """`MaxUnpool3d(kernel_size, stride=None, padding=0)`: x (N, C, D, H, W) or (C, D, H, W)."""

    dims = 3
