"""`mindspore.mint`'s indexing: gather / scatter along a dim, index_select, masked_select,
nonzero, one_hot. gather is `ops.gather_elements`; scatter and scatter_add address each
element of `index` by its full coordinates and call the TensorScatter ops."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.mint._args import check_dim, check_tensor
from msops.ops import bucketize, masked_select, nonzero, searchsorted  # noqa: F401  (mint's signatures already)

__all__ = ["gather", "index_select", "masked_select", "nonzero", "scatter", "scatter_add",
           "searchsorted", "bucketize"]


def gather(input: Any, dim: int, index: Any) -> Any:
    """out[i][j] = input[index[i][j]][j] for dim 0 (and so on) (`ops.gather_elements`)."""
    check_tensor("gather", "input", input)
    check_tensor("gather", "index", index)
    return ops.gather_elements(input, check_dim("gather", dim, len(input.shape)), index)


def index_select(input: Any, dim: int, index: Any) -> Any:
    """The entries of input at the 1-D `index` along `dim` (`ops.index_select`)."""
    check_tensor("index_select", "input", input)
    return ops.index_select(input, check_dim("index_select", dim, len(input.shape)), index)


def _coordinates(name: str, input: Any, dim: int, index: Any) -> tuple:
    """(the (*index.shape, rank) coordinates of every element of `index` in input, dim made
    non-negative): index's own position in the other dims, its value in `dim`."""
    check_tensor(name, "input", input)
    check_tensor(name, "index", index)
    shape, where = tuple(input.shape), tuple(index.shape)
    dim = check_dim(name, dim, len(shape))
    if len(where) != len(shape) or any(w > s for k, (w, s) in enumerate(zip(where, shape))
                                       if k != dim):
        raise ValueError(f"For 'mint.{name}', the 'index' should have input's rank and no dim "
                         f"larger than input's (but dim {dim}), but got index shape "
                         f"{list(where)} and input shape {list(shape)}.")
    if index.dtype not in (mstype.int32, mstype.int64):
        raise TypeError(f"For 'mint.{name}', the 'index' should be int32 or int64, but got "
                        f"{index.dtype}.")
    grid = np.indices(where, dtype=np.int64)
    parts = [ops.cast(index, mstype.int64) if k == dim else Tensor(grid[k])
             for k in range(len(shape))]
    return ops.stack(parts, -1), dim


def _updates(name: str, input: Any, index: Any, src: Any) -> Any:
    """`src` cut to index's shape (a number: filled to it), in input's dtype."""
    where = tuple(index.shape)
    if not isinstance(src, Tensor):
        return ops.full(where, src, dtype=input.dtype)
    if len(src.shape) != len(where) or any(s < w for s, w in zip(src.shape, where)):
        raise ValueError(f"For 'mint.{name}', the 'src' should be at least as large as 'index' "
                         f"in every dim, but got src shape {list(src.shape)} and index shape "
                         f"{list(where)}.")
    if tuple(src.shape) != where:
        src = src[tuple(slice(0, w) for w in where)]
    return src


def scatter(input: Any, dim: int, index: Any, src: Any) -> Any:
    """A copy of input with out[index[i][j]][j] = src[i][j] for dim 0 (and so on); `src` a
    Tensor or a number (`ops.tensor_scatter_update`). Repeated targets keep one of their
    sources, unspecified which (as PyTorch)."""
    coords, _ = _coordinates("scatter", input, dim, index)
    return ops.tensor_scatter_update(input, coords, _updates("scatter", input, index, src))


def scatter_add(input: Any, dim: int, index: Any, src: Any) -> Any:
    """A copy of input with src[i][j] added at [index[i][j]][j] for dim 0 (and so on);
    repeated targets add up (`ops.tensor_scatter_add`)."""
    coords, _ = _coordinates("scatter_add", input, dim, index)
    return ops.tensor_scatter_add(input, coords, _updates("scatter_add", input, index, src))


def one_hot(tensor: Any, num_classes: int = -1) -> Any:
    """int64 one-hot rows of `num_classes` columns (-1: the largest index + 1, read from
    the values, so eager only) (`ops.one_hot`)."""
    check_tensor("one_hot", "tensor", tensor)
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < -1:
        raise ValueError(f"For 'mint.one_hot', the 'num_classes' should be an int >= -1, but "
                         f"got {num_classes!r}.")
    if num_classes == -1:
        num_classes = int(tensor.asnumpy().max()) + 1 if np.prod(tensor.shape) else 0
    one, zero = Tensor(np.int64(1)), Tensor(np.int64(0))
    return ops.one_hot(tensor, num_classes, one, zero)
