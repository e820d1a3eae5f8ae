"""The cost of issue 16's safety nets: the eager collective check and the watchdog.

    mpiexec -n 2 python benchmarks/reliability.py [--reps 30] [--sizes 8 65536]

Per size, in the same run, with timed blocks rotating the sides (each after a Barrier,
a block as long as its slowest rank, a cell the median per-call time over the blocks):
  * "raw": mpi4py's Allreduce into a fresh output (the reference);
  * "raw16": mpi4py's in-place Allreduce(MAX) of 16 bytes — what the check adds, by hand;
  * "off": msops `AllReduce()(x)` with `set_context(check_collectives=False)` — the
    watchdog only (line: ≤ raw + 1.0 µs);
  * "on": the default, `check_collectives=True` — plus the check (line: ≤ off + raw16 +
    0.5 µs);
  * "graph": a compiled Cell running that AllReduce (watchdog only, no check per step);
  * "hand": the same check written by hand around "raw" (the calling frame's site, a
    digest of op, shape, site and sequence number, the in-place 16-B Allreduce(MAX) of
    [d, -d], the comparison): what a check costs anyone, shown as on − hand;
  * "pair": "raw16" then "raw", nothing between: pair − raw is what one extra small
    collective costs a call (two back to back cost more than each timed alone), the
    issue's yardstick for on − off.
Then AllToAllV (explicit counts, 8 B a rank): the checked default with the check on (its
count exchange carries the check's digest) and off, against the same count check written
by hand with mpi4py (an Allgather of [block bytes, send counts, recv counts], compared
as bytes, then the Alltoallv); `check_counts=False` with the check off against a bare
Alltoallv (line for each: ≤ +1.5 µs). Prints µs per call. Not a test.

`--timer thread` times with this thread's CPU clock instead of the wall clock: on `-n 1`
(every MPI call returns at once) it isolates msops's own Python cost per call, steady
even on a loaded machine, where wall-clock timings of oversubscribed ranks are not.
"""
from __future__ import annotations

import argparse
import array
import statistics
import sys
import time
import zlib
from typing import Callable

import numpy as np


CLOCK = time.perf_counter


