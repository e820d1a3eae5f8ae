"""2-D pooling, NCHW: MaxPool and AvgPool, and their backward ops.

Windows are strided views of the (padded) input (`conv_ops.windows`); the backward ops add
each window's gradient back one kernel position at a time (`conv_ops.add_windows`).
pad_mode 'SAME' pads as Conv2D does (output ceil(H / stride)); padding never wins a max
and is not counted in an average (TensorFlow's and MindSpore's AvgPool).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.conv_ops import (SPATIAL_SPLIT, add_windows, check_nchw, out_size, pad_list,
                                       pair, padded, windows)
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import check_rank, check_same_dtype, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import fold_batch, per_element
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["MaxPool", "AvgPool"]

float_types = mstype.float_type


class _Pool(PrimitiveWithInfer):
    """MindSpore's pooling attributes: kernel_size, strides (an int, (h, w) or (1, 1, h, w)),
    pad_mode 'VALID' or 'SAME' (any case), data_format 'NCHW'."""

    @prim_attr_register
    def __init__(self, kernel_size: int | tuple = 1, strides: int | tuple = 1,
                 pad_mode: str = "valid", data_format: str = "NCHW") -> None:
        name = self.name
        self._kernel = pair(name, "kernel_size", kernel_size)
        self._stride = pair(name, "strides", strides)
        validator.check_value_type("pad_mode", pad_mode, str, name)
        mode = validator.check_string("pad_mode", pad_mode.upper(), ("VALID", "SAME"), name)
        self.add_prim_attr("pad_mode", mode)
        check_nchw(name, data_format)

    def geometry(self, x_shape: Sequence[int]) -> tuple[tuple[int, int], tuple]:
        """((OH, OW), (top, bottom, left, right)) for an input of NCHW `x_shape`."""
        mode = self.pad_mode.lower()
        pads = pad_list(self.name, mode, 0)
        oh, t, b = out_size(self.name, "height", x_shape[2], self._kernel[0], self._stride[0],
                            1, mode, pads[:2])
        ow, l, r = out_size(self.name, "width", x_shape[3], self._kernel[1], self._stride[1],
                            1, mode, pads[2:])
        return (oh, ow), (t, b, l, r)

    def pooled_shape(self, x_shape: Sequence[int]) -> list:
        check_rank(self.name, "x", x_shape, 4, 4)
        (oh, ow), _ = self.geometry(x_shape)
        return [x_shape[0], x_shape[1], oh, ow]

    def infer_shape(self, x_shape: list) -> list:
        return self.pooled_shape(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)

    def window_view(self, x: np.ndarray, fill: float) -> np.ndarray:
        """(N, C, OH, OW, KH, KW) windows of x padded with `fill`."""
        out_hw, pads = self.geometry(x.shape)
        return windows(padded(x, pads, fill), out_hw, self._kernel, self._stride, (1, 1))

    def scatter(self, cols: np.ndarray, x_shape: Sequence[int], dtype: Any) -> np.ndarray:
        """The gradient of x (x_shape): window gradients cols added back, padding cut off."""
        _, (t, b, l, r) = self.geometry(x_shape)
        n, c, h, w = x_shape
        dxp = np.zeros((n, c, h + t + b, w + l + r), dtype)
        add_windows(dxp, cols, self._stride, (1, 1))
        return dxp[:, :, t:t + h, l:l + w]

    writes_output = True
    kernel = run_lowered


class MaxPool(_Pool):
    """The max of each window: x (N, C, H, W) -> (N, C, OH, OW).

    >>> MaxPool(kernel_size=2, strides=2)(Tensor(np.arange(16, dtype=np.float32)
    ...                                          .reshape(1, 1, 4, 4))).asnumpy()
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)

        def max_pool(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            return np.max(self.window_view(x, -np.inf), axis=(4, 5), out=out)
        return max_pool


class MaxPoolGrad(_Pool):
    """`MaxPoolGrad(<MaxPool's attrs>)(x, dout)`: each window's dout goes to its (first)
    maximum. Internal (made by MaxPool's backward rule); not exported."""

    def infer_shape(self, x_shape: list, dout_shape: list) -> list:
        want = self.pooled_shape(x_shape)
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be MaxPool's output "
                             f"shape {tuple(want)}, but got {tuple(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dout_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "dout": dout_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        kh, kw = self._kernel

        def max_pool_grad(x: np.ndarray, dout: np.ndarray,
                          out: np.ndarray | None = None) -> np.ndarray:
            win = self.window_view(x, -np.inf)
            flat = win.reshape(win.shape[:4] + (kh * kw,))
            hot = np.arange(kh * kw) == flat.argmax(axis=4)[..., None]   # the first maximum
            cols = (hot * dout.astype(ct, copy=False)[..., None]).reshape(win.shape)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, self.scatter(cols, shape, ct), casting="unsafe")
            return out
        return max_pool_grad


