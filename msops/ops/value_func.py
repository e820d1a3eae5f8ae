"""Values made or read outside the compute primitives, as `mindspore.ops` has them: `fill`,
`ones`, `zeros` (a new constant Tensor), `shape`, `dtype`, `rank`, `size` (what a Tensor
is), and `depend` (a value after an expression). Each has its primitive-class spelling
too (`Fill()(type, shape, value)`, `Shape()(x)`, `DType()(x)`, `Rank()(x)`, `Size()(x)`,
`Depend()(value, expr)`), which MindSpore's training cells use through
`ops.operations`.

In a traced construct they give the same values: a traced Tensor knows its shape and
dtype, a filled Tensor is captured as a constant, and `depend` needs nothing of the graph
(the executor runs every node, side effects included, in the order it was traced).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor

__all__ = ["fill", "ones", "zeros", "shape", "dtype", "rank", "size", "numel", "depend",
           "Fill", "Ones", "Zeros", "Shape", "DType", "Rank", "Size", "Depend"]


def _shape(name: str, shape: Any, arg: str = "shape") -> tuple:
    if isinstance(shape, Tensor):
        shape = shape.asnumpy().tolist()
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 0
            for n in shape):
        raise TypeError(f"For '{name}', the '{arg}' should be an int, a tuple/list of ints "
                        f">= 0 or a 1-D int Tensor, but got {shape!r}.")
    return tuple(int(n) for n in shape)


def _dtype(name: str, dtype: Any) -> np.dtype:
    if not isinstance(dtype, mstype.Type):
        raise TypeError(f"For '{name}', the 'dtype' should be an msops dtype (ms.float32, ...), "
                        f"but got {dtype!r}.")
    return mstype.dtype_to_nptype(dtype)


def fill(type: mstype.Type, shape: Any, value: Any) -> Tensor:  # noqa: A002
    """A Tensor of `shape` and dtype `type` whose every element is `value` (a number or a
    0-d Tensor)."""
    if isinstance(value, Tensor):
        value = value.asnumpy()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float, np.number)):
        raise TypeError(f"For 'fill', the 'value' should be a number or a 0-d Tensor, but got "
                        f"{value!r:.80}.")
    return Tensor(np.full(_shape("fill", shape), value, _dtype("fill", type)))


def ones(shape: Any, dtype: mstype.Type | None = None) -> Tensor:
    """A Tensor of ones of `shape` (dtype float32 by default)."""
    return Tensor(np.ones(_shape("ones", shape), _dtype("ones", dtype or mstype.float32)))


def zeros(size: Any, dtype: mstype.Type | None = None) -> Tensor:
    """A Tensor of zeros of `size` (dtype float32 by default)."""
    return Tensor(np.zeros(_shape("zeros", size), _dtype("zeros", dtype or mstype.float32)))


def shape(input: Any) -> tuple:  # noqa: A002
    """The shape of a Tensor, as a tuple of ints."""
    return tuple(check_tensor("shape", "input", input).shape)


def dtype(input: Any) -> mstype.Type:  # noqa: A002
    """The dtype of a Tensor."""
    return check_tensor("dtype", "input", input).dtype


def rank(input_x: Any) -> int:
    """The number of dims of a Tensor."""
    return len(check_tensor("rank", "input", input_x).shape)


def size(input_x: Any) -> int:
    """The number of elements of a Tensor."""
    return int(np.prod(check_tensor("size", "input", input_x).shape, dtype=np.int64))


numel = size


def depend(value: Any, expr: Any) -> Any:
    """`value`, once `expr` has been computed (MindSpore orders side effects with it; here
    every traced op, side effects included, runs in the order it was traced)."""
    return value


class _Callable:
    """A primitive-class spelling of one of the functions above (no attributes):
    `Fill()(type, shape, value)` is `fill(type, shape, value)`."""

    fn: Any                                   # the function it spells, set per class

    def __init__(self) -> None:
        self.name = type(self).__name__

    def __call__(self, *args: Any) -> Any:
        return type(self).fn(*args)

    def __repr__(self) -> str:
        return f"Prim[{self.name}]"


def _spelling(name: str, fn: Any) -> type:
    return type(name, (_Callable,), {"fn": staticmethod(fn), "__module__": __name__,
                                     "__doc__": f"`{name}()(...)`: ops.{fn.__name__}."})


Fill = _spelling("Fill", fill)
Ones = _spelling("Ones", ones)
Zeros = _spelling("Zeros", zeros)
Shape = _spelling("Shape", shape)
DType = _spelling("DType", dtype)
Rank = _spelling("Rank", rank)
Size = _spelling("Size", size)
Depend = _spelling("Depend", depend)
