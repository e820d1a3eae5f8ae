"""Kernels of the `writes_output` protocol: written once, as `lower`, and run through it.

A compute op that writes its output has one implementation, `lower(in_abstracts,
out_abstract)`: a kernel for one signature (output shape, dtype, axes worked out once)
that writes into `out`, or into a new array when out is None. Eager calls and compiled
graphs both call that. `run_lowered` is such an op's `kernel`: it lowers for the
arguments' own signature and runs, for the rare calls that no cached kernel serves.

A lowered kernel may carry `with_out`: a callable of the same arguments that requires
`out` and does exactly what the kernel does with it, minus the kernel's own frame (an
element-wise op's ufunc). A compiled step calls it for the nodes whose output it planned.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from msops.common import dtype as mstype

__all__ = ["Abstract", "out_spec", "run_lowered", "ufunc_kernel"]


class Abstract(NamedTuple):
    """What `lower` reads of an argument or result: the fields of a graph Node."""

    kind: str                # "input", "const" or "op"
    shape: tuple = ()        # a tuple of tuples for a tuple input
    dtype: Any = None        # an msops Type (a tuple of Types)
    value: Any = None        # a const's value


def out_spec(out_abstract: Any) -> tuple[tuple, np.dtype]:
    """(shape, numpy dtype) of the array a lowered kernel writes."""
    return tuple(out_abstract.shape), out_abstract.dtype.np_dtype


def _abstract_of(value: Any, is_const: bool) -> Abstract:
    if is_const:
        return Abstract("const", value=value)
    if isinstance(value, (list, tuple)):                 # a tuple input (AddN, Concat)
        return Abstract("input", tuple(v.shape for v in value),
                        tuple(mstype.from_numpy(v.dtype) for v in value))
    return Abstract("input", value.shape, mstype.from_numpy(value.dtype))


def _inferred(a: Abstract, field: str) -> Any:
    """An argument as `infer_shape`/`infer_dtype` take it: lists of dims, Types, values."""
    if a.kind == "const":
        return a.value
    if field == "dtype":
        return list(a.dtype) if isinstance(a.dtype, tuple) else a.dtype
    if a.shape and isinstance(a.shape[0], tuple):
        return [list(s) for s in a.shape]
    return list(a.shape)


def run_lowered(prim: Any, *values: Any, out: np.ndarray | None = None) -> Any:
    """`prim.lower` for the signature of `values`, run on them (writing into `out`)."""
    ins = [_abstract_of(v, i in prim.const_inputs) for i, v in enumerate(values)]
    shape, dtype = prim.infer([_inferred(a, "shape") for a in ins],
                              [_inferred(a, "dtype") for a in ins])
    return prim.lower(ins, Abstract("op", tuple(shape), dtype))(*values, out=out)


def ufunc_kernel(ufunc: Callable, out_abstract: Any, arity: int,
                 operand: Any = None) -> Callable:
    """The lowered kernel of an element-wise op: `ufunc(*inputs[, operand], out=out)`.

    `operand`, if given, is a constant last argument (ReLU's 0). Inputs broadcast as in
    numpy; the output is a new C-contiguous array of the output's shape when out is None.
    """
    shape, dtype = out_spec(out_abstract)
    if operand is not None:
        def with_operand(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            return ufunc(x, operand, out=np.empty(shape, dtype) if out is None else out)
        return with_operand
    if arity == 1:
        def unary(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            return ufunc(x, out=np.empty(shape, dtype) if out is None else out)
        unary.with_out = ufunc
        return unary

    def binary(x: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return ufunc(x, y, out=np.empty(shape, dtype) if out is None else out)
    binary.with_out = ufunc
    return binary
