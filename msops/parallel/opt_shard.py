"""The parallel optimizer (`enable_parallel_optimizer=True`): which Parameters are stored
sharded along dim 0 over (part of) their replica group, and the layout they are stored in.

A trainable Parameter whose layout (the one its first consumer wants) repeats it over
ranks (replica axes of size > 1) is stored as `OptShard.stored`: dim 0 additionally split
over the shard axes, when dim 0 divides and the Parameter holds at least
`parallel_optimizer_config["parallel_optimizer_threshold"]` KB (MindSpore's key; default
64). The partition pass binds the Parameter in that layout and gathers it for its
consumer (the gather op is the training step's choice, `opt_gather`), differentiated as a
ReduceScatter of the gradient, so the gradient, the optimizer's state (laid out like its
Parameter) and the update are this rank's shard only.

`optimizer_weight_shard_size` (or `parallel_optimizer_config["optimizer_weight_shard_size"]`,
which wins) caps the shard group: -1 or a size >= the replica group shards over the whole
group (MindSpore: the size is a maximum); a smaller size s must divide the group and
shards over groups of s consecutive replicas, the minor part of the replica axes (an axis
is cut in two when s ends inside it). The other replica axes stay replicas of the stored
shard, so the backward's leaf reduction AllReduces the shard's gradient across them.
MindSpore ignores a size that does not divide the group; msops raises a ValueError.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from msops.parallel import context as pctx
from msops.parallel.device_matrix import axis_position
from msops.parallel.layout import TensorLayout

__all__ = ["OptShard", "opt_shard_plan", "opt_shard_layout", "DEFAULT_THRESHOLD_KB"]

#: MindSpore's default `parallel_optimizer_threshold` (KB)
DEFAULT_THRESHOLD_KB = 64

_API = "set_auto_parallel_context"


class OptShard(NamedTuple):
    """How one Parameter is stored: `stored` (the consumer's layout with dim 0 also split
    over `shard_axes`; its device matrix is the consumer's, refined when the shard group
    cuts an axis) and `shard_axes` (the device axes of the shard group, numbered on that
    matrix)."""

    stored: TensorLayout
    shard_axes: tuple[int, ...]


def _threshold_bytes() -> float:
    config = pctx.get_auto_parallel_context("parallel_optimizer_config") or {}
    kb = config.get("parallel_optimizer_threshold", DEFAULT_THRESHOLD_KB)
    if isinstance(kb, bool) or not isinstance(kb, (int, float)) or kb < 0:
        raise ValueError(f"For '{_API}', the 'parallel_optimizer_config' key "
                         f"'parallel_optimizer_threshold' should be a number >= 0 (KB), but "
                         f"got {kb!r}.")
    return kb * 1024


def _shard_size() -> int:
    size = pctx.get_auto_parallel_context("optimizer_weight_shard_size")
    config = pctx.get_auto_parallel_context("parallel_optimizer_config") or {}
    size = config.get("optimizer_weight_shard_size", size)
    if isinstance(size, bool) or not isinstance(size, int) or (size != -1 and size < 1):
        raise ValueError(f"For '{_API}', the 'parallel_optimizer_config' key "
                         f"'optimizer_weight_shard_size' should be -1 or a positive int, but "
                         f"got {size!r}.")
    return size


def _shard_axes(name: str, layout: TensorLayout, replica: list[int],
                size: int) -> tuple[TensorLayout, tuple[int, ...]]:
    """(layout on a matrix where the shard group is whole axes, those axes): the minor
    `size` ranks of the replica axes (`replica` ascending: minor first)."""
    total = math.prod(layout.axis_size(k) for k in replica)
    if size == -1 or size >= total:
        return layout, tuple(replica)
    if total % size:
        raise ValueError(f"For '{_API}', the 'optimizer_weight_shard_size' should divide the "
                         f"replica group of Parameter '{name}' ({total} ranks), but got "
                         f"{size}.")
    taken: list[int] = []
    left = size
    for k in replica:
        a = layout.axis_size(k)
        if left % a == 0:                      # the whole axis shards
            taken.append(k)
            left //= a
        elif a % left == 0:                    # its inner `left` ranks shard: cut it in two
            dm = list(layout.device_matrix)
            p = axis_position(dm, k)
            dm[p:p + 1] = [a // left, left]
            layout = layout.refine(dm)         # axis k is the inner part, numbers > k shift
            taken.append(k)
            left = 1
        else:
            raise ValueError(f"For '{_API}', the 'optimizer_weight_shard_size' should cut the "
                             f"replica axes {tuple(layout.axis_size(j) for j in replica)} of "
                             f"Parameter '{name}' into groups of consecutive replicas, but "
                             f"got {size}.")
        if left == 1:
            break
    return layout, tuple(taken)


def opt_shard_plan(param: Any, layout: TensorLayout) -> OptShard | None:
    """How `param` is stored under the parallel optimizer, or None (stored as `layout`):
    not enabled, not trainable, not replicated, dim 0 not divisible by the shard group,
    or under the size threshold."""
    if not pctx.get_auto_parallel_context("enable_parallel_optimizer"):
        return None
    if not getattr(param, "requires_grad", False) or not layout.tensor_shape:
        return None
    replica = [k for k in layout.replica_axes() if layout.axis_size(k) > 1]
    if not replica:
        return None
    nbytes = math.prod(layout.tensor_shape) * param.asnumpy().dtype.itemsize
    if nbytes < _threshold_bytes():
        return None
    layout, shard = _shard_axes(getattr(param, "name", "?"), layout, replica, _shard_size())
    if layout.slice_shape[0] % math.prod(layout.axis_size(k) for k in shard):
        return None
    # the shard axes after dim 0's own (major first): each rank keeps 1/parts of its slice
    dim0 = layout.dim_axes[0] + tuple(sorted(shard, reverse=True))
    tmap = (dim0 if len(dim0) > 1 else dim0[0],) + tuple(layout.tensor_map[1:])
    return OptShard(TensorLayout(layout.device_matrix, tmap, layout.tensor_shape), shard)


def opt_shard_layout(param: Any, layout: TensorLayout) -> TensorLayout | None:
    """The layout `param` is stored in under the parallel optimizer, or None."""
    plan = opt_shard_plan(param, layout)
    return None if plan is None else plan.stored
