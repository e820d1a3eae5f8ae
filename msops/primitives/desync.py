"""The eager collective check: every rank makes the same collective call, or every rank raises.

An eager collective call is described by its op, group, sequence number in the group,
input shape(s) and dtype(s) and attributes (reduce op, root, dims, …). With the check on
(context key `check_collectives`, default True; MSOPS_CHECK_COLLECTIVES=0 turns it off)
each call first runs ONE extra small collective on the op's group: an Allreduce(MAX) of
[digest, -digest] (int64), whose result holds the max and the min of every rank's digest,
so every rank learns in one call whether all digests are equal. Only when they differ
does every rank gather every rank's full description (the slow path) and raise the same
ValueError showing each side. The user's source line is shown, not compared: a program
may make one SPMD call from two lines (an `if rank == 0:` branch each).

The digest is of the description known when the call's signature was lowered, plus the
sequence number, so a call costs the check collective, a frame walk for the source line
and two int64 stores. Compiled graphs are checked once at compile instead
(parallel/spmd_check.py). Every call, checked or not, runs inside the watchdog's
enter/leave (communication/watchdog.py).
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, Sequence

import numpy as np

from msops import context
from msops.common.source import user_source
from msops.communication import watchdog
from msops.primitives.mpi import reraise

__all__ = ["eager_kernel", "describe", "enabled", "check_alone"]

#: attributes that differ between ranks by design, or say nothing about the call
_LOCAL_ATTRS = frozenset({"rank", "rank_id", "rank_size", "group", "in_strategy",
                          "out_strategy", "no_eliminate", "side_effect_io", "side_effect_mem"})
_ROW_BYTES = 1024
_SEQ_BITS = 30


def _user_line() -> str | None:
    return user_source(full_path=False)



def _shape_text(a: Any) -> str:
    if a.kind == "const":
        return "const"
    if isinstance(a.dtype, tuple):
        return "(" + ", ".join(f"{list(s)} {d}" for s, d in zip(a.shape, a.dtype)) + ")"
    return f"{list(a.shape)} {a.dtype}"


def describe(prim: Any, in_abstracts: Sequence[Any], with_shapes: bool = True) -> str:
    """`AllReduce(op='sum') on x [2, 3] Float32`: what every rank's call must agree on."""
    attrs = ", ".join(f"{k}={v!r}" for k, v in prim.attrs.items() if k not in _LOCAL_ATTRS)
    text = f"{prim.name}({attrs})"
    if with_shapes:
        shapes = [_shape_text(a) for a in in_abstracts if a.kind != "const"]
        if shapes:
            text += " on " + ", ".join(shapes)
    return text


def _shapes(in_abstracts: Sequence[Any], out_abstract: Any = None) -> tuple[Any, Any]:
    """The shape and dtype a watchdog report shows: the first tensor input's, else (no
    inputs: Receive, Barrier) the output's."""
    tensors = [a for a in in_abstracts if a.kind != "const"]
    if tensors:
        return tensors[0].shape, tensors[0].dtype
    if out_abstract is not None:
        return getattr(out_abstract, "shape", ()), getattr(out_abstract, "dtype", "")
    return (), ""


class _Check:
    """The cross-rank check of one lowered signature: its description, digest and buffers."""

    __slots__ = ("prim", "comm", "static", "high", "send", "recv")

    def __init__(self, prim: Any, comm: Any, static: str) -> None:
        self.prim, self.comm, self.static = prim, comm, static
        self.high = (zlib.crc32(f"{prim.group}|{static}".encode()) & 0xFFFFFFFF) << _SEQ_BITS
        self.send, self.recv = np.empty(2, np.int64), np.empty(2, np.int64)

    def __call__(self, seq: int, source: str | None) -> None:
        """The one extra collective; on a difference, every rank raises the same error."""
        from mpi4py import MPI
        send, recv = self.send, self.recv
        d = self.high | (seq & ((1 << _SEQ_BITS) - 1))
        send[0], send[1] = d, -d
        try:
            self.comm.Allreduce([send, MPI.INT64_T], [recv, MPI.INT64_T], MPI.MAX)
        except MPI.Exception as err:
            reraise(self.prim, err)
        if recv[0] != -recv[1]:                          # max != min: some rank differs
            raise ValueError(_mismatch(self.prim, self.comm, f"#{seq} {self.static}", source))


def enabled() -> bool:
    """Whether eager collectives are checked (context key `check_collectives`)."""
    return context._context["check_collectives"]


def check_alone(prim: Any, same_shapes: bool = True) -> None:
    """Take part in the check of a call that failed on this rank before its kernel (its
    own arguments are invalid), so that the other ranks, already in the check, go on to
    the error exchange instead of waiting. Only for ops whose description does not need
    the inputs (`same_shapes=False`)."""
    comm = prim._group._comm
    if comm is None or not enabled() or same_shapes:
        return
    source = _user_line()
    seq = watchdog.enter(prim.name, prim.group, prim._group.ranks, (), "", source)
    try:
        _Check(prim, comm, describe(prim, (), False))(seq, source)
    finally:
        watchdog.leave()


def eager_kernel(prim: Any, kernel: Callable, in_abstracts: Sequence[Any],
                 point_to_point: bool = False, same_shapes: bool = True,
                 out_abstract: Any = None) -> Callable:
    """`kernel` run between the watchdog's enter/leave and, for a collective with the
    check on, after the cross-rank check. `same_shapes=False`: the inputs' shapes may
    differ between ranks (AllToAllV), so they are not compared."""
    group = prim._group
    comm = group._comm
    if comm is None:                 # simulated or not a member: the kernel raises the error
        return kernel
    name, gname, ranks = prim.name, group.name, group.ranks
    shape, dtype = _shapes(in_abstracts, out_abstract)
    check = _Check(prim, comm, describe(prim, in_abstracts, same_shapes))
    ctx, state, enter = context._context, watchdog._s, watchdog.enter
    collective = not point_to_point

    def checked(*args: Any, **kwargs: Any) -> Any:
        if collective and ctx["check_collectives"]:
            source = _user_line()
            seq = enter(name, gname, ranks, shape, dtype, source)
            try:
                check(seq, source)
                return kernel(*args, **kwargs)
            finally:
                state.busy = None
        # Send/Receive are rare and never checked: their report shows the source line
        enter(name, gname, ranks, shape, dtype, None if collective else _user_line(),
              collective)
        try:
            return kernel(*args, **kwargs)
        finally:
            state.busy = None
    return checked


def _mismatch(prim: Any, comm: Any, mine: str, source: str | None) -> str:
    """The slow path: gather every rank's description; the same message on every rank."""
    from mpi4py import MPI
    row = np.zeros(_ROW_BYTES, np.uint8)
    raw = (mine + (f" at {source}" if source else "")).encode()[:_ROW_BYTES]
    row[:len(raw)] = np.frombuffer(raw, np.uint8)
    rows = np.empty((comm.size, _ROW_BYTES), np.uint8)
    try:
        comm.Allgather([row, MPI.BYTE], [rows, MPI.BYTE])
    except MPI.Exception as err:
        reraise(prim, err)
    texts = [bytes(r).rstrip(b"\0").decode("utf-8", "replace") for r in rows]
    by_text: dict[str, list[int]] = {}
    for r, text in enumerate(texts):
        by_text.setdefault(text, []).append(r)
    sides = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {text}"
                      for text, rs in by_text.items())
    return (f"For the collective calls of group '{prim.group}', every rank should make the "
            f"same call (op, sequence number, shapes, dtypes and attributes), but got: "
            f"{sides}.")