def time_sides(comm, sides: dict[str, Callable], reps: int, calls: int,
               setup: dict[str, Callable] | None = None) -> dict[str, float]:
    """Median µs per call of each side (blocks rotating ABC…, …CBA, each after a Barrier,
    as long as its slowest rank). `setup[name]()` runs before a side's block, untimed."""
    from mpi4py import MPI
    times: dict[str, list[float]] = {k: [] for k in sides}
    order = list(sides)
    for rep in range(reps):
        for name in (order if rep % 2 == 0 else order[::-1]):
            if setup and name in setup:
                setup[name]()
            fn = sides[name]
            comm.Barrier()
            start = CLOCK()
            for _ in range(calls):
                fn()
            mine = (CLOCK() - start) / calls
            times[name].append(comm.allreduce(mine, op=MPI.MAX))
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--calls", type=int, default=200, help="calls per timed block")
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 1 << 16])
    ap.add_argument("--timer", choices=("wall", "thread"), default="wall")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.timer == "thread" else time.perf_counter
    from mpi4py import MPI

    import msops as ms
    from msops import Tensor, nn, ops
    from msops.communication import init
    init()
    comm = MPI.COMM_WORLD
    n = comm.size

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.ar = ops.AllReduce()

        def construct(self, v):
            return self.ar(v)

    def check(on: bool) -> Callable[[], None]:
        return lambda: ms.set_context(check_collectives=on)

    rows = []
    for nbytes in args.sizes:
        x = np.ones(max(1, nbytes // 4), np.float32)
        t = Tensor(x)
        ar = ops.AllReduce()
        # GRAPH_MODE stays on: the Cell runs its compiled step (in PYNATIVE_MODE it would run
        # construct eagerly, with the check); primitives called outside a Cell run eagerly
        # in either mode
        ms.set_context(mode=ms.GRAPH_MODE)
        net = Net()
        net(t)
        digest = np.zeros(2, np.int64)
        spec16 = [digest, MPI.INT64_T]

        def raw() -> None:
            out = np.empty_like(x)
            comm.Allreduce([x, MPI.FLOAT], [out, MPI.FLOAT], MPI.SUM)

        def raw16() -> None:
            comm.Allreduce(MPI.IN_PLACE, spec16, MPI.MAX)

        sites: dict = {}
        seq = [0]
        signature = zlib.crc32(f"AllReduce sum {x.shape} float32".encode())
        pair = array.array("q", (0, 0))
        spec_pair = [pair, MPI.INT64_T]

        def hand() -> None:
            f = sys._getframe(1)
            site = sites.get((f.f_code, f.f_lasti))
            if site is None:
                site = sites[f.f_code, f.f_lasti] = zlib.crc32(
                    f"{f.f_code.co_filename}:{f.f_lineno}".encode()) << 30
            seq[0] = k = seq[0] + 1
            d = (signature ^ site) + k
            pair[0], pair[1] = d, -d
            comm.Allreduce(MPI.IN_PLACE, spec_pair, MPI.MAX)
            if pair[0] + pair[1]:
                raise ValueError("the ranks made different calls")
            raw()

        def pair_() -> None:
            comm.Allreduce(MPI.IN_PLACE, spec16, MPI.MAX)
            raw()

        # "off" and "on" are the same call; the context is set before each block
        sides = {"raw": raw, "raw16": raw16, "off": lambda: ar(t), "on": lambda: ar(t),
                 "graph": lambda: net(t), "hand": hand, "pair": pair_}
        med = time_sides(comm, sides, args.reps, args.calls,
                         {"off": check(False), "on": check(True)})
        ms.set_context(check_collectives=True)
        rows.append((nbytes, med))

    # AllToAllV, explicit counts, one float32 to every rank
    counts, displs = (1,) * n, tuple(range(n))
    xs = np.arange(n, dtype=np.float32)
    txs = Tensor(xs)
    f32, i64 = MPI.FLOAT, MPI.INT64_T
    row = np.array((4,) + counts + counts, np.int64)
    matrix = np.empty((n, 1 + 2 * n), np.int64)
    status, want = matrix[:, 0], np.full(n, 4, np.int64).tobytes()
    sent, expected = matrix[:, 1:1 + n], matrix[:, 1 + n:].T

    def bare() -> None:
        out = np.empty(n, np.float32)
        comm.Alltoallv([xs, (counts, displs), f32], [out, (counts, displs), f32])

    def by_hand() -> None:
        comm.Allgather([row, i64], [matrix, i64])
        if status.tobytes() != want or sent.tobytes() != expected.tobytes():
            raise ValueError("inconsistent count matrix")
        bare()

    checked, unchecked = ops.AllToAllV(), ops.AllToAllV(check_counts=False)
    a2a = {"by hand": by_hand, "on": lambda: checked(txs, counts, displs, counts, displs),
           "off": lambda: checked(txs, counts, displs, counts, displs),
           "bare": bare, "nocounts": lambda: unchecked(txs, counts, displs, counts, displs)}
    a2a_med = time_sides(comm, a2a, args.reps, args.calls,
                         {"on": check(True), "off": check(False), "nocounts": check(False)})
    ms.set_context(check_collectives=True)

    if comm.rank == 0:
        print(f"{n} ranks, {args.timer} clock, median µs per call (ratio to raw mpi4py):")
        print("| bytes | raw | raw 16-B Allreduce | check off | check on (default) | "
              "compiled graph | check by hand + raw | raw16 + raw | off − raw | on − off | "
              "pair − raw | on − hand |")
        print("| ---: " * 11 + "|")
        for nbytes, m in rows:
            cells = [f"{m['raw']:.1f}", f"{m['raw16']:.1f}"] + \
                [f"{m[k]:.1f} ({m[k] / m['raw']:.2f}×)" for k in ("off", "on", "graph")] + \
                [f"{m['hand']:.1f}", f"{m['pair']:.1f}", f"{m['off'] - m['raw']:+.2f}",
                 f"{m['on'] - m['off']:+.2f}", f"{m['pair'] - m['raw']:+.2f}",
                 f"{m['on'] - m['hand']:+.2f}"]
            print(f"| {nbytes} | " + " | ".join(cells) + " |")
        m = a2a_med
        print("\nAllToAllV, explicit counts, 4 B to each rank (µs per call):")
        print("| check by hand + Alltoallv | checked, check on (default) | checked, check off | "
              "bare Alltoallv | check_counts=False, check off |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        print(f"| {m['by hand']:.1f} | {m['on']:.1f} ({m['on'] - m['by hand']:+.2f}) | "
              f"{m['off']:.1f} ({m['off'] - m['by hand']:+.2f}) | {m['bare']:.1f} | "
              f"{m['nocounts']:.1f} ({m['nocounts'] - m['bare']:+.2f}) |")


if __name__ == "__main__":
    main()
