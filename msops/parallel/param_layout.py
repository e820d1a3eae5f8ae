"""Parameter layouts of a compiled network, in MindSpore's `parameter_layout_dict` form."""
from __future__ import annotations

from typing import Any, Iterable, NamedTuple

from msops.common.weak_identity import WeakIdentityMap
from msops.parallel.layout import TensorLayout
from msops.parallel.stages import stage_of_rank

__all__ = ["ParameterLayout", "record_layout", "forget_layout", "record_stages",
           "on_other_stage", "home_stage", "parameter_layout",
           "record_opt_shard_group", "record_layout_like", "layouts_of", "without_opt_shard"]

# Parameter -> the layout of its latest partitioned graph, whatever compiled it (a Cell's
# call, a gradient or training step): after parallel training only that slice of the
# Parameter's array is current on this rank, so whoever reads it (checkpoints) must know.
_latest: "WeakIdentityMap[TensorLayout]" = WeakIdentityMap()


# Parameter -> the group its storage is sharded over by the parallel optimizer
_opt_groups: "WeakIdentityMap[str]" = WeakIdentityMap()


def record_layout(param: Any, layout: TensorLayout) -> None:
    """Remember `layout` as `param`'s (called by the partition pass); a layout recorded
    later without `record_opt_shard_group` clears the opt-shard group."""
    _latest[param] = layout
    _opt_groups.pop(param, None)
    _stages.pop(param, None)


# Parameter -> the pipeline stages holding it in its latest compiled graph (absent: every
# stage holds it, or the graph was not pipelined)
_stages: "WeakIdentityMap[frozenset]" = WeakIdentityMap()


def forget_layout(param: Any) -> None:
    """`param` has no layout on this rank: its stage's ops are another rank's."""
    _latest.pop(param, None)
    _opt_groups.pop(param, None)


def record_stages(param: Any, stages: frozenset) -> None:
    """Remember which pipeline stages hold `param` (read it; the one updating it among them)
    in the latest split graph. Every rank records every Parameter's stages alike."""
    _stages[param] = frozenset(stages)


def on_other_stage(param: Any) -> bool:
    """Whether only other pipeline stages than this rank's hold `param` (this rank's copy
    is not trained)."""
    return param in _stages and stage_of_rank() not in _stages[param]


def home_stage(param: Any) -> int:
    """The first stage holding `param`: whose copy a whole checkpoint takes."""
    return min(_stages[param]) if param in _stages else 0


def record_opt_shard_group(param: Any, group: str) -> None:
    """Remember the group the parallel optimizer shards `param` over (after its layout,
    which is then the stored shard's)."""
    _opt_groups[param] = group


def record_layout_like(state: Any, param: Any, layout: TensorLayout) -> None:
    """Remember `layout` as the layout of `state` (an optimizer's state of `param`, laid
    out like it), with `param`'s opt-shard group when the optimizer shards it."""
    record_layout(state, layout)
    group = _opt_groups.get(param)
    if group and _latest.get(param) == layout:
        _opt_groups[state] = group


def parameter_layout(lay: TensorLayout, group: str = "") -> "ParameterLayout":
    """The `parameter_layout_dict` entry of a parameter laid out as `lay`."""
    return ParameterLayout(list(lay.device_matrix), list(lay.tensor_map),
                           list(lay.slice_shape), 0, True, group, lay)


def layouts_of(params: Iterable[Any]) -> dict[str, "ParameterLayout"]:
    """Name -> layout of each of `params` that a partitioned graph has laid out."""
    return {p.name: parameter_layout(_latest[p], _opt_groups.get(p, "")) for p in params
            if p in _latest}


class ParameterLayout(NamedTuple):
    """One parameter's layout, indexable as MindSpore's list
    `[dev_matrix, tensor_map, slice_shape, field_size, uniform_split, opt_shard_group]`.

    `tensor_map` counts device axes from the right (-1: not split); `layout` is the
    TensorLayout itself (full shape included). Under the parallel optimizer the layout is
    the stored shard's (dim 0 also split over `opt_shard_group`, the replica group)."""

    dev_matrix: list
    tensor_map: list
    slice_shape: list
    field_size: int
    uniform_split: bool
    opt_shard_group: str
    layout: TensorLayout


def without_opt_shard(stored: TensorLayout, shard_size: int) -> TensorLayout:
    """The model-parallel layout of a Parameter the parallel optimizer stores as `stored`
    over a shard group of `shard_size` ranks: dim 0 without the shard axes, which
    `opt_shard.opt_shard_layout` appends after dim 0's own (so they are the trailing ones)."""
    axes = list(stored.dim_axes[0])
    parts = 1
    while axes and parts < shard_size:
        parts *= stored.axis_size(axes.pop())
    if parts != shard_size:
        raise ValueError(f"For 'without_opt_shard', the shard group size should be a product "
                         f"of the trailing dim-0 axes of {stored}, but got {shard_size}.")
    dim0 = tuple(axes) if len(axes) > 1 else (axes[0] if axes else -1)
    return TensorLayout(stored.device_matrix, (dim0,) + tuple(stored.tensor_map[1:]),
                        stored.tensor_shape)
