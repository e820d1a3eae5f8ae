"""nn.BiDense, as `mindspore.nn.BiDense`: the bilinear layer y = x1^T A x2 + b."""
from __future__ import annotations

import math
from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.initializer import Uniform
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["BiDense"]


class BiDense(Cell):
    """`BiDense(in1_channels, in2_channels, out_channels, weight_init=None, bias_init=None,
    has_bias=True, dtype=float32)`: x1 (*, in1), x2 (*, in2) -> (*, out) with
    y[k] = sum_ij x1[i] weight[k, i, j] x2[j] + bias[k]. weight (out, in1, in2) and bias
    (out,) start uniform in +-1 / sqrt(in1) when their init is None (as MindSpore's). The
    product is one MatMul of x1 with the weight laid out (in1, out * in2), then x2's
    dot products along in2."""

    def __init__(self, in1_channels: int, in2_channels: int, out_channels: int,
                 weight_init: Any = None, bias_init: Any = None, has_bias: bool = True,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.in1_channels = validator.check_positive_int(in1_channels, "in1_channels", name)
        self.in2_channels = validator.check_positive_int(in2_channels, "in2_channels", name)
        self.out_channels = validator.check_positive_int(out_channels, "out_channels", name)
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        bound = 1 / math.sqrt(in1_channels)
        shape = (out_channels, in1_channels, in2_channels)
        self.weight = Parameter(initializer(Uniform(bound) if weight_init is None
                                            else weight_init, shape, dtype, "weight_init",
                                            name), name="weight")
        if has_bias:
            self.bias = Parameter(initializer(Uniform(bound) if bias_init is None
                                              else bias_init, (out_channels,), dtype,
                                              "bias_init", name), name="bias")
            self.bias_add = ops.Add()
        self.transpose, self.reshape = ops.Transpose(), ops.Reshape()
        self.matmul, self.mul, self.sum = ops.MatMul(), ops.Mul(), ops.ReduceSum()

    def construct(self, x1: Any, x2: Any) -> Any:
        name = self.cls_name
        s1, s2 = tuple(x1.shape), tuple(x2.shape)
        if not s1 or s1[-1] != self.in1_channels or not s2 or \
                s2[-1] != self.in2_channels or s1[:-1] != s2[:-1]:
            raise ValueError(f"For '{name}', the 'x1' and 'x2' should be (*, "
                             f"{self.in1_channels}) and (*, {self.in2_channels}) with the same "
                             f"leading dims, but got {list(s1)} and {list(s2)}.")
        rows = math.prod(s1[:-1])
        out, in2 = self.out_channels, self.in2_channels
        w = self.reshape(self.transpose(self.weight, (1, 0, 2)), (self.in1_channels, out * in2))
        t = self.reshape(self.matmul(self.reshape(x1, (rows, self.in1_channels)), w),
                         (rows, out, in2))
        y = self.sum(self.mul(t, self.reshape(x2, (rows, 1, in2))), 2)
        if self.has_bias:
            y = self.bias_add(y, self.bias)
        return self.reshape(y, s1[:-1] + (out,))

    def extend_repr(self) -> str:
        return (f"in1_channels={self.in1_channels}, in2_channels={self.in2_channels}, "
                f"out_channels={self.out_channels}, has_bias={self.has_bias}")
