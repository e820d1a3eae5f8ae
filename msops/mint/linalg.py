"""`mindspore.mint.linalg`: the norms (PyTorch's `dim` / `keepdim`), `inv` and `qr`."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.ops import norm  # noqa: F401  (mint's signature already)

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "qr"]


def inv(input: Any) -> Any:
    """The inverse of each (..., n, n) matrix (`ops.inverse`)."""
    return ops.inverse(input)


def qr(A: Any, mode: str = "reduced") -> tuple:
    """(Q, R) of each (..., m, n) matrix; mode 'reduced' or 'complete' (`ops.qr`)."""
    return ops.qr(A, mode)


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: mstype.Type | None = None) -> Any:
    """The `ord`-norm of x over `dim` (None: every element) (`ops.vector_norm`)."""
    return ops.vector_norm(x, ord, dim, keepdim, dtype=dtype)


def matrix_norm(A: Any, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,
                dtype: mstype.Type | None = None) -> Any:
    """The `ord` matrix norm over the two dims `dim` (`ops.matrix_norm`)."""
    return ops.matrix_norm(A, ord, dim, keepdim, dtype=dtype)
