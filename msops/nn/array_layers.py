"""Array layers, as `mindspore.nn`: Tril and Triu (a matrix's triangle, `ops.tril` /
`ops.triu`, so the Tril / Triu primitives)."""
from __future__ import annotations

from typing import Any

from msops.nn.cell import Cell
from msops.ops import mask_func

__all__ = ["Tril", "Triu"]


class Tril(Cell):
    """`Tril()(x, k=0)`: x's lower triangle over its last two dims (column - row <= k), the
    rest zero, as `mindspore.nn.Tril`."""

    def construct(self, x: Any, k: int = 0) -> Any:
        return mask_func.tril(x, k)


class Triu(Cell):
    """`Triu()(x, k=0)`: x's upper triangle over its last two dims (column - row >= k), the
    rest zero, as `mindspore.nn.Triu`."""

    def construct(self, x: Any, k: int = 0) -> Any:
        return mask_func.triu(x, k)
