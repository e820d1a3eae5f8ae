"""The watchdog: no collective or Send/Receive waits forever, no rank leaves the others waiting.

Every collective and Send/Receive (eager or compiled) runs between the lines of
`call_lines`, which generated callers (an eager collective's call, a compiled step) hold
inline, or between `enter` and `leave` (calls made rarely). What a call is (op, group,
ranks, shape, dtype) is an `Entry` made once per kind of call; per call the group's
counter is incremented, the entry, its sequence number and source line are stored into
the next slot of a ring made at import (the recent calls a report prints), and the
counter `n` is set odd on entry and even on return: no allocation, no lock, no clock per
call. A daemon thread, started by `init()` on an MPI world of more than one rank, wakes
every `POLL_S`, samples `n` (unchanged and odd: still in the same call) and

* ends the job when this rank has been inside the same call for longer than the
  context's `op_timeout` (seconds; 0 waits forever): it asks the other ranks of the
  call's group what they are doing (they answer from their own watchdog thread, so a
  rank blocked in another collective still answers), prints this rank's recent calls
  and the answers, and calls MPI Abort, so every rank ends with a non-zero code;
* ends the job the same way when a rank of the group this rank waits in has ended its
  script (each rank tells the others when its script ends, in `_at_exit`) without
  entering this call.

Messages between watchdogs travel on their own duplicate of the world communicator as
fixed-size UTF-8 byte buffers (JSON; no pickle). An uncaught exception on any rank of a
world > 1 also aborts the job (`sys.excepthook`), as `mpiexec -m mpi4py` would.
"""
from __future__ import annotations

import atexit
import collections
import json
import sys
import threading
import time
from typing import Any, Callable, Sequence

from msops import context

__all__ = ["enter", "leave", "call_lines", "start", "recent",
           "EXIT_CODE", "POLL_S"]

#: how often the watchdog thread looks (seconds)
POLL_S = 0.05
#: the exit code of a job the watchdog ends
EXIT_CODE = 3
#: how long a rank that ended its script is given before a peer still waiting on it aborts:
#: its last messages (an eager Bcast root's data) may still be arriving
_EXIT_GRACE_S = 1.0
#: how long the timed-out rank collects the other ranks' answers
_ANSWER_WAIT_S = 1.5
_MSG_BYTES = 4096
_EXIT, _ASK, _ANSWER = 1, 2, 3
_RECENT = 16                  # a power of 2
_MASK = _RECENT - 1


class Entry:
    """What a call of one lowered signature is: op, group, the world ranks taking part, the
    input's shape and dtype, and the counter of its group's collectives (made once)."""

    __slots__ = ("op", "group", "ranks", "shape", "dtype", "collective", "counter")

    def __init__(self, op: str, group: str, ranks: Sequence[int], shape: Any = (),
                 dtype: Any = "", collective: bool = True) -> None:
        self.op, self.group, self.ranks = op, group, tuple(ranks)
        self.shape, self.dtype, self.collective = shape, dtype, collective
        # collectives are numbered per group; Send/Receive count on a list of their own
        self.counter = _s.counts.setdefault(group, [0]) if collective else [0]


class _Slot:
    """One place of the ring of recent calls, reused: the entry, its number, its source."""

    __slots__ = ("entry", "seq", "source")

    def __init__(self) -> None:
        self.entry: Entry | None = None
        self.seq, self.source = 0, None


def _text(entry: Entry, seq: int, source: str | None) -> str:
    kind = f"#{seq} " if entry.collective else ""
    where = f" at {source}" if source else ""
    data = f", x {entry.shape} {entry.dtype}" if entry.shape or entry.dtype else ""
    return f"{kind}{entry.op} (group '{entry.group}'{data}){where}"


class _State:
    #: 2 x the calls entered, + 1 while inside one: the call in progress (if n is odd) is in
    #: ring[(n >> 1) & _MASK]. The thread compares samples of n: no clock, no lock per call.
    n = 0
    ring = [_Slot() for _ in range(_RECENT)]
    counts: dict[str, list[int]] = {}    # group name -> [collectives entered]
    exited: dict[int, dict] = {}         # world rank -> its exit notice
    answers: dict[int, str] = {}
    sending: collections.deque = collections.deque(maxlen=64)   # buffers of recent sends
    thread: threading.Thread | None = None
    comm: Any = None                     # the watchdogs' own communicator (world dup)
    rank = 0
    size = 1
    stop = False
    finished = False


_s = _State()


