"""Pooling, N-D: MaxPool and AvgPool (NCHW), MaxPool3D and AvgPool3D (NCDHW), and their
backward ops.

Windows are strided views of the (padded) input (`conv_ops.windows`); the backward ops add
each window's gradient back one kernel position at a time (`conv_ops.add_windows`).
pad_mode 'SAME' pads as the convolutions do (output ceil(size / stride)); 'PAD' (the 3-D
ops) pads explicitly; `ceil_mode` adds a last, partial window. Padding never wins a max; a
mean counts only x's elements, except explicit padding with count_include_pad (AvgPool3D),
or divides by divisor_override when given.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.conv_ops import (DIM_NAMES, LETTERS, SPATIAL_SPLIT, add_windows,
                                       check_layout, ntuple, out_size, pad_list, padded, windows)
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import check_rank, check_same_dtype, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.array_ops import Reshape
from msops.primitives.batching import fold_batch, per_element
from msops.primitives.gather_ops import GatherDGrad
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", "MaxPoolWithArgmaxV2",
           "MaxPool3DWithArgmax"]

float_types = mstype.float_type


class _Pool(PrimitiveWithInfer):
    """The window geometry every pool of `nd` spatial dims shares: kernel, strides,
    dilation, pad_mode ('valid', 'same' or 'pad' with explicit pads) and ceil_mode."""

    nd = 2
    _dilation: tuple = (1, 1)
    _pads: tuple = (0, 0, 0, 0)
    _ceil = False
    _count_pad = False
    _divisor = 0

    def configure(self, kernel_size: Any, strides: Any, pad_mode: str, data_format: str,
                  modes: tuple = ("VALID", "SAME"), pads: Any = 0, pad_arg: str = "pad",
                  ceil_mode: Any = False) -> None:
        """Check the window attributes (pad_mode in any case, recorded upper case)."""
        name, nd = self.name, self.nd
        self._kernel = ntuple(name, "kernel_size", kernel_size, nd)
        self._stride = ntuple(name, "strides", strides, nd)
        self._dilation = (1,) * nd
        validator.check_value_type("pad_mode", pad_mode, str, name)
        mode = validator.check_string("pad_mode", pad_mode.upper(), modes, name)
        self.add_prim_attr("pad_mode", mode)
        self._mode = mode.lower()
        self._pads = pad_list(name, self._mode, pads, nd, pad_arg)
        for k, (before, after) in enumerate(zip(self._pads[::2], self._pads[1::2])):
            if max(before, after) > self._kernel[k] // 2:
                raise ValueError(f"For '{name}', every value of '{pad_arg}' should be at most "
                                 f"half its kernel size {self._kernel}, but got {pads!r}.")
        if ceil_mode is not None:
            validator.check_bool("ceil_mode", ceil_mode, name)
        self._ceil = bool(ceil_mode)
        check_layout(name, data_format, "NCHW" if nd == 2 else "NCDHW")

    def geometry(self, x_shape: Sequence[int]) -> tuple[tuple, tuple]:
        """(output spatial sizes, pads (before, after per dim; ceil_mode's extension
        included)) for an input `x_shape`."""
        sizes, pads = [], []
        for k, dim in enumerate(DIM_NAMES[self.nd]):
            o, before, after = out_size(self.name, dim, x_shape[2 + k], self._kernel[k],
                                        self._stride[k], self._dilation[k], self._mode,
                                        self._pads[2 * k:2 * k + 2], self._ceil)
            sizes.append(o)
            pads += [before, after]
        return tuple(sizes), tuple(pads)

    def pooled_shape(self, x_shape: Sequence[int]) -> list:
        rank = self.nd + 2
        check_rank(self.name, "x", x_shape, rank, rank)
        sizes, _ = self.geometry(x_shape)
        return [x_shape[0], x_shape[1], *sizes]

    def infer_shape(self, x_shape: list) -> list:
        return self.pooled_shape(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)

    def window_view(self, x: np.ndarray, fill: float) -> np.ndarray:
        """(N, C, *out, *kernel) windows of x padded with `fill`."""
        out_sp, pads = self.geometry(x.shape)
        return windows(padded(x, pads, fill), out_sp, self._kernel, self._stride,
                       self._dilation)

    def scatter(self, cols: np.ndarray, x_shape: Sequence[int], dtype: Any) -> np.ndarray:
        """The gradient of x (x_shape): window gradients cols added back, padding cut off."""
        _, pads = self.geometry(x_shape)
        sizes = x_shape[2:]
        dxp = np.zeros(tuple(x_shape[:2]) + tuple(s + pads[2 * k] + pads[2 * k + 1]
                                                  for k, s in enumerate(sizes)), dtype)
        add_windows(dxp, cols, self._stride, self._dilation)
        inside = tuple(slice(pads[2 * k], pads[2 * k] + s) for k, s in enumerate(sizes))
        return dxp[(slice(None), slice(None)) + inside]

    def kernel_axes(self) -> tuple:
        return tuple(range(2 + self.nd, 2 + 2 * self.nd))

    def same_attrs(self) -> dict:
        """The constructor arguments (a sibling op of the same geometry)."""
        return dict(self.init_attrs)

    writes_output = True
    kernel = run_lowered


class _MaxPool(_Pool):
    """The max of each window: x (N, C, *spatial) -> (N, C, *out)."""

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)

        def max_pool(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            return np.max(self.window_view(x, -np.inf), axis=self.kernel_axes(), out=out)
        return max_pool


class _MaxPoolGrad(_Pool):
    """`(<the max pool's attrs>)(x, dout)`: each window's dout goes to its (first) maximum.
    Internal (made by the max pools' backward rule); not exported."""

    def infer_shape(self, x_shape: list, dout_shape: list) -> list:
        want = self.pooled_shape(x_shape)
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be "
                             f"{self.name[:-4]}'s output shape {tuple(want)}, but got "
                             f"{tuple(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, dout_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "dout": dout_dtype}, float_types)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        size = int(np.prod(self._kernel))

        def max_pool_grad(x: np.ndarray, dout: np.ndarray,
                          out: np.ndarray | None = None) -> np.ndarray:
            win = self.window_view(x, -np.inf)
            flat = win.reshape(win.shape[:2 + self.nd] + (size,))
            hot = np.arange(size) == flat.argmax(axis=-1)[..., None]   # the first maximum
            cols = (hot * dout.astype(ct, copy=False)[..., None]).reshape(win.shape)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, self.scatter(cols, shape, ct), casting="unsafe")
            return out
        return max_pool_grad


