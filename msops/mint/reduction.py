"""`mindspore.mint`'s reductions, orderings and matrix products with PyTorch's arguments
(`dim`, `keepdim`, `dtype`, `correction`) mapped onto msops.ops' functional forms."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.mint._args import check_tensor
from msops.ops import argmax, cumprod, einsum, matmul, mm, nansum, outer, sum  # noqa: F401,A004
from msops.ops import trace  # noqa: F401  (these have mint's signatures already)
from msops.primitives import primitive as _primitive

__all__ = ["sum", "mean", "prod", "max", "min", "argmax", "argmin", "cumsum", "any", "all",
           "std", "var", "isclose", "allclose", "sort", "topk", "softmax", "matmul", "bmm",
           "baddbmm", "mm", "amax", "amin", "logsumexp", "count_nonzero", "argsort",
           "var_mean", "std_mean", "cumprod", "nansum", "einsum", "outer", "trace", "meshgrid"]


def mean(input: Any, dim: Any = None, keepdim: bool = False, *,
         dtype: mstype.Type | None = None) -> Any:
    """The mean over `dim` (None: every dim), computed in `dtype` when given (`ops.mean`)."""
    if dtype is not None:
        input = ops.cast(input, dtype)
    return ops.mean(input, dim, keepdim)


def prod(input: Any, dim: Any = None, keepdim: bool = False, *,
         dtype: mstype.Type | None = None) -> Any:
    """The product over `dim` (None: every element) (`ops.prod`)."""
    return ops.prod(input, dim, keepdim, dtype)


def _extreme(name: str, fn: Any, input: Any, dim: Any, keepdim: bool) -> Any:
    check_tensor(name, "input", input)
    if dim is None:
        if keepdim:
            raise ValueError(f"For 'mint.{name}', the 'keepdim' should be False when 'dim' is "
                             f"None, but got True.")
        return fn(input)[0]
    return fn(input, dim, keepdim)


def max(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A001
    """dim None: the largest element (a 0-d Tensor); else (values, indices) along `dim`,
    the index of the first maximum (`ops.max`)."""
    return _extreme("max", ops.max, input, dim, keepdim)


def min(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:  # noqa: A001
    """dim None: the smallest element; else (values, indices) along `dim` (`ops.min`)."""
    return _extreme("min", ops.min, input, dim, keepdim)


def argmin(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """The index of the first minimum along `dim` (None: of the flattened input)."""
    return ops.argmin(input, dim, keepdim)


def cumsum(input: Any, dim: int, dtype: mstype.Type | None = None) -> Any:
    """The running sum along `dim`, in `dtype` when given (`ops.cumsum`)."""
    return ops.cumsum(input, dim, dtype)


def any(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Whether any element over `dim` (None: every dim) is true (`ops.any`)."""
    return ops.any(input, dim, keepdim)


def all(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Whether every element over `dim` (None: every dim) is true (`ops.all`)."""
    return ops.all(input, dim, keepdim)


def var(input: Any, dim: Any = None, *, correction: int = 1, keepdim: bool = False) -> Any:
    """The variance over `dim` with `correction` (Bessel's by default) (`ops.var`'s ddof)."""
    return ops.var(input, dim, ddof=correction, keepdims=keepdim)


def std(input: Any, dim: Any = None, *, correction: int = 1, keepdim: bool = False) -> Any:
    """The standard deviation over `dim` with `correction` (`ops.std`'s ddof)."""
    return ops.std(input, dim, ddof=correction, keepdims=keepdim)


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """|input - other| <= atol + rtol * |other| element-wise (`ops.isclose`)."""
    return ops.isclose(input, other, rtol, atol, equal_nan)


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    """Whether isclose holds everywhere: a Python bool eagerly; inside a compiled graph a
    0-d bool Tensor (a traced value has no Python truth value yet)."""
    out = ops.all(ops.isclose(input, other, rtol, atol, equal_nan))
    return out if _primitive._trace_hook is not None else bool(out.asnumpy())


def sort(input: Any, *, dim: int = -1, descending: bool = False, stable: bool = False) -> tuple:
    """(values, indices) sorted along `dim`; msops's sort is always stable (`ops.sort`)."""
    if not isinstance(stable, bool):
        raise TypeError(f"For 'mint.sort', the 'stable' should be a bool, but got "
                        f"{type(stable).__name__}.")
    return ops.sort(input, dim, descending)


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    """(values, indices) of the k largest (smallest) along `dim` (`ops.topk`)."""
    return ops.topk(input, k, dim, largest, sorted)


def softmax(input: Any, dim: int, *, dtype: mstype.Type | None = None) -> Any:
    """exp(input) / sum(exp(input)) along `dim`, in `dtype` when given (`ops.softmax`)."""
    return ops.softmax(input, dim, dtype=dtype)


def bmm(input: Any, mat2: Any) -> Any:
    """Batched matrix product (b, n, m) @ (b, m, p) (`ops.bmm`)."""
    return ops.bmm(input, mat2)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: float = 1, alpha: float = 1) -> Any:
    """beta * input + alpha * (batch1 @ batch2), input broadcast to (b, n, p)."""
    product = ops.bmm(batch1, batch2)
    if alpha != 1:
        product = ops.mul(product, alpha)
    if beta == 0:                  # as torch: input is ignored, so its NaNs do not leak
        return product
    return ops.add(input if beta == 1 else ops.mul(input, beta), product)


def amax(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The maximum over `dim` (an int or a tuple; (): every dim) (`ops.amax`)."""
    return ops.amax(input, None if dim == () else dim, keepdim)


def amin(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The minimum over `dim` (an int or a tuple; (): every dim) (`ops.amin`)."""
    return ops.amin(input, None if dim == () else dim, keepdim)


def logsumexp(input: Any, dim: Any, keepdim: bool = False) -> Any:
    """log(sum(exp(input))) over `dim`, computed stably (`ops.logsumexp`)."""
    return ops.logsumexp(input, dim, keepdim)


def count_nonzero(input: Any, dim: Any = None) -> Any:
    """The number of non-zero elements over `dim` (None: every dim), int64."""
    return ops.count_nonzero(input, () if dim is None else dim, False, mstype.int64)


def argsort(input: Any, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """The indices that sort input along `dim`; always stable (`ops.argsort`)."""
    return ops.argsort(input, dim, descending)


def var_mean(input: Any, dim: Any = None, *, correction: int = 1,
             keepdim: bool = False) -> tuple:
    """(variance with `correction`, mean) over `dim` (`ops.var_mean`)."""
    return ops.var_mean(input, dim, ddof=correction, keepdims=keepdim)


def std_mean(input: Any, dim: Any = None, *, correction: int = 1,
             keepdim: bool = False) -> tuple:
    """(standard deviation with `correction`, mean) over `dim` (`ops.std_mean`)."""
    return ops.std_mean(input, dim, ddof=correction, keepdims=keepdim)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple:
    """Coordinate grids of the 1-D tensors; `indexing` None is 'ij', PyTorch's default
    (`ops.meshgrid`'s is 'xy')."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    return ops.meshgrid(*tensors, indexing="ij" if indexing is None else indexing)
