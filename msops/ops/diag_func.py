"""Diagonals of matrices, as `mindspore.ops` has them: matrix_band_part, matrix_diag,
matrix_diag_part, matrix_set_diag (MindSpore's V3 ops: a band of diagonals k = (low, high),
num_rows / num_cols, padding_value and the LEFT/RIGHT alignment of short diagonals),
diagflat, and the scatters that write a part of a tensor: slice_scatter, select_scatter,
diagonal_scatter.

matrix_band_part is Tril then Triu. Every other one is one `Gather` along a flattened axis
from the concatenation of its sources, at a constant index computed here with numpy (which
element of which source lands where): no new primitive, and the gradient and the sharding
of the other dims are Gather's and Concat's.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.mask_func import tril, triu
from msops.ops.slice_func import _axis, _int
from msops.ops.view_func import _known_ints
from msops.primitives.array_ops import Concat, Reshape, Transpose
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Cast
from msops.primitives.shape_ops import BroadcastTo, ExpandDims

__all__ = ["matrix_band_part", "matrix_diag", "matrix_diag_part", "matrix_set_diag",
           "diagflat", "slice_scatter", "select_scatter", "diagonal_scatter"]

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _known_int(name: str, arg: str, value: Any) -> int:
    """An int from an int or a one-element int Tensor whose value is known now."""
    values = _known_ints(name, arg, value)
    if len(values) != 1:
        raise ValueError(f"For '{name}', the '{arg}' should be one int, but got {list(values)}.")
    return values[0]


def _band(name: str, k: Any) -> tuple:
    """(low, high) from k: an int, a pair of ints, or an int Tensor of 1 or 2 known values."""
    values = list(_known_ints(name, "k", k))
    if len(values) not in (1, 2):
        raise ValueError(f"For '{name}', the 'k' should hold 1 or 2 ints, but got {values}.")
    low, high = (values * 2)[:2]
    if low > high:
        raise ValueError(f"For '{name}', the 'k[0]' should be <= 'k[1]', but got k = "
                         f"({low}, {high}).")
    return low, high


def _align(name: str, align: Any) -> tuple:
    """(superdiagonals left-aligned, subdiagonals left-aligned) from MindSpore's `align`."""
    if align not in _ALIGNS:
        raise ValueError(f"For '{name}', the 'align' should be one of {list(_ALIGNS)}, but got "
                         f"{align!r}.")
    sup, sub = align.split("_")
    return sup == "LEFT", sub == "LEFT"


def _diag_len(rows: int, cols: int, d: int) -> int:
    return max(0, min(rows + min(0, d), cols - max(0, d)))


def _band_index(rows: int, cols: int, low: int, high: int, length: int,
                left: tuple) -> np.ndarray:
    """For each element (i, j) of a rows x cols matrix: the position r * length + p of its
    value in the (high - low + 1, length) diagonals (row r = high - d for diagonal d = j - i,
    column p shifted by the padding of a right-aligned short diagonal), or -1 off the band."""
    i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    d = j - i
    lens = np.maximum(0, np.minimum(rows + np.minimum(0, d), cols - np.maximum(0, d)))
    lefts = np.where(d >= 0, left[0], left[1])
    p = np.minimum(i, j) + np.where(lefts, 0, length - lens)
    return np.where((low <= d) & (d <= high), (high - d) * length + p, -1).astype(np.int64)


def _pad_column(name: str, x: Any, batch: tuple, padding_value: Any) -> Any:
    """padding_value (a number or a 0-d Tensor) as a (*batch, 1) Tensor of x's dtype."""
    if isinstance(padding_value, Tensor):
        if padding_value.size != 1:
            raise ValueError(f"For '{name}', the 'padding_value' should be a number or a "
                             f"one-element Tensor, but got shape {list(padding_value.shape)}.")
        value = padding_value if padding_value.dtype == x.dtype else \
            _prim(Cast)(padding_value, x.dtype)
        value = _prim(Reshape)(value, (1,) * (len(batch) + 1))
        return _prim(BroadcastTo, batch + (1,))(value)
    if isinstance(padding_value, (bool, int, float, np.number, np.bool_)):
        return Tensor(np.full(batch + (1,), padding_value, x.dtype.np_dtype))
    raise TypeError(f"For '{name}', the 'padding_value' should be a number or a Tensor, but got "
                    f"{type(padding_value).__name__}.")


