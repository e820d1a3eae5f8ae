"""Collectives: msops primitives against raw mpi4py buffer calls, in the same run.

    mpiexec -n 2 python benchmarks/collectives.py [--reps 40] [--block-ms 4] [--json]
    python benchmarks/collectives.py --all [--runs 3]   # -n 2 and -n 4, one Markdown table

Each row times the eager primitive call as users write it (`prim(Tensor)`) against the
upper-case mpi4py call a careful user writes by hand (float32, the same sizes, outputs
preallocated once, each at the offset within a 4 KiB page of msops's own output, so both
sides copy with the same alignment; see same_page_offset). Timed blocks alternate msops / raw (ABBA), each after a Barrier,
so drift and the neighbours' load hit both; a block lasts as long as its slowest rank,
and a row shows the median per-call time of each side, their ratio and the difference.
Sizes are bytes of each rank's input; ops that split the input into one block a rank
(ReduceScatter, AlltoAll, AllToAllV) round it up to one float32 a rank (8 B -> 16 B
on 4 ranks). Outputs are compared with the raw call's before timing.

AllToAllV's checked form is timed twice: against a bare Alltoallv (what the check
costs) and against the same check done by hand (what msops adds to it).

Extra rows per size: AllGather's lowered kernel alone and with its result wrapped in a
Tensor (where the wrapper's time goes), and three controls timing mpi4py against itself,
to show what the machine does to a comparison: "another output" (the same Allgather into
a second preallocated buffer: the noise floor), "a new output each call" (what returning
a fresh array costs) and "+ N µs of Python" (the Allgather after a fixed piece of pure
Python work, calibrated alone on rank 0 to about msops's own per-call cost: what any
per-call CPU work turns into on this machine, oversubscribed or not).
Targets (docs/performance.md, "Collectives"): ratio <= 1.05 at >= 64 KiB and at most
5 µs extra a call at 8 B.
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
from types import SimpleNamespace
from typing import Callable

import numpy as np

SIZES = (8, 1 << 10, 1 << 16, 1 << 20, 1 << 24)
RANK_COUNTS = (2, 4)


def size_label(nbytes: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def same_page_offset(model: np.ndarray) -> np.ndarray:
    """An empty array like `model` at the same offset within a 4 KiB page.

    A raw output placed so meets the same cache and 4K-aliasing pattern against the
    input as msops's own output: placement, not the call path, otherwise decides a row
    (an output 16 B past its input modulo 4 KiB made the raw Allgather copy 2x slower
    at 64 KiB in every launch)."""
    buf = np.empty(model.nbytes + 4096, np.uint8)
    shift = (model.ctypes.data - buf.ctypes.data) % 4096
    return buf[shift:shift + model.nbytes].view(model.dtype).reshape(model.shape)


def python_work(iterations: int) -> None:
    """A fixed piece of pure-Python work (the control rows' stand-in for a wrapper)."""
    for _ in range(iterations):
        pass


# -- the cases: (msops call, raw call), both with every buffer made beforehand -----------------

def build_cases(comm, nbytes: int, work: tuple[float, int]) -> dict[str, tuple]:
    """name -> (ours, raw, check): zero-argument callables; check() compares their results.

    `work`: (µs, iterations of python_work taking that long) for the control row.
    """
    from mpi4py import MPI

    import msops as ms
    from msops import Tensor, ops
    n, me = comm.size, comm.rank
    f32 = MPI.FLOAT
    m = max(1, nbytes // 4)                       # elements of x
    k = max(1, m // n)                            # elements a rank (split ops)
    rng = np.random.default_rng(me)
    x = rng.standard_normal(m).astype(np.float32)
    xs = rng.standard_normal(n * k).astype(np.float32)
    tx, txs = Tensor(x), Tensor(xs)
    cases = {}

    def case(name, ours, raw, raw_out, ours_out=None):
        def check():
            got = ours()
            raw()
            if ours_out is not None:
                got = ours_out()
            elif isinstance(got, tuple):
                got = got[0].asnumpy()
            else:
                got = got.asnumpy()
            assert np.array_equal(got, raw_out()), name
        cases[name] = (ours, raw, check)

    def placed_like(ours: Callable) -> np.ndarray:
        """A raw output placed as the (held, reused) output of ours()."""
        got = ours()
        return same_page_offset((got[0] if isinstance(got, tuple) else got).asnumpy())

    part = functools.partial
    ag = part(ops.AllGather(), tx)
    out = placed_like(ag)
    raw_ag = part(comm.Allgather, [x, f32], [out, f32])
    case("AllGather", ag, raw_ag, lambda: out)
    ar = part(ops.AllReduce(), tx)
    red = placed_like(ar)
    case("AllReduce", ar, part(comm.Allreduce, [x, f32], [red, f32], MPI.SUM), lambda: red)
    rscat = part(ops.ReduceScatter(), txs)
    rs = placed_like(rscat)
    case("ReduceScatter", rscat,
         part(comm.Reduce_scatter_block, [xs, f32], [rs, f32], MPI.SUM), lambda: rs)
    all_to_all = part(ops.AlltoAll(n, 0, 0), txs)
    a2a = placed_like(all_to_all)
    case("AlltoAll", all_to_all, part(comm.Alltoall, [xs, f32], [a2a, f32]), lambda: a2a)

    counts, displs = (k,) * n, tuple(range(0, n * k, k))

    def raw_alltoallv(out: np.ndarray) -> Callable:
        return part(comm.Alltoallv, [xs, (counts, displs), f32], [out, (counts, displs), f32])
    unchecked = part(ops.AllToAllV(check_counts=False), txs, counts, displs, counts, displs)
    a2av = placed_like(unchecked)
    case("AllToAllV explicit, check_counts=False", unchecked, raw_alltoallv(a2av), lambda: a2av)
    checked = part(ops.AllToAllV(), txs, counts, displs, counts, displs)
    a2av_c = placed_like(checked)
    raw_a2av_c = raw_alltoallv(a2av_c)
    case("AllToAllV explicit, checked (default)", checked, raw_a2av_c, lambda: a2av_c)

    # the same check by hand: gather every rank's counts row, compare what each rank sends
    # with what its receiver expects as bytes of views made once (the cheapest way found),
    # then the Alltoallv
    row = np.array(counts + counts, np.int64)
    matrix = np.empty((n, 2 * n), np.int64)
    sent, expected, i64 = matrix[:, :n], matrix[:, n:].T, MPI.INT64_T

    def raw_checked():
        comm.Allgather([row, i64], [matrix, i64])
        if sent.tobytes() != expected.tobytes():
            raise ValueError("inconsistent count matrix")
        raw_a2av_c()
    case("AllToAllV checked, against the check by hand", checked, raw_checked, lambda: a2av_c)

    # derived receive side: a raw user exchanges the counts, then sizes the output
    sc_arr, rc_arr = np.array(counts, np.int32), np.empty(n, np.int32)
    derived = {}

    def raw_derived():
        comm.Alltoall([sc_arr, MPI.INT], [rc_arr, MPI.INT])
        rc = rc_arr.tolist()
        rd = list(itertools.accumulate(rc[:-1], initial=0))
        derived["out"] = got = np.empty(sum(rc), np.float32)
        comm.Alltoallv([xs, (counts, displs), f32], [got, (rc, rd), f32])
    case("AllToAllV derived, a2av(x, send_counts)", part(ops.AllToAllV(), txs, counts),
         raw_derived, lambda: derived["out"])

    bcast = part(ops.Broadcast(0), (tx,))
    bc = placed_like(bcast)                          # (a collective: every rank calls it)
    bc = x if me == 0 else bc                        # the root sends x itself, as msops does
    case("Broadcast", bcast, part(comm.Bcast, [bc, f32], 0), lambda: bc)

    # where AllGather's extra time goes: the kernel lowered for this signature alone (a new
    # output array, one buffer call), then with the result wrapped in a Tensor
    kernel = ops.AllGather().lower([SimpleNamespace(kind="input", shape=x.shape, dtype=ms.float32)],
                                   SimpleNamespace(kind="op", shape=out.shape, dtype=ms.float32))
    case("AllGather: its lowered kernel alone", part(kernel, x), raw_ag, lambda: out,
         lambda: kernel(x))
    case("AllGather: lowered kernel + Tensor", lambda: Tensor._wrap(kernel(x)), raw_ag,
         lambda: out, lambda: kernel(x))

    out2 = same_page_offset(out)
    case("control: mpi4py Allgather, another output",
         part(comm.Allgather, [x, f32], [out2, f32]), raw_ag, lambda: out, lambda: out2)
    fresh = {}

    def new_output():
        fresh["out"] = got = np.empty(n * m, np.float32)
        comm.Allgather([x, f32], [got, f32])
    case("control: mpi4py Allgather, a new output each call", new_output, raw_ag,
         lambda: out, lambda: fresh["out"])
    us, iterations = work

    def worked():
        python_work(iterations)
        raw_ag()
    case(f"control: mpi4py Allgather + {us:g} µs of Python", worked, raw_ag,
         lambda: out, lambda: out)
    return cases


# -- timing ---------------------------------------------------------------------------------

def per_call(comm, fn: Callable, calls: int) -> float:
    """Seconds a call of fn over one block of `calls` calls, after a Barrier."""
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def time_pair(comm, ours: Callable, raw: Callable, reps: int, block_s: float) -> dict:
    """Median per-call seconds of ours and raw over `reps` interleaved (ABBA) blocks each."""
    from mpi4py import MPI
    per_call(comm, ours, 3)                              # warm caches, allocator, plans
    guess = np.array([min(per_call(comm, raw, 3), per_call(comm, ours, 3))])
    comm.Allreduce(MPI.IN_PLACE, guess, MPI.MAX)         # every rank runs the same counts
    calls = max(1, min(2000, int(block_s / max(guess[0], 1e-7))))
    times = np.empty((2, reps))
    for r in range(reps):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            times[which, r] = per_call(comm, (ours, raw)[which], calls)
    comm.Allreduce(MPI.IN_PLACE, times, MPI.MAX)         # a block lasts as long as its slowest rank
    t_ours, t_raw = np.median(times, axis=1)
    return {"ours_us": t_ours * 1e6, "raw_us": t_raw * 1e6, "calls": calls, "reps": reps}


def calibrate_work(comm, us: float) -> tuple[float, int]:
    """(us, iterations of python_work taking `us` µs), timed on rank 0 while the others sleep
    (so it is the single-process cost, not the contended one)."""
    from mpi4py import MPI
    iterations = np.zeros(1, np.int64)
    if comm.rank == 0:
        python_work(1000)
        per = min(timeit_once(lambda: python_work(1000)) for _ in range(200)) / 1000
        iterations[0] = max(1, round(us * 1e-6 / per))
    else:
        time.sleep(1.0)
    comm.Bcast([iterations, MPI.INT64_T], 0)
    return us, int(iterations[0])


def timeit_once(fn: Callable) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run_ranks(args) -> list[dict]:
    """Under mpiexec: every case at every size; rows (on every rank)."""
    from mpi4py import MPI

    from msops.communication import init
    init()
    comm = MPI.COMM_WORLD
    work = calibrate_work(comm, args.control_us)
    rows = []
    for nbytes in args.sizes:
        cases = build_cases(comm, nbytes, work)
        for name, (ours, raw, check) in cases.items():
            if args.only and not any(s.lower() in name.lower() for s in args.only):
                continue
            check()
            reps = args.reps if nbytes < (1 << 20) else max(8, args.reps // 2)
            r = time_pair(comm, ours, raw, reps, args.block_ms / 1e3)
            rows.append(dict(r, op=name, bytes=nbytes, ranks=comm.size))
            if comm.rank == 0 and not args.json:
                print(f"{name:44s} {size_label(nbytes):>7s}  msops {r['ours_us']:10.1f} µs  "
                      f"mpi4py {r['raw_us']:10.1f} µs  ratio {r['ours_us'] / r['raw_us']:5.3f}  "
                      f"{r['ours_us'] - r['raw_us']:+8.2f} µs", flush=True)
        del cases
    return rows


# -- the driver: both rank counts, one table -------------------------------------------------

def launch(n: int, args) -> list[dict]:
    cmd = ["mpiexec", "-n", str(n), sys.executable, os.path.abspath(__file__), "--json",
           "--reps", str(args.reps), "--block-ms", str(args.block_ms),
           "--control-us", str(args.control_us), "--sizes", *map(str, args.sizes)]
    if args.only:
        cmd += ["--only", *args.only]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(runs: dict[int, list[list[dict]]]) -> str:
    """One Markdown row per (op, size): per rank count, medians over the runs (and, with
    several runs, the range of the per-run ratios)."""
    def cell(rows: list[dict]) -> str:
        ours = statistics.median(r["ours_us"] for r in rows)
        raw = statistics.median(r["raw_us"] for r in rows)
        ratios = [r["ours_us"] / r["raw_us"] for r in rows]
        spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(rows) > 1 else ""
        return (f"{_fmt_us(ours)} | {_fmt_us(raw)} | "
                f"{statistics.median(ratios):.3f}{spread} | {ours - raw:+.1f}")
    head = "| op | size / rank |" + "".join(
        f" msops µs (n={n}) | mpi4py µs (n={n}) | ratio (n={n}) | Δ µs (n={n}) |" for n in runs)
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
    ap.add_argument("--reps", type=int, default=40, help="timed blocks of each side")
    ap.add_argument("--block-ms", type=float, default=4.0, help="target length of a block")
    ap.add_argument("--control-us", type=float, default=1.5,
                    help="single-process µs of Python work in the control row")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--only", nargs="+", help="ops whose name contains one of these")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON (rank 0)")
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