def enter(op: str, group: str, ranks: Sequence[int], shape: Any = (), dtype: Any = "",
          source: str | None = None, collective: bool = True) -> int:
    """Record that this rank enters a call (`ranks`: the world ranks taking part); returns
    its sequence number in its group (0 for Send/Receive). For calls made rarely (the fast
    path is `call_lines`, with its Entry made once)."""
    entry = Entry(op, group, ranks, shape, dtype, collective)
    s = _s
    n = s.n + 1 if not s.n & 1 else s.n + 2
    slot = s.ring[(n >> 1) & _MASK]
    entry.counter[0] = seq = entry.counter[0] + 1
    slot.entry, slot.seq, slot.source = entry, seq, source
    s.n = n
    return seq if collective else 0


def leave() -> None:
    """Record that the call entered last has returned (or raised)."""
    if _s.n & 1:
        _s.n += 1


def recent() -> list[str]:
    """This rank's recent calls, oldest first (what a watchdog report prints)."""
    calls = (_s.n + 1) >> 1
    slots = [_s.ring[k & _MASK] for k in range(max(0, calls - _RECENT), calls)]
    return [_text(c.entry, c.seq, c.source) for c in slots]


def call_lines(bind: Callable[[str, Any], str], entry: Entry,
               source: str) -> tuple[list[str], list[str]]:
    """The lines a generated function (a compiled step, an eager collective call) runs
    before and after a watched call: `enter` and `leave`'s protocol inline, without a
    call. `bind(name, value) -> name` makes a value a free name; `source` is an expression
    of the call's source line. The lines set the locals `n`, `sl` and `seq` (the call's
    sequence number in its group). A generated caller runs outside any other watched
    call: `n` is even where these lines start."""
    s, ring = bind("wd", _s), bind("ring", _s.ring)
    counter = bind("counter", entry.counter)
    before = [f"n = {s}.n + 1", f"sl = {ring}[(n >> 1) & {_MASK}]",
              f"{counter}[0] = seq = sl.seq = {counter}[0] + 1",
              f"sl.entry = {bind('entry', entry)}", f"sl.source = {source}", f"{s}.n = n"]
    return before, [f"{s}.n = n + 1"]


# -- the thread ---------------------------------------------------------------------------------

def start(world_comm: Any) -> None:
    """Start the watchdog of an MPI world (once per process; a world of 1 needs none)."""
    from mpi4py import MPI
    if _s.thread is not None or world_comm.size == 1:
        return
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        print("msops: the watchdog needs MPI_THREAD_MULTIPLE; collectives have no timeout.",
              file=sys.stderr)
        return
    _s.comm = world_comm.Dup()
    _s.rank, _s.size = world_comm.rank, world_comm.size
    _s.thread = threading.Thread(target=_run, name="msops-watchdog", daemon=True)
    _s.thread.start()
    atexit.register(_at_exit)
    if sys.excepthook is sys.__excepthook__:
        sys.excepthook = _abort_on_exception


class _Call:
    """A snapshot of the call in progress, read from its ring slot by the thread."""

    __slots__ = ("n", "entry", "seq", "source")

    def __init__(self, n: int) -> None:
        slot = _s.ring[(n >> 1) & _MASK]
        self.n, self.entry, self.seq, self.source = n, slot.entry, slot.seq, slot.source

    def text(self) -> str:
        return _text(self.entry, self.seq, self.source)


def _current() -> _Call | None:
    n = _s.n
    return _Call(n) if n & 1 else None


def _run() -> None:
    last, since, checked = -1, 0.0, -1
    while not _s.stop:
        time.sleep(POLL_S)
        try:
            _serve()
        except Exception as err:                       # never die silently: say so, go on
            print(f"[rank {_s.rank}] msops watchdog: {err!r}", file=sys.stderr, flush=True)
        n = _s.n
        if n != last:
            last, since = n, time.monotonic()
            continue
        if not n & 1:
            continue
        if _s.exited and n != checked:              # a peer left before this call began
            checked = n
            _check_exited(_Call(n), wait=True)
        timeout = context._context["op_timeout"]
        waited = time.monotonic() - since
        if timeout > 0 and waited > timeout:
            call = _Call(n)
            _fire(call, f"{call.entry.op} has waited {waited:.1f} s, longer than op_timeout "
                        f"({timeout:g} s)")


def _serve() -> None:
    """Answer the other watchdogs' questions; note exit notices and answers."""
    from mpi4py import MPI
    comm, status = _s.comm, MPI.Status()
    while comm.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG, status):
        src, tag = status.Get_source(), status.Get_tag()
        data = bytearray(_MSG_BYTES)
        comm.Recv([data, MPI.BYTE], src, tag)
        text = bytes(data).rstrip(b"\0").decode("utf-8", "replace")
        if tag == _EXIT:
            _s.exited[src] = json.loads(text)
            call = _current()
            if call is not None:
                _check_exited(call, wait=True)
        elif tag == _ASK:
            _send(src, _ANSWER, _status_text()).Wait()
        elif tag == _ANSWER:
            _s.answers[src] = text


