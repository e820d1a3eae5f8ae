"""The cost of issue 16's safety nets: the eager collective check and the watchdog.

    mpiexec -n 2 python benchmarks/reliability.py [--reps 30] [--sizes 8 65536]

Per size, in the same run, with timed blocks rotating the sides (each after a Barrier,
a block as long as its slowest rank, a cell the median per-call time over the blocks):
  * "raw": mpi4py's Allreduce into a fresh output (the reference);
  * "off": msops `AllReduce()(x)` with `set_context(check_collectives=False)` — the
    watchdog's enter/leave only;
  * "on": the default, `check_collectives=True` — plus one Allreduce of 16 bytes;
  * "graph": a compiled Cell running that AllReduce (watchdog only, no check per step).
Prints µs per call and each side's ratio to "raw" and "off" to "raw". Not a test.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def per_call(comm, fn, calls: int) -> float:
    """Seconds per call of fn on the slowest rank (one block after a Barrier)."""
    from mpi4py import MPI
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return comm.allreduce((time.perf_counter() - start) / calls, op=MPI.MAX)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--calls", type=int, default=200, help="calls per timed block")
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 1 << 16])
    args = ap.parse_args()
    from mpi4py import MPI

    import msops as ms
    from msops import Tensor, nn, ops
    from msops.communication import init
    init()
    comm = MPI.COMM_WORLD

    class Net(nn.Cell):
        def __init__(self) -> None:
            super().__init__()
            self.ar = ops.AllReduce()

        def construct(self, v):
            return self.ar(v)

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

        def raw() -> None:
            out = np.empty_like(x)
            comm.Allreduce([x, MPI.FLOAT], [out, MPI.FLOAT], MPI.SUM)

        def off() -> None:
            ms.set_context(check_collectives=False)
            ar(t)

        def on() -> None:
            ms.set_context(check_collectives=True)
            ar(t)

        def graph() -> None:
            net(t)

        sides = {"raw": raw, "off": off, "on": on, "graph": graph}
        # set_context is inside the timed side: time it alone, to subtract
        set_cost = per_call(comm, lambda: ms.set_context(check_collectives=True), args.calls)
        times: dict[str, list[float]] = {k: [] for k in sides}
        order = list(sides)
        for rep in range(args.reps):
            for name in (order if rep % 2 == 0 else order[::-1]):
                ms.set_context(check_collectives=True)
                fn = sides[name]
                calls = args.calls
                comm.Barrier()
                start = time.perf_counter()
                for _ in range(calls):
                    fn()
                mine = (time.perf_counter() - start) / calls
                cost = mine - (set_cost if name in ("on", "off") else 0.0)
                times[name].append(comm.allreduce(cost, op=MPI.MAX))
        ms.set_context(check_collectives=True)
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        rows.append((nbytes, med))
    if comm.rank == 0:
        print(f"{comm.size} ranks, median µs per call (ratio to raw mpi4py):")
        print("| bytes | raw | check off | check on (default) | compiled graph |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for nbytes, m in rows:
            cells = [f"{m['raw']:.1f}"] + [f"{m[k]:.1f} ({m[k] / m['raw']:.2f}×)"
                                          for k in ("off", "on", "graph")]
            print(f"| {nbytes} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
