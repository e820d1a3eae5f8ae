"""From a strategy of `Layout`s (MindSpore 2.x's alias API) to an op's `OpSharding`.

A tuple strategy gives slices per dim and `strategy.shard` derives the device matrix; a
Layout strategy gives the device matrix and every input's tensor map outright. The op's
dim spec still rules: a letter shared by two inputs must be split over the same device
axes, a broadcast dim and an unsplittable letter stay whole, split dims divide; a
reduced letter's axes are the op's partial axes; outputs take their letters' axes.
"""
from __future__ import annotations

from math import prod
from typing import Sequence

from msops.common.shard_layout import Layout
from msops.parallel.device_matrix import axis_size
from msops.parallel.layout import TensorLayout
from msops.parallel.strategy import OpSharding, _tensor_map, check_strategy_format
from msops.primitives.sharding import DimSpec

__all__ = ["shard_layouts", "layout_out_maps", "check_device_matrix"]


def check_device_matrix(name: str, layout: Layout, device_num: int) -> None:
    """A Layout's device matrix must hold exactly the stage's devices."""
    if prod(layout.device_matrix) != device_num:
        raise ValueError(f"For '{name}', the Layout's device matrix {layout.device_matrix} "
                         f"should hold the {device_num} devices of the stage (its product), "
                         f"but it holds {prod(layout.device_matrix)}.")


def _dim_axes(layout: Layout) -> tuple[tuple[int, ...], ...]:
    return tuple(() if e == -1 else e if isinstance(e, tuple) else (e,)
                 for e in layout.tensor_map)


def shard_layouts(name: str, spec: DimSpec, layouts: tuple, shapes: Sequence[Sequence[int]],
                  device_num: int) -> OpSharding:
    """Check a Layout strategy against `spec` and the input shapes; build the OpSharding."""
    check_device_matrix(name, layouts[0], device_num)
    dm = layouts[0].device_matrix
    maps = [_dim_axes(lay) for lay in layouts]
    check_strategy_format(name, tuple(tuple(1 for _ in m) for m in maps), shapes)
    size = {}  # letter -> its axes
    first: dict[str, tuple[int, int]] = {}
    for i, (ins, axes_i, shp) in enumerate(zip(spec.ins, maps, shapes)):
        for d, (letter, axes) in enumerate(zip(ins, axes_i)):
            parts = prod(axis_size(dm, k) for k in axes)
            if letter is None:
                if parts > 1:
                    raise ValueError(f"For '{name}', input {i} dim {d} is broadcast (size 1 "
                                     f"against the other inputs), so its layout should not "
                                     f"split it, but got {layouts[i]!r}.")
                continue
            if letter in size and size[letter] != axes:
                j, e = first[letter]
                raise ValueError(f"For '{name}', the layouts of input {j} dim {e} and input "
                                 f"{i} dim {d} should split the shared dimension '{letter}' "
                                 f"over the same device axes, but got {layouts[j]!r} and "
                                 f"{layouts[i]!r}.")
            size.setdefault(letter, axes)
            first.setdefault(letter, (i, d))
            if shp[d] >= 0 and shp[d] % parts:
                raise ValueError(f"For '{name}', input {i} dim {d} of size {shp[d]} (shape "
                                 f"{tuple(shp)}) should be divisible by the {parts} devices "
                                 f"its layout splits it over ({layouts[i]!r}), but it is not.")
    for letter, reason in spec.unsplittable:
        if size.get(letter):
            i, d = first[letter]
            raise ValueError(f"For '{name}', input {i} dim {d} cannot be split ({reason}), but "
                             f"its layout splits it: {layouts[i]!r}.")
    index = {l: axes for l, axes in size.items() if axes}
    out_letters = {l for outs in spec.outs for l in outs if l is not None}
    partial = tuple(sorted(a for l, axes in index.items() if l not in out_letters
                           for a in axes if axis_size(dm, a) > 1))   # size 1: nothing to sum
    used = prod(axis_size(dm, a) for axes in index.values() for a in axes)
    strategy = tuple(tuple(prod(axis_size(dm, k) for k in axes) for axes in m) for m in maps)
    return OpSharding(tuple(dm), tuple(_tensor_map(index, x) for x in spec.ins),
                      tuple(_tensor_map(index, x) for x in spec.outs), partial, strategy,
                      device_num // used, tuple(index.items()))


def layout_out_maps(name: str, in_layouts: tuple, out_layouts: tuple,
                    out_shapes: Sequence[Sequence[int]]) -> tuple:
    """The outputs' tensor maps an out strategy of Layouts asks for (same device matrix
    as the inputs'; whether the op can produce them is checked by the pass)."""
    if len(out_layouts) != len(out_shapes):
        raise ValueError(f"For '{name}', the 'out_strategy' should have one Layout per output "
                         f"({len(out_shapes)}), but got {len(out_layouts)}.")
    for lay, shp in zip(out_layouts, out_shapes):
        if lay.device_matrix != in_layouts[0].device_matrix:
            raise ValueError(f"For '{name}', the out Layout's device matrix should be the "
                             f"inputs' {in_layouts[0].device_matrix}, but got "
                             f"{lay.device_matrix}.")
        if len(lay.tensor_map) != len(shp):
            raise ValueError(f"For '{name}', the out Layout should have one entry per output "
                             f"dim ({len(shp)}, shape {tuple(shp)}), but got {lay!r}.")
        TensorLayout(lay.device_matrix, lay.tensor_map, tuple(shp))   # divisibility
    return tuple(lay.tensor_map for lay in out_layouts)
