"""2-D convolution: Conv2D and its two backward ops, with the window geometry pools share.

Kernels are im2col without copies: `windows` views the padded input as
(N, C, OH, OW, KH, KW) through `np.lib.stride_tricks.as_strided`, and the product with the
weight is one `np.einsum` contraction (a BLAS matmul) per channel group. The input gradient adds the
weight-weighted columns back one kernel position at a time (KH * KW strided adds, never a
loop over pixels). Float16/bfloat16 compute in float32, rounded once.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication import get_group
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import check_rank, check_same_dtype, compute_dtype
from msops.primitives.neighbor_exchange import NeighborExchangeV2
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import fold_batch
from msops.primitives.rules import (batch_rule, bprop, declare_without, expansion_rule,
                                   sharding_rule)
from msops.primitives.sharding import DimSpec, ShardedCall

__all__ = ["Conv2D"]

float_types = mstype.float_type

#: einsum's contraction of two operands as one BLAS product (the path, given: none is
#: searched per call); measured about 1.6x faster than np.tensordot on these layouts
PAIR = ["einsum_path", (0, 1)]

#: why a sharding rule refuses a split of H or W (the windows would straddle the slices)
SPATIAL_SPLIT = ("a window straddles the slices' border, which needs the neighbours' rows "
                 "(a halo exchange, see NeighborExchangeV2); split the batch or channels")


# -- window geometry (shared with the pools) ----------------------------------------------
def pair(prim_name: str, arg: str, value: Any, allow_nchw4: bool = True) -> tuple[int, int]:
    """An int or (h, w) (or MindSpore's NCHW form (1, 1, h, w)) as (h, w), each >= 1."""
    if isinstance(value, int) and not isinstance(value, bool):
        hw = (value, value)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        hw = tuple(value)
    elif allow_nchw4 and isinstance(value, (tuple, list)) and len(value) == 4 and \
            tuple(value[:2]) == (1, 1):
        hw = tuple(value[2:])
    else:
        forms = "an int, a tuple of 2 ints or (1, 1, h, w)" if allow_nchw4 else \
            "an int or a tuple of 2 ints"
        raise ValueError(f"For '{prim_name}', the '{arg}' should be {forms}, but got {value!r}.")
    for v in hw:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"For '{prim_name}', every value of '{arg}' should be a positive "
                             f"int, but got {value!r}.")
    return hw


def pad_list(prim_name: str, pad_mode: str, pad: Any) -> tuple[int, int, int, int]:
    """`pad` (an int or (top, bottom, left, right), each >= 0) as a 4-tuple; it must be 0
    unless pad_mode is 'pad'."""
    if isinstance(pad, int) and not isinstance(pad, bool):
        pads = (pad,) * 4
    elif isinstance(pad, (tuple, list)) and len(pad) == 4:
        pads = tuple(pad)
    else:
        raise ValueError(f"For '{prim_name}', the 'pad' should be an int or a tuple of 4 ints "
                         f"(top, bottom, left, right), but got {pad!r}.")
    for v in pads:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"For '{prim_name}', every value of 'pad' should be a "
                             f"non-negative int, but got {pad!r}.")
    if pad_mode != "pad" and any(pads):
        raise ValueError(f"For '{prim_name}', the 'pad' should be 0 when 'pad_mode' is not "
                         f"'pad', but got pad={pad!r} with pad_mode='{pad_mode}'.")
    return pads