def _picked(sources: Sequence[Any], index: np.ndarray, shape: tuple) -> Any:
    """Gather along the last dim of the sources joined there, at the constant `index`,
    reshaped to `shape`."""
    joined = sources[0] if len(sources) == 1 else _prim(Concat, -1)(tuple(sources))
    last = len(joined.shape) - 1
    out = _prim(Gather, 0)(joined, Tensor(index.reshape(-1)), last)
    return _prim(Reshape)(out, shape)


def _matrix(name: str, arg: str, x: Any) -> tuple:
    check_tensor(name, arg, x)
    if len(x.shape) < 2:
        raise ValueError(f"For '{name}', the '{arg}' should have rank >= 2, but got shape "
                         f"{list(x.shape)}.")
    return tuple(x.shape[:-2]), x.shape[-2], x.shape[-1]


def matrix_band_part(x: Any, lower: Any, upper: Any) -> Any:
    """x's last two dims with every element zeroed whose row - col > lower or col - row >
    upper (a negative bound keeps that whole triangle): Tril(upper) then Triu(-lower)."""
    _matrix("matrix_band_part", "x", x)
    lower = _known_int("matrix_band_part", "lower", lower)
    upper = _known_int("matrix_band_part", "upper", upper)
    if upper >= 0:
        x = tril(x, upper)
    if lower >= 0:
        x = triu(x, -lower)
    return x


def matrix_diag_part(x: Any, k: Any = 0, padding_value: Any = 0,
                     align: str = "RIGHT_LEFT") -> Any:
    """The diagonals k[0]..k[1] of x's last two dims: (..., high - low + 1, L), or (..., L)
    for one diagonal, highest first, each L long (the longest one's length), a shorter one
    padded with `padding_value` on the side `align` says."""
    name = "matrix_diag_part"
    batch, rows, cols = _matrix(name, "x", x)
    low, high = _band(name, k)
    if not (-rows < low <= high < cols) and rows and cols:
        raise ValueError(f"For '{name}', the 'k' should be in ({-rows}, {cols}) for a {rows} x "
                         f"{cols} matrix, but got ({low}, {high}).")
    length = max(0, min(rows + min(high, 0), cols - max(low, 0)))
    count = high - low + 1
    where = _band_index(rows, cols, low, high, length, _align(name, align))
    index = np.full(count * length, rows * cols, np.int64)   # the padding column
    hit = where >= 0
    index[where[hit]] = np.flatnonzero(hit)
    flat = _prim(Reshape)(x, batch + (rows * cols,))
    out = batch + ((length,) if low == high else (count, length))
    pad = _pad_column(name, x, batch, padding_value)      # checked even when unused
    if (index < rows * cols).all():                       # every diagonal full: no padding
        return _picked((flat,), index, out)
    return _picked((flat, pad), index, out)


