"""More activation layers, as `mindspore.nn`: CELU, GLU, Softmin, Softmax2d, Threshold, RReLU
and LRN, each over its functional form (msops.ops.activation_func) with MindSpore's
arguments and defaults. `EXT_ACTIVATIONS`: the names of these get_activation accepts."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import validator
from msops.nn.cell import Cell
from msops.ops import activation_func as F
from msops.ops._tensor_args import check_float

__all__ = ["CELU", "GLU", "Softmin", "Softmax2d", "Threshold", "RReLU", "LRN"]


class CELU(Cell):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (`ops.celu`); alpha != 0."""

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = F._number(self.cls_name, "alpha", alpha)
        if self.alpha == 0:
            raise ValueError(f"For '{self.cls_name}', the 'alpha' should not be 0, but got "
                             f"{alpha}.")

    def construct(self, x: Any) -> Any:
        return F.celu(x, self.alpha)

    def extend_repr(self) -> str:
        return f"alpha={self.alpha}"


class GLU(Cell):
    """a * sigmoid(b), a and b the halves of x along `axis` (`ops.glu`)."""

    def __init__(self, axis: int = -1) -> None:
        super().__init__()
        self.axis = validator.check_int("axis", axis, self.cls_name)

    def construct(self, x: Any) -> Any:
        return F.glu(x, self.axis)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"


class Softmin(Cell):
    """softmax(-x) along `axis` (`ops.softmin`)."""

    def __init__(self, axis: Any = -1) -> None:
        super().__init__()
        self.axis = validator.check_value_type("axis", axis, (int, tuple), self.cls_name)

    def construct(self, x: Any) -> Any:
        return F.softmin(x, self.axis)

    def extend_repr(self) -> str:
        return f"axis={self.axis}"


class Softmax2d(Cell):
    """softmax over the channels of x (C, H, W) or (N, C, H, W): at each spatial position."""

    def __init__(self) -> None:
        super().__init__()
        self.softmax = ops.Softmax(-3)

    def construct(self, x: Any) -> Any:
        check_float(self.cls_name, "x", x)
        if len(x.shape) not in (3, 4):
            raise ValueError(f"For '{self.cls_name}', the 'x' should be 3-D (C, H, W) or 4-D "
                             f"(N, C, H, W), but got shape {list(x.shape)}.")
        return self.softmax(x)


class Threshold(Cell):
    """x where x > threshold, else `value` (`ops.threshold`)."""

    def __init__(self, threshold: float, value: float) -> None:
        super().__init__()
        self.threshold = F._number(self.cls_name, "threshold", threshold)
        self.value = F._number(self.cls_name, "value", value)

    def construct(self, x: Any) -> Any:
        return F.threshold(x, self.threshold, self.value)

    def extend_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}"


class RReLU(Cell):
    """Randomized leaky ReLU: x where x >= 0, else a * x. In training (`set_train()`) the
    slope `a` is drawn per element uniform in [lower, upper) (`ops.rrelu`); in evaluation it
    is their mean (lower + upper) / 2, so inference is deterministic."""

    def __init__(self, lower: float = 1 / 8, upper: float = 1 / 3) -> None:
        super().__init__()
        self.lower, self.upper = F.check_rrelu_bounds(self.cls_name, lower, upper)

    def construct(self, x: Any) -> Any:
        if self.training:
            return F.rrelu(x, self.lower, self.upper)
        check_float(self.cls_name, "x", x)
        return F.leaky(x, (self.lower + self.upper) / 2)

    def extend_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}"


class LRN(Cell):
    """Local response normalization across the channels of x (N, C, H, W) (`ops.lrn`)."""

    def __init__(self, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
                 beta: float = 0.5, norm_region: str = "ACROSS_CHANNELS") -> None:
        super().__init__()
        self.depth_radius, self.bias, self.alpha, self.beta = F.check_lrn_args(
            self.cls_name, depth_radius, bias, alpha, beta, norm_region)
        self.norm_region = norm_region

    def construct(self, x: Any) -> Any:
        return F.lrn(x, self.depth_radius, self.bias, self.alpha, self.beta, self.norm_region)

    def extend_repr(self) -> str:
        return (f"depth_radius={self.depth_radius}, bias={self.bias}, alpha={self.alpha}, "
                f"beta={self.beta}, norm_region={self.norm_region}")


#: the names `get_activation` takes for these (as MindSpore's), beside activation.py's
EXT_ACTIVATIONS = {"softmin": Softmin, "softmax2d": Softmax2d, "rrelu": RReLU}
