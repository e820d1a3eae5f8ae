"""Collectives: msops eager calls and a compiled graph against raw mpi4py, in the same run.

    mpiexec -n 2 python benchmarks/collectives.py [--reps 30] [--block-ms 4] [--json]
    python benchmarks/collectives.py --all [--runs 3]   # -n 2 and -n 4, one Markdown table

Each row times one msops call as users write it (`prim(Tensor)`, or a compiled Cell)
against two hand-written mpi4py references doing the same (float32, same sizes):
  * "prealloc": the upper-case buffer call into an output preallocated once — what a
    careful user writes; a Python call path has a fixed cost per call, shown as Δ µs
    (line: ≤ 1.5 µs at 8 B for an eager collective, ≤ 3 µs for the compiled graph);
  * "fresh": the same call allocating its output each call, as msops must (it hands the
    output to the user) — the per-byte comparison, shown as a ratio (line: ≤ 1.05 at
    ≥ 1 MiB).
  * "floor" (the AllReduce and graph rows): the same calls inside the least a Python
    call that returns a fresh Tensor must do — one call, the argument's type, shape and
    dtype compared, the result wrapped — with no watchdog and no check. Shown as Δ µs over
    prealloc: what a line below it would ask of any Python call path on this machine.
The eager cross-rank check (issue 16) is off unless `--check`: these rows time the call
path; benchmarks/reliability.py times the check. Timed blocks rotate the three sides (ABC, CBA, …), each after a Barrier; a block lasts as
long as its slowest rank; a cell is the median per-call time over the blocks. Sizes are
bytes of each rank's input (ops that split the input into one block a rank round it up
to one float32 a rank). Outputs are compared with the references' before timing.

AllToAllV rows: the checked default against the same count check written by hand (the
ruling's line), `check_counts=False` against a bare `Alltoallv`, and the derived form
against what a raw user with dynamic counts must do. The graph row runs AllReduce →
× 0.5 → + x → AllGather compiled, against the same steps by hand with the intermediates
preallocated and a fresh array for the result (both its references are that).
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

import numpy as np

SIZES = (8, 1 << 10, 1 << 16, 1 << 20, 1 << 24)
RANK_COUNTS = (2, 4)
SIDES = ("ours", "prealloc", "fresh", "floor")


def size_label(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


# -- the cases: (msops call, preallocating reference, allocating reference) ---------------------

def build_cases(comm, nbytes: int) -> dict[str, tuple]:
    """name -> (ours, prealloc, fresh, floor, check): zero-argument callables (floor: None
    for most rows); check() compares their results."""
    from mpi4py import MPI

    import msops as ms
    from msops import Tensor, nn, ops
    n = comm.size
    f32, SUM = MPI.FLOAT, MPI.SUM
    m = max(1, nbytes // 4)                       # elements of x
    k = max(1, m // n)                            # elements a rank (split ops)
    rng = np.random.default_rng(comm.rank)
    x = rng.standard_normal(m).astype(np.float32)
    xs = rng.standard_normal(n * k).astype(np.float32)
    tx, txs = Tensor(x), Tensor(xs)
    part = functools.partial
    cases = {}

    def result(got):
        if isinstance(got, tuple):
            got = got[0]
        return got.asnumpy() if hasattr(got, "asnumpy") else got

    def case(name: str, ours: Callable, buffer_call: Callable, shape: tuple,
             fresh_only: bool = False, floor: Callable | None = None):
        """`buffer_call(out)` is the raw call writing into `out` (and returning it);
        `fresh_only`: both references allocate what they return."""
        def fresh():
            return buffer_call(np.empty(shape, np.float32))
        prealloc = fresh if fresh_only else part(buffer_call, np.empty(shape, np.float32))

        def check():
            want = result(fresh())
            for got in (ours(), prealloc()) + ((floor(),) if floor else ()):
                assert np.array_equal(result(got), want), name
        cases[name] = (ours, prealloc, fresh, floor, check)

    # the floors: written out in one function each, as the least Python there can be
    new, f32_type, xshape, xdtype = object.__new__, ms.float32, x.shape, x.dtype

    def floor_allreduce(t):
        if type(t) is not Tensor:
            raise TypeError("a Tensor")
        v = t._data
        if v.shape != xshape or v.dtype is not xdtype:
            raise ValueError("the compiled shape and dtype")
        out = np.empty(xshape, xdtype)
        comm.Allreduce([v, f32], [out, f32], SUM)
        r = new(Tensor)
        r._data, r._dtype = out, f32_type
        return r

    def raw(method, send, *extra):
        def call(out):
            method([send, f32], [out, f32], *extra)
            return out
        return call

    case("AllGather", part(ops.AllGather(), tx), raw(comm.Allgather, x), (n * m,))
    case("AllReduce", part(ops.AllReduce(), tx), raw(comm.Allreduce, x, SUM), (m,),
         floor=part(floor_allreduce, tx))
    case("ReduceScatter", part(ops.ReduceScatter(), txs),
         raw(comm.Reduce_scatter_block, xs, SUM), (k,))
    case("AlltoAll", part(ops.AlltoAll(n, 0, 0), txs), raw(comm.Alltoall, xs), (n * k,))

    def bcast(out):                                # the root sends x itself, as msops does
        buf = x if comm.rank == 0 else out
        comm.Bcast([buf, f32], 0)
        return buf
    case("Broadcast", part(ops.Broadcast(0), (tx,)), bcast, (m,))

    counts, displs = (k,) * n, tuple(range(0, n * k, k))

    def alltoallv(out):
        comm.Alltoallv([xs, (counts, displs), f32], [out, (counts, displs), f32])
        return out
    case("AllToAllV, check_counts=False vs Alltoallv",
         part(ops.AllToAllV(check_counts=False), txs, counts, displs, counts, displs),
         alltoallv, (n * k,))

    # the same check by hand: gather every rank's row [block bytes, send counts, recv
    # counts], then compare every rank's block bytes and what each rank sends with what its
    # receiver expects (bytes of views made once), then the Alltoallv
    row = np.array((4,) + counts + counts, np.int64)
    matrix = np.empty((n, 1 + 2 * n), np.int64)
    status, want = matrix[:, 0], np.full(n, 4, np.int64).tobytes()
    sent, expected, i64 = matrix[:, 1:1 + n], matrix[:, 1 + n:].T, MPI.INT64_T

    def checked_by_hand(out):
        comm.Allgather([row, i64], [matrix, i64])
        if status.tobytes() != want or sent.tobytes() != expected.tobytes():
            raise ValueError("inconsistent count matrix")
        return alltoallv(out)
    case("AllToAllV checked (default) vs the check by hand",
         part(ops.AllToAllV(), txs, counts, displs, counts, displs), checked_by_hand, (n * k,))

    # derived receive side: a raw user exchanges the counts, then sizes the output
    sc_arr, rc_arr = np.array(counts, np.int32), np.empty(n, np.int32)

    def derived(_):
        comm.Alltoall([sc_arr, MPI.INT], [rc_arr, MPI.INT])
        rc = rc_arr.tolist()
        rd = list(itertools.accumulate(rc[:-1], initial=0))
        got = np.empty(sum(rc), np.float32)
        comm.Alltoallv([xs, (counts, displs), f32], [got, (rc, rd), f32])
        return got
    case("AllToAllV derived, a2av(x, send_counts)", part(ops.AllToAllV(), txs, counts),
         derived, (n * k,))

    # a compiled graph of collectives and element-wise ops, against the same steps by hand
    half = np.float32(0.5)

    class Chain(nn.Cell):
        def __init__(self):
            super().__init__()
            self.all_reduce, self.all_gather = ops.AllReduce(), ops.AllGather()
            self.mul, self.add = ops.Mul(), ops.Add()
            self.half = Tensor(np.array(half))

        def construct(self, v):
            return self.all_gather(self.add(self.mul(self.all_reduce(v), self.half), v))
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Chain()
    reduced, scaled, summed = (np.empty(m, np.float32) for _ in range(3))

    def by_hand(out):
        comm.Allreduce([x, f32], [reduced, f32], SUM)
        np.multiply(reduced, half, out=scaled)
        np.add(scaled, x, out=summed)
        comm.Allgather([summed, f32], [out, f32])
        return out

    def floor_graph(t):
        if type(t) is not Tensor:
            raise TypeError("a Tensor")
        v = t._data
        if v.shape != xshape or v.dtype is not xdtype:
            raise ValueError("the compiled shape and dtype")
        out = np.empty(n * m, np.float32)
        comm.Allreduce([v, f32], [reduced, f32], SUM)
        np.multiply(reduced, half, out=scaled)
        np.add(scaled, v, out=summed)
        comm.Allgather([summed, f32], [out, f32])
        r = new(Tensor)
        r._data, r._dtype = out, f32_type
        return r
    case("graph: AllReduce, Mul, Add, AllGather", part(net, tx), by_hand, (n * m,),
         fresh_only=True, floor=part(floor_graph, tx))
    return cases


# -- timing ---------------------------------------------------------------------------------

def per_call(comm, fn: Callable, calls: int) -> float:
    """Seconds a call of fn over one block of `calls` calls, after a Barrier."""
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def time_sides(comm, sides: tuple, reps: int, block_s: float) -> dict:
    """Median per-call µs of each side over `reps` rotated blocks each."""
    from mpi4py import MPI
    for fn in sides:
        per_call(comm, fn, 3)                            # warm caches, allocator, plans
    guess = np.array([min(per_call(comm, fn, 3) for fn in sides)])
    comm.Allreduce(MPI.IN_PLACE, guess, MPI.MAX)         # every rank runs the same counts
    calls = max(1, min(2000, int(block_s / max(guess[0], 1e-7))))
    times = np.empty((len(sides), reps))
    for r in range(reps):
        order = range(len(sides)) if r % 2 == 0 else reversed(range(len(sides)))
        for which in order:
            times[which, r] = per_call(comm, sides[which], calls)
    comm.Allreduce(MPI.IN_PLACE, times, MPI.MAX)         # a block lasts as long as its slowest rank
    medians = np.median(times, axis=1) * 1e6
    return {f"{s}_us": float(t) for s, t in zip(SIDES, medians)} | {"calls": calls}


def run_ranks(args) -> list[dict]:
    """Under mpiexec: every case at every size; rows (on every rank)."""
    from mpi4py import MPI

    import msops as ms
    from msops.communication import init
    init()
    # the call path itself, as before issue 16's check; its cost: benchmarks/reliability.py
    ms.set_context(check_collectives=args.check)
    comm = MPI.COMM_WORLD
    rows = []
    for nbytes in args.sizes:
        cases = build_cases(comm, nbytes)
        for name, (ours, prealloc, fresh, floor, check) in cases.items():
            if args.only and not any(s.lower() in name.lower() for s in args.only):
                continue
            check()
            reps = args.reps if nbytes < (1 << 20) else max(8, args.reps // 2)
            sides = (ours, prealloc, fresh) + ((floor,) if floor else ())
            r = time_sides(comm, sides, reps, args.block_ms / 1e3)
            rows.append(dict(r, op=name, bytes=nbytes, ranks=comm.size))
            if comm.rank == 0 and not args.json:
                shown = (f"  floor {r['floor_us']:7.1f} ({r['floor_us'] - r['prealloc_us']:+6.2f})"
                         if floor else "")
                print(f"{name:50s} {size_label(nbytes):>7s}  msops {r['ours_us']:9.1f} µs  "
                      f"prealloc {r['prealloc_us']:9.1f} ({r['ours_us'] - r['prealloc_us']:+6.2f})"
                      f"  fresh {r['fresh_us']:9.1f} (x{r['ours_us'] / r['fresh_us']:5.3f})"
                      + shown, flush=True)
        del cases
    return rows


# -- the driver: both rank counts, one table -------------------------------------------------

def launch(n: int, args) -> list[dict]:
    cmd = ["mpiexec", "-n", str(n), sys.executable, os.path.abspath(__file__), "--json",
           "--reps", str(args.reps), "--block-ms", str(args.block_ms),
           "--sizes", *map(str, args.sizes)]
    if args.only:
        cmd += ["--only", *args.only]
    if args.check:
        cmd.append("--check")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(runs: dict[int, list[list[dict]]]) -> str:
    """One Markdown row per (op, size): per rank count, medians over the runs of msops's
    µs, its Δ against the preallocating reference and its ratio to the allocating one."""
    def cell(rows: list[dict]) -> str:
        ours = statistics.median(r["ours_us"] for r in rows)
        delta = statistics.median(r["ours_us"] - r["prealloc_us"] for r in rows)
        ratio = statistics.median(r["ours_us"] / r["fresh_us"] for r in rows)
        floor = (f"{statistics.median(r['floor_us'] - r['prealloc_us'] for r in rows):+.1f}"
                 if "floor_us" in rows[0] else "")
        return f"{_fmt_us(ours)} | {delta:+.1f} | {floor} | {ratio:.3f}"
    head = "| op | size / rank |" + "".join(
        f" msops µs (n={n}) | Δ prealloc µs (n={n}) | floor's Δ (n={n}) | ratio fresh (n={n}) |"
        for n in runs)
    lines = [head, "|" + " --- |" * 2 + " ---: |" * 4 * len(runs)]
    first = next(iter(runs.values()))[0]
    for i, row in enumerate(first):
        cells = [cell([run[i] for run in per_n]) for per_n in runs.values()]
        lines.append(f"| {row['op']} | {size_label(row['bytes'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _fmt_us(us: float) -> str:
    return f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="launch -n 2 and -n 4, print one table")
    ap.add_argument("--runs", type=int, default=1, help="with --all: launches per rank count")
    ap.add_argument("--ranks", type=int, nargs="+", default=list(RANK_COUNTS))
    ap.add_argument("--reps", type=int, default=30, help="timed blocks of each side")
    ap.add_argument("--block-ms", type=float, default=4.0, help="target length of a block")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--only", nargs="+", help="ops whose name contains one of these")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (rank 0)")
    ap.add_argument("--check", action="store_true",
                    help="keep the eager cross-rank check on (default: off, see reliability.py)")
    args = ap.parse_args()
    if args.all:
        runs: dict[int, list] = {n: [] for n in args.ranks}
        for _ in range(args.runs):                      # alternate rank counts between runs
            for n in args.ranks:
                runs[n].append(launch(n, args))
                print(f"  ran -n {n}", file=sys.stderr, flush=True)
        print(table(runs))
        return
    rows = run_ranks(args)
    from mpi4py import MPI
    if args.json and MPI.COMM_WORLD.rank == 0:
        print(json.dumps(rows), flush=True)


if __name__ == "__main__":
    main()
