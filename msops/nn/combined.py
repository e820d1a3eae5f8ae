"""The combined layers of `mindspore.nn`: Conv2dBnAct and DenseBnAct, a Conv2d / Dense
followed by an optional BatchNorm and an optional activation (MindSpore's arguments; its
quantization-aware `after_fake` is accepted and has no effect here: no fake-quant nodes)."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.nn.activation import LeakyReLU
from msops.nn.cell import Cell
from msops.nn.conv import Conv2d
from msops.nn.layers import BatchNorm1d, BatchNorm2d, Dense, get_activation

__all__ = ["Conv2dBnAct", "DenseBnAct"]


def _activation(name: str, activation: Any, alpha: float) -> Any:
    """get_activation, with 'leakyrelu' taking `alpha` (as MindSpore's combined layers)."""
    if isinstance(activation, str) and activation.lower() == "leakyrelu":
        return LeakyReLU(alpha)
    return get_activation(activation, name)


class _BnAct(Cell):
    """The layer (`conv` or `dense`, MindSpore's attribute names) -> BatchNorm (has_bn) ->
    activation."""

    def _bn_act(self, x: Any) -> Any:
        if self.has_bn:
            x = self.batchnorm(x)
        if self.activation is not None:
            x = self.activation(x)
        return x


class Conv2dBnAct(_BnAct):
    """`Conv2dBnAct(in_channels, out_channels, kernel_size, stride=1, pad_mode='same',
    padding=0, dilation=1, group=1, has_bias=False, weight_init='normal', bias_init='zeros',
    has_bn=False, momentum=0.997, eps=1e-5, activation=None, alpha=0.2, after_fake=True)`:
    nn.Conv2d, then nn.BatchNorm2d(out_channels, eps, momentum) when has_bn, then the
    activation ('leakyrelu' with slope alpha)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 pad_mode: str = "same", padding: Any = 0, dilation: Any = 1, group: int = 1,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 has_bn: bool = False, momentum: float = 0.997, eps: float = 1e-5,
                 activation: Any = None, alpha: float = 0.2, after_fake: bool = True) -> None:
        super().__init__()
        name = self.cls_name
        self.has_bn = validator.check_bool("has_bn", has_bn, name)
        self.after_fake = validator.check_bool("after_fake", after_fake, name)
        self.conv = Conv2d(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                           dilation, group, has_bias, weight_init, bias_init)
        if has_bn:
            self.batchnorm = BatchNorm2d(out_channels, eps, momentum)
        self.activation = _activation(name, activation, alpha)

    def construct(self, x: Any) -> Any:
        return self._bn_act(self.conv(x))


class DenseBnAct(_BnAct):
    """`DenseBnAct(in_channels, out_channels, weight_init='normal', bias_init='zeros',
    has_bias=True, has_bn=False, momentum=0.9, eps=1e-5, activation=None, alpha=0.2,
    after_fake=True)`: nn.Dense, then nn.BatchNorm1d(out_channels, eps, momentum) when
    has_bn, then the activation ('leakyrelu' with slope alpha)."""

    def __init__(self, in_channels: int, out_channels: int, weight_init: Any = "normal",
                 bias_init: Any = "zeros", has_bias: bool = True, has_bn: bool = False,
                 momentum: float = 0.9, eps: float = 1e-5, activation: Any = None,
                 alpha: float = 0.2, after_fake: bool = True) -> None:
        super().__init__()
        name = self.cls_name
        self.has_bn = validator.check_bool("has_bn", has_bn, name)
        self.after_fake = validator.check_bool("after_fake", after_fake, name)
        self.dense = Dense(in_channels, out_channels, weight_init, bias_init, has_bias)
        if has_bn:
            self.batchnorm = BatchNorm1d(out_channels, eps, momentum)
        self.activation = _activation(name, activation, alpha)

    def construct(self, x: Any) -> Any:
        return self._bn_act(self.dense(x))
