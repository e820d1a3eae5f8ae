"""Ops whose output shape depends on input values: `nonzero`, `argwhere`, `masked_select`,
`unique`, `unique_consecutive`, as `mindspore.ops`.

A compiled graph fixes every shape when it is traced, so these read the values that decide
the shape at once: in PYNATIVE mode always; in a traced construct only when those values
are known then (a constant mask), else a ValueError saying so. What flows on is ordinary
primitives: `masked_select` is a GatherNd at the selected positions, so its gradient
reaches the selected elements, eagerly and traced; the index outputs have no gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.gather_ops import GatherNd
from msops.primitives.shape_ops import BroadcastTo

__all__ = ["nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"]


def _values(api: str, arg: str, t: Tensor) -> np.ndarray:
    """The values of `t`, which decide the output's shape: a traced Tensor has none yet."""
    try:
        return t.asnumpy()
    except Exception:
        raise ValueError(f"For '{api}', the '{arg}' decides the output's shape, so its values "
                         f"should be known when the graph is built (run it in PYNATIVE_MODE, "
                         f"or outside the compiled construct), but got a traced Tensor."
                         ) from None


def _flag(api: str, arg: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"For '{api}', the '{arg}' should be a bool, but got "
                        f"{type(value).__name__}.")
    return value


def nonzero(input: Any, *, as_tuple: bool = False) -> Tensor | tuple:
    """The indices (z, ndim) int64 of the non-zero elements of `input`, in row-major order;
    with `as_tuple`, one 1-D index Tensor per dim."""
    api = "nonzero"
    check_tensor(api, "input", input)
    _flag(api, "as_tuple", as_tuple)
    where = np.argwhere(_values(api, "input", input)).astype(np.int64)
    if as_tuple:
        return tuple(Tensor(np.ascontiguousarray(where[:, d])) for d in range(where.shape[1]))
    return Tensor(where)


def argwhere(input: Any) -> Tensor:
    """The (z, ndim) int64 indices of the non-zero elements of `input` (`nonzero`'s)."""
    check_tensor("argwhere", "input", input)
    return Tensor(np.argwhere(_values("argwhere", "input", input)).astype(np.int64))


def masked_select(input: Any, mask: Any) -> Tensor:
    """The elements of `input` where the bool `mask` is True (both broadcast), 1-D in
    row-major order; differentiable with respect to `input`."""
    api = "masked_select"
    check_tensor(api, "input", input)
    check_tensor(api, "mask", mask)
    if mask.dtype != mstype.bool_:
        raise TypeError(f"For '{api}', the 'mask' should be a bool Tensor, but got "
                        f"{mask.dtype}.")
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise ValueError(f"For '{api}', the shapes of 'input' {list(input.shape)} and 'mask' "
                         f"{list(mask.shape)} should broadcast.") from None
    where = np.argwhere(np.broadcast_to(_values(api, "mask", mask), shape))
    x = input if tuple(input.shape) == shape else _prim(BroadcastTo)(input, shape)
    if len(shape) == 0:                    # a scalar: kept or not
        where = np.zeros((len(where), 1), np.int64)
        x = x.reshape((1,))
    return _prim(GatherNd)(x, Tensor(where.astype(np.int64)))


def unique(input: Any) -> tuple:
    """(output, idx): the distinct values of `input` (flattened), sorted ascending, and for
    each element of `input` the position of its value in output (input's shape, int32)."""
    api = "unique"
    check_tensor(api, "input", input)
    x = _values(api, "input", input)
    values, inverse = np.unique(x.reshape(-1), return_inverse=True)
    return Tensor(values), Tensor(inverse.reshape(x.shape).astype(np.int32))


def unique_consecutive(input: Any, return_idx: bool = False, return_counts: bool = False,
                       axis: int | None = None) -> Tensor | tuple:
    """`input` with each run of equal consecutive elements (or slices along `axis`; None:
    flattened) kept once; with `return_idx` each input element's (slice's) position in
    the output, with `return_counts` each run's length (int64)."""
    api = "unique_consecutive"
    check_tensor(api, "input", input)
    _flag(api, "return_idx", return_idx)
    _flag(api, "return_counts", return_counts)
    x = _values(api, "input", input)
    if axis is None:
        rows = x.reshape(-1, 1)
        moved = None
    else:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"For '{api}', the 'axis' should be an int or None, but got "
                            f"{type(axis).__name__}.")
        if not -x.ndim <= axis < max(x.ndim, 1):
            raise ValueError(f"For '{api}', the 'axis' should be in [{-x.ndim}, "
                             f"{x.ndim - 1}], but got {axis}.")
        moved = np.moveaxis(x, axis, 0)
        rows = moved.reshape(moved.shape[0], -1)
    n = rows.shape[0]
    starts = np.ones(n, bool)
    starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    first = np.flatnonzero(starts)
    if axis is None:
        out = x.reshape(-1)[first]
        idx_shape = x.shape
    else:
        out = np.moveaxis(moved[first], 0, axis)
        idx_shape = (n,)
    results = [Tensor(np.ascontiguousarray(out))]
    if return_idx:
        results.append(Tensor((np.cumsum(starts) - 1).astype(np.int64).reshape(idx_shape)))
    if return_counts:
        results.append(Tensor(np.diff(np.append(first, n)).astype(np.int64)))
    return results[0] if len(results) == 1 else tuple(results)
