"""Where a Parameter's data lives after a parallel compile: only this rank's slice.

A compiled graph reads and writes each Parameter's own array directly (no per-step slicing
or copying), so the array a Parameter holds must be the slice its graph node stands for.
`relayout(param, layout)` makes it so: a whole array is cut locally; a slice held under
another layout is redistributed with the compiler's own planner and emitters (a
collective: every rank compiles, and the executor calls it, in the same order — SPMD), so
a serial compile after a parallel one gathers the whole array back. `stored_layout` says
what a graph node asks for. Importing this module installs `relayout` as the hook the
executor (a lower layer) calls.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import tensor as _tensor
from msops.common.tensor import Parameter
from msops.parallel.context import get_auto_parallel_context
from msops.parallel.layout import TensorLayout
from msops.parallel.redistribution_emit import run_plan
from msops.parallel.redistribution_plan import plan
from msops.parallel.slices import is_split
from msops.parallel.stages import layout_rank

__all__ = ["relayout", "stored_layout", "state_like"]


def stored_layout(layout: TensorLayout | None) -> TensorLayout | None:
    """The layout a Parameter bound as `layout` is held in: None (whole) unless split."""
    return layout if layout is not None and is_split(layout) else None


def _replicated(layout: TensorLayout) -> TensorLayout:
    return TensorLayout(layout.device_matrix, (-1,) * len(layout.tensor_shape),
                        layout.tensor_shape)


def _moved(data: np.ndarray, src: TensorLayout, dst: TensorLayout | None) -> np.ndarray:
    """This rank's `dst` slice (None: whole) from its `src` slice `data` (collective)."""
    alltoall = get_auto_parallel_context("enable_alltoall")
    itemsize = data.dtype.itemsize
    if dst is not None and dst.device_num == src.device_num:
        return run_plan(plan(src, dst, itemsize, alltoall), data)
    whole = run_plan(plan(src, _replicated(src), itemsize, alltoall), data)
    return whole if dst is None else whole[dst.slice_of(layout_rank())]


def relayout(param: Parameter, layout: TensorLayout | None) -> None:
    """Make `param` hold this rank's slice of `layout` (None or unsplit: the whole array).

    Same layout: nothing moves. Whole -> slice: a local copy. Slice -> anything else: the
    redistribution's collectives (every rank of the layouts must call it alike)."""
    want = stored_layout(layout)
    have = param._layout
    if want == have:
        return
    full = param._full_shape
    if want is not None and tuple(want.tensor_shape) != tuple(full):
        raise ValueError(f"For 'Parameter', the layout of '{param.name}' should have its whole "
                         f"shape {list(full)}, but got {want}.")
    data = param._data
    if have is not None:
        if tuple(data.shape) != tuple(have.slice_shape):
            raise ValueError(f"For 'Parameter', the data of '{param.name}' should be the slice "
                             f"{list(have.slice_shape)} of {have}, but got shape "
                             f"{list(data.shape)} (was `_data` replaced by hand?).")
        data = _moved(data, have, want)
    index = None
    if want is not None:
        index = want.slice_of(layout_rank())
        if have is None:
            data = data[index]
    # an array the Parameter owns alone: not a view (of its old array, of a gathered whole)
    owned = data.base is None and data.flags.c_contiguous and data is not param._data
    param._hold(data if owned else data.copy(), want, index)


_tensor._RELAYOUT[0] = relayout


def state_like(param: Parameter, fill: float, name: str, dtype: Any = None) -> Parameter:
    """A state Parameter (an optimizer's moment, an accumulation buffer) of `param`'s whole
    shape and dtype (or numpy `dtype`) filled with `fill`, held in `param`'s layout (its
    slice, if it holds one): a compile lays the state out like its Parameter, so nothing
    moves then."""
    state = Parameter(np.full(param.shape, fill, dtype or param.asnumpy().dtype), name,
                      requires_grad=False)
    if param._layout is not None:
        state._hold(state._data, param._layout, param._slice)
    return state