def out_size(prim_name: str, dim: str, size: int, kernel: int, stride: int, dilation: int,
             pad_mode: str, pads: tuple[int, int]) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one spatial dim, as MindSpore: 'same' gives
    ceil(size / stride) with the padding split evenly (the extra one after), 'valid' no
    padding, 'pad' the given one."""
    span = dilation * (kernel - 1) + 1
    if pad_mode == "same":
        n = -(-size // stride)
        total = max(0, (n - 1) * stride + span - size)
        return n, total // 2, total - total // 2
    before, after = pads if pad_mode == "pad" else (0, 0)
    padded = size + before + after
    if padded < span:
        raise ValueError(f"For '{prim_name}', the input {dim} (padded) should be >= the "
                         f"kernel's extent {span} (kernel {kernel}, dilation {dilation}), "
                         f"but got {padded}.")
    return (padded - span) // stride + 1, before, after


def windows(xp: np.ndarray, out_hw: tuple[int, int], kernel: tuple[int, int],
            stride: tuple[int, int], dilation: tuple[int, int]) -> np.ndarray:
    """A read-only (N, C, OH, OW, KH, KW) view of the padded NCHW input: the im2col columns."""
    n, c, _, _ = xp.shape
    sn, sc, sh, sw = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (n, c, out_hw[0], out_hw[1], kernel[0], kernel[1]),
        (sn, sc, sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1]),
        writeable=False)


def padded(x: np.ndarray, pads: tuple[int, int, int, int], value: Any = 0) -> np.ndarray:
    """x (NCHW) with `pads` (top, bottom, left, right) of `value` around H and W."""
    if not any(pads):
        return x
    t, b, l, r = pads
    return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)


def add_windows(dxp: np.ndarray, cols: np.ndarray, stride: tuple[int, int],
                dilation: tuple[int, int]) -> None:
    """The transpose of `windows`: add cols (N, C, OH, OW, KH, KW) back into the padded
    gradient dxp (N, C, Hp, Wp), one kernel position (a strided block) at a time."""
    _, _, oh, ow, kh, kw = cols.shape
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dilation[0], j * dilation[1]
            dxp[:, :, h0:h0 + (oh - 1) * stride[0] + 1:stride[0],
                w0:w0 + (ow - 1) * stride[1] + 1:stride[1]] += cols[..., i, j]


def check_nchw(prim_name: str, data_format: str) -> str:
    """data_format must be 'NCHW' (the only layout the kernels implement)."""
    validator.check_value_type("data_format", data_format, str, prim_name)
    if data_format != "NCHW":
        raise ValueError(f"For '{prim_name}', the 'data_format' should be 'NCHW' (msops "
                         f"implements no other layout), but got '{data_format}'.")
    return data_format


# -- Conv2D family ---------------------------------------------------------------------------
class _Conv2DBase(PrimitiveWithInfer):
    """MindSpore's Conv2D attributes, checked once, and the geometry every conv op shares."""

    @prim_attr_register
    def __init__(self, out_channel: int, kernel_size: int | tuple, mode: int = 1,
                 pad_mode: str = "valid", pad: int | tuple = 0, stride: int | tuple = 1,
                 dilation: int | tuple = 1, group: int = 1, data_format: str = "NCHW") -> None:
        name = self.name
        validator.check_positive_int(out_channel, "out_channel", name)
        self._kernel = pair(name, "kernel_size", kernel_size, allow_nchw4=False)
        if mode != 1:
            raise ValueError(f"For '{name}', the 'mode' should be 1 (cross-correlation, the "
                             f"only mode MindSpore implements), but got {mode!r}.")
        validator.check_value_type("pad_mode", pad_mode, str, name)
        self._pad_mode = validator.check_string("pad_mode", pad_mode.lower(),
                                                ("valid", "same", "pad"), name)
        self._pads = pad_list(name, self._pad_mode, pad)
        self._stride = pair(name, "stride", stride)
        self._dilation = pair(name, "dilation", dilation)
        validator.check_positive_int(group, "group", name)
        if out_channel % group:
            raise ValueError(f"For '{name}', the 'out_channel' should be divisible by 'group': "
                             f"{group}, but got {out_channel}.")
        check_nchw(name, data_format)

    def geometry(self, x_shape: Sequence[int]) -> tuple[tuple[int, int], tuple]:
        """((OH, OW), (top, bottom, left, right)) for an input of NCHW `x_shape`."""
        oh, t, b = out_size(self.name, "height", x_shape[2], self._kernel[0], self._stride[0],
                            self._dilation[0], self._pad_mode, self._pads[:2])
        ow, l, r = out_size(self.name, "width", x_shape[3], self._kernel[1], self._stride[1],
                            self._dilation[1], self._pad_mode, self._pads[2:])
        return (oh, ow), (t, b, l, r)

    def check_operands(self, x_shape: Sequence[int], w_shape: Sequence[int]) -> None:
        """x (N, C, H, W) and weight (out_channel, C / group, KH, KW) agree with the attrs."""
        check_rank(self.name, "x", x_shape, 4, 4)
        check_rank(self.name, "weight", w_shape, 4, 4)
        want = [self.out_channel, x_shape[1] // self.group, *self._kernel]
        if x_shape[1] % self.group or list(w_shape) != want:
            raise ValueError(f"For '{self.name}', the 'weight shape' should be (out_channel, "
                             f"C / group, kernel_h, kernel_w) = {tuple(want)} for x shape "
                             f"{tuple(x_shape)} (group {self.group}, whose C should divide by "
                             f"it), but got {tuple(w_shape)}.")

    def attrs_for(self, **changes: Any) -> dict:
        """The constructor arguments, with `changes` (a sibling op of the same geometry)."""
        return {**self.init_attrs, **changes}

    def grouped(self, a: np.ndarray, axis: int) -> list[np.ndarray]:
        """`a` split into the `group` equal blocks of `axis` (views)."""
        return np.split(a, self.group, axis=axis) if self.group > 1 else [a]

    writes_output = True
    kernel = run_lowered


class Conv2D(_Conv2DBase):
    """2-D cross-correlation, NCHW: x (N, C, H, W), weight (out_channel, C/group, KH, KW) ->
    (N, out_channel, OH, OW). pad_mode 'valid' (no padding), 'same' (OH = ceil(H / stride)),
    'pad' (`pad`: an int or (top, bottom, left, right)); `stride`, `dilation`: int or (h, w).

    >>> Conv2D(out_channel=2, kernel_size=3, pad_mode="same")(
    ...     Tensor(np.ones((1, 1, 4, 4), np.float32)), Tensor(np.ones((2, 1, 3, 3), np.float32))).shape
    (1, 2, 4, 4)
    """

    def infer_shape(self, x_shape: list, w_shape: list) -> list:
        self.check_operands(x_shape, w_shape)
        (oh, ow), _ = self.geometry(x_shape)
        return [x_shape[0], self.out_channel, oh, ow]

    def infer_dtype(self, x_dtype: mstype.Type, w_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "weight": w_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        out_hw, pads = self.geometry(in_abstracts[0].shape)

        def conv2d(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            cols = windows(padded(x.astype(ct, copy=False), pads), out_hw, self._kernel,
                           self._stride, self._dilation)
            outs = self.grouped(out, 1)
            for o, c, k in zip(outs, self.grouped(cols, 1), self.grouped(w.astype(ct, copy=False), 0)):
                o[...] = np.einsum("nchwij,ocij->nohw", c, k, optimize=PAIR)
            return out
        return conv2d


class _Conv2DGrad(_Conv2DBase):
    """The two gradient ops of Conv2D: `dout` must have Conv2D's output shape."""

    def check_dout(self, dout_shape: list, x_shape: list, w_shape: list, result: list) -> list:
        self.check_operands(x_shape, w_shape)
        (oh, ow), _ = self.geometry(x_shape)
        want = [x_shape[0], self.out_channel, oh, ow]
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be Conv2D's output "
                             f"shape {tuple(want)}, but got {tuple(dout_shape)}.")
        return result


class Conv2DBackpropInput(_Conv2DGrad):
    """`Conv2DBackpropInput(<Conv2D's attrs>)(dout, weight, x_shape)`: the gradient of
    Conv2D's x, of `x_shape` (the transposed convolution). Internal (made by the backward
    rule, which runs on rank-local graphs); not exported."""

    const_inputs = (2,)

    def infer_shape(self, dout_shape: list, w_shape: list, x_shape: Any) -> list:
        return self.check_dout(dout_shape, list(x_shape), w_shape, list(x_shape))

    def infer_dtype(self, dout_dtype: mstype.Type, w_dtype: mstype.Type,
                    x_shape: Any) -> mstype.Type:
        return check_same_dtype(self.name, {"dout": dout_dtype, "weight": w_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        _, pads = self.geometry(shape)
        t, b, l, r = pads
        n, c, h, w_ = shape

        def conv2d_backprop_input(dout: np.ndarray, w: np.ndarray, x_shape: Any,
                                  out: np.ndarray | None = None) -> np.ndarray:
            dxp = np.zeros((n, c, h + t + b, w_ + l + r), ct)
            for dx_g, d, k in zip(self.grouped(dxp, 1), self.grouped(dout.astype(ct, copy=False), 1),
                                  self.grouped(w.astype(ct, copy=False), 0)):
                cols = np.einsum("nohw,ocij->nchwij", d, k, optimize=PAIR)
                add_windows(dx_g, cols, self._stride, self._dilation)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, dxp[:, :, t:t + h, l:l + w_], casting="unsafe")
            return out
        return conv2d_backprop_input


class Conv2DBackpropFilter(_Conv2DGrad):
    """`Conv2DBackpropFilter(<Conv2D's attrs>)(dout, x, w_shape)`: the gradient of Conv2D's
    weight, of `w_shape`. Internal (made by the backward rule); not exported."""

    const_inputs = (2,)

    def infer_shape(self, dout_shape: list, x_shape: list, w_shape: Any) -> list:
        return self.check_dout(dout_shape, x_shape, list(w_shape), list(w_shape))

    def infer_dtype(self, dout_dtype: mstype.Type, x_dtype: mstype.Type,
                    w_shape: Any) -> mstype.Type:
        return check_same_dtype(self.name, {"dout": dout_dtype, "x": x_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        out_hw, pads = self.geometry(in_abstracts[1].shape)

        def conv2d_backprop_filter(dout: np.ndarray, x: np.ndarray, w_shape: Any,
                                   out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            cols = windows(padded(x.astype(ct, copy=False), pads), out_hw, self._kernel,
                           self._stride, self._dilation)
            for o, d, c in zip(self.grouped(out, 0), self.grouped(dout.astype(ct, copy=False), 1),
                               self.grouped(cols, 1)):
                o[...] = np.einsum("nohw,nchwij->ocij", d, c, optimize=PAIR)
            return out
        return conv2d_backprop_filter


def same_height(prim: _Conv2DBase, x_shape: Sequence[int]) -> tuple[int, int] | None:
    """(pad top, pad bottom) when Conv2D keeps x's height (stride 1, the padding adding
    the kernel's extent - 1), so an H split carries to the output with halo rows; else None."""
    (oh, _), (t, b, _, _) = prim.geometry(x_shape)
    return (t, b) if prim._stride[0] == 1 and oh == x_shape[2] else None


@sharding_rule(Conv2D)
def conv2d_spec(prim: Conv2D, ins: list, outs: list, consts: dict) -> DimSpec:
    """x "nchw", weight "oc" + kernel -> "no" + output H, W. The batch and (group 1) the
    output channels split freely; a split input channel (group 1) leaves partial sums
    (AllReduced). H splits when the output keeps x's height (stride 1, 'same' padding):
    each rank gets its neighbours' halo rows (the expansion); W and the kernel dims
    stay whole."""
    grouped = prim.group > 1
    c_w = "cg" if grouped else "c"        # with groups, weight dim 1 holds C / group
    keeps_h = same_height(prim, ins[0]) is not None
    unsplittable = [("w", SPATIAL_SPLIT), ("kh", "it is the kernel's height"),
                    ("kw", "it is the kernel's width")]
    if not keeps_h:
        unsplittable.append(("h", SPATIAL_SPLIT + "; H may split only when the output keeps "
                                  "x's height (stride 1 and 'same' padding)"))
    if grouped:
        why = f"it would cut Conv2D's {prim.group} channel groups"
        unsplittable += [("c", why), ("cg", why), ("o", why)]
    return DimSpec((("n", "c", "h", "w"), ("o", c_w, "kh", "kw")),
                   (("n", "o", "h" if keeps_h else "oh", "ow"),),
                   unsplittable=tuple(unsplittable), reduction_name="input-channel dim")


@expansion_rule(Conv2D)
def conv2d_local(prim: Conv2D, call: ShardedCall) -> Any:
    """A split out_channel: each rank runs a Conv2D of its own channel count. A split H:
    each rank receives its neighbours' halo rows (NeighborExchangeV2 over the H group,
    zeros beyond the image's border: its padding), then convolves them unpadded in H."""
    h_axes = call.in_axes[0][2]
    if not call.in_axes[1][0] and not h_axes:
        return None
    x, w = call.args()
    changes = {"out_channel": call.nodes[1].shape[0]}
    if h_axes:
        top, bottom = same_height(prim, call.in_shapes[0])
        rows = call.nodes[0].shape[2]
        if max(top, bottom) > rows:
            raise ValueError(f"For '{prim.name}', each rank's slice of H should hold at least "
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
            x = call.apply(halo, [x])
        _, (_, _, left, right) = prim.geometry(call.in_shapes[0])
        changes.update(pad_mode="pad", pad=(0, 0, left, right))
    return call.apply(Conv2D(**prim.attrs_for(**changes)), [x, w])


declare_without("sharding", Conv2DBackpropFilter,
                reason="it is made only by autodiff, which runs on the rank-local graph")


@sharding_rule(Conv2DBackpropInput)
def conv2d_backprop_input_spec(prim: Conv2DBackpropInput, ins: list, outs: list,
                               consts: dict) -> DimSpec:
    """dout "no" + its H, W and weight "oc" + kernel -> "nc" + x's H, W: Conv2D's spec
    transposed (nn.Conv2dTranspose's op). The batch and (group 1) the output channels c
    split freely; a split o (group 1) leaves partial sums (AllReduced); the spatial and
    kernel dims stay whole."""
    grouped = prim.group > 1
    c_w = "cg" if grouped else "c"
    unsplittable = [("dh", SPATIAL_SPLIT), ("dw", SPATIAL_SPLIT), ("h", SPATIAL_SPLIT),
                    ("w", SPATIAL_SPLIT), ("kh", "it is the kernel's height"),
                    ("kw", "it is the kernel's width")]
    if grouped:
        why = f"it would cut Conv2DBackpropInput's {prim.group} channel groups"
        unsplittable += [("c", why), ("cg", why), ("o", why)]
    return DimSpec((("n", "o", "dh", "dw"), ("o", c_w, "kh", "kw")), (("n", "c", "h", "w"),),
                   unsplittable=tuple(unsplittable),
                   reduction_name="dout channel dim (Conv2D's output channels)")


@expansion_rule(Conv2DBackpropInput)
def conv2d_backprop_input_local(prim: Conv2DBackpropInput, call: ShardedCall) -> Any:
    """Each rank's op makes its slice of the output (the x_shape input) from its slice of
    dout's channels (out_channel)."""
    local = tuple(call.out_shapes[0])
    channels = call.nodes[0].shape[1]
    if local == tuple(call.consts[2]) and channels == prim.out_channel:
        return None
    op = Conv2DBackpropInput(**prim.attrs_for(out_channel=channels))
    return call.apply(op, call.args({2: local}))


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
# Conv2D is bilinear in (x, w), so each of the three ops' transposes is one of the others.
@bprop(Conv2D)
def conv2d_bprop(prim: Conv2D, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dx: the transposed convolution of dout by w; dw: dout correlated with x's windows."""
    x, w = inputs
    attrs = prim.attrs_for()
    dx = g.apply(Conv2DBackpropInput(**attrs), [dout, w, g.add_const(tuple(x.shape))])
    dw = g.apply(Conv2DBackpropFilter(**attrs), [dout, x, g.add_const(tuple(w.shape))])
    return dx, dw


@bprop(Conv2DBackpropInput)
def conv2d_backprop_input_bprop(prim: Conv2DBackpropInput, inputs: list, out: Any, dout: Any,
                                g: Any) -> tuple:
    """Of y = conv^T(d, w): dd = conv(dout, w), dw = filter-gradient(d, dout)."""
    d, w, _ = inputs
    attrs = prim.attrs_for()
    dd = g.apply(Conv2D(**attrs), [dout, w])
    dw = g.apply(Conv2DBackpropFilter(**attrs), [d, dout, g.add_const(tuple(w.shape))])
    return dd, dw, None


@bprop(Conv2DBackpropFilter)
def conv2d_backprop_filter_bprop(prim: Conv2DBackpropFilter, inputs: list, out: Any,
                                 dout: Any, g: Any) -> tuple:
    """Of y = filter-gradient(d, x): dd = conv(x, dout), dx = conv^T(d, dout)."""
    d, x, _ = inputs
    attrs = prim.attrs_for()
    dd = g.apply(Conv2D(**attrs), [x, dout])
    dx = g.apply(Conv2DBackpropInput(**attrs), [d, dout, g.add_const(tuple(x.shape))])
    return dd, dx, None


# vmap: the batch folded into N (x (B, N, C, H, W) -> (B*N, C, H, W)) for one weight
batch_rule(Conv2D)(fold_batch(0))
