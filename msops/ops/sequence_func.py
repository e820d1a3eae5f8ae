"""Functions along one axis with `mindspore.ops`' names, arguments and defaults: the running
cummax, cummin and logcumsumexp, the n-th difference diff, the trapezoid integral trapz,
rot90, combinations, the Vandermonde matrix vander and logspace.

cummax / cummin / logcumsumexp call their scan primitives (scan_ops: the scanned axis stays
whole in a parallel graph); the others are composites of slices, flips, transposes,
gathers and arithmetic, so they trace, shard and differentiate as those do.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import concat, reshape, transpose
from msops.ops.creation_func import check_dtype
from msops.ops.slice_func import flip, narrow
from msops.primitives.elementwise_ops import NotEqual, Pow
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Add, Mul, ReduceSum, Sub, promoted
from msops.primitives.scan_ops import Cummax, Cummin, CumulativeLogsumexp

__all__ = ["cummax", "cummin", "logcumsumexp", "diff", "trapz", "rot90", "combinations",
           "vander", "logspace"]


def _axis(name: str, input: Any, axis: Any, arg: str = "axis") -> int:
    check_tensor(name, "input", input)
    return validator.check_axis_in_range(axis, max(len(input.shape), 1), arg, name)


def cummax(input: Any, axis: int) -> tuple:
    """`Cummax(axis)(input)`: (the running maximum along axis, its int64 indices)."""
    return _prim(Cummax, _axis("cummax", input, axis))(input)


def cummin(input: Any, axis: int) -> tuple:
    """`Cummin(axis)(input)`: (the running minimum along axis, its int64 indices)."""
    return _prim(Cummin, _axis("cummin", input, axis))(input)


def logcumsumexp(input: Any, axis: int) -> Any:
    """`CumulativeLogsumexp()(input, axis)`: log(cumsum(exp(input))) along axis, without
    overflow or underflow (ints as float32)."""
    x = promoted((check_tensor("logcumsumexp", "input", input),), floating=True)[0]
    return _prim(CumulativeLogsumexp)(x, _axis("logcumsumexp", x, axis))


def diff(x: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The n-th forward difference along axis, out[i] = x[i + 1] - x[i] repeated n times,
    after prepend / append are joined on (bools: x[i + 1] != x[i])."""
    check_tensor("diff", "x", x)
    validator.check_value_type("n", n, (int,), "diff")
    if n < 0:
        raise ValueError(f"For 'diff', the 'n' should be >= 0, but got {n}.")
    if not x.shape:
        raise ValueError("For 'diff', the 'x' should have at least 1 dim, but got a 0-d "
                         "Tensor.")
    axis = _axis("diff", x, axis)
    parts = [v for v in (prepend, x, append) if v is not None]
    for arg, v in (("prepend", prepend), ("append", append)):
        if v is not None:
            check_tensor("diff", arg, v)
    out = concat(promoted(parts) if len(parts) > 1 else parts, axis)
    for _ in range(n):
        length = out.shape[axis] - 1
        if length <= 0:
            return narrow(out, axis, 0, 0)
        later, earlier = narrow(out, axis, 1, length), narrow(out, axis, 0, length)
        out = _prim(NotEqual)(later, earlier) if out.dtype == mstype.bool_ else \
            _prim(Sub)(later, earlier)
    return out


def trapz(y: Any, x: Any = None, *, dx: float = 1.0, dim: int = -1) -> Any:
    """The trapezoid rule along dim: sum((y[i] + y[i + 1]) / 2 * (x[i + 1] - x[i])), with
    samples at x (a Tensor along dim, or 1-D of dim's length) or spaced dx apart."""
    check_tensor("trapz", "y", y)
    y = promoted((y,), floating=True)[0]
    dim = _axis("trapz", y, dim, "dim")
    length = y.shape[dim] - 1
    if length <= 0:
        return _prim(ReduceSum)(narrow(y, dim, 0, 0), dim)
    mid = _prim(Mul)(_prim(Add)(narrow(y, dim, 1, length), narrow(y, dim, 0, length)), 0.5)
    if x is None:
        validator.check_value_type("dx", dx, (int, float), "trapz")
        return _prim(Mul)(_prim(ReduceSum)(mid, dim), float(dx))
    check_tensor("trapz", "x", x)
    x = promoted((x,), floating=True)[0]
    if len(x.shape) == 1 and len(y.shape) > 1:
        if x.shape[0] != y.shape[dim]:
            raise ValueError(f"For 'trapz', a 1-D 'x' should have the length of y's dim {dim} "
                             f"({y.shape[dim]}), but got {x.shape[0]}.")
        x_dim = 0
    else:
        x_dim = dim
    steps = diff(x, 1, x_dim)
    if len(x.shape) == 1 and len(y.shape) > 1:
        steps = reshape(steps, tuple(-1 if i == dim else 1 for i in range(len(y.shape))))
    return _prim(ReduceSum)(_prim(Mul)(*promoted((mid, steps))), dim)


