"""PReLU: the leaky ReLU whose negative slope is learned per channel."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.primitives.array_ops import Reshape
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (Add, Cast, Equal, Mul, NoAttrPrimitive, Sub,
                                       check_rank, check_same_dtype, scalar, sum_to)
from msops.primitives.nn_ops import ReLU
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["PReLU"]


def _channels(x_shape: Sequence[int]) -> int:
    """The channel count of x: dim 1 (1 for a 1-D x)."""
    return x_shape[1] if len(x_shape) >= 2 else 1


def _weight_shape(x_shape: Sequence[int], w_shape: Sequence[int]) -> tuple:
    """The weight as it broadcasts against x: (C, 1, ...) aligned to dim 1, or () for one slope."""
    if w_shape[0] == 1 or len(x_shape) < 2:
        return ()
    return (w_shape[0],) + (1,) * (len(x_shape) - 2)


class PReLU(NoAttrPrimitive):
    """max(x, 0) + weight * min(x, 0), the weight's slope per channel (dim 1 of x).

    Inputs: x (N, C, ...) (or 1-D), weight 1-D of size C or 1, of x's float dtype.

    >>> PReLU()(Tensor(np.array([[-2.0, 3.0]], np.float32)),
    ...         Tensor(np.array([0.5, 0.1], np.float32))).asnumpy()
    array([[-1.,  3.]], dtype=float32)
    """

    def infer_shape(self, x_shape: list, w_shape: list) -> list:
        check_rank(self.name, "x", x_shape, 1)
        check_rank(self.name, "weight", w_shape, 1, 1)
        c = _channels(x_shape)
        if w_shape[0] not in (1, c):
            raise ValueError(f"For '{self.name}', the 'weight shape' should be (1,) or (C,) = "
                             f"({c},) for x shape {tuple(x_shape)}, but got {tuple(w_shape)}.")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, w_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "weight": w_dtype}, mstype.float_type)

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)
        w_shape = _weight_shape(shape, in_abstracts[1].shape)

        def prelu(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            slope = w.reshape(w_shape) if w_shape else w[0]
            np.multiply(x, slope, out=out)
            np.copyto(out, x, where=x > 0)
            return out
        return prelu


@sharding_rule(PReLU)
def prelu_spec(prim: PReLU, ins: list, outs: list, consts: dict) -> DimSpec:
    """x's dims carry over; the weight shares x's channel letter (a single slope: whole)."""
    x = dims(len(ins[0]))
    w = (None,) if not _weight_shape(ins[0], ins[1]) else (x[1],)
    return DimSpec((x, w), (x,))


@bprop(PReLU)
def prelu_bprop(prim: PReLU, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dx = dout where x > 0, dout * weight elsewhere; dweight = sum of dout * min(x, 0)
    over every dim but the channel's. The masks come from ReLU: [x <= 0] = [relu(x) == 0]."""
    x, w = inputs
    t = x.dtype
    relu = g.apply(ReLU(), [x])
    negative = g.apply(Cast(), [g.apply(Equal(), [relu, scalar(g, 0, t)]), g.add_const(t)])
    w_shape = _weight_shape(x.shape, w.shape)
    slope = g.apply(Reshape(), [w, g.add_const(w_shape)])
    # 1 where x > 0, the slope elsewhere
    gain = g.apply(Add(), [g.apply(Sub(), [scalar(g, 1, t), negative]),
                           g.apply(Mul(), [negative, slope])])
    dx = g.apply(Mul(), [dout, gain])
    below = g.apply(Sub(), [x, relu])                         # min(x, 0)
    dw = sum_to(g, g.apply(Mul(), [dout, below]), w_shape)
    return dx, g.apply(Reshape(), [dw, g.add_const(tuple(w.shape))])
