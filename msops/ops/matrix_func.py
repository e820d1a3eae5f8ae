"""Functional forms made of several primitives, with `mindspore.ops`' names: `isclose`,
`outer`, `diag`, `trace`. Each is ordinary primitive calls and constants, so it traces,
differentiates and shards as they do."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import GreaterEqual, Select
from msops.primitives.math_ops import Equal, Mul, ReduceSum, Sub, promoted
from msops.primitives.piecewise_ops import IsFinite, IsNan, LogicalAnd, LogicalOr
from msops.primitives.unary_ops import Abs

__all__ = ["isclose", "outer", "diag", "trace"]


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| element-wise (bool), broadcast; equal
    infinities are close, NaN only to NaN when `equal_nan`."""
    api = "isclose"
    check_tensor(api, "input", input)
    check_tensor(api, "other", other)
    for arg, v in (("rtol", rtol), ("atol", atol)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError(f"For '{api}', the '{arg}' should be a number >= 0, but got {v!r}.")
    x, y = promoted((input, other))
    close = _prim(GreaterEqual)(atol + rtol * _prim(Abs)(y), _prim(Abs)(_prim(Sub)(x, y)))
    if x.dtype.kind == "float":                  # an infinity is close only to itself
        finite = _prim(LogicalAnd)(_prim(IsFinite)(x), _prim(IsFinite)(y))
        close = _prim(LogicalAnd)(close, finite)
    close = _prim(LogicalOr)(close, _prim(Equal)(x, y))
    if equal_nan and x.dtype.kind in ("float", "complex"):
        both = _prim(LogicalAnd)(_prim(IsNan)(x), _prim(IsNan)(y))
        close = _prim(LogicalOr)(close, both)
    return close


def outer(input: Any, vec2: Any) -> Tensor:
    """input (n,) and vec2 (m,) -> their outer product (n, m)."""
    api = "outer"
    for arg, v in (("input", input), ("vec2", vec2)):
        check_tensor(api, arg, v)
        if len(v.shape) != 1:
            raise ValueError(f"For '{api}', the '{arg}' should be 1-D, but got shape "
                             f"{list(v.shape)}.")
    x, y = promoted((input, vec2))
    return _prim(Mul)(_prim(Reshape)(x, (-1, 1)), _prim(Reshape)(y, (1, -1)))


def _diagonal_mask(api: str, input: Any, rank: int, shape: tuple) -> tuple:
    """(the bool identity of `shape`, a 0-d zero of input's dtype), input checked to have
    `rank` dims."""
    check_tensor(api, "input", input)
    if len(input.shape) != rank:
        raise ValueError(f"For '{api}', the 'input' should be {rank}-D, but got shape "
                         f"{list(input.shape)}.")
    return Tensor(np.eye(*shape, dtype=bool)), Tensor(np.zeros((), input.dtype.np_dtype))


def diag(input: Any) -> Tensor:
    """A 1-D input (n,) as the (n, n) matrix with it on the diagonal (msops builds
    diagonal matrices only)."""
    n = input.shape[0] if getattr(input, "shape", ()) else 0
    eye, zero = _diagonal_mask("diag", input, 1, (n, n))
    return _prim(Select)(eye, _prim(Reshape)(input, (1, n)), zero)


def trace(input: Any) -> Tensor:
    """The sum of a 2-D input's diagonal (a 0-d Tensor of its dtype)."""
    shape = tuple(getattr(input, "shape", ())) + (0, 0)
    eye, zero = _diagonal_mask("trace", input, 2, shape[:2])
    return _prim(ReduceSum)(_prim(Select)(eye, input, zero), ())
