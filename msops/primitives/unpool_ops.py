"""MaxUnpool2D and MaxUnpool3D: the max pools' partial inverse, as MindSpore's.

`MaxUnpool(ksize, strides, pads, output_shape)(x, argmax)` writes each x value at the flat
position argmax names in its (n, c) plane of a zero output (the argmax a
MaxPoolWithArgmaxV2 / MaxPool3DWithArgmax returns) and leaves every other position 0. When
two values name the same position the later one (in x's row-major order) is written, so
the x gradient reaches that one only (`MaxUnpoolGrad`, internal); argmax has none.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.conv_ops import LETTERS, check_layout, ntuple
from msops.primitives.math_ops import check_rank
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec

__all__ = ["MaxUnpool2D", "MaxUnpool3D"]

float_types = mstype.float_type
index_types = (mstype.int32, mstype.int64)


class _MaxUnpool(PrimitiveWithInfer):
    """The attributes and geometry of an unpool of `nd` spatial dims."""

    nd = 2

    def configure(self, ksize: Any, strides: Any, pads: Any, output_shape: Any,
                  data_format: str) -> None:
        name, nd = self.name, self.nd
        self._kernel = ntuple(name, "ksize", ksize, nd)
        self._stride = self._kernel if strides in (0, None) else \
            ntuple(name, "strides", strides, nd)
        if isinstance(pads, int) and not isinstance(pads, bool):
            pads = (pads,) * nd
        if not isinstance(pads, (tuple, list)) or len(pads) not in (nd, nd + 2) or \
                any(not isinstance(p, int) or isinstance(p, bool) or p < 0 for p in pads):
            raise ValueError(f"For '{name}', the 'pads' should be a non-negative int or a "
                             f"tuple of {nd} of them, but got {pads!r}.")
        self._pads = tuple(pads[-nd:])
        validator.check_value_type("output_shape", output_shape, (tuple, list), name)
        if len(output_shape) not in (0, nd, nd + 2):
            raise ValueError(f"For '{name}', the 'output_shape' should be empty or hold {nd} "
                             f"or {nd + 2} sizes, but got {tuple(output_shape)}.")
        self._output_shape = tuple(output_shape)
        check_layout(name, data_format, "NCHW" if nd == 2 else "NCDHW")

    def out_shape(self, x_shape: Sequence[int]) -> list:
        """(N, C, *spatial): `output_shape` when given, else (in - 1) * stride - 2 * pad +
        kernel per dim."""
        nd = self.nd
        default = [(x_shape[2 + k] - 1) * self._stride[k] - 2 * self._pads[k] + self._kernel[k]
                   for k in range(nd)]
        sizes = list(self._output_shape[-nd:]) if self._output_shape else default
        if min(sizes) < 1:
            raise ValueError(f"For '{self.name}', the output sizes should be >= 1, but got "
                             f"{sizes} for x shape {tuple(x_shape)}.")
        if len(self._output_shape) == nd + 2 and \
                tuple(self._output_shape[:2]) != tuple(x_shape[:2]):
            raise ValueError(f"For '{self.name}', the 'output_shape' should keep x's batch and "
                             f"channels {tuple(x_shape[:2])}, but got {self._output_shape}.")
        return [x_shape[0], x_shape[1], *sizes]

    def check_inputs(self, x_shape: Sequence[int], argmax_shape: Sequence[int]) -> list:
        rank = self.nd + 2
        check_rank(self.name, "x", x_shape, rank, rank)
        if list(argmax_shape) != list(x_shape):
            raise ValueError(f"For '{self.name}', the 'argmax' should have x's shape "
                             f"{tuple(x_shape)}, but got {tuple(argmax_shape)}.")
        return self.out_shape(x_shape)

    def winners(self, argmax: np.ndarray, plane: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions in x's flat order that are written, their flat output positions):
        per (n, c) plane, the last x value naming each position."""
        index = argmax.reshape(argmax.shape[0] * argmax.shape[1], -1).astype(np.int64)
        if index.size and (index.min() < 0 or index.max() >= plane):
            raise ValueError(f"For '{self.name}', every 'argmax' value should be in [0, "
                             f"{plane}) (a position in an output plane), but got values in "
                             f"[{index.min()}, {index.max()}].")
        key = (np.arange(index.shape[0])[:, None] * plane + index).ravel()
        last = key.size - 1 - np.unique(key[::-1], return_index=True)[1]
        return last, key[last]