class _AvgPool(_Pool):
    """The mean of each window: x (N, C, *spatial) -> (N, C, *out)."""

    def counts(self, x_shape: Sequence[int]) -> np.ndarray:
        """(*out): each window's divisor: divisor_override, else how many elements of x (and
        of the explicit padding, with count_include_pad) it covers."""
        out_sp, pads = self.geometry(x_shape)
        if self._divisor:
            return np.full(out_sp, float(self._divisor))
        mask = np.ones((1, 1) + tuple(x_shape[2:]), np.float64)
        if self._count_pad and any(self._pads):          # explicit padding counts
            mask = padded(mask, self._pads, 1.0)
        extra = tuple(p - (e if self._count_pad else 0) for p, e in zip(pads, self._pads))
        mask = padded(mask, extra, 0.0)
        cols = windows(mask, out_sp, self._kernel, self._stride, self._dilation)
        return cols.sum(axis=self.kernel_axes())[0, 0]

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        inv = (1.0 / self.counts(in_abstracts[0].shape)).astype(ct)

        def avg_pool(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            total = self.window_view(x.astype(ct, copy=False), 0.0).sum(axis=self.kernel_axes())
            np.multiply(total, inv, out=out, casting="unsafe")
            return out
        return avg_pool


class _AvgPoolGrad(_AvgPool):
    """`(<the avg pool's attrs>)(dout, x_shape)`: each window's dout / its divisor, added
    to every element of the window. Internal (made by the avg pools' backward rule)."""

    const_inputs = (1,)

    def infer_shape(self, dout_shape: list, x_shape: Any) -> list:
        want = self.pooled_shape(list(x_shape))
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be "
                             f"{self.name[:-4]}'s output shape {tuple(want)}, but got "
                             f"{tuple(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, dout_dtype: mstype.Type, x_shape: Any) -> mstype.Type:
        return validator.check_tensor_dtype_valid("dout", dout_dtype, float_types, self.name)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        ct = compute_dtype(dtype)
        inv = (1.0 / self.counts(shape)).astype(ct)
        kernel, nd = self._kernel, self.nd

        def avg_pool_grad(dout: np.ndarray, x_shape: Any,
                          out: np.ndarray | None = None) -> np.ndarray:
            share = dout.astype(ct, copy=False) * inv
            cols = np.broadcast_to(share[(Ellipsis,) + (None,) * nd], share.shape + kernel)
            if out is None:
                out = np.empty(shape, dtype)
            np.copyto(out, self.scatter(cols, shape, ct), casting="unsafe")
            return out
        return avg_pool_grad


# -- the 2-D ops (MindSpore's MaxPool / AvgPool attributes) ---------------------------------
class MaxPool(_MaxPool):
    """The max of each window: x (N, C, H, W) -> (N, C, OH, OW). kernel_size, strides (an
    int, (h, w) or (1, 1, h, w)), pad_mode 'VALID' or 'SAME' (any case), data_format 'NCHW'.

    >>> MaxPool(kernel_size=2, strides=2)(Tensor(np.arange(16, dtype=np.float32)
    ...                                          .reshape(1, 1, 4, 4))).asnumpy()
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, kernel_size: int | tuple = 1, strides: int | tuple = 1,
                 pad_mode: str = "valid", data_format: str = "NCHW") -> None:
        self.configure(kernel_size, strides, pad_mode, data_format)


class MaxPoolGrad(_MaxPoolGrad):
    """`MaxPoolGrad(<MaxPool's attrs>)(x, dout)`. Internal; not exported."""

    __init__ = MaxPool.__init__


class AvgPool(_AvgPool):
    """The mean of each window (over its elements inside x): x (N, C, H, W) -> (N, C, OH, OW).

    >>> AvgPool(kernel_size=2, strides=2)(Tensor(np.arange(16, dtype=np.float32)
    ...                                          .reshape(1, 1, 4, 4))).asnumpy()
    array([[[[ 2.5,  4.5],
             [10.5, 12.5]]]], dtype=float32)
    """

    __init__ = MaxPool.__init__


class AvgPoolGrad(_AvgPoolGrad):
    """`AvgPoolGrad(<AvgPool's attrs>)(dout, x_shape)`. Internal; not exported."""

    __init__ = MaxPool.__init__


# -- the 3-D ops ------------------------------------------------------------------------------
class MaxPool3D(_MaxPool):
    """The max of each window of x (N, C, D, H, W), as `mindspore.ops.MaxPool3D`:
    kernel_size and strides an int, (d, h, w) or (1, 1, d, h, w); pad_mode 'VALID', 'SAME'
    or 'PAD' (any case; `pad_list` an int or (head, tail, top, bottom, left, right), each
    at most half its kernel); `ceil_mode` rounds the output size up (a last, partial
    window).

    >>> MaxPool3D(2, 2)(Tensor(np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2))).shape
    (1, 1, 1, 1, 1)
    """

    nd = 3

    @prim_attr_register
    def __init__(self, kernel_size: int | tuple = 1, strides: int | tuple = 1,
                 pad_mode: str = "VALID", pad_list: int | tuple = 0, ceil_mode: Any = None,
                 data_format: str = "NCDHW") -> None:
        self.configure(kernel_size, strides, pad_mode, data_format, ("VALID", "SAME", "PAD"),
                       pad_list, "pad_list", ceil_mode)


class MaxPool3DGrad(_MaxPoolGrad):
    """`MaxPool3DGrad(<MaxPool3D's attrs>)(x, dout)`. Internal; not exported."""

    nd = 3
    __init__ = MaxPool3D.__init__


class AvgPool3D(_AvgPool):
    """The mean of each window of x (N, C, D, H, W), as `mindspore.ops.AvgPool3D`:
    kernel_size, strides, pad_mode ('VALID', 'SAME' or 'PAD', any case) and `pad` as
    MaxPool3D's; `ceil_mode`; `count_include_pad` counts the explicit padding in a window's
    divisor (SAME's padding and ceil_mode's extension never count); `divisor_override`
    (> 0) divides every window by it instead.

    >>> AvgPool3D(2, 2)(Tensor(np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2))).asnumpy()
    array([[[[[3.5]]]]], dtype=float32)
    """

    nd = 3

    @prim_attr_register
    def __init__(self, kernel_size: int | tuple = 1, strides: int | tuple = 1,
                 pad_mode: str = "valid", pad: int | tuple = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int = 0,
                 data_format: str = "NCDHW") -> None:
        name = self.name
        self.configure(kernel_size, strides, pad_mode, data_format, ("VALID", "SAME", "PAD"),
                       pad, "pad", ceil_mode)
        self._count_pad = validator.check_bool("count_include_pad", count_include_pad, name)
        validator.check_non_negative_int(divisor_override, "divisor_override", name)
        self._divisor = divisor_override


class AvgPool3DGrad(_AvgPoolGrad):
    """`AvgPool3DGrad(<AvgPool3D's attrs>)(dout, x_shape)`. Internal; not exported."""

    nd = 3
    __init__ = AvgPool3D.__init__


# -- max pools returning the argmax (any dilation) --------------------------------------------
class _MaxPoolWithArgmax(_Pool):
    """The max of each window and where it is: x (N, C, *spatial) -> (values, argmax), both
    (N, C, *out); argmax is the flat index of the (first) maximum in its (n, c) plane of x
    (row-major over the spatial dims), the positions MaxUnpool takes back. `pads`: an int
    or one per spatial dim, on both sides (at most half the kernel); `dilation` spaces a
    window's elements; `ceil_mode` adds a last, partial window."""

    def configure_argmax(self, kernel_size: Any, strides: Any, pads: Any, dilation: Any,
                         ceil_mode: bool, data_format: str, argmax_type: Any) -> None:
        name, nd = self.name, self.nd
        if isinstance(pads, (tuple, list)) and len(pads) == nd:
            pads = tuple(p for v in pads for p in (v, v))
        self.configure(kernel_size, kernel_size if strides is None else strides, "PAD",
                       data_format, ("PAD",), pads, "pads", ceil_mode)
        self._dilation = ntuple(name, "dilation", dilation, nd)
        if argmax_type not in (mstype.int32, mstype.int64):
            raise TypeError(f"For '{name}', the 'argmax_type' should be mindspore.int32 or "
                            f"mindspore.int64, but got {argmax_type}.")
        self._argmax_type = argmax_type

    def infer_shape(self, x_shape: list) -> tuple:
        out = self.pooled_shape(x_shape)
        return out, list(out)

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        return (validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name),
                self._argmax_type)

    writes_output = False

    def kernel(self, x: np.ndarray) -> tuple:
        nd = self.nd
        win = self.window_view(x, -np.inf)
        out_sp, pads = self.geometry(x.shape)
        flat = win.reshape(win.shape[:2 + nd] + (-1,))
        which = flat.argmax(axis=-1)                          # the first maximum
        values = np.take_along_axis(flat, which[..., None], -1)[..., 0]
        offsets = np.unravel_index(which, self._kernel)
        index = np.zeros(which.shape, np.int64)
        for k in range(nd):                                   # row-major over x's dims
            grid = np.arange(out_sp[k]).reshape((-1,) + (1,) * (nd - 1 - k))
            pos = grid * self._stride[k] - pads[2 * k] + offsets[k] * self._dilation[k]
            index = index * x.shape[2 + k] + pos
        return (np.ascontiguousarray(values),
                index.astype(self._argmax_type.np_dtype))


