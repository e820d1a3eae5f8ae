"""One op's sharding from its strategy, whichever form: the OpSharding, the outputs' maps
and the axes a ReduceScatter combines over.

A strategy is a tuple of slices per dim (`strategy.shard`) or a tuple of Layouts
(`layout_strategy.shard_layouts`); an out strategy maps the outputs through the op's
out-strategy rule (tuples) or outright (Layouts). The partition pass and sharding
propagation both resolve strategies here, so both check them alike.
"""
from __future__ import annotations

from typing import Any, Sequence

from math import prod

from msops.common.shard_layout import is_layout_strategy
from msops.graph.ir import MakeTuple, Node
from msops.parallel import context as pctx
from msops.parallel.layout import TensorLayout
from msops.parallel.layout_strategy import layout_out_maps, shard_layouts
from msops.parallel.strategy import OpSharding, shard
from msops.primitives.rules import rule_of
from msops.primitives.sharding import DimSpec

__all__ = ["resolve", "scattered_axes", "tensor_inputs", "strategy_shapes", "batch_layout",
           "fed_layout"]


def resolve(prim: Any, spec: DimSpec, strategy: tuple, out_strategy: tuple | None,
            in_shapes: Sequence, out_shapes: Sequence,
            device_num: int) -> tuple[OpSharding, tuple, tuple]:
    """(sharding, output maps, ReduceScatter axes) of `prim` under `strategy`."""
    if is_layout_strategy(strategy):
        sh = shard_layouts(prim.name, spec, strategy, in_shapes, device_num)
    else:
        sh = shard(prim.name, spec, strategy, in_shapes, device_num)
    out_maps = _out_maps(prim, sh, strategy, out_strategy, out_shapes)
    _check_outputs_divisible(prim.name, sh, out_maps, out_shapes)
    return sh, out_maps, scattered_axes(prim.name, sh, out_maps, out_shapes)


def _check_outputs_divisible(name: str, sh: OpSharding, out_maps: tuple,
                             out_shapes: Sequence) -> None:
    """An output dim sharing a split input letter (a Reshape's (8, 6) -> (8, 3, 2) puts
    the 6's split on the 3) must divide by it too: say so in the op's terms."""
    for i, (m, shp) in enumerate(zip(out_maps, out_shapes)):
        for d, axes in enumerate(m):
            parts = prod(sh.axis_size(k) for k in (axes if isinstance(axes, tuple) else (axes,))
                         if k >= 0)                          # -1: not split
            if shp[d] >= 0 and shp[d] % parts:
                raise ValueError(f"For '{name}', output {i} dim {d} of size {shp[d]} (shape "
                                 f"{tuple(shp)}) should be divisible by the split {parts} the "
                                 f"strategy {sh.strategy} gives it, but it is not.")


def _out_maps(prim: Any, sh: OpSharding, strategy: tuple, out_s: tuple | None,
              out_shapes: Sequence) -> tuple:
    """The outputs' tensor maps: the spec's, or the split the out strategy asks for."""
    if out_s is None:
        return sh.out_maps
    if is_layout_strategy(out_s):
        if not is_layout_strategy(strategy):
            raise ValueError(f"For '{prim.name}', an 'out_strategy' of Layouts needs an "
                             f"'in_strategy' of Layouts, but got {strategy}.")
        return layout_out_maps(prim.name, strategy, out_s, out_shapes)
    rule = rule_of("out_strategy", prim)
    if rule is None:
        raise ValueError(f"For '{prim.name}', the 'out_strategy' should be None (the op "
                         f"has no out-strategy rule), but got {out_s}.")
    return tuple(sh.map_of(letters) for letters in rule(prim, sh.strategy, out_s, out_shapes))


def scattered_axes(name: str, sh: OpSharding, out_maps: tuple, out_shapes: Sequence) -> tuple:
    """The reduced device axes `out_maps` adds to the end of dim 0's split in the spec's
    output map: a ReduceScatter's axes, major first (so group rank order is block order).
    Any other difference from the spec's output maps is a ValueError."""
    if out_maps == sh.out_maps:
        return ()
    dm = sh.device_matrix

    def live(lay: TensorLayout) -> tuple:      # size-1 axes (a Layout may name them) split nothing
        return tuple(tuple(a for a in axes if sh.axis_size(a) > 1) for axes in lay.dim_axes)

    own = live(TensorLayout(dm, sh.out_maps[0], out_shapes[0]))
    want = live(TensorLayout(dm, out_maps[0], out_shapes[0]))
    scattered = want[0][len(own[0]):] if own else ()
    if not own or want != (own[0] + scattered,) + own[1:] or out_maps[1:] != sh.out_maps[1:] \
            or not set(scattered) <= set(sh.partial_axes) \
            or scattered != tuple(sorted(scattered, reverse=True)):
        raise ValueError(f"For '{name}', the output split should add only split reduction "
                         f"axes to the end of dim 0's split {sh.out_maps[0]} (a ReduceScatter), "
                         f"but got tensor map {out_maps[0]}.")
    return scattered


def tensor_inputs(node: Node) -> tuple[list[Node], dict]:
    """Global tensor inputs of op `node` (a MakeTuple input is unpacked) and its consts
    by position: what its sharding rule and strategy speak of."""
    tensors, consts = [], {}
    for i, inp in enumerate(node.inputs):
        if i in node.prim.const_inputs or (inp.kind == "const" and inp.dtype is None):
            consts[i] = inp.value
        elif inp.kind == "op" and isinstance(inp.prim, MakeTuple):
            tensors.extend(inp.inputs)
        else:
            tensors.append(inp)
    return tensors, consts


def strategy_shapes(node: Node, tensors: Sequence[Node]) -> list[tuple]:
    """The shapes a strategy of op `node` has one entry per: its tensor inputs', after the
    output shape that a shape-making op (`prim.shape_input`: UniformReal's shape, input 0)
    takes, split like a tensor of that shape (as MindSpore's UniformReal strategy)."""
    lead = [tuple(node.inputs[0].value)] if getattr(node.prim, "shape_input", False) else []
    return lead + [tuple(t.shape) for t in tensors]


def batch_layout(shape: tuple, device_num: int) -> TensorLayout:
    """The layout of a fed input with full_batch=False: dim 0 split over every device when
    it divides (each rank feeds its own slice), else whole."""
    split = bool(shape) and shape[0] % device_num == 0 and device_num > 1
    tmap = ((0,) if split else (-1,)) + (-1,) * (len(shape) - 1) if shape else ()
    return TensorLayout((device_num,), tmap, shape)


def fed_layout(index: int, shape: tuple, device_num: int) -> TensorLayout:
    """How fed input `index` (full_batch=False) lies over the ranks: dataset_strategy's
    entry (its splits, repeated over the remaining ranks) or the dim-0 batch split."""
    strategy = pctx.dataset_input_strategy(index)
    if strategy is None:
        return batch_layout(shape, device_num)
    parts = prod(strategy)
    if device_num % parts:
        raise ValueError(f"For 'set_auto_parallel_context', the 'dataset_strategy' of "
                         f"input {index} should use a number of devices dividing "
                         f"device_num {device_num}, but {strategy} uses {parts}.")
    dm = tuple(strategy) + ((device_num // parts,) if device_num > parts else ())
    tmap = tuple(len(dm) - 1 - i if v > 1 else -1 for i, v in enumerate(strategy))
    return TensorLayout(dm, tmap, shape)
