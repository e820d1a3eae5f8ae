"""The eager collective check: every rank makes the same collective call, or every rank raises.

An eager collective call is described by its op, group, sequence number in the group,
input shape(s) and dtype(s), attributes (reduce op, root, dims, …) and the source line that
calls the primitive. With the check on (context key `check_collectives`, default True;
MSOPS_CHECK_COLLECTIVES=0 turns it off) each call first runs ONE extra small collective on
the op's group: an Allreduce(MAX) of [d, -d] (two int64 in a buffer made with the group,
persistent where MPI has it: communication/digest_exchange.py), d a 62-bit digest of the
description, whose result holds the max and the min of every rank's d, so every rank
learns in one call whether all digests are equal. Only when they
differ does every rank gather every rank's full description (the slow path) and raise the
same ValueError showing each side.

What is fixed per lowered signature (op, group, shapes, dtypes, attributes) is hashed once;
the calling line once per call site (common/source.py; per call a frame lookup and a dict
hit): the user's line when user code calls the primitive, the msops API's own line when
one does (save_checkpoint called from two branches is one SPMD call), while reports show
the user's line. Per call: d = (signature hash ^ site hash) + sequence number, two stores
and the Allreduce. A call that exchanges data of its own before it moves anything (the
AllToAllV count exchange) carries d in that exchange instead (`carried`): no extra
collective at all. Compiled graphs are checked once at compile instead
(parallel/spmd_check.py). Every eager call, checked or not, runs inside the watchdog
(communication/watchdog.py), whose per-call protocol the wrappers here inline.
"""
from __future__ import annotations

import functools
import hashlib
import sys
from typing import Any, Callable, Sequence

import numpy as np

from msops import context
from msops.common import source
from msops.common.codegen import Source, indent, inline_lines
from msops.common.source import call_site, site_of, user_site
from msops.communication import watchdog
from msops.primitives.mpi import reraise
from msops.primitives.primitive import remember

__all__ = ["eager_kernel", "describe", "enabled", "take_part", "refuse", "Disagreement"]

#: attributes that differ between ranks by design, or say nothing about the call
_LOCAL_ATTRS = frozenset({"rank", "rank_id", "rank_size", "group", "in_strategy",
                          "out_strategy", "no_eliminate", "side_effect_io", "side_effect_mem"})
_ROW_BYTES = 1024


class Disagreement(ValueError):
    """Raised by an op's own cross-rank exchange (AllToAllV's counts) when the ranks' rows
    differ. Its message stands alone (the op's own error, where no eager check wraps the
    call); under the check, `eager_kernel` turns it into the check's error showing each
    rank's side (`side`: this rank's part of the call the op alone knows, `detail`: what
    the op found wrong). `gather=False`: some rank is not in the error exchange (its own
    arguments failed before the call), so the message is raised as it is."""

    def __init__(self, message: str, detail: str | None = None, side: str = "",
                 gather: bool = True) -> None:
        super().__init__(message)
        self.detail, self.side, self.gather = detail, side, gather


