"""`mindspore.mint`'s joining, splitting and reshaping with PyTorch's arguments (`dim`,
`dims`, `dim0`/`dim1`, `start_dim`) over msops.ops' functional forms."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.mint._args import check_dim, check_tensor
from msops.ops import broadcast_to, flip, permute, reshape, roll, tril, triu  # noqa: F401
from msops.ops import unsqueeze  # noqa: F401  (these have mint's signatures already)

__all__ = ["cat", "concat", "stack", "split", "chunk", "narrow", "flatten", "reshape",
           "permute", "transpose", "squeeze", "unsqueeze", "tile", "repeat_interleave",
           "flip", "roll", "tril", "triu", "broadcast_to"]


def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """The tensors joined along `dim` (`ops.cat`)."""
    return ops.cat(tensors, dim)


concat = cat


def stack(tensors: Sequence[Any], dim: int = 0) -> Any:
    """The tensors stacked along a new dim `dim` (`ops.stack`)."""
    return ops.stack(tensors, dim)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Pieces of `split_size_or_sections` along `dim` (an int: equal pieces, the last one
    shorter) (`ops.split`)."""
    return ops.split(tensor, split_size_or_sections, dim)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple:
    """At most `chunks` pieces of equal length (the last shorter) along `dim` (`ops.chunk`)."""
    return ops.chunk(input, chunks, dim)


def narrow(input: Any, dim: int, start: int, length: int) -> Any:
    """input[..., start:start + length, ...] along `dim` (`ops.narrow`)."""
    return ops.narrow(input, dim, start, length)


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Dims start_dim .. end_dim merged into one; by default every dim (`ops.flatten`,
    whose default start_dim is 1)."""
    check_tensor("flatten", "input", input)
    if not input.shape:
        return ops.reshape(input, (1,))
    return ops.flatten(input, start_dim=start_dim, end_dim=end_dim)


def transpose(input: Any, dim0: int, dim1: int) -> Any:
    """input with dims dim0 and dim1 swapped (`ops.swapaxes`)."""
    return ops.swapaxes(input, dim0, dim1)


def squeeze(input: Any, dim: Any = None) -> Any:
    """input without the size-1 dims among `dim` (an int or a tuple; None: every size-1 dim);
    a named dim of another size stays, as in PyTorch (`ops.squeeze`)."""
    check_tensor("squeeze", "input", input)
    shape = tuple(input.shape)
    if dim is None:
        return ops.squeeze(input)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    keep = tuple(d for d in (check_dim("squeeze", d, len(shape)) for d in dims)
                 if shape and shape[d] == 1)
    return ops.squeeze(input, keep) if keep else input


def tile(input: Any, dims: Sequence[int]) -> Any:
    """input repeated dims[i] times along dim i; fewer dims than input's rank are padded
    with leading 1s (`ops.tile`, which wants one per dim)."""
    check_tensor("tile", "input", input)
    dims = tuple(dims)
    return ops.tile(input, (1,) * (len(input.shape) - len(dims)) + dims)


def repeat_interleave(input: Any, repeats: Any, dim: int | None = None, *,
                      output_size: int | None = None) -> Any:
    """Each element repeated `repeats` times along `dim` (None: of the flattened input)
    (`ops.repeat_interleave`); `output_size` is accepted as a hint."""
    return ops.repeat_interleave(input, repeats, dim)