class MaxPoolWithArgmaxV2(_MaxPoolWithArgmax):
    """`MaxPoolWithArgmaxV2(kernel_size, strides=None, pads=0, dilation=(1, 1),
    ceil_mode=False, argmax_type=mindspore.int64)(x)`: x (N, C, H, W) -> (values, argmax),
    as MindSpore's; argmax indexes each (n, c) plane of H * W (strides None: the kernel)."""

    @prim_attr_register
    def __init__(self, kernel_size: int | tuple, strides: Any = None, pads: int | tuple = 0,
                 dilation: int | tuple = (1, 1), ceil_mode: bool = False,
                 argmax_type: Any = mstype.int64) -> None:
        self.configure_argmax(kernel_size, strides, pads, dilation, ceil_mode, "NCHW",
                              argmax_type)


class MaxPool3DWithArgmax(_MaxPoolWithArgmax):
    """`MaxPool3DWithArgmax(ksize, strides, pads, dilation=(1, 1, 1), ceil_mode=False,
    data_format='NCDHW', argmax_type=mindspore.int64)(x)`: x (N, C, D, H, W) -> (values,
    argmax), as MindSpore's; argmax indexes each (n, c) plane of D * H * W."""

    nd = 3

    @prim_attr_register
    def __init__(self, ksize: int | tuple, strides: int | tuple, pads: int | tuple,
                 dilation: int | tuple = (1, 1, 1), ceil_mode: bool = False,
                 data_format: str = "NCDHW", argmax_type: Any = mstype.int64) -> None:
        self.configure_argmax(ksize, strides, pads, dilation, ceil_mode, data_format,
                              argmax_type)