class _MaxUnpoolForward(_MaxUnpool):
    def infer_shape(self, x_shape: list, argmax_shape: list) -> list:
        return self.check_inputs(x_shape, argmax_shape)

    def infer_dtype(self, x_dtype: mstype.Type, argmax_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("argmax", argmax_dtype, index_types, self.name)
        return validator.check_tensor_dtype_valid("x", x_dtype, float_types, self.name)

    def kernel(self, x: np.ndarray, argmax: np.ndarray) -> np.ndarray:
        shape = self.out_shape(x.shape)
        out = np.zeros(shape, x.dtype)
        src, dst = self.winners(argmax, int(np.prod(shape[2:])))
        out.reshape(-1)[dst] = x.reshape(-1)[src]
        return out


class MaxUnpool2D(_MaxUnpoolForward):
    """`MaxUnpool2D(ksize, strides=0, pads=0, output_shape=(), data_format='NCHW')(x,
    argmax)`: x (N, C, H, W) to (N, C, H', W'), H' = (H - 1) * strides - 2 * pads + ksize
    (strides 0: ksize) or output_shape's, as MindSpore's."""

    @prim_attr_register
    def __init__(self, ksize: int | tuple, strides: int | tuple = 0, pads: int | tuple = 0,
                 output_shape: tuple = (), data_format: str = "NCHW") -> None:
        self.configure(ksize, strides, pads, output_shape, data_format)


class MaxUnpool3D(_MaxUnpoolForward):
    """`MaxUnpool3D(ksize, strides=0, pads=0, output_shape=(), data_format='NCDHW')(x,
    argmax)`: x (N, C, D, H, W) to (N, C, D', H', W'), as MaxUnpool2D per dim."""

    nd = 3

    @prim_attr_register
    def __init__(self, ksize: int | tuple, strides: int | tuple = 0, pads: int | tuple = 0,
                 output_shape: tuple = (), data_format: str = "NCDHW") -> None:
        self.configure(ksize, strides, pads, output_shape, data_format)


class MaxUnpoolGrad(_MaxUnpool):
    """`MaxUnpoolGrad(<the unpool's attrs>, nd)(x, argmax, dout)`: the x gradient, dout at
    the position each written x value went to (0 for a value another overwrote).
    Internal (made by the backward rule); not exported."""

    @prim_attr_register
    def __init__(self, ksize: Any, strides: Any = 0, pads: Any = 0, output_shape: tuple = (),
                 data_format: str = "NCHW", nd: int = 2) -> None:
        self.nd = nd
        self.configure(ksize, strides, pads, output_shape, data_format)

    def infer_shape(self, x_shape: list, argmax_shape: list, dout_shape: list) -> list:
        want = self.check_inputs(x_shape, argmax_shape)
        if list(dout_shape) != want:
            raise ValueError(f"For '{self.name}', the 'dout shape' should be the unpool's "
                             f"output shape {tuple(want)}, but got {tuple(dout_shape)}.")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, argmax_dtype: mstype.Type,
                    dout_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("dout", dout_dtype, float_types, self.name)

    def kernel(self, x: np.ndarray, argmax: np.ndarray, dout: np.ndarray) -> np.ndarray:
        dx = np.zeros(x.shape, dout.dtype)
        src, dst = self.winners(argmax, int(np.prod(dout.shape[2:])))
        dx.reshape(-1)[src] = dout.reshape(-1)[dst]
        return dx


@sharding_rule(_MaxUnpoolForward)
def max_unpool_spec(prim: _MaxUnpool, ins: list, outs: list, consts: dict) -> DimSpec:
    """x and argmax "nc" + spatial -> "nc" + output spatial: the batch and channels split
    freely (argmax indexes within its own plane); the spatial dims stay whole."""
    letters = tuple(LETTERS[prim.nd])
    why = "argmax names a position in the whole output plane; split the batch or channels"
    out = ("n", "c") + tuple("o" + c for c in letters)
    return DimSpec((("n", "c") + letters, ("n", "c") + letters), (out,),
                   unsplittable=tuple((c, why) for c in letters + out[2:]))


declare_without("sharding", MaxUnpoolGrad,
                reason="it is made only by autodiff, which runs on the rank-local graph")


@bprop(_MaxUnpoolForward)
def max_unpool_bprop(prim: _MaxUnpoolForward, inputs: list, out: Any, dout: Any,
                     g: Any) -> tuple:
    """dout read back at each written value's position; argmax has no gradient."""
    x, argmax = inputs
    grad = MaxUnpoolGrad(**prim.init_attrs, nd=prim.nd)
    return g.apply(grad, [x, argmax, dout]), None


declare_without("bprop", MaxUnpoolGrad,
                reason="second-order gradients through a max unpool are not implemented")
