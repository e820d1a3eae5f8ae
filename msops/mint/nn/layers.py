"""`mindspore.mint.nn`'s layers: msops.nn's Cells where mint's constructor is theirs, else
thin subclasses / Cells that translate PyTorch's arguments (`p`, `dim`, `momentum`,
`padding`, `bias`) and initial values (HeUniform(sqrt(5)) weights and
Uniform(1/sqrt(fan_in)) biases for Conv2d, as Linear) and call mint.nn.functional."""
from __future__ import annotations

import math
from typing import Any

from msops import nn
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.initializer import HeUniform, Normal, Uniform, initializer
from msops.common.tensor import Parameter, Tensor
from msops.mint.nn import functional as F
from msops.mint.shape import flatten as _flatten
from msops.nn import (CrossEntropyLoss, Identity, L1Loss, Linear, MSELoss,  # noqa: F401
                      ReLU, Sigmoid, SiLU, Tanh)
from msops.nn import Mish, ReLU6, SeLU, Softsign  # noqa: F401

__all__ = ["Linear", "Conv2d", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Identity",
           "Dropout", "Softmax", "LayerNorm", "Embedding", "BatchNorm2d", "MaxPool2d",
           "AvgPool2d", "MSELoss", "L1Loss", "CrossEntropyLoss", "BCEWithLogitsLoss"]
__all__ += ["Mish", "ReLU6", "SELU", "Softsign", "LeakyReLU", "ELU", "Hardswish",
            "Hardsigmoid", "Softplus", "Flatten", "GroupNorm", "AdaptiveAvgPool2d",
            "NLLLoss", "SmoothL1Loss", "BCELoss"]
SELU = SeLU


def _pair(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


class Conv2d(nn.Conv2d):
    """`mint.nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0,
    dilation=1, groups=1, bias=True, padding_mode='zeros', dtype=None)`: nn.Conv2d with
    pad_mode 'pad' for an int / (h, w) `padding` (or 'valid' / 'same'), PyTorch's default
    initial values, and a bias by default."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", dtype: mstype.Type | None = None) -> None:
        name = "Conv2d"
        validator.check_bool("bias", bias, name)
        if padding_mode != "zeros":
            raise ValueError(f"For '{name}', the 'padding_mode' should be 'zeros' (the only "
                             f"one msops supports), but got {padding_mode!r}.")
        if isinstance(padding, str):
            pad_mode, pad = padding, 0
        else:
            h, w = _pair(padding)
            pad_mode, pad = "pad", (h, h, w, w)
        kh, kw = _pair(kernel_size)
        validator.check_positive_int(groups, "groups", name)
        fan_in = in_channels // groups * kh * kw if isinstance(kh, int) else 1
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, pad,
                         dilation, groups, bias, HeUniform(math.sqrt(5)),
                         Uniform(1 / math.sqrt(fan_in)) if fan_in > 0 else "zeros",
                         dtype=mstype.float32 if dtype is None else dtype)


class GELU(nn.Cell):
    """`mint.nn.GELU(approximate='none')`: the exact GELU, or its tanh form."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        validator.check_string("approximate", approximate, ["none", "tanh"], "GELU")
        self.approximate = approximate

    def construct(self, input):
        return F.gelu(input, self.approximate)


class Dropout(nn.Dropout):
    """`mint.nn.Dropout(p=0.5, inplace=False)`: nn.Dropout's probability of zeroing."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__(p=float(p) if isinstance(p, int) and not isinstance(p, bool) else p)


class Softmax(nn.Softmax):
    """`mint.nn.Softmax(dim=None)`: softmax along `dim` (None: the last)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(-1 if dim is None else dim)


class LayerNorm(nn.Cell):
    """`mint.nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
    dtype=None)`: layer_norm over the last dims with Parameters `weight` (ones) and `bias`
    (zeros), PyTorch's names (nn.LayerNorm's are gamma / beta)."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 dtype: mstype.Type | None = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        dtype = mstype.float32 if dtype is None else dtype
        self.normalized_shape, self.eps = shape, float(eps)
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Parameter(initializer("ones", shape, dtype), name="weight")
            if bias:
                self.bias = Parameter(initializer("zeros", shape, dtype), name="bias")

    def construct(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class Embedding(nn.Cell):
    """`mint.nn.Embedding(num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
    norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False,
    dtype=None)`: rows of the Parameter `weight`, N(0, 1) (the padding row zero)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False,
                 dtype: mstype.Type | None = None) -> None:
        super().__init__()
        name = "Embedding"
        validator.check_positive_int(num_embeddings, "num_embeddings", name)
        validator.check_positive_int(embedding_dim, "embedding_dim", name)
        shape = (num_embeddings, embedding_dim)
        if _weight is None:
            value = initializer(Normal(1.0), shape, mstype.float32 if dtype is None else dtype)
            if padding_idx is not None:
                value = Tensor(value.asnumpy().copy())
                value.asnumpy()[padding_idx] = 0
        else:
            if tuple(_weight.shape) != shape:
                raise ValueError(f"For '{name}', the '_weight' should have shape {list(shape)}, "
                                 f"but got {list(_weight.shape)}.")
            value = _weight
        self.weight = Parameter(value, name="weight", requires_grad=not _freeze)
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq

    def construct(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq)


