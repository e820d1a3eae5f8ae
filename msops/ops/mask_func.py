"""Masking, as `mindspore.ops` has it: masked_fill (a value where a boolean mask holds),
tril and triu (a matrix's lower / upper triangle, the rest zero: the causal mask of
attention). masked_fill is one `Select` against the mask; tril and triu are the `Tril` and
`Triu` primitives. Each traces, shards and differentiates (the gradient flows to the kept
elements only)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.creation_func import broadcast_to
from msops.primitives.elementwise_ops import Select
from msops.primitives.math_ops import Cast
from msops.primitives.triangle_ops import Tril, Triu

__all__ = ["masked_fill", "tril", "triu"]


def masked_fill(input_x: Any, mask: Any, value: Any) -> Any:
    """input_x with `value` (a number or a 0-d Tensor, cast to input_x's dtype) where the bool
    `mask` is True; input_x and mask broadcast together."""
    check_tensor("masked_fill", "input_x", input_x)
    check_tensor("masked_fill", "mask", mask)
    if mask.dtype != mstype.bool_:
        raise TypeError(f"For 'masked_fill', the 'mask' should be a bool Tensor, but got "
                        f"{mask.dtype}.")
    if isinstance(value, Tensor):
        if len(value.shape) != 0:
            raise ValueError(f"For 'masked_fill', the 'value' should be a number or a 0-d "
                             f"Tensor, but got a Tensor of shape {list(value.shape)}.")
        if value.dtype != input_x.dtype:
            value = _prim(Cast)(value, input_x.dtype)
    elif isinstance(value, (bool, int, float, np.number, np.bool_)):
        value = Tensor(np.asarray(value).astype(input_x.dtype.np_dtype))
    else:
        raise TypeError(f"For 'masked_fill', the 'value' should be a number or a 0-d Tensor, "
                        f"but got {type(value).__name__}.")
    # the condition (Select's first input, which the data-parallel default strategy splits
    # along its dim 0) is given the output's full shape
    try:
        shape = np.broadcast_shapes(tuple(input_x.shape), tuple(mask.shape))
    except ValueError:
        raise ValueError(f"For 'masked_fill', the 'mask' shape {list(mask.shape)} should "
                         f"broadcast with the 'input_x' shape {list(input_x.shape)}.") from None
    return _prim(Select)(broadcast_to(mask, shape), value, input_x)


def _triangle(cls: type, name: str, input: Any, diagonal: int) -> Any:
    check_tensor(name, "input", input)
    if not isinstance(diagonal, (int, np.integer)) or isinstance(diagonal, bool):
        raise TypeError(f"For '{name}', the 'diagonal' should be an int, but got "
                        f"{type(diagonal).__name__}.")
    if len(input.shape) < 2:
        raise ValueError(f"For '{name}', the 'input' should have rank >= 2, but got rank "
                         f"{len(input.shape)}.")
    return _prim(cls, int(diagonal))(input)


def tril(input: Any, diagonal: int = 0) -> Any:
    """The lower triangle of the last two dims (elements with column - row <= diagonal), the
    rest zero; any dtype, batch dims kept."""
    return _triangle(Tril, "tril", input, diagonal)


def triu(input: Any, diagonal: int = 0) -> Any:
    """The upper triangle of the last two dims (elements with column - row >= diagonal), the
    rest zero; any dtype, batch dims kept."""
    return _triangle(Triu, "triu", input, diagonal)