def matrix_diag(x: Any, k: Any = 0, num_rows: Any = -1, num_cols: Any = -1,
                padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Any:
    """Matrices whose diagonals k[0]..k[1] are x's rows ((..., L) for one diagonal, (...,
    high - low + 1, L) for a band, highest first) and whose other elements are
    `padding_value`. num_rows / num_cols (-1: the least that holds the diagonals, square
    when both are -1) size the matrices; `align` places a short diagonal's values."""
    name = "matrix_diag"
    check_tensor(name, "x", x)
    low, high = _band(name, k)
    count = high - low + 1
    if len(x.shape) < (1 if low == high else 2):
        raise ValueError(f"For '{name}', the 'x' should have rank >= {1 if low == high else 2} "
                         f"for k = ({low}, {high}), but got shape {list(x.shape)}.")
    if low != high and x.shape[-2] != count:
        raise ValueError(f"For '{name}', the 'x' dim -2 should be the number of diagonals "
                         f"{count} for k = ({low}, {high}), but got shape {list(x.shape)}.")
    length = x.shape[-1]
    batch = tuple(x.shape[:-1 if low == high else -2])
    least_rows, least_cols = length - min(high, 0), length + max(low, 0)
    rows = _known_int(name, "num_rows", num_rows)
    cols = _known_int(name, "num_cols", num_cols)
    if rows == -1 and cols == -1:
        rows = cols = max(least_rows, least_cols)
    rows = least_rows if rows == -1 else rows
    cols = least_cols if cols == -1 else cols
    if rows < least_rows or cols < least_cols or (rows != least_rows and cols != least_cols):
        raise ValueError(f"For '{name}', the 'num_rows' and 'num_cols' should be at least "
                         f"{least_rows} and {least_cols}, one of them exactly, for diagonals "
                         f"of length {length} and k = ({low}, {high}), but got {rows} and "
                         f"{cols}.")
    where = _band_index(rows, cols, low, high, length, _align(name, align))
    index = np.where(where >= 0, where, count * length)
    flat = _prim(Reshape)(x, batch + (count * length,))
    return _picked((flat, _pad_column(name, x, batch, padding_value)), index,
                   batch + (rows, cols))


def matrix_set_diag(x: Any, diagonal: Any, k: Any = 0, align: str = "RIGHT_LEFT") -> Any:
    """x with its diagonals k[0]..k[1] (of the last two dims) replaced by `diagonal`'s rows,
    laid out as matrix_diag_part gives them: (..., L) for one, (..., high - low + 1, L)."""
    name = "matrix_set_diag"
    batch, rows, cols = _matrix(name, "x", x)
    check_tensor(name, "diagonal", diagonal)
    low, high = _band(name, k)
    if not (-rows < low <= high < cols) and rows and cols:
        raise ValueError(f"For '{name}', the 'k' should be in ({-rows}, {cols}) for a {rows} x "
                         f"{cols} matrix, but got ({low}, {high}).")
    count = high - low + 1
    length = max(0, min(rows + min(high, 0), cols - max(low, 0)))
    want = batch + ((length,) if low == high else (count, length))
    if tuple(diagonal.shape) != want:
        raise ValueError(f"For '{name}', the 'diagonal' shape should be {list(want)} (x shape "
                         f"{list(x.shape)}, k = ({low}, {high})), but got "
                         f"{list(diagonal.shape)}.")
    if diagonal.dtype != x.dtype:
        raise TypeError(f"For '{name}', the 'diagonal' dtype should be x's {x.dtype}, but got "
                        f"{diagonal.dtype}.")
    where = _band_index(rows, cols, low, high, length, _align(name, align))
    index = np.where(where >= 0, rows * cols + where, np.arange(rows * cols).reshape(rows, cols))
    sources = (_prim(Reshape)(x, batch + (rows * cols,)),
               _prim(Reshape)(diagonal, batch + (count * length,)))
    return _picked(sources, index, batch + (rows, cols))


def diagflat(input: Any, offset: int = 0) -> Any:
    """A square 2-D Tensor with input's elements (flattened) on diagonal `offset`, zeros
    elsewhere: (n + |offset|, n + |offset|)."""
    check_tensor("diagflat", "input", input)
    offset = _int("diagflat", "offset", offset)
    flat = _prim(Reshape)(input, (int(np.prod(input.shape)),))
    return matrix_diag(flat, offset)


def _moved_last(x: Any, dims: list) -> tuple:
    """(x with `dims` moved last in that order, the permutation back)."""
    ndim = len(x.shape)
    perm = [d for d in range(ndim) if d not in dims] + dims
    if perm == list(range(ndim)):
        return x, None
    return _prim(Transpose)(x, tuple(perm)), tuple(int(i) for i in np.argsort(perm))


def _moved_back(x: Any, back: Any) -> Any:
    return x if back is None else _prim(Transpose)(x, back)


def _check_src(name: str, input: Any, src: Any, want: tuple) -> None:
    if tuple(src.shape) != want:
        raise ValueError(f"For '{name}', the 'src' shape should be {list(want)}, but got "
                         f"{list(src.shape)}.")
    if src.dtype != input.dtype:
        raise TypeError(f"For '{name}', the 'src' dtype should be input's {input.dtype}, but "
                        f"got {src.dtype}.")


def _scatter_along(name: str, input: Any, src: Any, axis: int, positions: range) -> Any:
    """input with its slices along `axis` at `positions` replaced by src's, in order."""
    shape = tuple(input.shape)
    _check_src(name, input, src, shape[:axis] + (len(positions),) + shape[axis + 1:])
    n = shape[axis]
    index = np.arange(n, dtype=np.int64)
    index[list(positions)] = n + np.arange(len(positions))
    moved, back = _moved_last(input, [axis])
    src_moved, _ = _moved_last(src, [axis])
    out = _picked((moved, src_moved), index, tuple(moved.shape))
    return _moved_back(out, back)


def slice_scatter(input: Any, src: Any, axis: int = 0, start: Any = None, end: Any = None,
                  step: int = 1) -> Any:
    """input with input[..., start:end:step, ...] (on dim `axis`) replaced by src."""
    check_tensor("slice_scatter", "input", input)
    check_tensor("slice_scatter", "src", src)
    axis = _axis("slice_scatter", "axis", axis, len(input.shape))
    start, end = (None if v is None else _int("slice_scatter", a, v)
                  for a, v in (("start", start), ("end", end)))
    step = _int("slice_scatter", "step", step)
    if step <= 0:
        raise ValueError(f"For 'slice_scatter', the 'step' should be > 0, but got {step}.")
    positions = range(*slice(start, end, step).indices(input.shape[axis]))
    return _scatter_along("slice_scatter", input, src, axis, positions)


def select_scatter(input: Any, src: Any, axis: int, index: int) -> Any:
    """input with its slice `index` along `axis` replaced by src (input's shape without
    that dim)."""
    check_tensor("select_scatter", "input", input)
    check_tensor("select_scatter", "src", src)
    axis = _axis("select_scatter", "axis", axis, len(input.shape))
    n = input.shape[axis]
    index = _int("select_scatter", "index", index)
    if not -n <= index < n:
        raise ValueError(f"For 'select_scatter', the 'index' should be in [{-n}, {n}) (dim "
                         f"{axis} of input), but got {index}.")
    want = tuple(input.shape[:axis]) + tuple(input.shape[axis + 1:])
    if tuple(src.shape) != want:
        raise ValueError(f"For 'select_scatter', the 'src' shape should be {list(want)}, but "
                         f"got {list(src.shape)}.")
    index %= n
    return _scatter_along("select_scatter", input, _prim(ExpandDims)(src, axis), axis,
                          range(index, index + 1))


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Any:
    """input with its diagonal `offset` of the (dim1, dim2) planes replaced by src (laid out
    as `ops.diagonal` gives it: the other dims, then the diagonal)."""
    name = "diagonal_scatter"
    check_tensor(name, "input", input)
    check_tensor(name, "src", src)
    ndim = len(input.shape)
    if ndim < 2:
        raise ValueError(f"For '{name}', the 'input' should have rank >= 2, but got shape "
                         f"{list(input.shape)}.")
    offset = _int(name, "offset", offset)
    a, b = _axis(name, "dim1", dim1, ndim), _axis(name, "dim2", dim2, ndim)
    if a == b:
        raise ValueError(f"For '{name}', the 'dim1' and 'dim2' should be different dims, but "
                         f"got {dim1} and {dim2}.")
    moved, back = _moved_last(input, [a, b])
    batch, rows, cols = tuple(moved.shape[:-2]), moved.shape[-2], moved.shape[-1]
    want = batch + (_diag_len(rows, cols, offset),)
    _check_src(name, input, src, want)
    if want[-1] == 0:
        return input
    return _moved_back(matrix_set_diag(moved, src, offset), back)
