"""Reshard: a tensor pinned to a given `Layout` (MindSpore's `ops.Reshard`, behind
`ops.reshard` / `mindspore.parallel.function.reshard`).

Mathematically the identity. It is an `Identity` whose strategy is its layout, so the
parallel pass redistributes its input to that layout and gives its output exactly that
layout; sharding propagation keeps a configured op's strategy and propagates from it. Its
sharding rule (element-wise) and backward rule (the identity; the redistribution in front
of it differentiates by its own rules) are Identity's. Outside a parallel context the
strategy is ignored and the op returns its input.
"""
from __future__ import annotations

from math import prod
from typing import Any

from msops.common.shard_layout import Layout
from msops.primitives.array_ops import Identity
from msops.primitives.primitive import prim_attr_register

__all__ = ["Reshard"]


def _one_layout(name: str, arg: str, value: Any) -> Layout:
    """`value` is a tuple of one called Layout (one tensor): that Layout."""
    if not isinstance(value, tuple) or len(value) != 1 or not isinstance(value[0], Layout):
        raise TypeError(f"For '{name}', the '{arg}' should be a tuple of one Layout, but got "
                        f"{type(value).__name__}: {value!r}.")
    if value[0].tensor_map is None:
        raise ValueError(f"For '{name}', the '{arg}' should hold a called Layout (one alias "
                         f"per tensor dim, e.g. layout('dp', 'None')), but got {value[0]!r}.")
    return value[0]


def layout_slices(layout: Layout) -> tuple[int, ...]:
    """Per tensor dim, the number of slices `layout` cuts it into (its tuple strategy)."""
    dm = layout.device_matrix
    return tuple(prod(dm[len(dm) - 1 - k] for k in (e if isinstance(e, tuple) else (e,))
                      if k >= 0) for e in layout.tensor_map)


class Reshard(Identity):
    """`Reshard(in_layout, out_layout, in_strategy=None)(x)`: x, laid out as the one Layout of
    `in_layout` (equal to `out_layout`). `in_strategy`, MindSpore's tuple form of the same
    split, is checked against the layout when given.

    >>> layout = Layout((2, 2), ("dp", "mp"))
    >>> Reshard((layout("dp", "None"),), (layout("dp", "None"),))(x)    # doctest: +SKIP
    """

    @prim_attr_register
    def __init__(self, in_layout: tuple, out_layout: tuple,
                 in_strategy: tuple | None = None) -> None:
        layout = _one_layout(self.name, "in_layout", in_layout)
        if _one_layout(self.name, "out_layout", out_layout) != layout:
            raise ValueError(f"For '{self.name}', the 'out_layout' should equal the "
                             f"'in_layout' {in_layout}, but got {out_layout}.")
        if in_strategy is not None and in_strategy != (layout_slices(layout),):
            raise ValueError(f"For '{self.name}', the 'in_strategy' should be None or the "
                             f"split of 'in_layout', {(layout_slices(layout),)}, but got "
                             f"{in_strategy!r}.")
        self.layout = layout
        self.shard(in_layout)

    def infer_shape(self, x_shape: list) -> list:
        if len(x_shape) != len(self.layout.tensor_map):
            raise ValueError(f"For '{self.name}', the layout should have one entry per dim of "
                             f"the input (rank {len(x_shape)}, shape {tuple(x_shape)}), but "
                             f"got {self.layout!r}.")
        return list(x_shape)
