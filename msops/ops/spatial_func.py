"""Spatial rearrangements, as `mindspore.ops` has them: space_to_batch_nd and
batch_to_space_nd (blocks of the spatial dims moved into the batch and back, with padding /
cropping) and affine_grid (the sampling grid of an affine transform).

space_to_batch_nd / batch_to_space_nd are a pad (or crop), a Reshape, a Transpose and a
Reshape; affine_grid is a constant base grid times theta (a matmul). So they trace, shard
and differentiate as those primitives do.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import matmul
from msops.ops.pad_func import pad_dims
from msops.ops.slice_func import _int
from msops.primitives.array_ops import Reshape, Transpose

__all__ = ["space_to_batch_nd", "batch_to_space_nd", "affine_grid"]


def _blocks(name: str, arg: str, block: Any) -> list:
    """The block sizes: an int (for 2 spatial dims) or a list of ints >= 1."""
    blocks = [block, block] if isinstance(block, (int, np.integer)) else block
    if not isinstance(blocks, (tuple, list)) or not blocks:
        raise TypeError(f"For '{name}', the '{arg}' should be an int or a non-empty tuple/list "
                        f"of ints, but got {block!r}.")
    blocks = [_int(name, arg, b) for b in blocks]
    if any(b < 1 for b in blocks):
        raise ValueError(f"For '{name}', the '{arg}' should hold ints >= 1, but got {block!r}.")
    return blocks


def _pairs(name: str, arg: str, pairs: Any, m: int) -> list:
    """m (before, after) pairs of ints >= 0."""
    if isinstance(pairs, Tensor):
        pairs = pairs.asnumpy().tolist()
    ok = isinstance(pairs, (tuple, list)) and len(pairs) == m and all(
        isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs)
    if not ok:
        raise ValueError(f"For '{name}', the '{arg}' should be {m} pairs (one per spatial dim), "
                         f"but got {pairs!r}.")
    out = [(_int(name, arg, a), _int(name, arg, b)) for a, b in pairs]
    if any(a < 0 or b < 0 for a, b in out):
        raise ValueError(f"For '{name}', the '{arg}' should hold ints >= 0, but got {pairs!r}.")
    return out


def _spatial(name: str, x: Any, m: int) -> tuple:
    check_tensor(name, "input_x", x)
    shape = tuple(x.shape)
    if len(shape) != m + 2:
        raise ValueError(f"For '{name}', the 'input_x' should have rank {m + 2} ((N, C) and "
                         f"{m} spatial dims, one per block), but got shape {list(shape)}.")
    return shape


def space_to_batch_nd(input_x: Any, block_size: Any, paddings: Any) -> Any:
    """(N, C, *spatial) -> (N * prod(block), C, *(padded spatial // block)): the spatial dims
    zero-padded by `paddings`, then cut into blocks whose offsets (i1, i2, ...) become batch
    entries (i1 * b2 * ... + ...) * N + n (TensorFlow's order). An int block_size serves 2
    spatial dims."""
    name = "space_to_batch_nd"
    blocks = _blocks(name, "block_size", block_size)
    m = len(blocks)
    shape = _spatial(name, input_x, m)
    pads = _pairs(name, "paddings", paddings, m)
    sizes = [shape[2 + i] + a + b for i, (a, b) in enumerate(pads)]
    for i, (s, b) in enumerate(zip(sizes, blocks)):
        if s % b:
            raise ValueError(f"For '{name}', the padded spatial dim {2 + i} ({s}) should be a "
                             f"multiple of block_size[{i}] = {b}, but it is not.")
    x = pad_dims(name, input_x, [(2 + i, a, b) for i, (a, b) in enumerate(pads)], "constant", 0)
    n, c = shape[:2]
    split = (n, c) + tuple(v for s, b in zip(sizes, blocks) for v in (s // b, b))
    x = _prim(Reshape)(x, split)
    perm = tuple(3 + 2 * i for i in range(m)) + (0, 1) + tuple(2 + 2 * i for i in range(m))
    x = _prim(Transpose)(x, perm)
    return _prim(Reshape)(x, (n * int(np.prod(blocks)), c) +
                          tuple(s // b for s, b in zip(sizes, blocks)))


def batch_to_space_nd(input_x: Any, block_shape: Any, crops: Any) -> Any:
    """The inverse of space_to_batch_nd: (N * prod(block), C, *spatial) -> (N, C, *(spatial *
    block - crops)), the batch entries' blocks put back in place, then `crops` removed."""
    name = "batch_to_space_nd"
    blocks = _blocks(name, "block_shape", block_shape)
    m = len(blocks)
    shape = _spatial(name, input_x, m)
    crops = _pairs(name, "crops", crops, m)
    total = int(np.prod(blocks))
    if shape[0] % total:
        raise ValueError(f"For '{name}', the 'input_x' dim 0 ({shape[0]}) should be a multiple "
                         f"of the product of block_shape {blocks} ({total}), but it is not.")
    n, c = shape[0] // total, shape[1]
    full = [s * b for s, b in zip(shape[2:], blocks)]
    for i, ((a, b), s) in enumerate(zip(crops, full)):
        if a + b > s:
            raise ValueError(f"For '{name}', the crops[{i}] ({a}, {b}) should leave a size >= 0 "
                             f"of the {s} elements of spatial dim {i}, but it does not.")
    x = _prim(Reshape)(input_x, tuple(blocks) + (n, c) + tuple(shape[2:]))
    perm = (m, m + 1) + tuple(v for i in range(m) for v in (m + 2 + i, i))
    x = _prim(Transpose)(x, perm)
    x = _prim(Reshape)(x, (n, c) + tuple(full))
    return pad_dims(name, x, [(2 + i, -a, -b) for i, (a, b) in enumerate(crops)], "constant", 0)


def _coords(n: int, align_corners: bool) -> np.ndarray:
    """n sample positions in [-1, 1]: the end points with align_corners, else the centres of
    n equal cells (one sample: 0)."""
    line = np.linspace(-1.0, 1.0, n) if n > 1 else np.array([-1.0])
    return line if align_corners else line * (n - 1) / max(n, 1)


def affine_grid(theta: Any, size: Any, align_corners: bool = False) -> Any:
    """The sampling grid of the affine maps theta: (N, 2, 3) with size (N, C, H, W) gives
    (N, H, W, 2), (N, 3, 4) with size (N, C, D, H, W) gives (N, D, H, W, 3); entry [n, ...,
    :] = theta[n] @ (x, y[, z], 1) at the normalised output position (x along W)."""
    name = "affine_grid"
    check_tensor(name, "theta", theta)
    if theta.dtype not in (mstype.float16, mstype.float32, mstype.float64, mstype.bfloat16):
        raise TypeError(f"For '{name}', the 'theta' should be a float Tensor, but got "
                        f"{theta.dtype}.")
    if not isinstance(align_corners, bool):
        raise TypeError(f"For '{name}', the 'align_corners' should be a bool, but got "
                        f"{type(align_corners).__name__}.")
    size = tuple(_int(name, "size", s) for s in size) if isinstance(size, (tuple, list)) \
        else size
    if not isinstance(size, tuple) or len(size) not in (4, 5) or min(size) <= 0:
        raise ValueError(f"For '{name}', the 'size' should be (N, C, H, W) or (N, C, D, H, W) "
                         f"of positive ints, but got {size!r}.")
    k = len(size) - 2
    want = (size[0], k, k + 1)
    if tuple(theta.shape) != want:
        raise ValueError(f"For '{name}', the 'theta' shape should be {list(want)} for size "
                         f"{list(size)}, but got {list(theta.shape)}.")
    spatial = size[2:]
    # (x, y[, z]) run along the last, second last[, third last] spatial dims
    axes = np.meshgrid(*[_coords(s, align_corners) for s in spatial], indexing="ij")
    base = np.stack(list(axes[::-1]) + [np.ones(spatial)], -1).reshape(-1, k + 1)
    base = Tensor(base.astype(theta.dtype.np_dtype))
    grid = matmul(base, _prim(Transpose)(theta, (0, 2, 1)))
    return _prim(Reshape)(grid, (size[0],) + tuple(spatial) + (k,))
