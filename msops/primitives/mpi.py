"""MPI plumbing of the collectives: buffer specs, reduction ops, errors, the buffer-call kernel.

Data moves as an MPI type of the element's width, so every numeric dtype (bool, complex,
bfloat16 …) moves unchanged; reductions run in `Type.reduce_np_dtype` (float16 and
bfloat16 accumulate in float32 and are rounded once). An MPI error never reaches the
user raw: `call` raises it as the op's RuntimeError (`prim.mpi_failed`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype

__all__ = ["buf", "bufs", "mpi_op", "reduce_in", "call", "reraise", "buffer_kernel", "reduced",
           "mpi_detail", "alloc_line", "call_lines"]


def buf(a: np.ndarray | None) -> list | None:
    """An mpi4py buffer spec that moves `a` unchanged (None stays None: 'not significant')."""
    return None if a is None else [a, mstype.mpi_move_type(a.dtype)]


def bufs(send: np.ndarray, recv: np.ndarray) -> tuple[list, list]:
    """Buffer specs of a send and a receive array of one dtype (one type lookup)."""
    t = mstype.mpi_move_type(send.dtype)
    return [send, t], [recv, t]


_MPI_OPS: dict[str, Any] = {}


def mpi_op(op: str) -> Any:
    """The MPI.Op of a ReduceOp name (looked up once)."""
    found = _MPI_OPS.get(op)
    if found is None:
        from mpi4py import MPI
        found = _MPI_OPS[op] = getattr(MPI, op.upper())
    return found


_REDUCE_NP: dict[np.dtype, np.dtype] = {}


def reduce_in(x: np.ndarray) -> np.ndarray:
    """x in the dtype it is reduced in (float16/bfloat16 -> float32)."""
    red = _REDUCE_NP.get(x.dtype)
    if red is None:
        red = _REDUCE_NP[x.dtype] = mstype.from_numpy(x.dtype).reduce_np_dtype
    return x if red == x.dtype else x.astype(red)


_CUT = re.compile(r"^\w+\(\d+\)\.*:?$")
_FRAME = re.compile(r"^\w+\(\d+\)\.*:\s*(.*)$")       # MPICH: "MPIR_Wait(745)....: detail"


def mpi_detail(err: Exception) -> str:
    """MPI's own words for an error, on one line: MPICH's stack of messages joined
    ("Message truncated; Message from rank 0 and tag 5 truncated; 8 bytes received but
    buffer size is 24"), without its empty frames and the failed call's raw arguments."""
    text = err.Get_error_string() if hasattr(err, "Get_error_string") else str(err)
    parts: list[str] = []
    for line in text.splitlines():
        line = line.strip().removesuffix(", error stack:")
        if _CUT.match(line):                           # a frame cut off by the string limit
            continue
        frame = _FRAME.match(line)
        if frame:
            line = frame.group(1)
            if line.endswith(") failed"):              # MPI_Recv_c(buf=0x…, …) failed
                continue
        if line and line not in parts:
            parts.append(line)
    return "; ".join(parts) if parts else text


def reraise(prim: Any, err: Exception) -> None:
    """Raise `err`, an MPI error as the op's RuntimeError (never raw MPI)."""
    from mpi4py import MPI
    if isinstance(err, MPI.Exception):
        raise prim.mpi_failed(err) from None
    raise err


def call(prim: Any, method: Callable, *args: Any) -> Any:
    """`method(*args)`, an MPI error raised as the op's RuntimeError."""
    try:
        return method(*args)
    except Exception as err:
        reraise(prim, err)


def buffer_kernel(prim: Any, method: Callable, mpi_type: Any, extra: tuple, shape: tuple,
                  dtype: np.dtype) -> Callable:
    """One signature's kernel `kernel(x, out=None) -> out`: one buffer call
    `method([x, t], [out, t], *extra)` into `out`, a fresh array of `shape` when not given."""
    shape = tuple(shape)

    def kernel(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            out = np.empty(shape, dtype)
        try:
            method([x, mpi_type], [out, mpi_type], *extra)
        except Exception as err:
            reraise(prim, err)
        return out

    def inline(src: Any, args: Sequence[str], out: str | None, target: str | None) -> list:
        """kernel's call as lines of a generated caller (codegen.inline_lines)."""
        t = src.bind("mpi_type", mpi_type)
        lines = [] if out is not None else [alloc_line(src, target, shape, dtype)]
        return lines + call_lines(src, prim, method, f"[{args[0]}, {t}]",
                                  f"[{out or target}, {t}]",
                                  *[src.bind("mpi_op", op) for op in extra])
    kernel.inline = inline
    return kernel


def alloc_line(src: Any, target: str, shape: Sequence[int], dtype: np.dtype) -> str:
    """The line of a generated caller making `target` a fresh array of `shape` and `dtype`."""
    return (f"{target} = {src.bind('empty', np.empty)}({src.bind('shape', tuple(shape))}, "
            f"{src.bind('dtype', dtype)})")


def call_lines(src: Any, prim: Any, method: Callable, *args: str) -> list[str]:
    """`method(*args)` (an MPI call, its arguments as expressions) as lines of a generated
    caller (codegen.py), an MPI error raised as the op's RuntimeError, as `call` does."""
    return ["try:", f"    {src.bind('mpi_call', method)}({', '.join(args)})",
            "except Exception as err:",
            f"    {src.bind('reraise', reraise)}({src.bind('prim', prim)}, err)"]


def reduced(prim: Any, method: Callable, x: np.ndarray, out_shape: Sequence[int] | None,
            out: np.ndarray | None, *extra: Any) -> np.ndarray | None:
    """Run reduction `method(send, recv, op, *extra)` with `prim.op` on x in its reduce dtype.

    The result (shape `out_shape`; None where this rank receives nothing) goes into `out`
    when given, rounded back to x's dtype once.
    """
    src = reduce_in(x)
    t = mstype.mpi_reduce_type(src.dtype)
    same = src.dtype == x.dtype
    if out_shape is None:
        res = None
    elif same and out is not None:
        res = out
    else:
        res = np.empty(out_shape, src.dtype)
    call(prim, method, [src, t], None if res is None else [res, t], mpi_op(prim.op), *extra)
    if res is None or same:
        return res
    if out is None:
        return res.astype(x.dtype)
    out[...] = res
    return out
