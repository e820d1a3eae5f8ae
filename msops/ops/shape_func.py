"""numpy-style shape helpers with `mindspore.ops`' names and arguments: swapaxes/swapdims,
moveaxis/movedim, hstack, vstack/row_stack, dstack, column_stack, tensor_split, hsplit,
vsplit, dsplit, atleast_1d/2d/3d, ravel, t, diagonal, and the index constants tril_indices
and triu_indices.

Each is a composition of Transpose, Reshape, Concat and StridedSlice with static shapes, so
it traces, shards and differentiates as those do (the index constants are constants).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.slice_func import _axis, _int, slice_along
from msops.primitives.array_ops import Concat, Reshape, Transpose

__all__ = ["swapaxes", "swapdims", "moveaxis", "movedim", "hstack", "vstack", "row_stack",
           "dstack", "column_stack", "tensor_split", "hsplit", "vsplit", "dsplit",
           "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "t", "diagonal", "tril_indices",
           "triu_indices"]


def _permuted(x: Any, perm: Sequence[int]) -> Any:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else _prim(Transpose)(x, perm)


def swapaxes(input: Any, axis0: int, axis1: int) -> Any:
    """input with dims `axis0` and `axis1` exchanged."""
    check_tensor("swapaxes", "input", input)
    ndim = len(input.shape)
    a, b = _axis("swapaxes", "axis0", axis0, ndim), _axis("swapaxes", "axis1", axis1, ndim)
    perm = list(range(ndim))
    perm[a], perm[b] = b, a
    return _permuted(input, perm)


def swapdims(input: Any, dim0: int, dim1: int) -> Any:
    """`swapaxes(input, dim0, dim1)`."""
    return swapaxes(input, dim0, dim1)


def _axes(name: str, arg: str, value: Any, ndim: int) -> list:
    values = [value] if isinstance(value, (int, np.integer)) else list(value) \
        if isinstance(value, (tuple, list)) else [value]
    axes = [_axis(name, arg, v, ndim) for v in values]
    if len(set(axes)) != len(axes):
        raise ValueError(f"For '{name}', the '{arg}' should not repeat a dim, but got {value}.")
    return axes


def moveaxis(x: Any, source: Any, destination: Any) -> Any:
    """x with dims `source` (an int or a sequence) moved to `destination`, the others kept
    in order (numpy's moveaxis)."""
    check_tensor("moveaxis", "x", x)
    ndim = len(x.shape)
    src = _axes("moveaxis", "source", source, ndim)
    dst = _axes("moveaxis", "destination", destination, ndim)
    if len(src) != len(dst):
        raise ValueError(f"For 'moveaxis', the 'source' and 'destination' should name as many "
                         f"dims, but got {len(src)} and {len(dst)}.")
    rest = iter(d for d in range(ndim) if d not in src)
    placed = dict(zip(dst, src))
    return _permuted(x, [placed[i] if i in placed else next(rest) for i in range(ndim)])


def movedim(x: Any, source: Any, destination: Any) -> Any:
    """`moveaxis(x, source, destination)`."""
    return moveaxis(x, source, destination)


def _reshaped(x: Any, shape: tuple) -> Any:
    return x if tuple(x.shape) == shape else _prim(Reshape)(x, shape)


def _at_least(name: str, ndim: int, inputs: Any) -> Any:
    """Each Tensor of `inputs` viewed with at least `ndim` dims (numpy's placement: 1-D
    (n,) -> (1, n) -> (1, n, 1); 2-D (m, n) -> (m, n, 1)); a Tensor in, a Tensor out."""
    def widen(x: Any) -> Any:
        check_tensor(name, "inputs", x)
        shape = tuple(x.shape)
        if len(shape) >= ndim:
            return x
        if ndim == 3:
            return _reshaped(x, ((1, 1, 1), (1,) + shape + (1,), shape + (1,))[len(shape)])
        return _reshaped(x, (1,) * (ndim - len(shape)) + shape)
    if isinstance(inputs, (tuple, list)):
        return tuple(widen(x) for x in inputs)
    return widen(inputs)


def atleast_1d(inputs: Any) -> Any:
    """A Tensor (or each of a list / tuple of Tensors) with at least 1 dim."""
    return _at_least("atleast_1d", 1, inputs)


def atleast_2d(inputs: Any) -> Any:
    """A Tensor (or each of a list / tuple) with at least 2 dims: (n,) becomes (1, n)."""
    return _at_least("atleast_2d", 2, inputs)


def atleast_3d(inputs: Any) -> Any:
    """A Tensor (or each of a list / tuple) with at least 3 dims: (n,) becomes (1, n, 1),
    (m, n) becomes (m, n, 1)."""
    return _at_least("atleast_3d", 3, inputs)


def _tensors(name: str, tensors: Any) -> list:
    if not isinstance(tensors, (tuple, list)) or not tensors:
        raise TypeError(f"For '{name}', the 'tensors' should be a non-empty tuple or list of "
                        f"Tensors, but got {type(tensors).__name__}.")
    for x in tensors:
        check_tensor(name, "tensors", x)
    return list(tensors)


def _joined(tensors: list, axis: int) -> Any:
    return tensors[0] if len(tensors) == 1 else _prim(Concat, axis)(tuple(tensors))


def hstack(tensors: Any) -> Any:
    """The Tensors joined column-wise: along dim 1, or dim 0 for 1-D ones."""
    parts = atleast_1d(_tensors("hstack", tensors))
    return _joined(list(parts), 0 if len(parts[0].shape) == 1 else 1)


def vstack(inputs: Any) -> Any:
    """The Tensors joined row-wise (along dim 0), 1-D ones as rows."""
    return _joined(list(atleast_2d(_tensors("vstack", inputs))), 0)


def row_stack(tensors: Any) -> Any:
    """`vstack(tensors)`."""
    return _joined(list(atleast_2d(_tensors("row_stack", tensors))), 0)


def dstack(inputs: Any) -> Any:
    """The Tensors joined depth-wise (along dim 2), after `atleast_3d`."""
    return _joined(list(atleast_3d(_tensors("dstack", inputs))), 2)


def column_stack(tensors: Any) -> Any:
    """The Tensors as columns: 0-d and 1-D ones become (n, 1), then joined along dim 1."""
    parts = [x if len(x.shape) >= 2 else _reshaped(x, (int(np.prod(x.shape)), 1))
             for x in _tensors("column_stack", tensors)]
    return _joined(parts, 1)


def tensor_split(input: Any, indices_or_sections: Any, axis: int = 0) -> tuple:
    """Parts of `input` along `axis`: an int n gives n parts, the first size % n of them one
    longer (numpy's array_split); a list / tuple of indices cuts before each."""
    check_tensor("tensor_split", "input", input)
    axis = _axis("tensor_split", "axis", axis, len(input.shape))
    size = input.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)) and \
            not isinstance(indices_or_sections, bool):
        n = int(indices_or_sections)
        if n <= 0:
            raise ValueError(f"For 'tensor_split', the 'indices_or_sections' should be a "
                             f"positive int or a sequence of ints, but got {n}.")
        sizes = [size // n + (i < size % n) for i in range(n)]
        cuts = [sum(sizes[:i + 1]) for i in range(n - 1)]
    elif isinstance(indices_or_sections, (tuple, list)):
        cuts = [_int("tensor_split", "indices_or_sections", i) for i in indices_or_sections]
    else:
        raise TypeError(f"For 'tensor_split', the 'indices_or_sections' should be an int or a "
                        f"tuple / list of ints, but got {type(indices_or_sections).__name__}.")
    bounds = [0] + [min(max(c if c >= 0 else c + size, 0), size) for c in cuts] + [size]
    return tuple(slice_along(input, axis, b, max(b, e)) for b, e in zip(bounds, bounds[1:]))


def _split_along(name: str, input: Any, indices_or_sections: Any, axis: int,
                 min_ndim: int) -> tuple:
    check_tensor(name, "input", input)
    if len(input.shape) < min_ndim:
        raise ValueError(f"For '{name}', the 'input' should have at least {min_ndim} dims, but "
                         f"got shape {list(input.shape)}.")
    return tensor_split(input, indices_or_sections, axis)


def hsplit(input: Any, indices_or_sections: Any) -> tuple:
    """`tensor_split` along dim 1 of an input of >= 2 dims (MindSpore's: no 1-D case)."""
    return _split_along("hsplit", input, indices_or_sections, 1, 2)


def vsplit(input: Any, indices_or_sections: Any) -> tuple:
    """`tensor_split` along dim 0 of an input of >= 2 dims."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Any, indices_or_sections: Any) -> tuple:
    """`tensor_split` along dim 2 of an input of >= 3 dims."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def ravel(input: Any) -> Any:
    """input as one dim."""
    check_tensor("ravel", "input", input)
    return _reshaped(input, (int(np.prod(input.shape)),))


def t(input: Any) -> Any:
    """The transpose of a 2-D input; a 0-D or 1-D one unchanged."""
    check_tensor("t", "input", input)
    if len(input.shape) > 2:
        raise ValueError(f"For 't', the 'input' should have at most 2 dims, but got shape "
                         f"{list(input.shape)}.")
    return _permuted(input, (1, 0)) if len(input.shape) == 2 else input


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """The diagonal of the (dim1, dim2) planes (above the main one by `offset`, below when
    negative), as the last dim; the other dims kept in order. The two dims are moved last,
    merged, and every (cols + 1)-th element taken from the diagonal's start."""
    check_tensor("diagonal", "input", input)
    ndim = len(input.shape)
    if ndim < 2:
        raise ValueError(f"For 'diagonal', the 'input' should have at least 2 dims, but got "
                         f"shape {list(input.shape)}.")
    offset = _int("diagonal", "offset", offset)
    a, b = _axis("diagonal", "dim1", dim1, ndim), _axis("diagonal", "dim2", dim2, ndim)
    if a == b:
        raise ValueError(f"For 'diagonal', the 'dim1' and 'dim2' should be different dims, but "
                         f"got {dim1} and {dim2}.")
    rows, cols = input.shape[a], input.shape[b]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    rest = [d for d in range(ndim) if d not in (a, b)]
    batch = tuple(input.shape[d] for d in rest)
    plane = _reshaped(_permuted(input, rest + [a, b]), batch + (rows * cols,))
    start = offset if offset >= 0 else -offset * cols
    if length == 0:
        return slice_along(plane, len(batch), 0, 0)
    return slice_along(plane, len(batch), start, start + (length - 1) * (cols + 1) + 1,
                       cols + 1)


def _indices(name: str, fn: Any, row: int, col: int, offset: int, dtype: mstype.Type) -> Tensor:
    row, col, offset = (_int(name, n, v) for n, v in (("row", row), ("col", col),
                                                      ("offset", offset)))
    if row < 0 or col < 0:
        raise ValueError(f"For '{name}', the 'row' and 'col' should be >= 0, but got {row} and "
                         f"{col}.")
    if dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For '{name}', the 'dtype' should be int32 or int64, but got "
                        f"{dtype!r}.")
    return Tensor(np.stack(fn(row, offset, col)).astype(dtype.np_dtype).reshape(2, -1))


def tril_indices(row: int, col: int, offset: int = 0, *,
                 dtype: mstype.Type = mstype.int64) -> Tensor:
    """The (2, N) row and column indices of the lower triangle of a row x col matrix (the
    diagonal `offset` and below), row by row."""
    return _indices("tril_indices", np.tril_indices, row, col, offset, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *,
                 dtype: mstype.Type = mstype.int64) -> Tensor:
    """The (2, N) row and column indices of the upper triangle of a row x col matrix (the
    diagonal `offset` and above), row by row."""
    return _indices("triu_indices", np.triu_indices, row, col, offset, dtype)