@sharding_rule(_MaxPoolWithArgmax)
def pool_argmax_spec(prim: _MaxPoolWithArgmax, ins: list, outs: list, consts: dict) -> DimSpec:
    """"nc" + spatial -> the values and the argmax, "nc" + output spatial each: the batch
    and channels split freely; the spatial dims stay whole (argmax is a position in the
    whole plane)."""
    letters = tuple(LETTERS[prim.nd])
    out = ("n", "c") + tuple("o" + c for c in letters)
    why = "argmax is a position in the whole (n, c) plane; split the batch or channels"
    return DimSpec((("n", "c") + letters,), (out, out),
                   unsplittable=tuple((c, why) for c in letters))


@bprop(_MaxPoolWithArgmax)
def max_pool_argmax_bprop(prim: _MaxPoolWithArgmax, inputs: list, out: Any, dout: list,
                          g: Any) -> tuple:
    """The values' gradient added at the argmax positions of each flattened plane (a
    window sharing another's maximum adds to it too); the argmax has none."""
    x = inputs[0]
    n, c = x.shape[:2]
    flat = g.apply(Reshape(), [dout[0], g.add_const((n, c, -1))])
    index = g.apply(Reshape(), [g.getitem(out, 1), g.add_const((n, c, -1))])
    dx = g.apply(GatherDGrad(), [flat, g.add_const(2), index,
                                 g.add_const((n, c, int(np.prod(x.shape[2:]))))])
    return (g.apply(Reshape(), [dx, g.add_const(tuple(x.shape))]),)


