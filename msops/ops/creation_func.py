"""Tensors made from numbers, as `mindspore.ops` has them: arange, linspace, eye, full,
full_like, meshgrid. Given Python numbers they build a constant Tensor (as value_func's
`fill`), which a traced construct captures; a Tensor fill value (full, full_like) and the
inputs of meshgrid go through primitives instead, so they trace, shard and differentiate."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.value_func import _shape
from msops.primitives.array_ops import Reshape
from msops.primitives.elementwise_ops import Select
from msops.primitives.math_ops import Cast

__all__ = ["arange", "linspace", "eye", "full", "full_like", "meshgrid"]


def number(name: str, arg: str, value: Any) -> bool | int | float:
    """A Python number from a number or a one-element Tensor whose value is known now (a
    traced Tensor's is not: shapes made from it would depend on data)."""
    if isinstance(value, Tensor):
        if value.size != 1:
            raise ValueError(f"For '{name}', the '{arg}' should be a number or a one-element "
                             f"Tensor, but got a Tensor of shape {list(value.shape)}.")
        try:
            value = value.asnumpy().reshape(()).item()
        except Exception:
            raise ValueError(f"For '{name}', the '{arg}' should be a number or a Tensor whose "
                             f"value is known when the graph is built (a shape made from a "
                             f"traced value would depend on data), but got a traced "
                             f"Tensor.") from None
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"For '{name}', the '{arg}' should be a number or a one-element "
                        f"Tensor, but got {type(value).__name__}.")
    return value


def check_dtype(name: str, dtype: Any) -> mstype.Type:
    if not isinstance(dtype, mstype.Type) or dtype.np_dtype is None:
        raise TypeError(f"For '{name}', the 'dtype' should be an msops dtype (ms.float32, ...), "
                        f"but got {dtype!r}.")
    return dtype


def broadcast_to(x: Any, shape: tuple) -> Any:
    """x broadcast to `shape` through `Select(all-True, x, x)`: any dtype, zero-sized dims
    included, and its backward sums the broadcast dims back (Select's bprop)."""
    if tuple(x.shape) == tuple(shape):
        return x
    return _prim(Select)(Tensor(np.ones(shape, np.bool_)), x, x)


def arange(start: Any = 0, end: Any = None, step: Any = 1, *,
           dtype: mstype.Type | None = None) -> Tensor:
    """[start, end) in steps of `step` (`arange(n)` counts 0..n-1): int64 when every argument
    is an int, else float32, unless `dtype` says otherwise."""
    start, step = number("arange", "start", start), number("arange", "step", step)
    if end is None:
        start, end = 0, start
    end = number("arange", "end", end)
    if step == 0:
        raise ValueError("For 'arange', the 'step' should not be 0, but got 0.")
    if (end - start) * step < 0:
        raise ValueError(f"For 'arange', the 'step' should go from 'start' towards 'end', but "
                         f"got start={start}, end={end}, step={step}.")
    if dtype is None:
        dtype = mstype.int64 if all(isinstance(v, int) and not isinstance(v, bool)
                                    for v in (start, end, step)) else mstype.float32
    n = max(math.ceil((end - start) / step), 0)
    exact = np.int64 if isinstance(start, int) and isinstance(step, int) else np.float64
    values = start + step * np.arange(n, dtype=exact)
    return Tensor(values.astype(check_dtype("arange", dtype).np_dtype))


def linspace(start: Any, end: Any, steps: Any) -> Tensor:
    """`steps` evenly spaced float32 values from start to end, both included (one step:
    [start])."""
    start, end = number("linspace", "start", start), number("linspace", "end", end)
    steps = number("linspace", "steps", steps)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        raise ValueError(f"For 'linspace', the 'steps' should be a positive int, but got "
                         f"{steps!r}.")
    return Tensor(np.linspace(start, end, steps, dtype=np.float64).astype(np.float32))


def eye(n: int, m: int | None = None, dtype: mstype.Type | None = None) -> Tensor:
    """An n x m matrix (m defaults to n) with ones on the diagonal, float32 by default."""
    for arg, v in (("n", n), ("m", n if m is None else m)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"For 'eye', the '{arg}' should be an int >= 0, but got {v!r}.")
    dtype = check_dtype("eye", mstype.float32 if dtype is None else dtype)
    return Tensor(np.eye(int(n), int(n if m is None else m), dtype=dtype.np_dtype))


def _value_dtype(value: Any) -> mstype.Type:
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return mstype.bool_
    if isinstance(value, (int, np.integer)):
        return mstype.int64
    return mstype.float32


def full(size: Any, fill_value: Any, *, dtype: mstype.Type | None = None) -> Tensor:
    """A Tensor of `size` filled with `fill_value` (a number: a constant; a 0-d Tensor: that
    value broadcast, through primitives). dtype: by default bool / int64 / float32 from a
    number, a Tensor's own."""
    shape = _shape("full", size, "size")
    dtype = check_dtype("full", _value_dtype(fill_value) if dtype is None else dtype)
    if not isinstance(fill_value, Tensor):
        if not isinstance(fill_value, (bool, int, float, np.number, np.bool_)):
            raise TypeError(f"For 'full', the 'fill_value' should be a number or a 0-d "
                            f"Tensor, but got {type(fill_value).__name__}.")
        return Tensor(np.full(shape, fill_value, dtype.np_dtype))
    if fill_value.size != 1:
        raise ValueError(f"For 'full', the 'fill_value' should be a number or a one-element "
                         f"Tensor, but got a Tensor of shape {list(fill_value.shape)}.")
    value = _prim(Reshape)(fill_value, ()) if fill_value.shape != () else fill_value
    if value.dtype != dtype:
        value = _prim(Cast)(value, dtype)
    return broadcast_to(value, shape)


def full_like(input: Any, fill_value: Any, *, dtype: mstype.Type | None = None) -> Tensor:
    """`full(input.shape, fill_value)` in input's dtype unless `dtype` is given."""
    check_tensor("full_like", "input", input)
    return full(tuple(input.shape), fill_value, dtype=input.dtype if dtype is None else dtype)


def meshgrid(*inputs: Any, indexing: str = "xy") -> tuple:
    """Coordinate grids from 1-D Tensors: with 'ij' output i varies along dim i; 'xy'
    (Cartesian, the default) swaps the first two dims of every output."""
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    if indexing not in ("xy", "ij"):
        raise ValueError(f"For 'meshgrid', the 'indexing' should be 'xy' or 'ij', but got "
                         f"{indexing!r}.")
    if len(inputs) < 2:
        raise ValueError(f"For 'meshgrid', the 'inputs' should hold at least 2 Tensors, but "
                         f"got {len(inputs)}.")
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or len(x.shape) != 1:
            got = f"shape {list(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"For 'meshgrid', every input should be a 1-D Tensor, but input "
                             f"{i} is {got}.")
        if x.dtype != inputs[0].dtype:
            raise TypeError(f"For 'meshgrid', every input should have one dtype, but got "
                            f"{inputs[0].dtype} and {x.dtype}.")
    sizes = [x.shape[0] for x in inputs]
    order = list(range(len(inputs)))
    if indexing == "xy":
        order[0], order[1] = 1, 0             # input i's values run along dim order[i]
    shape = [0] * len(inputs)
    for i, d in enumerate(order):
        shape[d] = sizes[i]
    outs = []
    for i, x in enumerate(inputs):
        along = [1] * len(inputs)
        along[order[i]] = sizes[i]
        outs.append(broadcast_to(_prim(Reshape)(x, tuple(along)), tuple(shape)))
    return tuple(outs)