def rot90(input: Any, k: int, dims: Any) -> Any:
    """input rotated by 90 degrees k times in the plane of dims (from the first towards the
    second): a flip and a swap of the two dims per odd turn."""
    check_tensor("rot90", "input", input)
    validator.check_value_type("k", k, (int,), "rot90")
    validator.check_value_type("dims", dims, (list, tuple), "rot90")
    ndim = len(input.shape)
    if len(dims) != 2:
        raise ValueError(f"For 'rot90', the 'dims' should hold 2 dims, but got {list(dims)}.")
    d0, d1 = (validator.check_axis_in_range(d, ndim, "dims", "rot90") for d in dims)
    if d0 == d1:
        raise ValueError(f"For 'rot90', the 'dims' should be two different dims, but got "
                         f"{list(dims)}.")
    k %= 4
    if k == 0:
        return input
    if k == 2:
        return flip(input, (d0, d1))
    order = list(range(ndim))
    order[d0], order[d1] = order[d1], order[d0]
    if k == 1:
        return transpose(flip(input, (d1,)), tuple(order))
    return flip(transpose(input, tuple(order)), (d1,))


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Any:
    """The length-r combinations of a 1-D input's elements, one a row ((C(n, r), r);
    with_replacement: elements may repeat), in itertools' order: a Gather of fixed indices,
    so it differentiates."""
    check_tensor("combinations", "input", input)
    validator.check_value_type("r", r, (int,), "combinations")
    if len(input.shape) != 1:
        raise ValueError(f"For 'combinations', the 'input' should be 1-D, but got shape "
                         f"{list(input.shape)}.")
    if r < 0:
        raise ValueError(f"For 'combinations', the 'r' should be >= 0, but got {r}.")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.shape[0]), r)) if r else []
    index = np.asarray(rows, np.int32).reshape(len(rows), r if rows else 0)
    return _prim(Gather)(input, Tensor(index), 0)


def vander(x: Any, N: int | None = None) -> Any:
    """The Vandermonde matrix of a 1-D x: column j is x ** (N - 1 - j) (N: len(x) when
    None)."""
    check_tensor("vander", "x", x)
    if len(x.shape) != 1:
        raise ValueError(f"For 'vander', the 'x' should be 1-D, but got shape "
                         f"{list(x.shape)}.")
    n = x.shape[0] if N is None else N
    validator.check_value_type("N", n, (int,), "vander")
    if n < 0:
        raise ValueError(f"For 'vander', the 'N' should be >= 0, but got {n}.")
    powers = Tensor(np.arange(n - 1, -1, -1).astype(x.dtype.np_dtype))
    return _prim(Pow)(reshape(x, (x.shape[0], 1)), powers)


def logspace(start: float, end: float, steps: int, base: int = 10, *,
             dtype: mstype.Type = mstype.float32) -> Tensor:
    """`steps` values base ** t for t evenly spaced from start to end (both included)."""
    for arg, v in (("start", start), ("end", end)):
        validator.check_value_type(arg, v, (int, float), "logspace")
    validator.check_value_type("steps", steps, (int,), "logspace")
    validator.check_value_type("base", base, (int, float), "logspace")
    if steps < 0:
        raise ValueError(f"For 'logspace', the 'steps' should be >= 0, but got {steps}.")
    exponents = np.linspace(float(start), float(end), steps, dtype=np.float64)
    with np.errstate(over="ignore"):
        values = np.power(float(base), exponents)
    dtype = check_dtype("logspace", dtype)
    if dtype in mstype.int_type + mstype.uint_type:
        values = np.trunc(values)
    return Tensor(values.astype(dtype.np_dtype))

