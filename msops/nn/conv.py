"""nn.Conv1d, nn.Conv2d, nn.Conv3d and their transposes: convolution layers with
MindSpore's arguments and defaults (Conv1d and Conv1dTranspose are, as MindSpore's, the 2-D
layers over an inserted height of 1; Conv2dTranspose is Conv2D's input gradient,
Conv2DBackpropInput; Conv3dTranspose is the Conv3DTranspose primitive)."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.initializer import initializer
from msops.primitives.conv_ops import (Conv2DBackpropInput, ntuple, output_paddings, pad_list,
                                       transposed_length)

__all__ = ["Conv2d", "Conv1d", "Conv2dTranspose", "Conv3d", "Conv3dTranspose", "Conv1dTranspose"]


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

    _nd, _op_name, _prim = 2, "conv2d", ops.Conv2D

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
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, self._nd, allow_nc=False)
        self.pad_mode, self.padding = pad_mode, padding
        setattr(self, self._op_name, type(self)._prim(
            out_channels, self.kernel_size, mode=1, pad_mode=pad_mode, pad=padding,
            stride=stride, dilation=dilation, group=group, data_format=data_format))
        self._parameters((out_channels, in_channels // group) + self.kernel_size, has_bias,
                         weight_init, bias_init, dtype)

    def construct(self, x):
        return self._biased(getattr(self, self._op_name)(x, self.weight))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        w = tuple(in_strategy[1]) if len(in_strategy) > 1 else (1, x[1]) + (1,) * self._nd
        self._shard_with_bias(getattr(self, self._op_name), x, w, w[0], x[2:])


class _OverLength:
    """A 1-D layer as its 2-D base over an inserted height of 1: x (N, C, L) is run as
    (N, C, 1, L) and the height removed; strategies of 3 entries become the base's of 4."""

    @staticmethod
    def check_ints(name: str, kernel_size: Any, stride: Any, padding: Any,
                   dilation: Any) -> None:
        """The 1-D arguments are ints: kernel_size, stride, dilation >= 1, padding >= 0."""
        for arg, value in (("kernel_size", kernel_size), ("stride", stride),
                           ("padding", padding), ("dilation", dilation)):
            validator.check_value_type(arg, value, int, name)
        validator.check_positive_int(kernel_size, "kernel_size", name)
        validator.check_positive_int(stride, "stride", name)
        validator.check_non_negative_int(padding, "padding", name)
        validator.check_positive_int(dilation, "dilation", name)

    def construct(self, x):
        if len(x.shape) != 3:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be 3-D (N, C, L), but got "
                             f"shape {list(x.shape)}.")
        return self.squeeze(super().construct(self.expand_dims(x, 2)))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        with_height = tuple(tuple(s[:2]) + (1,) + tuple(s[2:]) for s in in_strategy)
        super()._shard_primitives(with_height, out_strategy)


class Conv1d(_OverLength, Conv2d):
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
        _OverLength.check_ints(name, kernel_size, stride, padding, dilation)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        validator.check_string("pad_mode", pad_mode.lower(), ("same", "valid", "pad"), name)
        if padding and pad_mode.lower() != "pad":
            raise ValueError(f"For '{name}', the 'padding' should be 0 when 'pad_mode' is not "
                             f"'pad', but got {padding} with pad_mode '{pad_mode}'.")
        super().__init__(in_channels, out_channels, (1, kernel_size), (1, stride), pad_mode,
                         (0, 0, padding, padding), (1, dilation), group, has_bias, weight_init,
                         bias_init, "NCHW", dtype)
        self.expand_dims, self.squeeze = ops.ExpandDims(), ops.Squeeze(2)


