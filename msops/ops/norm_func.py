"""Vector and matrix norms, as `mindspore.ops` has them: norm, vector_norm, matrix_norm.
Built from Abs, Square, Pow, Sqrt, NotEqual and the reductions, so they trace, shard (a
split reduced dim is a partial sum / max) and differentiate. The matrix norms 'nuc', 2 and
-2 are the sum, largest and smallest of the singular values (`Svd`)."""
from __future__ import annotations

import math
from typing import Any

from msops.common import dtype as mstype
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.elementwise_ops import NotEqual, Pow, Sqrt
from msops.primitives.linalg_ops import Svd
from msops.primitives.math_ops import Cast, ReduceMax, ReduceSum, Square
from msops.primitives.reduce_ops import ReduceMin
from msops.primitives.unary_ops import Abs

__all__ = ["norm", "vector_norm", "matrix_norm"]

_INF = math.inf


def _input(name: str, A: Any, dtype: mstype.Type | None) -> Any:
    """A as a float Tensor (cast to `dtype` first when given)."""
    check_tensor(name, "A", A)
    if dtype is not None:
        if dtype not in mstype.float_type:
            raise TypeError(f"For '{name}', the 'dtype' should be a float dtype, but got "
                            f"{dtype!r}.")
        if A.dtype != dtype:
            A = _prim(Cast)(A, dtype)
    if A.dtype not in mstype.float_type:
        raise TypeError(f"For '{name}', the 'A' should be a float Tensor (or give a float "
                        f"'dtype'), but got {A.dtype}.")
    return A


def _dims(name: str, dim: Any, ndim: int) -> tuple:
    dims = (dim,) if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if not isinstance(dims, (tuple, list)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"For '{name}', the 'dim' should be an int or a tuple of ints, but "
                        f"got {dim!r}.")
    for d in dims:
        if not -ndim <= d < max(ndim, 1):
            raise ValueError(f"For '{name}', the 'dim' should be in [{-ndim}, {ndim}), but got "
                             f"{d}.")
    out = tuple(d % max(ndim, 1) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"For '{name}', the 'dim' should not repeat a dim, but got {dim!r}.")
    return out


def _finish(A: Any, out: Any, dims: tuple, keepdim: bool) -> Any:
    """`out` (reduced over `dims` with kept 1s) in the shape keepdim asks for."""
    if keepdim:
        return out
    shape = tuple(n for i, n in enumerate(A.shape) if i not in dims)
    return _prim(Reshape)(out, shape)


def _vector(name: str, A: Any, ord: Any, dims: tuple, keepdim: bool) -> Any:
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"For '{name}', the 'ord' of a vector norm should be an int, a float, "
                        f"inf or -inf, but got {ord!r}.")
    if ord == 2:
        out = _prim(Sqrt)(_prim(ReduceSum, True)(_prim(Square)(A), dims))
    elif ord == 0:
        out = _prim(ReduceSum, True)(_prim(Cast)(_prim(NotEqual)(A, 0.0), A.dtype), dims)
    elif ord == _INF:
        out = _prim(ReduceMax, True)(_prim(Abs)(A), dims)
    elif ord == -_INF:
        out = _prim(ReduceMin, True)(_prim(Abs)(A), dims)
    elif ord == 1:
        out = _prim(ReduceSum, True)(_prim(Abs)(A), dims)
    else:
        powered = _prim(Pow)(_prim(Abs)(A), float(ord))
        out = _prim(Pow)(_prim(ReduceSum, True)(powered, dims), 1.0 / ord)
    return _finish(A, out, dims, keepdim)


def _matrix(name: str, A: Any, ord: Any, dims: tuple, keepdim: bool) -> Any:
    if len(dims) != 2:
        raise ValueError(f"For '{name}', the 'dim' of a matrix norm should hold 2 dims, but "
                         f"got {len(dims)}.")
    rows, cols = dims
    if ord in ("nuc", 2, -2):
        rest = tuple(i for i in range(len(A.shape)) if i not in dims)
        values = _prim(Svd, False, False)(_prim(Transpose)(A, rest + (rows, cols)))[0]
        reduce = ReduceSum if ord == "nuc" else ReduceMax if ord == 2 else ReduceMin
        kept = tuple(1 if i in dims else n for i, n in enumerate(A.shape))
        out = _prim(Reshape)(_prim(reduce)(values, -1), kept)
        return _finish(A, out, tuple(sorted(dims)), keepdim)
    if ord is None or ord == "fro":
        out = _prim(Sqrt)(_prim(ReduceSum, True)(_prim(Square)(A), dims))
    elif ord in (1, -1, _INF, -_INF):
        # 1 / -1: the largest / smallest column sum of |A|; inf / -inf: of the row sums
        summed, over = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = _prim(ReduceSum, True)(_prim(Abs)(A), (summed,))
        out = _prim(ReduceMax if ord > 0 else ReduceMin, True)(sums, (over,))
    else:
        raise ValueError(f"For '{name}', the 'ord' of a matrix norm should be one of 'fro', "
                         f"'nuc', inf, -inf, 1, -1, 2, -2, but got {ord!r}.")
    return _finish(A, out, tuple(sorted(dims)), keepdim)


def norm(A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: mstype.Type | None = None) -> Any:
    """The vector norm of A over an int `dim` (or a 1-tuple), the matrix norm over a 2-tuple.
    With dim None: the 2-norm of the flattened A when ord is None, else A must be 1-D (a
    vector norm) or 2-D (a matrix norm). ord None is the 2-norm / Frobenius norm."""
    A = _input("norm", A, dtype)
    ndim = len(A.shape)
    if dim is None:
        if ord is None:
            return _vector("norm", A, 2, tuple(range(ndim)), keepdim)
        if ndim not in (1, 2):
            raise ValueError(f"For 'norm', the 'A' should be 1-D or 2-D when 'dim' is None and "
                             f"'ord' is given, but got rank {ndim}.")
        dim = tuple(range(ndim))
    dims = _dims("norm", dim, ndim)
    if len(dims) == 1:
        return _vector("norm", A, 2 if ord is None else ord, dims, keepdim)
    if len(dims) == 2:
        return _matrix("norm", A, ord, dims, keepdim)
    raise ValueError(f"For 'norm', the 'dim' should be an int or a tuple of 1 or 2 ints, but "
                     f"got {dim!r}.")


def vector_norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False, *,
                dtype: mstype.Type | None = None) -> Any:
    """The `ord` vector norm of x over `axis` (an int or a tuple; every dim when None)."""
    x = _input("vector_norm", x, dtype)
    ndim = len(x.shape)
    dims = tuple(range(ndim)) if axis is None else _dims("vector_norm", axis, ndim)
    return _vector("vector_norm", x, ord, dims, keepdims)


def matrix_norm(A: Any, ord: Any = "fro", axis: Any = (-2, -1), keepdims: bool = False, *,
                dtype: mstype.Type | None = None) -> Any:
    """The `ord` matrix norm of the matrices A holds in dims `axis` (a 2-tuple)."""
    A = _input("matrix_norm", A, dtype)
    if len(A.shape) < 2:
        raise ValueError(f"For 'matrix_norm', the 'A' should have rank >= 2, but got rank "
                         f"{len(A.shape)}.")
    return _matrix("matrix_norm", A, ord, _dims("matrix_norm", axis, len(A.shape)), keepdims)
