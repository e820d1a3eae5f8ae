"""nn.Conv2d, nn.Conv1d and nn.Conv2dTranspose: convolution layers with MindSpore's
arguments and defaults (Conv1d is, as MindSpore's, Conv2d over an inserted height of 1;
Conv2dTranspose is Conv2D's input gradient, Conv2DBackpropInput)."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.initializer import initializer
from msops.primitives.conv_ops import Conv2DBackpropInput, pad_list, pair

__all__ = ["Conv2d", "Conv1d", "Conv2dTranspose"]


class _Conv(Cell):
    """What the convolution layers share: the weight and the optional bias (out_channels,)
    Parameters, the bias added by BiasAdd, their sharding and repr. BiasAdd, not Add of a
    reshaped bias: the Parameter is never an op's first input, whose dim 0 the
    data-parallel default splits (it would be held as a slice)."""

    def _parameters(self, shape: tuple, has_bias: bool, weight_init: Any, bias_init: Any,
                    dtype: mstype.Type) -> None:
        name = self.cls_name
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        self.weight = Parameter(initializer(weight_init, shape, dtype, "weight_init", name),
                                name="weight")
        if has_bias:
            self.bias = Parameter(initializer(bias_init, (self.out_channels,), dtype,
                                              "bias_init", name), name="bias")
            self.bias_add = ops.BiasAdd()

    def _biased(self, y):
        return self.bias_add(y, self.bias) if self.has_bias else y

    def _shard_with_bias(self, op: Any, x: tuple, w: tuple, out_split: int,
                         spatial: tuple) -> None:
        """`op` sharded (x, w); the bias add as its output: (x's batch, out_split, spatial)."""
        op.shard((x, w))
        if self.has_bias:
            self.bias_add.shard(((x[0], out_split) + tuple(spatial), (out_split,)))

    def extend_repr(self) -> str:
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"kernel_size={self.kernel_size}, pad_mode={self.pad_mode}, "
                f"has_bias={self.has_bias}")


class Conv2d(_Conv):
    """y = Conv2D(x, weight) (+ bias per output channel), NCHW.

    As `mindspore.nn.Conv2d`: pad_mode 'same' by default, `padding` an int or (top, bottom,
    left, right) for pad_mode 'pad', weight (out_channels, in_channels / group, kh, kw),
    no bias unless `has_bias`. Initial values: `weight_init` 'normal', `bias_init` 'zeros'
    (MindSpore 1.x's defaults) or any initializer/Tensor. The primitives are `conv2d` and
    `bias_add` (shard them directly); `shard(((n, c, h, 1), (o, c, 1, 1)))` shards the
    convolution and the bias add alike (one entry: the weight's output channels stay whole).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple,
                 stride: int | tuple = 1, pad_mode: str = "same", padding: int | tuple = 0,
                 dilation: int | tuple = 1, group: int = 1, has_bias: bool = False,
                 weight_init: Any = "normal", bias_init: Any = "zeros",
                 data_format: str = "NCHW", dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.in_channels = validator.check_positive_int(in_channels, "in_channels", name)
        self.out_channels = validator.check_positive_int(out_channels, "out_channels", name)
        self.group = validator.check_positive_int(group, "group", name)
        if in_channels % group:
            raise ValueError(f"For '{name}', the 'in_channels' should be divisible by 'group': "
                             f"{group}, but got {in_channels}.")
        self.kernel_size = pair(name, "kernel_size", kernel_size, allow_nchw4=False)
        self.pad_mode, self.padding = pad_mode, padding
        self.conv2d = ops.Conv2D(out_channels, self.kernel_size, mode=1, pad_mode=pad_mode,
                                 pad=padding, stride=stride, dilation=dilation, group=group,
                                 data_format=data_format)
        self._parameters((out_channels, in_channels // group) + self.kernel_size, has_bias,
                         weight_init, bias_init, dtype)

    def construct(self, x):
        return self._biased(self.conv2d(x, self.weight))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        w = tuple(in_strategy[1]) if len(in_strategy) > 1 else (1, x[1], 1, 1)
        self._shard_with_bias(self.conv2d, x, w, w[0], x[2:])


class Conv1d(Conv2d):
    """y = Conv2D(x, weight) (+ bias per output channel) over x (N, C, L), as
    `mindspore.nn.Conv1d`: x is given a height of 1 (N, C, 1, L), convolved by Conv2d with
    kernel (1, kernel_size), stride (1, stride), dilation (1, dilation) and padding
    (0, 0, padding, padding), and the height removed again; weight (out_channels,
    in_channels / group, 1, kernel_size). kernel_size, stride, padding and dilation are ints;
    pad_mode 'same' (default), 'valid' or 'pad'. `shard(((n, c, l), (o, c, 1)))` (x's
    and the weight's splits, the weight's entry optional) shards the Conv2D as Conv2d's
    `((n, c, 1, l), (o, c, 1, 1))`.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 pad_mode: str = "same", padding: int = 0, dilation: int = 1, group: int = 1,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        name = type(self).__name__
        for arg, value in (("kernel_size", kernel_size), ("stride", stride),
                           ("padding", padding), ("dilation", dilation)):
            validator.check_value_type(arg, value, int, name)
        validator.check_positive_int(kernel_size, "kernel_size", name)
        validator.check_positive_int(stride, "stride", name)
        validator.check_non_negative_int(padding, "padding", name)
        validator.check_positive_int(dilation, "dilation", name)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        validator.check_string("pad_mode", pad_mode.lower(), ("same", "valid", "pad"), name)
        if padding and pad_mode.lower() != "pad":
            raise ValueError(f"For '{name}', the 'padding' should be 0 when 'pad_mode' is not "
                             f"'pad', but got {padding} with pad_mode '{pad_mode}'.")
        super().__init__(in_channels, out_channels, (1, kernel_size), (1, stride), pad_mode,
                         (0, 0, padding, padding), (1, dilation), group, has_bias, weight_init,
                         bias_init, "NCHW", dtype)
        self.expand_dims, self.squeeze = ops.ExpandDims(), ops.Squeeze(2)

    def construct(self, x):
        if len(x.shape) != 3:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be 3-D (N, C, L), but got "
                             f"shape {list(x.shape)}.")
        return self.squeeze(super().construct(self.expand_dims(x, 2)))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        """Conv1d's (x, weight) strategies of 3 entries as Conv2d's of 4 (height 1)."""
        if in_strategy is None:
            return
        with_height = tuple(tuple(s[:2]) + (1,) + tuple(s[2:]) for s in in_strategy)
        super()._shard_primitives(with_height, out_strategy)