class Conv2dTranspose(_Conv):
    """The transposed 2-D convolution of x (N, in_channels, H, W) -> (N, out_channels, H',
    W'): the gradient of a Conv2D (out_channels -> in_channels, the same kernel, stride,
    dilation, pad_mode, padding and group) with respect to its input, as
    `mindspore.nn.Conv2dTranspose`; weight (in_channels, out_channels / group, kh, kw),
    bias (out_channels,) when `has_bias`. H' (W' alike), with span = dilation * (kh - 1) + 1:
    'same' H * stride; 'valid' H * stride + max(span - stride, 0); 'pad' (H - 1) * stride +
    span - top - bottom; plus `output_padding` (an int or (h, w), each less than its stride,
    0 with 'same'): positions added after the last. `shard(((n, c, 1, 1), (c, o, 1, 1)))`
    splits the batch, the input channels (partial sums, AllReduced) and the output channels.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple,
                 stride: int | tuple = 1, pad_mode: str = "same", padding: int | tuple = 0,
                 output_padding: int | tuple = 0, dilation: int | tuple = 1, group: int = 1,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        self._configure(2, in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                        output_padding, dilation, group)
        # Conv2D's input gradient: its "out_channel" is this layer's in_channels
        self.conv2d_transpose = Conv2DBackpropInput(
            in_channels, self.kernel_size, mode=1, pad_mode=self.pad_mode, pad=self.padding,
            stride=self.stride, dilation=self.dilation, group=group)
        self._parameters((in_channels, out_channels // group) + self.kernel_size, has_bias,
                         weight_init, bias_init, dtype)

    def _configure(self, nd: int, in_channels: int, out_channels: int, kernel_size: Any,
                   stride: Any, pad_mode: str, padding: Any, output_padding: Any, dilation: Any,
                   group: int) -> None:
        """Check and keep the arguments the transposed layers share (nd spatial dims)."""
        name = self.cls_name
        self.in_channels = validator.check_positive_int(in_channels, "in_channels", name)
        self.out_channels = validator.check_positive_int(out_channels, "out_channels", name)
        self.group = validator.check_positive_int(group, "group", name)
        for arg, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if value % group:
                raise ValueError(f"For '{name}', the '{arg}' should be divisible by 'group': "
                                 f"{group}, but got {value}.")
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, nd, allow_nc=False)
        self.stride = ntuple(name, "stride", stride, nd, allow_nc=False)
        self.dilation = ntuple(name, "dilation", dilation, nd, allow_nc=False)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self.pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                               ("same", "valid", "pad"), name)
        self.padding = pad_list(name, self.pad_mode, padding, nd, "padding")
        self.output_padding = output_paddings(name, output_padding, nd, self.stride,
                                              self.pad_mode)

    def _out_shape(self, shape: tuple) -> tuple:
        """(N, out_channels, *spatial') for an input of `shape`."""
        nd = len(self.kernel_size)
        if len(shape) != nd + 2 or shape[1] != self.in_channels:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be (N, in_channels, "
                             f"{', '.join('DHW'[3 - nd:])}) with in_channels "
                             f"{self.in_channels}, but got shape {list(shape)}.")
        sizes = tuple(transposed_length(shape[2 + k], self.kernel_size[k], self.stride[k],
                                        self.dilation[k], self.pad_mode,
                                        self.padding[2 * k:2 * k + 2], self.output_padding[k])
                      for k in range(nd))
        if min(sizes) < 1:
            dims = "height and width" if nd == 2 else "depth, height and width"
            raise ValueError(f"For '{self.cls_name}', the output {dims} should be >= 1, but "
                             f"got {list(sizes)} for x shape {list(shape)}.")
        return (shape[0], self.out_channels) + sizes

    def construct(self, x):
        return self._biased(self.conv2d_transpose(x, self.weight, self._out_shape(tuple(x.shape))))

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        nd = len(self.kernel_size)
        w = tuple(in_strategy[1]) if len(in_strategy) > 1 else (x[1],) + (1,) * (nd + 1)
        self._shard_with_bias(self._transpose_op(), x, w, w[1], (1,) * nd)

    def _transpose_op(self) -> Any:
        return self.conv2d_transpose


class Conv1dTranspose(_OverLength, Conv2dTranspose):
    """The transposed 1-D convolution of x (N, in_channels, L) -> (N, out_channels, L'), as
    `mindspore.nn.Conv1dTranspose`: Conv2dTranspose over an inserted height of 1 (kernel
    (1, kernel_size), stride (1, stride), dilation (1, dilation), padding (0, 0, padding,
    padding)); weight (in_channels, out_channels / group, 1, kernel_size). L' as
    Conv2dTranspose's W'. `shard(((n, c, 1), (c, o, 1)))` as Conv2dTranspose's.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 pad_mode: str = "same", padding: int = 0, dilation: int = 1, group: int = 1,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        _OverLength.check_ints(type(self).__name__, kernel_size, stride, padding, dilation)
        super().__init__(in_channels, out_channels, (1, kernel_size), (1, stride), pad_mode,
                         (0, 0, padding, padding) if isinstance(pad_mode, str) and
                         pad_mode.lower() == "pad" else padding, 0, (1, dilation), group,
                         has_bias, weight_init, bias_init, dtype)
        self.expand_dims, self.squeeze = ops.ExpandDims(), ops.Squeeze(2)


class Conv3d(Conv2d):
    """y = Conv3D(x, weight) (+ bias per output channel), NCDHW, as `mindspore.nn.Conv3d`:
    pad_mode 'same' by default, `padding` an int or (head, tail, top, bottom, left, right)
    for pad_mode 'pad', `stride` and `dilation` an int or (d, h, w), weight (out_channels,
    in_channels / group, kd, kh, kw), no bias unless `has_bias`; `weight_init` 'normal' and
    `bias_init` 'zeros' as Conv2d's. The primitives are `conv3d` and `bias_add`;
    `shard(((n, c, 1, 1, 1), (o, c, 1, 1, 1)))` shards both (the spatial dims stay whole).
    """

    _nd, _op_name, _prim = 3, "conv3d", ops.Conv3D

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple,
                 stride: int | tuple = 1, pad_mode: str = "same", padding: int | tuple = 0,
                 dilation: int | tuple = 1, group: int = 1, has_bias: bool = False,
                 weight_init: Any = "normal", bias_init: Any = "zeros",
                 data_format: str = "NCDHW", dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                         dilation, group, has_bias, weight_init, bias_init, data_format, dtype)


class Conv3dTranspose(Conv2dTranspose):
    """The transposed 3-D convolution of x (N, in_channels, D, H, W) -> (N, out_channels,
    D', H', W') (the Conv3DTranspose primitive), as `mindspore.nn.Conv3dTranspose`: weight
    (in_channels, out_channels / group, kd, kh, kw); D', H', W' as Conv2dTranspose's H'
    (`padding` an int or 6 ints, `output_padding` an int or 3 ints).
    `shard(((n, c, 1, 1, 1), (c, o, 1, 1, 1)))` splits the batch and the channels.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple,
                 stride: int | tuple = 1, pad_mode: str = "same", padding: int | tuple = 0,
                 dilation: int | tuple = 1, group: int = 1, output_padding: int | tuple = 0,
                 has_bias: bool = False, weight_init: Any = "normal", bias_init: Any = "zeros",
                 data_format: str = "NCDHW", dtype: mstype.Type = mstype.float32) -> None:
        _Conv.__init__(self)
        self._configure(3, in_channels, out_channels, kernel_size, stride, pad_mode, padding,
                        output_padding, dilation, group)
        self.conv3d_transpose = ops.Conv3DTranspose(
            in_channels, out_channels, self.kernel_size, mode=1, stride=self.stride,
            pad_mode=self.pad_mode, pad=self.padding, dilation=self.dilation, group=group,
            output_padding=self.output_padding, data_format=data_format)
        self._parameters((in_channels, out_channels // group) + self.kernel_size, has_bias,
                         weight_init, bias_init, dtype)

    def construct(self, x):
        self._out_shape(tuple(x.shape))              # the layer's own shape check
        return self._biased(self.conv3d_transpose(x, self.weight))

    def _transpose_op(self) -> Any:
        return self.conv3d_transpose
