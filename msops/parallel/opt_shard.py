"""The parallel optimizer (`enable_parallel_optimizer=True`): which Parameters are stored
sharded along dim 0 over their replica group, and the layout they are stored in.

A trainable Parameter whose layout (the one its first consumer wants) repeats it over
ranks (replica axes of size > 1) is stored as `opt_shard_layout`: dim 0 additionally split
over those replica axes, when dim 0 divides and the Parameter holds at least
`parallel_optimizer_config["parallel_optimizer_threshold"]` KB (MindSpore's key; default
64). The partition pass binds the Parameter in that layout and redistributes it to what
its consumer wants (an AllGather over the shard group, differentiated as a
ReduceScatter of the gradient), so the gradient, the optimizer's state (laid out like its
Parameter) and the update are this rank's shard only.
"""
from __future__ import annotations

import math
from typing import Any

from msops.parallel import context as pctx
from msops.parallel.layout import TensorLayout

__all__ = ["opt_shard_layout", "DEFAULT_THRESHOLD_KB"]

#: MindSpore's default `parallel_optimizer_threshold` (KB)
DEFAULT_THRESHOLD_KB = 64


def _threshold_bytes() -> float:
    config = pctx.get_auto_parallel_context("parallel_optimizer_config") or {}
    kb = config.get("parallel_optimizer_threshold", DEFAULT_THRESHOLD_KB)
    if isinstance(kb, bool) or not isinstance(kb, (int, float)) or kb < 0:
        raise ValueError(f"For 'set_auto_parallel_context', the 'parallel_optimizer_config' "
                         f"key 'parallel_optimizer_threshold' should be a number >= 0 (KB), "
                         f"but got {kb!r}.")
    return kb * 1024


def _check_shard_size(replicas: int) -> None:
    size = pctx.get_auto_parallel_context("optimizer_weight_shard_size")
    config = pctx.get_auto_parallel_context("parallel_optimizer_config") or {}
    size = config.get("optimizer_weight_shard_size", size)
    if size not in (-1, replicas):
        raise ValueError(f"For 'set_auto_parallel_context', the 'optimizer_weight_shard_size' "
                         f"should be -1 (the whole replica group: {replicas} ranks here; a "
                         f"smaller shard group is not implemented), but got {size}.")


def opt_shard_layout(param: Any, layout: TensorLayout) -> TensorLayout | None:
    """The layout `param` is stored in under the parallel optimizer, or None (stored as
    `layout`): not enabled, not trainable, not replicated, dim 0 not divisible, or under
    the size threshold."""
    if not pctx.get_auto_parallel_context("enable_parallel_optimizer"):
        return None
    if not getattr(param, "requires_grad", False) or not layout.tensor_shape:
        return None
    replica = tuple(k for k in layout.replica_axes() if layout.axis_size(k) > 1)
    parts = math.prod(layout.axis_size(k) for k in replica)
    if parts <= 1:
        return None
    nbytes = math.prod(layout.tensor_shape) * param.asnumpy().dtype.itemsize
    if nbytes < _threshold_bytes() or layout.slice_shape[0] % parts:
        return None
    _check_shard_size(parts)
    # the shard axes after dim 0's own (major first): each rank keeps 1/parts of its slice
    dim0 = layout.dim_axes[0] + tuple(sorted(replica, reverse=True))
    tmap = (dim0 if len(dim0) > 1 else dim0[0],) + tuple(layout.tensor_map[1:])
    return TensorLayout(layout.device_matrix, tmap, layout.tensor_shape)