class Conv2dTranspose(_Conv):
    """The transposed 2-D convolution of x (N, in_channels, H, W) -> (N, out_channels, H',
    W'): the gradient of a Conv2D (out_channels -> in_channels, the same kernel, stride,
    dilation, pad_mode, padding and group) with respect to its input, as
    `mindspore.nn.Conv2dTranspose`; weight (in_channels, out_channels / group, kh, kw),
    bias (out_channels,) when `has_bias`. H' (W' alike), with span = dilation * (kh - 1) + 1:
    'same' H * stride; 'valid' H * stride + max(span - stride, 0); 'pad' (H - 1) * stride +
    span - top - bottom. `output_padding` must be 0 (msops does not add its extra rows).
    `shard(((n, c, 1, 1), (c, o, 1, 1)))` splits the batch, the input channels (partial
    sums, AllReduced) and the output channels.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple,
                 stride: int | tuple = 1, pad_mode: str = "same", padding: int | tuple = 0,
                 output_padding: int | tuple = 0, dilation: int | tuple = 1, group: int = 1,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.in_channels = validator.check_positive_int(in_channels, "in_channels", name)
        self.out_channels = validator.check_positive_int(out_channels, "out_channels", name)
        self.group = validator.check_positive_int(group, "group", name)
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if value % group:
                raise ValueError(f"For '{name}', the '{arg}' should be divisible by 'group': "
                                 f"{group}, but got {value}.")
        self.kernel_size = pair(name, "kernel_size", kernel_size, allow_nchw4=False)
        self.stride = pair(name, "stride", stride, allow_nchw4=False)
        self.dilation = pair(name, "dilation", dilation, allow_nchw4=False)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self.pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                               ("same", "valid", "pad"), name)
        self.padding = pad_list(name, self.pad_mode, padding)
        if output_padding not in (0, (0, 0)):
            raise ValueError(f"For '{name}', the 'output_padding' should be 0 (msops does not "
                             f"add output padding), but got {output_padding!r}.")
        # Conv2D's input gradient: its "out_channel" is this layer's in_channels
        self.conv2d_transpose = Conv2DBackpropInput(
            in_channels, self.kernel_size, mode=1, pad_mode=self.pad_mode, pad=self.padding,
            stride=self.stride, dilation=self.dilation, group=group)
        self._parameters((in_channels, out_channels // group) + self.kernel_size, has_bias,
                         weight_init, bias_init, dtype)

    def _out_length(self, size: int, d: int) -> int:
        """H' (d = 0) or W' (d = 1) for an input of `size` rows or columns."""
        stride, span = self.stride[d], self.dilation[d] * (self.kernel_size[d] - 1) + 1
        if self.pad_mode == "same":
            return size * stride
        if self.pad_mode == "valid":
            return size * stride + max(span - stride, 0)
        return (size - 1) * stride + span - self.padding[2 * d] - self.padding[2 * d + 1]

    def construct(self, x):
        shape = tuple(x.shape)
        if len(shape) != 4 or shape[1] != self.in_channels:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be (N, in_channels, H, W) "
                             f"with in_channels {self.in_channels}, but got shape "
                             f"{list(shape)}.")
        out = (shape[0], self.out_channels, self._out_length(shape[2], 0),
               self._out_length(shape[3], 1))
        if min(out[2:]) < 1:
            raise ValueError(f"For '{self.cls_name}', the output height and width should be "
                             f">= 1, but got {list(out[2:])} for x shape {list(shape)}.")
        return self._biased(self.conv2d_transpose(x, self.weight, out))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        w = tuple(in_strategy[1]) if len(in_strategy) > 1 else (x[1], 1, 1, 1)
        self._shard_with_bias(self.conv2d_transpose, x, w, w[1], (1, 1))