def _send(dest: int, tag: int, text: str) -> Any:
    from mpi4py import MPI
    data = bytearray(_MSG_BYTES)
    raw = text.encode()[:_MSG_BYTES]
    data[:len(raw)] = raw
    _s.sending.append(data)                      # alive until the send completes
    return _s.comm.Isend([data, MPI.BYTE], dest, tag)


def _status_text() -> str:
    call = _current()
    if _s.finished:
        return f"has ended its script ({_last_text()})"
    if call is not None:
        return f"waits in {call.text()}"
    return f"runs outside any collective or Send/Receive ({_last_text()})"


def _last_text() -> str:
    calls = (_s.n + 1) >> 1
    return f"last call {_Call(2 * calls - 1).text()}" if calls else "no call yet"


def _check_exited(call: _Call, wait: bool = False) -> None:
    """Abort when a rank `call` needs has ended its script without entering it."""
    if _s.finished:                                      # this rank is ending too
        return
    entry = call.entry
    for r in entry.ranks:
        notice = _s.exited.get(r)
        if notice is None or r == _s.rank:
            continue
        if entry.collective and notice["counts"].get(entry.group, 0) >= call.seq:
            continue                                     # it took part in this call, then left
        if wait:                                         # (only from the thread: it may sleep)
            time.sleep(_EXIT_GRACE_S)
            if _s.n != call.n:
                return
        _fire(call, f"rank {r} has ended its script ({notice['last']}) while this rank "
                    f"needs it")


def _fire(call: _Call, why: str) -> None:
    """Report and end the job: ask the group's other ranks, print, MPI Abort."""
    from mpi4py import MPI
    entry = call.entry
    others = [r for r in entry.ranks if r != _s.rank]
    _s.answers = {}
    reqs = [_send(r, _ASK, "") for r in others if r not in _s.exited]
    deadline = time.monotonic() + _ANSWER_WAIT_S
    while time.monotonic() < deadline and \
            len(_s.answers) < len([r for r in others if r not in _s.exited]):
        _serve_quietly()
        time.sleep(0.01)
    lines = [f"[rank {_s.rank}] msops watchdog: {why}; ending the job.",
             f"  this rank (world rank {_s.rank}) waits in {call.text()}"]
    for r in others:
        if r in _s.exited:
            lines.append(f"  rank {r}: has ended its script ({_s.exited[r]['last']})")
        elif r in _s.answers:
            lines.append(f"  rank {r}: {_s.answers[r]}")
        else:
            lines.append(f"  rank {r}: no answer (blocked outside msops, or gone)")
    missing = [r for r in others if not _same_call(_s.answers.get(r, ""), call)]
    if entry.collective and missing:
        lines.append(f"  not arrived in {entry.op} #{call.seq} of group '{entry.group}': "
                     f"rank(s) {missing}")
    lines.append("  recent calls of this rank (oldest first):")
    lines += [f"    {t}" for t in recent()]
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
    sys.stdout.flush()
    del reqs
    # a short grace: mpiexec relays the report before the abort tears its pipes down
    time.sleep(0.2)
    MPI.COMM_WORLD.Abort(EXIT_CODE)


def _same_call(answer: str, call: _Call) -> bool:
    """Whether another rank's answer says it waits in the same numbered call."""
    e = call.entry
    return answer.startswith(f"waits in #{call.seq} {e.op} (group '{e.group}'")


def _serve_quietly() -> None:
    try:
        _serve()
    except Exception:
        pass


# -- leaving ------------------------------------------------------------------------------------

def _at_exit() -> None:
    """This rank's script has ended: tell the others (a peer waiting on it aborts), wait
    until every rank has ended (the watchdog still ends a wait that times out), stop."""
    from mpi4py import MPI
    if _s.thread is None or MPI.Is_finalized():
        return
    _s.finished = True
    notice = json.dumps({"counts": {g: c[0] for g, c in _s.counts.items()},
                         "last": _last_text()})
    reqs = [_send(r, _EXIT, notice) for r in range(_s.size) if r != _s.rank]
    barrier = _s.comm.Ibarrier()
    enter("script end", "world_group", tuple(range(_s.size)), collective=False)
    while not barrier.Test():
        time.sleep(0.005)
    # every rank has sent its notice: receive them all before MPI is finalized
    while len(_s.exited) < _s.size - 1:
        time.sleep(0.005)
    leave()
    MPI.Request.Waitall(reqs)
    _s.stop = True
    _s.thread.join()


def _abort_on_exception(kind: type, value: BaseException, tb: Any) -> None:
    """An uncaught exception on one rank of a world > 1 ends the whole job (no hang)."""
    sys.__excepthook__(kind, value, tb)
    sys.stderr.flush()
    sys.stdout.flush()
    from mpi4py import MPI
    if not MPI.Is_finalized():
        # a short grace: ranks raising the same error together each get to print it
        time.sleep(0.2)
        MPI.COMM_WORLD.Abort(1)