class BatchNorm2d(nn.BatchNorm2d):
    """`mint.nn.BatchNorm2d(num_features, eps=1e-5, momentum=0.1, affine=True,
    track_running_stats=True, dtype=None)`: nn.BatchNorm2d, whose momentum is the share the
    running statistics keep (1 - PyTorch's); without track_running_stats batch statistics
    are used in evaluation too. Parameters keep nn's names (gamma, beta, moving_mean,
    moving_variance)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 dtype: mstype.Type | None = None) -> None:
        if not isinstance(momentum, float) or not 0 <= momentum <= 1:
            raise ValueError(f"For 'BatchNorm2d', the 'momentum' should be a float in [0, 1], "
                             f"but got {momentum!r}.")
        super().__init__(num_features, eps, 1.0 - momentum, affine,
                         use_batch_statistics=None if track_running_stats else True,
                         dtype=mstype.float32 if dtype is None else dtype)


class _Pool2d(nn.Cell):
    def __init__(self, fn: Any, **args: Any) -> None:
        super().__init__()
        self.fn, self.args = fn, args

    def construct(self, input):
        return self.fn(input, **self.args)


class MaxPool2d(_Pool2d):
    """`mint.nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
    return_indices=False, ceil_mode=False)` over mint.nn.functional.max_pool2d."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__(F.max_pool2d, kernel_size=kernel_size, stride=stride, padding=padding,
                         dilation=dilation, return_indices=return_indices, ceil_mode=ceil_mode)


class AvgPool2d(_Pool2d):
    """`mint.nn.AvgPool2d(kernel_size, stride=None, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None)` over mint.nn.functional.avg_pool2d."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__(F.avg_pool2d, kernel_size=kernel_size, stride=stride, padding=padding,
                         ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         divisor_override=divisor_override)


class BCEWithLogitsLoss(nn.BCEWithLogitsLoss):
    """`mint.nn.BCEWithLogitsLoss(weight=None, reduction='mean', pos_weight=None)`:
    nn.BCEWithLogitsLoss with PyTorch's argument order."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(reduction, weight, pos_weight)


class _Functional(nn.Cell):
    """A layer that is one call of a mint.nn.functional form with fixed keyword arguments."""

    _fn: Any = None

    def __init__(self, **args: Any) -> None:
        super().__init__()
        self.args = args

    def construct(self, *inputs):
        return type(self)._fn(*inputs, **self.args)


class LeakyReLU(_Functional):
    """`mint.nn.LeakyReLU(negative_slope=0.01, inplace=False)`."""
    _fn = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__(negative_slope=negative_slope)


class ELU(_Functional):
    """`mint.nn.ELU(alpha=1.0, inplace=False)`."""
    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha=alpha)


class Hardswish(_Functional):
    """`mint.nn.Hardswish(inplace=False)`: input * relu6(input + 3) / 6."""
    _fn = staticmethod(F.hardswish)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()


class Hardsigmoid(_Functional):
    """`mint.nn.Hardsigmoid(inplace=False)`: relu6(input + 3) / 6."""
    _fn = staticmethod(F.hardsigmoid)

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()


class Softplus(_Functional):
    """`mint.nn.Softplus(beta=1.0, threshold=20.0)`."""
    _fn = staticmethod(F.softplus)

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=beta, threshold=threshold)


class Flatten(_Functional):
    """`mint.nn.Flatten(start_dim=1, end_dim=-1)`: dims start_dim .. end_dim merged."""
    _fn = staticmethod(lambda input, **args: _flatten(input, **args))

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__(start_dim=start_dim, end_dim=end_dim)


class AdaptiveAvgPool2d(_Functional):
    """`mint.nn.AdaptiveAvgPool2d(output_size)`."""
    _fn = staticmethod(F.adaptive_avg_pool2d)

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size=output_size)


class NLLLoss(_Functional):
    """`mint.nn.NLLLoss(weight=None, ignore_index=-100, reduction='mean')`."""
    _fn = staticmethod(F.nll_loss)

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class SmoothL1Loss(_Functional):
    """`mint.nn.SmoothL1Loss(reduction='mean', beta=1.0)`."""
    _fn = staticmethod(F.smooth_l1_loss)

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction=reduction, beta=beta)


class BCELoss(_Functional):
    """`mint.nn.BCELoss(weight=None, reduction='mean')`: binary cross entropy of
    probabilities."""
    _fn = staticmethod(F.binary_cross_entropy)

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(weight=weight, reduction=reduction)


class GroupNorm(nn.Cell):
    """`mint.nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, dtype=None)`:
    group_norm with Parameters `weight` (ones) and `bias` (zeros) of (num_channels,)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: mstype.Type | None = None) -> None:
        super().__init__()
        name = "GroupNorm"
        validator.check_positive_int(num_groups, "num_groups", name)
        validator.check_positive_int(num_channels, "num_channels", name)
        if num_channels % num_groups:
            raise ValueError(f"For '{name}', the 'num_channels' should be divisible by "
                             f"'num_groups' {num_groups}, but got {num_channels}.")
        dtype = mstype.float32 if dtype is None else dtype
        self.num_groups, self.eps = num_groups, float(eps)
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(initializer("ones", (num_channels,), dtype), name="weight")
            self.bias = Parameter(initializer("zeros", (num_channels,), dtype), name="bias")

    def construct(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)
