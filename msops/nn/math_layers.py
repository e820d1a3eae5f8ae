"""Math cells, as `mindspore.nn`: LGamma, DiGamma, IGamma and LBeta (the special functions),
MatDet, MatInverse and MatMul (matrices), Moments (mean and variance), Range (a constant
sequence) and ReduceLogSumExp. Each is a thin Cell over ops (its primitives trace, shard and
differentiate as the ops do)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.nn.cell import Cell
from msops.ops import array_func, linalg_func, shape_func, special_func, stats_func
from msops.ops._dispatch import _prim
from msops.primitives.math_ops import Cast, promoted
from msops.primitives.special_ops import LogBeta

__all__ = ["LGamma", "DiGamma", "IGamma", "LBeta", "MatDet", "MatInverse", "MatMul", "Moments",
           "Range", "ReduceLogSumExp"]


class LGamma(Cell):
    """`LGamma()(x)`: log |Gamma(x)| element-wise (`ops.lgamma`)."""

    def construct(self, x: Any) -> Any:
        return special_func.lgamma(x)


class DiGamma(Cell):
    """`DiGamma()(x)`: the digamma function element-wise (`ops.digamma`)."""

    def construct(self, x: Any) -> Any:
        return special_func.digamma(x)


class IGamma(Cell):
    """`IGamma()(a, x)`: the regularized lower incomplete gamma P(a, x) (`ops.igamma`)."""

    def construct(self, a: Any, x: Any) -> Any:
        return special_func.igamma(a, x)


class LBeta(Cell):
    """`LBeta()(x, y)`: log |Beta(x, y)| = lgamma(x) + lgamma(y) - lgamma(x + y), broadcast,
    computed without the cancellation of those terms for large arguments (Stirling's series,
    as MindSpore's); float32 or float64."""

    def construct(self, x: Any, y: Any) -> Any:
        for arg, v in (("x", x), ("y", y)):
            check_tensor(self.cls_name, arg, v)
        return _prim(LogBeta)(*promoted((x, y), floating=True))


class MatDet(Cell):
    """`MatDet()(a)`: the determinant of each matrix of a (..., M, M) (`ops.det`)."""

    def construct(self, a: Any) -> Any:
        return linalg_func.det(a)


class MatInverse(Cell):
    """`MatInverse()(a)`: the inverse of each matrix of a (..., M, M) (`ops.inverse`)."""

    def construct(self, a: Any) -> Any:
        return linalg_func.inverse(a)


class MatMul(Cell):
    """`MatMul(transpose_x1=False, transpose_x2=False)(x1, x2)`: the matrix product with
    numpy's rules (1-D operands, broadcast batch dims), after swapping the last two dims of
    an operand whose flag is set (a 1-D operand is never transposed)."""

    def __init__(self, transpose_x1: bool = False, transpose_x2: bool = False) -> None:
        super().__init__()
        self.transpose_x1 = validator.check_bool("transpose_x1", transpose_x1, self.cls_name)
        self.transpose_x2 = validator.check_bool("transpose_x2", transpose_x2, self.cls_name)

    def construct(self, x1: Any, x2: Any) -> Any:
        if self.transpose_x1 and len(x1.shape) > 1:
            x1 = shape_func.swapaxes(x1, -1, -2)
        if self.transpose_x2 and len(x2.shape) > 1:
            x2 = shape_func.swapaxes(x2, -1, -2)
        return array_func.matmul(*promoted((x1, x2)))


class Moments(Cell):
    """`Moments(axis=None, keep_dims=None)(x)` -> (mean, variance) over axis (None: every
    dim), the variance the population one (divisor N); float16 is computed in float32 and
    the results cast back, as MindSpore's."""

    def __init__(self, axis: Any = None, keep_dims: bool | None = None) -> None:
        super().__init__()
        if axis is not None:
            validator.check_value_type("axis", axis, (int, tuple, list), self.cls_name)
        self.axis = tuple(axis) if isinstance(axis, list) else axis
        self.keep_dims = False if keep_dims is None else \
            validator.check_bool("keep_dims", keep_dims, self.cls_name)

    def construct(self, x: Any) -> tuple:
        check_tensor(self.cls_name, "x", x)
        half = x.dtype == mstype.float16
        if half:
            x = _prim(Cast)(x, mstype.float32)
        variance, mean = stats_func.var_mean(x, self.axis, 0, self.keep_dims)
        if half:
            mean, variance = _prim(Cast)(mean, mstype.float16), _prim(Cast)(variance,
                                                                            mstype.float16)
        return mean, variance


class Range(Cell):
    """`Range(start, limit=None, delta=1)()`: start, start + delta, ... up to limit
    (excluded); `Range(n)` counts from 0 to n. int32 when all three are ints, else
    float32."""

    def __init__(self, start: Any, limit: Any = None, delta: Any = 1) -> None:
        super().__init__()
        name = self.cls_name
        for arg, v in (("start", start), ("limit", limit), ("delta", delta)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise TypeError(f"For '{name}', the '{arg}' should be an int or a float, but "
                                f"got {type(v).__name__}.")
        if limit is None:
            start, limit = 0, start
        if delta == 0:
            raise ValueError(f"For '{name}', the 'delta' should not be 0, but got 0.")
        if limit == start:
            raise ValueError(f"For '{name}', the 'limit' should not equal the 'start', but got "
                             f"{limit}.")
        if (limit - start) * delta < 0:
            raise ValueError(f"For '{name}', the 'delta' should step from 'start' {start} "
                             f"towards 'limit' {limit}, but got {delta}.")
        ints = all(isinstance(v, int) for v in (start, limit, delta))
        values = np.arange(start, limit, delta, dtype=np.int64 if ints else np.float64)
        self.range_x = Tensor(values.astype(np.int32 if ints else np.float32))

    def construct(self) -> Any:
        return self.range_x


class ReduceLogSumExp(Cell):
    """`ReduceLogSumExp(axis, keep_dims=False)(x)`: log(sum(exp(x))) over axis, without
    overflow (`ops.logsumexp`)."""

    def __init__(self, axis: Any, keep_dims: bool = False) -> None:
        super().__init__()
        validator.check_value_type("axis", axis, (int, tuple, list), self.cls_name)
        self.axis = tuple(axis) if isinstance(axis, list) else axis
        self.keep_dims = validator.check_bool("keep_dims", keep_dims, self.cls_name)

    def construct(self, x: Any) -> Any:
        return stats_func.logsumexp(x, self.axis, self.keep_dims)
