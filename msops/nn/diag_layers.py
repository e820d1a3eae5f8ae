"""The matrix-diagonal layers of `mindspore.nn`: MatrixDiag, MatrixDiagPart and
MatrixSetDiag, the main diagonal of the last two dims through `ops.matrix_diag`,
`ops.matrix_diag_part` and `ops.matrix_set_diag` (one Gather each)."""
from __future__ import annotations

from typing import Any

from msops.common.tensor import check_tensor
from msops.nn.cell import Cell
from msops.ops import diag_func

__all__ = ["MatrixDiag", "MatrixDiagPart", "MatrixSetDiag"]


class MatrixDiag(Cell):
    """`MatrixDiag()(x)`: (..., N) -> (..., N, N), x on the main diagonal, zeros elsewhere."""

    def construct(self, x: Any) -> Any:
        check_tensor("MatrixDiag", "x", x)
        if len(x.shape) < 1:
            raise ValueError("For 'MatrixDiag', the 'x' should have rank >= 1, but got a 0-d "
                             "Tensor.")
        return diag_func.matrix_diag(x)


class MatrixDiagPart(Cell):
    """`MatrixDiagPart()(x)`: (..., M, N) -> (..., min(M, N)), the main diagonal."""

    def construct(self, x: Any) -> Any:
        return diag_func.matrix_diag_part(x)


class MatrixSetDiag(Cell):
    """`MatrixSetDiag()(x, diagonal)`: x (..., M, N) with its main diagonal replaced by
    `diagonal` (..., min(M, N))."""

    def construct(self, x: Any, diagonal: Any) -> Any:
        return diag_func.matrix_set_diag(x, diagonal)