class AvgPool(_Pool):
    """The mean of each window (over its elements inside x): x (N, C, H, W) -> (N, C, OH, OW).

    >>> AvgPool(kernel_size=2, strides=2)(Tensor(np.arange(16, dtype=np.float32)
    ...                                          .reshape(1, 1, 4, 4))).asnumpy()
    array([[[[ 2.5,  4.5],
             [10.5, 12.5]]]], dtype=float32)
    """

    def counts(self, x_shape: Sequence[int]) -> np.ndarray:
        """(OH, OW): how many elements of x each window covers (padding excluded)."""
        ones = np.ones((1, 1) + tuple(x_shape[2:]), np.float64)
        return self.window_view(ones, 0.0).sum(axis=(4, 5))[0, 0]

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        inv = (1.0 / self.counts(in_abstracts[0].shape)).astype(ct)

        def avg_pool(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            total = self.window_view(x.astype(ct, copy=False), 0.0).sum(axis=(4, 5))
            np.multiply(total, inv, out=out, casting="unsafe")
            return out
        return avg_pool


class AvgPoolGrad(AvgPool):
    """`AvgPoolGrad(<AvgPool's attrs>)(dout, x_shape)`: each window's dout / its count, added
    to every element of the window. Internal (made by AvgPool's backward rule)."""

    const_inputs = (1,)

    def infer_shape(self, dout_shape: list, x_shape: Any) -> list:
        want = self.pooled_shape(list(x_shape))
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be AvgPool's output "
                             f"shape {tuple(want)}, but got {tuple(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, dout_dtype: mstype.Type, x_shape: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("dout", dout_dtype, float_types, self.name)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        inv = (1.0 / self.counts(shape)).astype(ct)
        kernel = self._kernel

        def avg_pool_grad(dout: np.ndarray, x_shape: Any,
                          out: np.ndarray | None = None) -> np.ndarray:
            share = dout.astype(ct, copy=False) * inv
            cols = np.broadcast_to(share[..., None, None], share.shape + kernel)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, self.scatter(cols, shape, ct), casting="unsafe")
            return out
        return avg_pool_grad


def tiles(prim: _Pool, x_shape: Sequence[int], dim: int) -> bool:
    """Whether the windows tile spatial `dim` (2: H, 3: W) exactly: stride == kernel, no
    padding, the size a multiple of the kernel. Then a split dim pools locally."""
    k = prim._kernel[dim - 2]
    _, pads = prim.geometry(x_shape)
    return prim._stride[dim - 2] == k and not any(pads[2 * (dim - 2):2 * (dim - 1)]) and \
        x_shape[dim] % k == 0


@sharding_rule(MaxPool, AvgPool)
def pool_spec(prim: _Pool, ins: list, outs: list, consts: dict) -> DimSpec:
    """"nchw" -> "nc" + output H, W: batch and channels split freely; H or W split when the
    windows tile it (stride == kernel, no padding: no window straddles two slices)."""
    out, unsplittable = ["n", "c"], []
    for dim, letter in ((2, "h"), (3, "w")):
        if tiles(prim, ins[0], dim):
            out.append(letter)
        else:
            out.append("o" + letter)
            unsplittable.append((letter, SPATIAL_SPLIT + "; H or W may split only when the "
                                         "windows tile it (stride == kernel, no padding)"))
    return DimSpec((("n", "c", "h", "w"),), (tuple(out),), unsplittable=tuple(unsplittable))


declare_without("sharding", MaxPoolGrad, AvgPoolGrad,
                reason="it is made only by autodiff, which runs on the rank-local graph")


def _same_attrs(prim: _Pool) -> dict:
    return {k: prim.init_attrs[k] for k in ("kernel_size", "strides", "pad_mode", "data_format")}


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(MaxPool)
def max_pool_bprop(prim: MaxPool, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout routed to each window's first maximum (MaxPoolGrad)."""
    return (g.apply(MaxPoolGrad(**_same_attrs(prim)), [inputs[0], dout]),)


declare_without("bprop", MaxPoolGrad,
                reason="second-order gradients through a max pool are not implemented")


@bprop(AvgPool)
def avg_pool_bprop(prim: AvgPool, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout spread evenly over each window (AvgPoolGrad), its transpose."""
    x = inputs[0]
    return (g.apply(AvgPoolGrad(**_same_attrs(prim)), [dout, g.add_const(tuple(x.shape))]),)


@bprop(AvgPoolGrad)
def avg_pool_grad_bprop(prim: AvgPoolGrad, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Linear in dout, whose transpose is the pool itself."""
    return g.apply(AvgPool(**_same_attrs(prim)), [dout]), None


# vmap: windows never cross N, so the batch is folded into it
batch_rule(MaxPool, AvgPool)(fold_batch(0))
batch_rule(MaxPoolGrad)(fold_batch(0, 1))
batch_rule(AvgPoolGrad)(per_element)          # its x_shape names N: not folded
