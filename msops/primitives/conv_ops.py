"""Convolution, N-D: Conv2D and Conv3D, their backward ops, Conv3DTranspose, and the window
geometry pools share.

Kernels are im2col without copies: `windows` views the padded input as
(N, C, *out spatial, *kernel) through `np.lib.stride_tricks.as_strided`, and the product
with the weight is one `np.einsum` contraction (a BLAS matmul) per channel group. The input
gradient adds the weight-weighted columns back one kernel position at a time (prod(kernel)
strided adds, never a loop over pixels). Float16/bfloat16 compute in float32, rounded once.
One family serves every spatial rank: a class's `nd` (2: NCHW, 3: NCDHW) sets its geometry.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication import get_group
from msops.primitives.array_ops import Reshape
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import check_rank, check_same_dtype, compute_dtype
from msops.primitives.neighbor_exchange import NeighborExchangeV2
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import fold_batch
from msops.primitives.rules import (batch_rule, bprop, declare_without, expansion_rule,
                                   sharding_rule)
from msops.primitives.sharding import DimSpec, ShardedCall

__all__ = ["Conv2D", "Conv3D", "Conv3DTranspose"]

float_types = mstype.float_type

#: einsum's contraction of two operands as one BLAS product (the path, given: none is
#: searched per call); measured about 1.6x faster than np.tensordot on these layouts
PAIR = ["einsum_path", (0, 1)]

#: why a sharding rule refuses a split of a spatial dim (the windows would straddle the slices)
SPATIAL_SPLIT = ("a window straddles the slices' border, which needs the neighbours' rows "
                 "(a halo exchange, see NeighborExchangeV2); split the batch or channels")

#: the spatial dims' names and letters by spatial rank
DIM_NAMES = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}
LETTERS = {1: "w", 2: "hw", 3: "dhw"}
LAYOUTS = {2: "NCHW", 3: "NCDHW"}


# -- window geometry (shared with the pools) ----------------------------------------------
def ntuple(prim_name: str, arg: str, value: Any, n: int, allow_nc: bool = True) -> tuple:
    """An int or n ints (or MindSpore's form with the batch and channel (1, 1, *n)) as n
    ints, each >= 1."""
    letters = ", ".join(LETTERS[n])
    if isinstance(value, int) and not isinstance(value, bool):
        dims = (value,) * n
    elif isinstance(value, (tuple, list)) and len(value) == n:
        dims = tuple(value)
    elif allow_nc and isinstance(value, (tuple, list)) and len(value) == n + 2 and \
            tuple(value[:2]) == (1, 1):
        dims = tuple(value[2:])
    else:
        forms = f"an int, a tuple of {n} ints or (1, 1, {letters})" if allow_nc else \
            f"an int or a tuple of {n} ints"
        raise ValueError(f"For '{prim_name}', the '{arg}' should be {forms}, but got {value!r}.")
    for v in dims:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"For '{prim_name}', every value of '{arg}' should be a positive "
                             f"int, but got {value!r}.")
    return dims


def pair(prim_name: str, arg: str, value: Any, allow_nchw4: bool = True) -> tuple[int, int]:
    """An int or (h, w) (or MindSpore's NCHW form (1, 1, h, w)) as (h, w), each >= 1."""
    return ntuple(prim_name, arg, value, 2, allow_nchw4)


PAD_SIDES = {2: "(top, bottom, left, right)", 3: "(head, tail, top, bottom, left, right)"}


def pad_list(prim_name: str, pad_mode: str, pad: Any, n: int = 2, arg: str = "pad") -> tuple:
    """`pad` (an int or 2n ints, before and after each spatial dim, each >= 0) as 2n ints;
    it must be 0 unless pad_mode is 'pad'."""
    if isinstance(pad, int) and not isinstance(pad, bool):
        pads = (pad,) * (2 * n)
    elif isinstance(pad, (tuple, list)) and len(pad) == 2 * n:
        pads = tuple(pad)
    else:
        raise ValueError(f"For '{prim_name}', the '{arg}' should be an int or a tuple of "
                         f"{2 * n} ints {PAD_SIDES[n]}, but got {pad!r}.")
    for v in pads:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"For '{prim_name}', every value of '{arg}' should be a "
                             f"non-negative int, but got {pad!r}.")
    if pad_mode.lower() != "pad" and any(pads):
        raise ValueError(f"For '{prim_name}', the '{arg}' should be 0 when 'pad_mode' is not "
                         f"'pad', but got {arg}={pad!r} with pad_mode='{pad_mode}'.")
    return pads


def out_size(prim_name: str, dim: str, size: int, kernel: int, stride: int, dilation: int,
             pad_mode: str, pads: tuple[int, int], ceil_mode: bool = False) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one spatial dim, as MindSpore: 'same' gives
    ceil(size / stride) with the padding split evenly (the extra one after), 'valid' no
    padding, 'pad' the given one. `ceil_mode` (pools) rounds the count of windows up, the
    last window starting inside x or its padding before; pad after grows to hold it."""
    span = dilation * (kernel - 1) + 1
    if pad_mode == "same":
        n = -(-size // stride)
        total = max(0, (n - 1) * stride + span - size)
        return n, total // 2, total - total // 2
    before, after = pads if pad_mode == "pad" else (0, 0)
    padded_size = size + before + after
    if padded_size < span:
        raise ValueError(f"For '{prim_name}', the input {dim} (padded) should be >= the "
                         f"kernel's extent {span} (kernel {kernel}, dilation {dilation}), "
                         f"but got {padded_size}.")
    n = (padded_size - span) // stride + 1
    if ceil_mode:
        n = -(-(padded_size - span) // stride) + 1
        if (n - 1) * stride >= size + before:       # a window starting in the padding after
            n -= 1
        after = max(after, (n - 1) * stride + span - size - before)
    return n, before, after


def windows(xp: np.ndarray, out_sp: Sequence[int], kernel: Sequence[int],
            stride: Sequence[int], dilation: Sequence[int]) -> np.ndarray:
    """A read-only (N, C, *out_sp, *kernel) view of the padded input: the im2col columns."""
    n, c = xp.shape[:2]
    st = xp.strides[2:]
    return np.lib.stride_tricks.as_strided(
        xp, (n, c) + tuple(out_sp) + tuple(kernel),
        xp.strides[:2] + tuple(s * k for s, k in zip(st, stride)) +
        tuple(s * d for s, d in zip(st, dilation)), writeable=False)


def padded(x: np.ndarray, pads: Sequence[int], value: Any = 0) -> np.ndarray:
    """x (N, C, *spatial) with `pads` (before, after per spatial dim) of `value` around."""
    if not any(pads):
        return x
    widths = ((0, 0), (0, 0)) + tuple(zip(pads[::2], pads[1::2]))
    return np.pad(x, widths, constant_values=value)


def add_windows(dxp: np.ndarray, cols: np.ndarray, stride: Sequence[int],
                dilation: Sequence[int]) -> None:
    """The transpose of `windows`: add cols (N, C, *out, *kernel) back into the padded
    gradient dxp (N, C, *padded spatial), one kernel position (a strided block) at a time."""
    nd = len(stride)
    out_sp, kernel = cols.shape[2:2 + nd], cols.shape[2 + nd:]
    for pos in itertools.product(*(range(k) for k in kernel)):
        block = tuple(slice(p * d, p * d + (o - 1) * s + 1, s)
                      for p, d, o, s in zip(pos, dilation, out_sp, stride))
        dxp[(slice(None), slice(None)) + block] += cols[(Ellipsis,) + pos]


def check_layout(prim_name: str, data_format: str, layout: str = "NCHW") -> str:
    """data_format must be `layout` (the only layout the kernels implement)."""
    validator.check_value_type("data_format", data_format, str, prim_name)
    if data_format != layout:
        raise ValueError(f"For '{prim_name}', the 'data_format' should be '{layout}' (msops "
                         f"implements no other layout), but got '{data_format}'.")
    return data_format


def check_nchw(prim_name: str, data_format: str) -> str:
    """data_format must be 'NCHW'."""
    return check_layout(prim_name, data_format, "NCHW")


def einsum_letters(nd: int) -> tuple[str, str]:
    """(output spatial, kernel) einsum letters of nd spatial dims."""
    return "xyz"[:nd], "ijk"[:nd]


# -- the convolution family ----------------------------------------------------------------
class _ConvBase(PrimitiveWithInfer):
    """MindSpore's Conv2D/Conv3D attributes, checked once, and the geometry every conv op
    of `nd` spatial dims shares."""

    nd = 2

    @prim_attr_register
    def __init__(self, out_channel: int, kernel_size: int | tuple, mode: int = 1,
                 pad_mode: str = "valid", pad: int | tuple = 0, stride: int | tuple = 1,
                 dilation: int | tuple = 1, group: int = 1, data_format: str = "NCHW") -> None:
        self.configure(out_channel, kernel_size, mode, pad_mode, pad, stride, dilation, group,
                       data_format)

    def configure(self, out_channel: int, kernel_size: Any, mode: int, pad_mode: str, pad: Any,
                  stride: Any, dilation: Any, group: int, data_format: str) -> None:
        """Check the forward convolution's attributes and keep them as tuples."""
        name, nd = self.name, self.nd
        validator.check_positive_int(out_channel, "out_channel", name)
        self._out_channel = out_channel
        self._kernel = ntuple(name, "kernel_size", kernel_size, nd, allow_nc=False)
        if mode != 1:
            raise ValueError(f"For '{name}', the 'mode' should be 1 (cross-correlation, the "
                             f"only mode MindSpore implements), but got {mode!r}.")
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self._pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                                ("valid", "same", "pad"), name)
        self._pads = pad_list(name, self._pad_mode, pad, nd)
        self._stride = ntuple(name, "stride", stride, nd)
        self._dilation = ntuple(name, "dilation", dilation, nd)
        validator.check_positive_int(group, "group", name)
        self._group = group
        if out_channel % group:
            raise ValueError(f"For '{name}', the 'out_channel' should be divisible by 'group': "
                             f"{group}, but got {out_channel}.")
        check_layout(name, data_format, LAYOUTS[nd])

    def geometry(self, x_shape: Sequence[int]) -> tuple[tuple, tuple]:
        """(output spatial sizes, pads (before, after per dim)) for an input `x_shape`."""
        sizes, pads = [], []
        for k, dim in enumerate(DIM_NAMES[self.nd]):
            o, before, after = out_size(self.name, dim, x_shape[2 + k], self._kernel[k],
                                        self._stride[k], self._dilation[k], self._pad_mode,
                                        self._pads[2 * k:2 * k + 2])
            sizes.append(o)
            pads += [before, after]
        return tuple(sizes), tuple(pads)

    def check_operands(self, x_shape: Sequence[int], w_shape: Sequence[int]) -> None:
        """x (N, C, *spatial) and weight (out_channel, C / group, *kernel) agree with the attrs."""
        rank = self.nd + 2
        check_rank(self.name, "x", x_shape, rank, rank)
        check_rank(self.name, "weight", w_shape, rank, rank)
        want = [self._out_channel, x_shape[1] // self._group, *self._kernel]
        if x_shape[1] % self._group or list(w_shape) != want:
            kernel = ", ".join(f"kernel_{c}" for c in LETTERS[self.nd])
            raise ValueError(f"For '{self.name}', the 'weight shape' should be (out_channel, "
                             f"C / group, {kernel}) = {tuple(want)} for x shape "
                             f"{tuple(x_shape)} (group {self._group}, whose C should divide by "
                             f"it), but got {tuple(w_shape)}.")

    def conv_attrs(self, **changes: Any) -> dict:
        """The forward convolution's constructor arguments, with `changes` (a sibling op of
        the same geometry)."""
        return {**self.init_attrs, **changes}

    def grouped(self, a: np.ndarray, axis: int) -> list[np.ndarray]:
        """`a` split into the `group` equal blocks of `axis` (views)."""
        return np.split(a, self._group, axis=axis) if self._group > 1 else [a]

    def family(self) -> "ConvFamily":
        return FAMILIES[self.nd]

    writes_output = True
    kernel = run_lowered


class _ConvForward(_ConvBase):
    """The cross-correlation of x (N, C, *spatial) with weight (out_channel, C / group,
    *kernel) -> (N, out_channel, *out spatial)."""

    def infer_shape(self, x_shape: list, w_shape: list) -> list:
        self.check_operands(x_shape, w_shape)
        sizes, _ = self.geometry(x_shape)
        return [x_shape[0], self._out_channel, *sizes]

    def infer_dtype(self, x_dtype: mstype.Type, w_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "weight": w_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        out_sp, pads = self.geometry(in_abstracts[0].shape)
        o, k = einsum_letters(self.nd)
        spec = f"nc{o}{k},oc{k}->no{o}"

        def conv(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            cols = windows(padded(x.astype(ct, copy=False), pads), out_sp, self._kernel,
                           self._stride, self._dilation)
            outs = self.grouped(out, 1)
            for res, c, kern in zip(outs, self.grouped(cols, 1),
                                    self.grouped(w.astype(ct, copy=False), 0)):
                res[...] = np.einsum(spec, c, kern, optimize=PAIR)
            return out
        return conv


class Conv2D(_ConvForward):
    """2-D cross-correlation, NCHW: x (N, C, H, W), weight (out_channel, C/group, KH, KW) ->
    (N, out_channel, OH, OW). pad_mode 'valid' (no padding), 'same' (OH = ceil(H / stride)),
    'pad' (`pad`: an int or (top, bottom, left, right)); `stride`, `dilation`: int or (h, w).

    >>> Conv2D(out_channel=2, kernel_size=3, pad_mode="same")(
    ...     Tensor(np.ones((1, 1, 4, 4), np.float32)), Tensor(np.ones((2, 1, 3, 3), np.float32))).shape
    (1, 2, 4, 4)
    """

    nd = 2


class Conv3D(_ConvForward):
    """3-D cross-correlation, NCDHW: x (N, C, D, H, W), weight (out_channel, C/group, KD, KH,
    KW) -> (N, out_channel, OD, OH, OW), as `mindspore.ops.Conv3D`. pad_mode 'valid',
    'same' (OD = ceil(D / stride)) or 'pad' (`pad`: an int or (head, tail, top, bottom,
    left, right)); `stride`, `dilation`: an int, (d, h, w) or (1, 1, d, h, w).

    >>> Conv3D(out_channel=2, kernel_size=3, pad_mode="same")(
    ...     Tensor(np.ones((1, 1, 4, 4, 4), np.float32)),
    ...     Tensor(np.ones((2, 1, 3, 3, 3), np.float32))).shape
    (1, 2, 4, 4, 4)
    """

    nd = 3

    @prim_attr_register
    def __init__(self, out_channel: int, kernel_size: int | tuple, mode: int = 1,
                 pad_mode: str = "valid", pad: int | tuple = 0, stride: int | tuple = 1,
                 dilation: int | tuple = 1, group: int = 1, data_format: str = "NCDHW") -> None:
        self.configure(out_channel, kernel_size, mode, pad_mode, pad, stride, dilation, group,
                       data_format)


class _ConvGrad(_ConvBase):
    """The gradient ops of a convolution: `dout` must have its output shape."""

    def check_dout(self, dout_shape: list, x_shape: list, w_shape: list, result: list) -> list:
        self.check_operands(x_shape, w_shape)
        sizes, _ = self.geometry(x_shape)
        want = [x_shape[0], self._out_channel, *sizes]
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be "
                             f"{self.family().conv.__name__}'s output shape {tuple(want)}, "
                             f"but got {tuple(dout_shape)}.")
        return result


class _ConvBackpropInput(_ConvGrad):
    """`(<the convolution's attrs>)(dout, weight, x_shape)`: the gradient of the
    convolution's x, of `x_shape` (the transposed convolution)."""

    const_inputs = (2,)

    def infer_shape(self, dout_shape: list, w_shape: list, x_shape: Any) -> list:
        return self.check_dout(dout_shape, list(x_shape), w_shape, list(x_shape))

    def infer_dtype(self, dout_dtype: mstype.Type, w_dtype: mstype.Type,
                    x_shape: Any = None) -> mstype.Type:
        return check_same_dtype(self.name, {"dout": dout_dtype, "weight": w_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        _, pads = self.geometry(shape)
        full = tuple(s + pads[2 * k] + pads[2 * k + 1] for k, s in enumerate(shape[2:]))
        inside = tuple(slice(pads[2 * k], pads[2 * k] + s) for k, s in enumerate(shape[2:]))
        o, k = einsum_letters(self.nd)
        spec = f"no{o},oc{k}->nc{o}{k}"

        def conv_backprop_input(dout: np.ndarray, w: np.ndarray, *x_shape: Any,
                                out: np.ndarray | None = None) -> np.ndarray:
            dxp = np.zeros(tuple(shape[:2]) + full, ct)
            for dx_g, d, kern in zip(self.grouped(dxp, 1),
                                     self.grouped(dout.astype(ct, copy=False), 1),
                                     self.grouped(w.astype(ct, copy=False), 0)):
                cols = np.einsum(spec, d, kern, optimize=PAIR)
                add_windows(dx_g, cols, self._stride, self._dilation)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, dxp[(slice(None), slice(None)) + inside], casting="unsafe")
            return out
        return conv_backprop_input


class Conv2DBackpropInput(_ConvBackpropInput):
    """`Conv2DBackpropInput(<Conv2D's attrs>)(dout, weight, x_shape)`: the gradient of
    Conv2D's x, of `x_shape` (the transposed convolution). Internal (made by the backward
    rule, which runs on rank-local graphs); not exported."""

    nd = 2


class Conv3DBackpropInput(_ConvBackpropInput):
    """`Conv3DBackpropInput(<Conv3D's attrs>)(dout, weight, x_shape)`: the gradient of
    Conv3D's x. Internal (made by the backward rules); not exported."""

    nd = 3
    __init__ = Conv3D.__init__


class _ConvBackpropFilter(_ConvGrad):
    """`(<the convolution's attrs>)(dout, x, w_shape)`: the gradient of the convolution's
    weight, of `w_shape`."""

    const_inputs = (2,)

    def infer_shape(self, dout_shape: list, x_shape: list, w_shape: Any) -> list:
        return self.check_dout(dout_shape, x_shape, list(w_shape), list(w_shape))

    def infer_dtype(self, dout_dtype: mstype.Type, x_dtype: mstype.Type,
                    w_shape: Any) -> mstype.Type:
        return check_same_dtype(self.name, {"dout": dout_dtype, "x": x_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        out_sp, pads = self.geometry(in_abstracts[1].shape)
        o, k = einsum_letters(self.nd)
        spec = f"no{o},nc{o}{k}->oc{k}"

        def conv_backprop_filter(dout: np.ndarray, x: np.ndarray, w_shape: Any,
                                 out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            cols = windows(padded(x.astype(ct, copy=False), pads), out_sp, self._kernel,
                           self._stride, self._dilation)
            for res, d, c in zip(self.grouped(out, 0),
                                 self.grouped(dout.astype(ct, copy=False), 1),
                                 self.grouped(cols, 1)):
                res[...] = np.einsum(spec, d, c, optimize=PAIR)
            return out
        return conv_backprop_filter


class Conv2DBackpropFilter(_ConvBackpropFilter):
    """`Conv2DBackpropFilter(<Conv2D's attrs>)(dout, x, w_shape)`: the gradient of Conv2D's
    weight, of `w_shape`. Internal (made by the backward rule); not exported."""

    nd = 2


class Conv3DBackpropFilter(_ConvBackpropFilter):
    """`Conv3DBackpropFilter(<Conv3D's attrs>)(dout, x, w_shape)`: the gradient of Conv3D's
    weight. Internal (made by the backward rules); not exported."""

    nd = 3
    __init__ = Conv3D.__init__


def transposed_length(size: int, kernel: int, stride: int, dilation: int, pad_mode: str,
                      pads: Sequence[int], output_padding: int = 0) -> int:
    """The length a transposed convolution gives a dim of `size`, as MindSpore's
    Conv2dTranspose/Conv3dTranspose: span = dilation * (kernel - 1) + 1; 'same' size *
    stride; 'valid' size * stride + max(span - stride, 0); 'pad' (size - 1) * stride +
    span - before - after; plus `output_padding` (extra positions after)."""
    span = dilation * (kernel - 1) + 1
    if pad_mode == "same":
        length = size * stride
    elif pad_mode == "valid":
        length = size * stride + max(span - stride, 0)
    else:
        length = (size - 1) * stride + span - pads[0] - pads[1]
    return length + output_padding


class Conv3DTranspose(_ConvBackpropInput):
    """The transposed 3-D convolution, as `mindspore.ops.Conv3DTranspose`:
    `Conv3DTranspose(in_channel, out_channel, kernel_size, ...)(dout, weight)` with dout
    (N, in_channel, D, H, W) and weight (in_channel, out_channel / group, KD, KH, KW) ->
    (N, out_channel, D', H', W'), the gradient of a Conv3D of the same kernel, pad_mode,
    pad, stride, dilation and group taking out_channel to in_channel. D' (H', W' alike) is
    `transposed_length`; `output_padding` (an int or 3 ints, less than the stride and 0
    for pad_mode 'same') adds positions after the last.

    >>> Conv3DTranspose(2, 3, 2, stride=2)(Tensor(np.ones((1, 2, 2, 2, 2), np.float32)),
    ...                                    Tensor(np.ones((2, 3, 2, 2, 2), np.float32))).shape
    (1, 3, 4, 4, 4)
    """

    nd = 3
    const_inputs = ()

    @prim_attr_register
    def __init__(self, in_channel: int, out_channel: int, kernel_size: int | tuple,
                 mode: int = 1, stride: int | tuple = 1, pad_mode: str = "valid",
                 pad: int | tuple = 0, dilation: int | tuple = 1, group: int = 1,
                 output_padding: int | tuple = 0, data_format: str = "NCDHW") -> None:
        name = self.name
        validator.check_positive_int(in_channel, "in_channel", name)
        self.configure(in_channel, kernel_size, mode, pad_mode, pad, stride, dilation, group,
                       data_format)
        validator.check_positive_int(out_channel, "out_channel", name)
        if out_channel % group:
            raise ValueError(f"For '{name}', the 'out_channel' should be divisible by 'group': "
                             f"{group}, but got {out_channel}.")
        self._output_padding = output_paddings(name, output_padding, self.nd, self._stride,
                                               self._pad_mode)

    def conv_attrs(self, **changes: Any) -> dict:
        """Conv3D's arguments: the convolution whose input gradient this op is."""
        a = self.init_attrs
        keep = ("kernel_size", "mode", "pad_mode", "pad", "stride", "dilation", "group",
                "data_format")
        return {"out_channel": a["in_channel"], **{k: a[k] for k in keep}, **changes}

    def out_shape(self, dout_shape: Sequence[int]) -> list:
        """(N, out_channel, D', H', W') for dout (N, in_channel, D, H, W)."""
        check_rank(self.name, "dout", dout_shape, 5, 5)
        sizes = [transposed_length(dout_shape[2 + k], self._kernel[k], self._stride[k],
                                   self._dilation[k], self._pad_mode,
                                   self._pads[2 * k:2 * k + 2], self._output_padding[k])
                 for k in range(self.nd)]
        if min(sizes) < 1:
            raise ValueError(f"For '{self.name}', the output depth, height and width should "
                             f"be >= 1, but got {sizes} for dout shape {tuple(dout_shape)}.")
        return [dout_shape[0], self.out_channel, *sizes]

    def infer_shape(self, dout_shape: list, w_shape: list) -> list:
        x_shape = self.out_shape(dout_shape)
        if dout_shape[1] != self.in_channel:
            raise ValueError(f"For '{self.name}', the 'dout' should have in_channel "
                             f"{self.in_channel} channels (dim 1), but got shape "
                             f"{tuple(dout_shape)}.")
        return self.check_dout(dout_shape, x_shape, w_shape, x_shape)

    def local_op(self, channels: int, out_shape: Sequence[int]) -> "Conv3DTranspose":
        return Conv3DTranspose(**{**self.init_attrs, "in_channel": channels,
                                  "out_channel": out_shape[1]})


def output_paddings(name: str, output_padding: Any, nd: int, stride: Sequence[int],
                    pad_mode: str) -> tuple:
    """output_padding (an int or nd ints >= 0) as nd ints, each less than its stride (more
    would start another window of the convolution) and 0 with pad_mode 'same'."""
    if isinstance(output_padding, int) and not isinstance(output_padding, bool):
        ops_ = (output_padding,) * nd
    elif isinstance(output_padding, (tuple, list)) and len(output_padding) in (nd, nd + 2):
        ops_ = tuple(output_padding[-nd:])
    else:
        raise ValueError(f"For '{name}', the 'output_padding' should be an int or a tuple of "
                         f"{nd} ints, but got {output_padding!r}.")
    for v, s in zip(ops_, stride):
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < s:
            raise ValueError(f"For '{name}', every value of 'output_padding' should be a "
                             f"non-negative int less than its stride {tuple(stride)}, but got "
                             f"{output_padding!r}.")
    if pad_mode == "same" and any(ops_):
        raise ValueError(f"For '{name}', the 'output_padding' should be 0 when 'pad_mode' is "
                         f"'same', but got {output_padding!r}.")
    return ops_


class ConvFamily:
    """The forward op and the two gradient ops of one spatial rank."""

    def __init__(self, conv: type, backprop_input: type, backprop_filter: type) -> None:
        self.conv, self.input, self.filter = conv, backprop_input, backprop_filter


FAMILIES = {2: ConvFamily(Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter),
            3: ConvFamily(Conv3D, Conv3DBackpropInput, Conv3DBackpropFilter)}


# -- sharding --------------------------------------------------------------------------------
def same_height(prim: _ConvBase, x_shape: Sequence[int]) -> tuple[int, int] | None:
    """(pad before, pad after) of the first spatial dim (Conv2D's H, Conv3D's D) when the
    convolution keeps its size (stride 1, the padding adding the kernel's extent - 1), so
    a split of it carries to the output with halo rows; else None."""
    sizes, pads = prim.geometry(x_shape)
    return (pads[0], pads[1]) if prim._stride[0] == 1 and sizes[0] == x_shape[2] else None


def conv_letters(prim: _ConvBase, in_prefix: str, out_prefix: str) -> tuple:
    """(input spatial, output spatial, kernel) letters, and the unsplittable pairs of the
    spatial and kernel dims."""
    names = LETTERS[prim.nd]
    kernel = tuple("k" + c for c in names)
    unsplittable = [(k, f"it is the kernel's {d}") for k, d in zip(kernel, DIM_NAMES[prim.nd])]
    return (tuple(in_prefix + c for c in names), tuple(out_prefix + c for c in names), kernel,
            unsplittable)


def group_refusals(prim: _ConvBase) -> list:
    why = f"it would cut {prim.name}'s {prim._group} channel groups"
    return [("c", why), ("cg", why), ("o", why)] if prim._group > 1 else []


@sharding_rule(_ConvForward)
def conv_spec(prim: _ConvForward, ins: list, outs: list, consts: dict) -> DimSpec:
    """x "nc" + spatial, weight "oc" + kernel -> "no" + output spatial. The batch and
    (group 1) the output channels split freely; a split input channel (group 1) leaves
    partial sums (AllReduced). The first spatial dim (Conv2D's H, Conv3D's D) splits when
    the output keeps its size (stride 1, 'same' padding): each rank gets its neighbours'
    halo rows (the expansion); the other spatial dims and the kernel dims stay whole."""
    c_w = "cg" if prim._group > 1 else "c"     # with groups, weight dim 1 holds C / group
    spatial, out_sp, kernel, unsplittable = conv_letters(prim, "", "o")
    keeps = same_height(prim, ins[0]) is not None
    first = "H" if prim.nd == 2 else "D"
    for k, letter in enumerate(spatial):
        if k == 0 and keeps:
            out_sp = (letter,) + out_sp[1:]
        elif k == 0:
            unsplittable.append((letter, SPATIAL_SPLIT + f"; {first} may split only when the "
                                 f"output keeps x's {DIM_NAMES[prim.nd][0]} (stride 1 and "
                                 f"'same' padding)"))
        else:
            unsplittable.append((letter, SPATIAL_SPLIT + f"; only {first} may split (a halo "
                                 f"in more dims is not built)"))
    return DimSpec((("n", "c") + spatial, ("o", c_w) + kernel), (("n", "o") + out_sp,),
                   unsplittable=tuple(unsplittable + group_refusals(prim)),
                   reduction_name="input-channel dim")


@expansion_rule(_ConvForward)
def conv_local(prim: _ConvForward, call: ShardedCall) -> Any:
    """A split out_channel: each rank runs the convolution of its own channel count. A
    split first spatial dim (H, or Conv3D's D): each rank receives its neighbours' halo
    rows (NeighborExchangeV2 over that dim's group, zeros beyond the image's border: its
    padding; a Conv3D's x is exchanged as (N, C, D, H * W), a row a whole H x W plane),
    then convolves them unpadded in that dim."""
    h_axes = call.in_axes[0][2]
    if not call.in_axes[1][0] and not h_axes:
        return None
    x, w = call.args()
    changes = {"out_channel": call.nodes[1].shape[0]}
    if h_axes:
        top, bottom = same_height(prim, call.in_shapes[0])
        local = tuple(call.nodes[0].shape)
        rows = local[2]
        if max(top, bottom) > rows:
            raise ValueError(f"For '{prim.name}', each rank's slice of "
                             f"{'H' if prim.nd == 2 else 'D'} should hold at least "
                             f"the halo rows its neighbours need ({max(top, bottom)}), but got "
                             f"{rows} rows (x shape {tuple(call.in_shapes[0])} split "
                             f"{call.in_shapes[0][2] // rows} ways).")
        group = get_group(call.group(h_axes))
        pos, parts = group.rank, group.size
        ids = [-1] * 8
        ids[0] = pos - 1 if pos > 0 else -1                 # top
        ids[4] = pos + 1 if pos < parts - 1 else -1         # bottom
        if top or bottom:
            halo = NeighborExchangeV2(send_rank_ids=ids, send_lens=[bottom, top, 0, 0],
                                      recv_rank_ids=ids, recv_lens=[top, bottom, 0, 0],
                                      group=group.name)
            if prim.nd == 2:
                x = call.apply(halo, [x])
            else:                                   # rows of whole H x W planes
                flat = call.apply(Reshape(), [x, call.const(local[:3] + (-1,))])
                x = call.apply(Reshape(), [call.apply(halo, [flat]), call.const(
                    local[:2] + (rows + top + bottom,) + local[3:])])
        _, pads = prim.geometry(call.in_shapes[0])
        changes.update(pad_mode="pad", pad=(0, 0) + tuple(pads[2:]))
    return call.apply(type(prim)(**prim.conv_attrs(**changes)), [x, w])


declare_without("sharding", _ConvBackpropFilter,
                reason="it is made only by autodiff, which runs on the rank-local graph")


@sharding_rule(_ConvBackpropInput)
def conv_backprop_input_spec(prim: _ConvBackpropInput, ins: list, outs: list,
                             consts: dict) -> DimSpec:
    """dout "no" + its spatial dims and weight "oc" + kernel -> "nc" + x's spatial dims:
    the convolution's spec transposed (nn.Conv2dTranspose's and Conv3DTranspose's op).
    The batch and (group 1) the output channels c split freely; a split o (group 1) leaves
    partial sums (AllReduced); the spatial and kernel dims stay whole."""
    c_w = "cg" if prim._group > 1 else "c"
    spatial, d_sp, kernel, unsplittable = conv_letters(prim, "", "d")
    unsplittable += [(letter, SPATIAL_SPLIT) for letter in d_sp + spatial]
    return DimSpec((("n", "o") + d_sp, ("o", c_w) + kernel), (("n", "c") + spatial,),
                   unsplittable=tuple(unsplittable + group_refusals(prim)),
                   reduction_name=f"dout channel dim ({prim.family().conv.__name__}'s output "
                                  f"channels)")


@expansion_rule(_ConvBackpropInput)
def conv_backprop_input_local(prim: _ConvBackpropInput, call: ShardedCall) -> Any:
    """Each rank's op makes its slice of the output from its slice of dout's channels."""
    local = tuple(call.out_shapes[0])
    channels = call.nodes[0].shape[1]
    if isinstance(prim, Conv3DTranspose):
        if channels == prim.in_channel and local[1] == prim.out_channel:
            return None
        return call.apply(prim.local_op(channels, local), call.args())
    if local == tuple(call.consts[2]) and channels == prim._out_channel:
        return None
    op = type(prim)(**prim.conv_attrs(out_channel=channels))
    return call.apply(op, call.args({2: local}))


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
# A convolution is bilinear in (x, w), so each of the three ops' transposes is one of the others.
@bprop(_ConvForward)
def conv_bprop(prim: _ConvForward, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dx: the transposed convolution of dout by w; dw: dout correlated with x's windows."""
    x, w = inputs
    fam, attrs = prim.family(), prim.conv_attrs()
    dx = g.apply(fam.input(**attrs), [dout, w, g.add_const(tuple(x.shape))])
    dw = g.apply(fam.filter(**attrs), [dout, x, g.add_const(tuple(w.shape))])
    return dx, dw


@bprop(_ConvBackpropInput)
def conv_backprop_input_bprop(prim: _ConvBackpropInput, inputs: list, out: Any, dout: Any,
                              g: Any) -> tuple:
    """Of y = conv^T(d, w): dd = conv(dout, w), dw = filter-gradient(d, dout)."""
    d, w = inputs[:2]
    fam, attrs = prim.family(), prim.conv_attrs()
    dd = g.apply(fam.conv(**attrs), [dout, w])
    dw = g.apply(fam.filter(**attrs), [d, dout, g.add_const(tuple(w.shape))])
    return (dd, dw) + (None,) * (len(inputs) - 2)


@bprop(_ConvBackpropFilter)
def conv_backprop_filter_bprop(prim: _ConvBackpropFilter, inputs: list, out: Any,
                               dout: Any, g: Any) -> tuple:
    """Of y = filter-gradient(d, x): dd = conv(x, dout), dx = conv^T(d, dout)."""
    d, x, _ = inputs
    fam, attrs = prim.family(), prim.conv_attrs()
    dd = g.apply(fam.conv(**attrs), [x, dout])
    dx = g.apply(fam.input(**attrs), [d, dout, g.add_const(tuple(x.shape))])
    return dd, dx, None


# vmap: the batch folded into N (x (B, N, C, H, W) -> (B*N, C, H, W)) for one weight
batch_rule(Conv2D)(fold_batch(0))
