"""3-D, Lp and unpooling layers with MindSpore's arguments: nn.AvgPool3d and nn.MaxPool3d
(the AvgPool3D / MaxPool3D primitives, MaxPool3DWithArgmax for a dilation or the indices),
nn.LPPool1d/2d (`ops.lp_pool1d/2d`) and
nn.MaxUnpool1d/2d/3d (`ops.max_unpool*`). The primitives carry the sharding (batch and
channel splits, nn.AvgPool3d's `shard` its pool's); these layers check their arguments once."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.nn.cell import Cell
from msops.ops import pool_nd_func as F
from msops.primitives.pool_ops import AvgPool3D, MaxPool3D, MaxPool3DWithArgmax

__all__ = ["AvgPool3d", "MaxPool3d", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d"]


class _Pool3d(Cell):
    """kernel_size, stride (an int or 3), pad_mode 'valid' (default), 'same' or 'pad' (any
    case; `padding`, an int or 3 (before == after per dim), only with 'pad'), ceil_mode."""

    def configure(self, kernel_size: Any, stride: Any, pad_mode: str, padding: Any,
                  ceil_mode: bool) -> None:
        name = self.cls_name
        self.kernel_size = F.ints(name, "kernel_size", kernel_size, 3, 1)
        self.stride = F.ints(name, "stride", stride, 3, 1)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self.pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                               ("valid", "same", "pad"), name)
        self.padding = F.ints(name, "padding", padding, 3, 0)
        if self.pad_mode != "pad" and any(self.padding):
            raise ValueError(f"For '{name}', the 'padding' should be 0 unless pad_mode is "
                             f"'pad', but got {padding!r} with pad_mode '{pad_mode}'.")
        self.ceil_mode = validator.check_bool("ceil_mode", ceil_mode, name)
        self._pads = tuple(v for p in self.padding for v in (p, p))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        """`shard(((n, c, 1, 1, 1),))` shards the pool primitive."""
        self.pool.shard(in_strategy, out_strategy)

    def extend_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"pad_mode={self.pad_mode}, padding={self.padding}")


class AvgPool3d(_Pool3d):
    """`AvgPool3d(kernel_size=1, stride=1, pad_mode='valid', padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)`: the mean of each window of x (N, C, D,
    H, W) or (C, D, H, W), as `mindspore.nn.AvgPool3d` (the AvgPool3D primitive: 'same'
    padding never counts; 'pad' padding counts when count_include_pad)."""

    def __init__(self, kernel_size: Any = 1, stride: Any = 1, pad_mode: str = "valid",
                 padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        name = self.cls_name
        self.configure(kernel_size, stride, pad_mode, padding, ceil_mode)
        self.count_include_pad = validator.check_bool("count_include_pad", count_include_pad,
                                                      name)
        if divisor_override is not None:
            validator.check_positive_int(divisor_override, "divisor_override", name)
        self.divisor_override = divisor_override or 0
        self.pool = AvgPool3D(self.kernel_size, self.stride, self.pad_mode, self._pads,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)

    def construct(self, x: Any) -> Any:
        x5, back = F.batched(self.cls_name, "x", x, 3)
        return back(self.pool(x5))


class MaxPool3d(_Pool3d):
    """`MaxPool3d(kernel_size=1, stride=1, pad_mode='valid', padding=0, dilation=1,
    return_indices=False, ceil_mode=False)`: the max of each window of x (N, C, D, H, W) or
    (C, D, H, W), as `mindspore.nn.MaxPool3d`; with return_indices, (values, each maximum's
    flat index in its (n, c) plane), the indices nn.MaxUnpool3d takes. The MaxPool3D
    primitive, or MaxPool3DWithArgmax for a dilation or the indices (which need pad_mode
    'valid' or 'pad': explicit pads)."""

    def __init__(self, kernel_size: Any = 1, stride: Any = 1, pad_mode: str = "valid",
                 padding: Any = 0, dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        self.configure(kernel_size, stride, pad_mode, padding, ceil_mode)
        self.dilation = F.ints(name, "dilation", dilation, 3, 1)
        self.return_indices = validator.check_bool("return_indices", return_indices, name)
        if self.pad_mode == "same" and (self.return_indices or self.dilation != (1, 1, 1)):
            raise ValueError(f"For '{name}', the 'pad_mode' should be 'valid' or 'pad' with "
                             f"return_indices or a dilation (their padding is explicit), but "
                             f"got 'same'.")
        self._argmax = self.return_indices or self.dilation != (1, 1, 1)
        if self._argmax:
            self.pool = MaxPool3DWithArgmax(self.kernel_size, self.stride, self.padding,
                                            self.dilation, self.ceil_mode)
        else:
            self.pool = MaxPool3D(self.kernel_size, self.stride, self.pad_mode, self._pads,
                                  self.ceil_mode)

    def construct(self, x: Any) -> Any:
        x5, back = F.batched(self.cls_name, "x", x, 3)
        if not self._argmax:
            return back(self.pool(x5))
        values, index = self.pool(x5)
        return (back(values), back(index)) if self.return_indices else back(values)

    def extend_repr(self) -> str:
        return super().extend_repr() + f", dilation={self.dilation}"


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