#: each forward pool's backward op, and back
GRADS = {MaxPool: MaxPoolGrad, AvgPool: AvgPoolGrad, MaxPool3D: MaxPool3DGrad,
         AvgPool3D: AvgPool3DGrad}
FORWARDS = {grad: fwd for fwd, grad in GRADS.items()}


# -- sharding -------------------------------------------------------------------------------
def tiles(prim: _Pool, x_shape: Sequence[int], k: int) -> bool:
    """Whether the windows tile spatial dim k exactly: stride == kernel, no padding (nor
    ceil_mode's extension), the size a multiple of the kernel. Then a split dim pools
    locally."""
    kernel = prim._kernel[k]
    _, pads = prim.geometry(x_shape)
    return prim._stride[k] == kernel and prim._dilation[k] == 1 and \
        not any(pads[2 * k:2 * k + 2]) and x_shape[2 + k] % kernel == 0


@sharding_rule(_MaxPool, _AvgPool)
def pool_spec(prim: _Pool, ins: list, outs: list, consts: dict) -> DimSpec:
    """"nc" + spatial -> "nc" + output spatial: batch and channels split freely; a spatial
    dim splits when the windows tile it (stride == kernel, no padding: no window straddles
    two slices)."""
    letters = LETTERS[prim.nd]
    dims = "H or W" if prim.nd == 2 else "D, H or W"
    why = SPATIAL_SPLIT + f"; {dims} may split only when the windows tile it (stride == " \
        "kernel, no padding)"
    out, unsplittable = ["n", "c"], []
    for k, letter in enumerate(letters):
        if tiles(prim, ins[0], k):
            out.append(letter)
        else:
            out.append("o" + letter)
            unsplittable.append((letter, why))
    return DimSpec((("n", "c") + tuple(letters),), (tuple(out),),
                   unsplittable=tuple(unsplittable))


declare_without("sharding", _MaxPoolGrad, _AvgPoolGrad,
                reason="it is made only by autodiff, which runs on the rank-local graph")


# -- backward rules (see math_ops: the builder `g`) ------------------------------------------
@bprop(_MaxPool)
def max_pool_bprop(prim: _MaxPool, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout routed to each window's first maximum (the pool's grad op)."""
    return (g.apply(GRADS[type(prim)](**prim.same_attrs()), [inputs[0], dout]),)


declare_without("bprop", _MaxPoolGrad,
                reason="second-order gradients through a max pool are not implemented")


@bprop(_AvgPool)
def avg_pool_bprop(prim: _AvgPool, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout spread evenly over each window (the pool's grad op), its transpose."""
    x = inputs[0]
    grad = GRADS[type(prim)](**prim.same_attrs())
    return (g.apply(grad, [dout, g.add_const(tuple(x.shape))]),)


@bprop(_AvgPoolGrad)
def avg_pool_grad_bprop(prim: _AvgPoolGrad, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Linear in dout, whose transpose is the pool itself."""
    return g.apply(FORWARDS[type(prim)](**prim.same_attrs()), [dout]), None


# vmap: windows never cross N, so the batch is folded into it
batch_rule(MaxPool, AvgPool, MaxPool3D, AvgPool3D)(fold_batch(0))
batch_rule(MaxPoolGrad, MaxPool3DGrad)(fold_batch(0, 1))
batch_rule(AvgPoolGrad, AvgPool3DGrad)(per_element)     # its x_shape names N: not folded