def _hash62(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 2


def _shape_text(a: Any) -> str:
    if a.kind == "const":
        return "const"
    if isinstance(a.dtype, tuple):
        return "(" + ", ".join(f"{list(s)} {d}" for s, d in zip(a.shape, a.dtype)) + ")"
    return f"{list(a.shape)} {a.dtype}"


def describe(prim: Any, in_abstracts: Sequence[Any], with_shapes: bool = True) -> str:
    """`AllReduce(op='sum') on x [2, 3] Float32`: what every rank's call must agree on
    (without shapes: the dtypes only, `AllToAllV(block_size=1, …) on Int8`)."""
    attrs = ", ".join(f"{k}={v!r}" for k, v in prim.attrs.items() if k not in _LOCAL_ATTRS)
    text = f"{prim.name}({attrs})"
    tensors = [a for a in in_abstracts if a.kind != "const"]
    shown = [_shape_text(a) if with_shapes else str(a.dtype) for a in tensors]
    shown += _agreed_consts(prim, in_abstracts)
    if shown:
        text += " on " + ", ".join(shown)
    return text


def _agreed_consts(prim: Any, in_abstracts: Sequence[Any]) -> list[str]:
    """The constant inputs every rank must pass alike (`prim.consts_agree`), as shown."""
    if not getattr(prim, "consts_agree", False):
        return []
    return [repr(list(a.value) if isinstance(a.value, (list, tuple)) else a.value)
            for a in in_abstracts if a.kind == "const"]


def _shapes(in_abstracts: Sequence[Any], out_abstract: Any = None) -> tuple[Any, Any]:
    """The shape and dtype a watchdog report shows: the first tensor input's, else (no
    inputs: Receive, Barrier) the output's."""
    tensors = [a for a in in_abstracts if a.kind != "const"]
    if tensors:
        return tensors[0].shape, tensors[0].dtype
    if out_abstract is not None:
        return getattr(out_abstract, "shape", ()), getattr(out_abstract, "dtype", "")
    return (), ""


def enabled() -> bool:
    """Whether eager collectives are checked (context key `check_collectives`)."""
    return context._context["check_collectives"]


def take_part(prim: Any, exchange: Callable[[], None]) -> None:
    """Take part in the exchange the other ranks wait in (`exchange`, e.g. AllToAllV's
    count row marked invalid) for a call that failed on this rank before it began (its own
    arguments are invalid), counted as a call so that the group's sequence numbers stay in
    step with the ranks that made it."""
    watchdog.enter(prim.name, prim.group, prim._group.ranks)
    try:
        exchange()
    finally:
        watchdog.leave()


def refuse(prim: Any, err: Exception) -> None:
    """A collective call whose own arguments failed on this rank (`err`, before the call
    began), the check on: take part in the check the other ranks wait in, with a digest no
    call has (negative, from err's text; a call's is >= 0). When every rank refused with
    the same error, each raises it (this returns); otherwise every rank joins the slow
    path and raises the same ValueError, this rank's side showing `err`. Without a
    communicator, or with the check off, this returns at once (then a rank that did make
    the call waits in it until the watchdog's timeout)."""
    comm = prim._group._comm
    if comm is None or prim.point_to_point or not enabled():
        return
    from mpi4py import MPI
    seq = watchdog.enter(prim.name, prim.group, prim._group.ranks)
    try:
        try:
            if prim._group.digests.agree(-1 - _hash62(f"{type(err).__name__}: {err}")):
                return                              # every rank refused alike
        except MPI.Exception as mpi_err:
            reraise(prim, mpi_err)
        mine = f"#{seq} {prim.name} refused: {str(err).rstrip('.')}"
        message = _mismatch(prim, comm, mine, None)
    finally:
        watchdog.leave()
    raise ValueError(message) from err


def eager_kernel(prim: Any, kernel: Callable, in_abstracts: Sequence[Any],
                 point_to_point: bool = False, same_shapes: bool = True,
                 out_abstract: Any = None, carried: bool = False) -> Callable:
    """`kernel` run inside the watchdog and, for a collective with the check on, after the
    cross-rank check: a generated function (common/codegen.py) holding the watchdog's
    protocol, the check and a call of `kernel`. It offers its lines (`inline`, with the
    kernel's own lines when it has them: a buffer-call collective's MPI call), so the
    primitive's eager call of a repeated signature splices the whole of it. The function is
    made once per what the check compares (`_EagerCall`): a signature that differs only in
    constants (AllToAllV's counts) gets it with its own kernel bound, without generating
    anything. `same_shapes=False`: the inputs' shapes may differ between ranks (AllToAllV),
    so only their dtypes are compared. `carried`: the kernel's own exchange carries the
    digest (it reads `prim._digest`, 0 when unchecked, and raises Disagreement when the
    ranks' rows differ) instead of the extra Allreduce."""
    comm = prim._group._comm
    if comm is None:                 # simulated or not a member: the kernel raises the error
        return kernel
    tensors = tuple((a.shape if same_shapes else None, a.dtype)
                    for a in in_abstracts if a.kind != "const")
    key = (tensors, None if tensors else _shapes(in_abstracts, out_abstract),
           point_to_point, same_shapes, carried, tuple(_agreed_consts(prim, in_abstracts)))
    calls = prim.__dict__.setdefault("_eager_calls", {})
    call = calls.get(key)
    if call is None:
        call = remember(calls, key, _EagerCall(prim, comm, in_abstracts, point_to_point,
                                               same_shapes, out_abstract, carried))
    return call.bound(kernel)


class _EagerCall:
    """The eager wrapper of one kind of call (what the check compares: op, group,
    attributes, tensor shapes and dtypes): its watchdog Entry, its check, and the function
    generated once with `kernel` a free name, bound again for each lowered kernel."""

    def __init__(self, prim: Any, comm: Any, in_abstracts: Sequence[Any], point_to_point: bool,
                 same_shapes: bool, out_abstract: Any, carried: bool) -> None:
        group = prim._group
        shape, dtype = _shapes(in_abstracts, out_abstract)
        self.entry = watchdog.Entry(prim.name, group.name, group.ranks, shape, dtype,
                                    not point_to_point)
        self.check = None if point_to_point else _Check(prim, comm, in_abstracts, same_shapes,
                                                        carried)
        self.src = Source()
        lines = self.lines(None, self.src, ["*args"], None, "out")
        body = "".join(f"    {line}\n" for line in lines)
        self.make = self.src.make(f"<msops eager {prim.name}>",
                                  f"def eager(*args):\n{body}    return out\n")

    def bound(self, kernel: Callable) -> Callable:
        """The wrapper of `kernel`; its `inline` gives the lines with the kernel's own."""
        fn = self.make(**{**self.src.bound, "kernel": kernel})
        fn.inline = functools.partial(self.lines, kernel)
        return fn

    def lines(self, kernel: Callable | None, src: Source, args: Sequence[str], out: None,
              target: str) -> list[str]:
        """The call as lines, `kernel(*args)` into `target` (an eager call has no `out`);
        kernel None: a call of the free name `kernel` (the generated wrapper's)."""
        run = ([f"{target} = {src.bind('kernel', None)}({', '.join(args)})"] if kernel is None
               else inline_lines(kernel, src, args, None, target))
        if self.check is None:       # Send/Receive: never checked; reports show the line
            return _watched(src, self.entry, f"{src.bind('call_site', call_site)}(1).text", run)
        return [f"if not {src.bind('ctx', context._context)}['check_collectives']:",
                *indent(_watched(src, self.entry, "None", run)), "else:",
                *indent(self.check.lines(src, self.entry, run))]


def _watched(src: Source, entry: Any, source: str, run: list[str],
             guard: Sequence[str] = ()) -> list[str]:
    """`run` inside the watchdog, the call's line `source`; `guard`: lines run first
    inside the watched call (the check)."""
    before, after = watchdog.call_lines(src.bind, entry, source)
    return [*before, "try:", *indent([*guard, *run]), "finally:", *indent(after)]


class _Check:
    """The cross-rank check of one kind of call: what is hashed once, the call-site memo,
    the error; `lines` writes it into a generated call."""

    def __init__(self, prim: Any, comm: Any, in_abstracts: Sequence[Any], same_shapes: bool,
                 carried: bool) -> None:
        self.prim, self.comm, self.carried = prim, comm, carried
        self.static = describe(prim, in_abstracts, same_shapes)
        self.high = _hash62(f"{prim._group.name}|{self.static}")
        # the line that calls the primitive: the caller of Primitive.__call__, two frames up.
        # In user code that is the user's line; inside an msops API (save_checkpoint, …) the
        # API's own line, the same on every rank by construction, and the user's line is
        # found by a walk, for show. `memo` = [code, instruction offset, the site's digest,
        # the line shown] of the last call's site: a call from the same place compares two
        # frame attributes.
        self.memo: list = [None, -1, 0, None]
        self.exchange = prim._group.digests        # per call two stores into its buffer

    def locate(self, f: Any) -> list:
        site = source.sites.get((id(f.f_code), f.f_lasti))
        if site is None:
            site = site_of(f)
        if site is None:    # a thin public wrapper (msops/ops/): the user's line above it
            # counts, and it changes from call to call, so this site is located every time
            site = user_site(f)
            self.memo[:] = [None, -1, self.high ^ site.hash, site.text]
            return self.memo
        if site.user:
            self.memo[:] = [f.f_code, f.f_lasti, self.high ^ site.hash, site.text]
        else:   # an msops API's line (alike on every rank): the user's line above it is shown,
            # and it changes from call to call, so this site is located every time
            self.memo[:] = [None, -1, self.high ^ site.hash, user_site(f).text]
        return self.memo

    def failed(self, seq: int, shown: str | None, side: str = "",
               detail: str | None = None) -> ValueError:
        mine = f"#{seq} {self.static}" + (f", {side}" if side else "")
        return ValueError(_mismatch(self.prim, self.comm, mine, shown, detail))

    def lines(self, src: Source, entry: Any, run: list[str]) -> list[str]:
        """A checked call: find the calling line, then either the extra in-place
        Allreduce(MAX) of [d, -d] before `run`, or (`carried`) `run` with `prim._digest`
        = d."""
        from mpi4py import MPI
        bind = src.bind
        failed, prim = bind("failed", self.failed), bind("prim", self.prim)
        find = [f"f = {bind('getframe', sys._getframe)}(2)", f"m = {bind('memo', self.memo)}",
                "if f.f_code is not m[0] or f.f_lasti != m[1]:",
                f"    m = {bind('locate', self.locate)}(f)", "shown = m[3]"]
        if self.carried:
            before, after = watchdog.call_lines(bind, entry, "shown")
            return [*find, *before, f"{prim}._digest = m[2] + seq", "try:", *indent(run),
                    f"except {bind('Disagreement', Disagreement)} as err:",
                    "    if not err.gather:", "        raise",
                    f"    raise {failed}(seq, shown, err.side, err.detail) from None",
                    "finally:", f"    {prim}._digest = 0", *indent(after)]
        buf = bind("buf", self.exchange.buf)
        guard = ["d = m[2] + seq", f"{buf}[0] = d", f"{buf}[1] = -d", "try:",
                 *indent(self.exchange.call_lines(bind)),
                 f"except {bind('MPIException', MPI.Exception)} as err:",
                 f"    {bind('reraise', reraise)}({prim}, err)",
                 f"if {buf}[0] + {buf}[1]:               # max - min of the ranks' d: not equal",
                 f"    raise {failed}(seq, shown)"]
        return [*find, *_watched(src, entry, "shown", run, guard)]


def _mismatch(prim: Any, comm: Any, mine: str, source: str | None,
              detail: str | None = None) -> str:
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
            f"same call (op, sequence number, shapes, dtypes, attributes and source line), "
            f"but got: {sides}." + (f" {prim.name}: {detail}" if detail else ""))
