"""Python values to Tensors and back, and whole-tensor fills, as `mindspore.ops` has them:
is_tensor, is_nonzero, scalar_to_tensor, scalar_to_array, tuple_to_array, scalar_cast, dyn_shape
(Python values in, Python values or constant Tensors out), fills, zero_, padding and deepcopy (Tensor
in, through primitives, so they trace and differentiate: fills and zero_ through the fill
of `full_like` / the in-place write of `x[...] = 0`, padding a Concat, deepcopy a Tile that
always makes a new array)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.creation_func import full_like
from msops.ops.slice_func import _int
from msops.ops.tensor_index import setitem
from msops.primitives.array_ops import Concat
from msops.primitives.shape_ops import Tile

__all__ = ["is_tensor", "is_nonzero", "scalar_to_tensor", "scalar_to_array", "tuple_to_array",
           "scalar_cast", "dyn_shape", "fills", "zero_", "padding", "deepcopy"]

_NUMBER = (bool, int, float, np.number, np.bool_)


def is_tensor(obj: Any) -> bool:
    """Whether `obj` is a Tensor (a Parameter included)."""
    return isinstance(obj, Tensor)


def is_nonzero(input: Any) -> bool:
    """Whether the one element of `input` is neither 0 nor False (its value: eager only)."""
    check_tensor("is_nonzero", "input", input)
    if input.size != 1:
        raise ValueError(f"For 'is_nonzero', the 'input' should hold exactly one element, but "
                         f"got shape {list(input.shape)}.")
    try:
        value = input.asnumpy()
    except Exception:
        raise ValueError("For 'is_nonzero', the 'input' should have a value when called (its "
                         "result is a Python bool), but got a traced Tensor.") from None
    return bool(value.reshape(()) != 0)


def _number(name: str, arg: str, value: Any) -> Any:
    if isinstance(value, Tensor) or not isinstance(value, _NUMBER):
        raise TypeError(f"For '{name}', the '{arg}' should be a bool, int or float, but got "
                        f"{type(value).__name__}.")
    return value.item() if isinstance(value, (np.number, np.bool_)) else value


def _dtype(name: str, dtype: Any, kinds: tuple) -> mstype.Type:
    if not isinstance(dtype, mstype.Type) or dtype not in kinds:
        raise TypeError(f"For '{name}', the 'dtype' should be a number or bool dtype, but got "
                        f"{dtype!r}.")
    return dtype


_NUMBER_TYPES = (mstype.bool_,) + mstype.int_type + mstype.uint_type + mstype.float_type


def scalar_to_tensor(input_x: Any, dtype: mstype.Type = mstype.float32) -> Tensor:
    """The number input_x as a 0-d Tensor of `dtype`."""
    value = _number("scalar_to_tensor", "input_x", input_x)
    dtype = _dtype("scalar_to_tensor", dtype, _NUMBER_TYPES)
    return Tensor(np.asarray(value).astype(dtype.np_dtype))


def scalar_to_array(input_x: Any) -> Tensor:
    """The number input_x as a 0-d Tensor: int64 from an int, float32 from a float, bool."""
    value = _number("scalar_to_array", "input_x", input_x)
    dtype = np.bool_ if isinstance(value, bool) else np.int64 if isinstance(value, int) \
        else np.float32
    return Tensor(np.asarray(value, dtype))


def tuple_to_array(input_x: Any) -> Tensor:
    """A tuple of numbers of one kind as a 1-D Tensor: int64 from ints, float32 from floats."""
    if not isinstance(input_x, (tuple, list)) or not input_x:
        raise TypeError(f"For 'tuple_to_array', the 'input_x' should be a non-empty tuple of "
                        f"numbers, but got {input_x!r}.")
    values = [_number("tuple_to_array", "input_x", v) for v in input_x]
    kinds = {type(v) for v in values}
    if kinds - {int, float} or len(kinds) != 1:
        raise TypeError(f"For 'tuple_to_array', the 'input_x' should hold all ints or all "
                        f"floats, but got {input_x!r}.")
    return Tensor(np.asarray(values, np.int64 if kinds == {int} else np.float32))


def scalar_cast(input_x: Any, input_y: mstype.Type) -> Any:
    """The number input_x as the Python scalar of dtype input_y: bool, int (truncated) or
    float."""
    value = _number("scalar_cast", "input_x", input_x)
    dtype = _dtype("scalar_cast", input_y, _NUMBER_TYPES)
    if dtype == mstype.bool_:
        return bool(value)
    if dtype in mstype.float_type:
        return float(value)
    return int(value)


def dyn_shape(input_x: Any) -> Tensor:
    """input_x's shape as a 1-D int64 Tensor (a constant: shapes are static here)."""
    check_tensor("dyn_shape", "input_x", input_x)
    return Tensor(np.array(input_x.shape, np.int64).reshape(len(input_x.shape)))


def fills(x: Any, value: Any) -> Any:
    """A Tensor of x's shape and dtype filled with `value` (a number or a 0-d Tensor)."""
    check_tensor("fills", "x", x)
    if isinstance(value, Tensor):
        if len(value.shape) != 0:
            raise ValueError(f"For 'fills', a Tensor 'value' should be 0-d, but got shape "
                             f"{list(value.shape)}.")
    elif not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
        raise TypeError(f"For 'fills', the 'value' should be an int, a float or a 0-d Tensor, "
                        f"but got {type(value).__name__}.")
    return full_like(x, value)


def zero_(input: Any) -> Any:
    """input filled with zeros in place (as `input[...] = 0`: a Parameter is written, a
    traced value rebound), and returned."""
    check_tensor("zero_", "input", input)
    setitem(input, ..., 0)
    return input


def padding(x: Any, pad_dim_size: int = 8) -> Any:
    """x (..., 1) widened to (..., pad_dim_size): x's value first, zeros after it."""
    check_tensor("padding", "x", x)
    pad_dim_size = _int("padding", "pad_dim_size", pad_dim_size)
    if len(x.shape) < 1 or x.shape[-1] != 1:
        raise ValueError(f"For 'padding', the 'x' should have rank >= 1 and a last dim of 1, "
                         f"but got shape {list(x.shape)}.")
    if pad_dim_size < 1:
        raise ValueError(f"For 'padding', the 'pad_dim_size' should be >= 1, but got "
                         f"{pad_dim_size}.")
    if pad_dim_size == 1:
        return deepcopy(x)
    zeros = Tensor(np.zeros(tuple(x.shape[:-1]) + (pad_dim_size - 1,), x.dtype.np_dtype))
    return _prim(Concat, -1)((x, zeros))


def deepcopy(input_x: Any) -> Any:
    """A new Tensor equal to input_x, sharing nothing with it (a Tile by ones); the gradient
    passes through."""
    check_tensor("deepcopy", "input_x", input_x)
    return _prim(Tile)(input_x, (1,) * len(input_x.shape))
