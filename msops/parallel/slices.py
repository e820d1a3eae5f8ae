"""Cut a full tensor into a rank's slice and put the slices of every rank back, by layout.

A split on a dim other than 0 is not a concatenation along dim 0: each block goes to the
index `layout.slice_of(rank)` names, so any tensor map (compound ones included) works.
"""
from __future__ import annotations

import numpy as np

from msops.common.tensor import contiguous
from msops.parallel.layout import TensorLayout

__all__ = ["local_slice", "place_slices", "is_split"]


def is_split(layout: TensorLayout) -> bool:
    """Whether some rank holds less than the whole tensor."""
    return any(layout.dim_axes)


def local_slice(data: np.ndarray, layout: TensorLayout, rank: int) -> np.ndarray:
    """`rank`'s slice of `data`: given whole (cut here) or already the slice."""
    shape = tuple(data.shape)
    if shape == layout.tensor_shape:
        return contiguous(data[layout.slice_of(rank)])
    if shape == layout.slice_shape:
        return contiguous(data)
    raise ValueError(f"For 'local_slice', the data shape should be the full shape "
                     f"{layout.tensor_shape} or the slice shape {layout.slice_shape} of "
                     f"{layout}, but got {shape}.")


def place_slices(blocks: np.ndarray, layout: TensorLayout) -> np.ndarray:
    """The full tensor from `blocks[r]` = rank r's slice, for r in 0..device_num-1."""
    want = (layout.device_num,) + layout.slice_shape
    if tuple(blocks.shape[:1 + len(layout.slice_shape)]) != want or blocks.ndim != len(want):
        raise ValueError(f"For 'place_slices', the blocks shape should be {want} (one slice "
                         f"per rank of {layout}), but got {tuple(blocks.shape)}.")
    full = np.empty(layout.tensor_shape, blocks.dtype)
    for r in range(layout.device_num):
        full[layout.slice_of(r)] = blocks[r]
    return full
