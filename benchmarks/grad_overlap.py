"""Would a nonblocking gradient bucket overlap the rest of the backward on this MPI?

    msrun -n 2 benchmarks/grad_overlap.py [--mb 4] [--width 1024] [--batch 256] [--reps 20]
    MPICH_ASYNC_PROGRESS=1 msrun -n 2 benchmarks/grad_overlap.py     # with a progress thread

A bucket's AllReduce issued as soon as the bucket is complete (what msops's schedule
does, blocking) could instead be started with `Iallreduce` and waited where its result
is first read, so the earlier layers' backward (here: the two MatMuls of one Dense
layer's backward, in numpy) runs while the bucket travels. This measures, with raw
mpi4py and numpy in the same run, ABBA-alternated, medians over the ranks' worst:

  blocking      Allreduce(bucket); backward compute
  nonblocking   req = Iallreduce(bucket); backward compute; req.Wait()
  +Test         the same, with req.Test() after each of 8 row blocks of dx, the
                progress a generated step could make without a progress thread

and prints the overlap won as a fraction of the shorter of the two parts (1 = the
communication hidden completely, 0 = nothing gained). MPICH progresses a nonblocking
collective only inside MPI calls unless it runs a progress thread, so 0 is expected.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=4.0, help="bucket size")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(comm.rank)
    bucket = rng.standard_normal(int(args.mb * 2 ** 20) // 4).astype(np.float32)
    summed = np.empty_like(bucket)
    d = rng.standard_normal((args.batch, args.width)).astype(np.float32)
    h = rng.standard_normal((args.batch, args.width)).astype(np.float32)
    w = rng.standard_normal((args.width, args.width)).astype(np.float32)
    gw, dx = np.empty_like(w), np.empty_like(d)

    def compute() -> None:                  # one Dense layer's backward: dW and dx
        np.matmul(d.T, h, out=gw)
        np.matmul(d, w, out=dx)

    def reduce() -> None:
        comm.Allreduce(bucket, summed)

    def blocking() -> None:
        reduce()
        compute()

    def nonblocking() -> None:
        req = comm.Iallreduce(bucket, summed)
        compute()
        req.Wait()

    def polled() -> None:                   # MPI_Test after each node: manual progress
        req = comm.Iallreduce(bucket, summed)
        for rows in range(0, args.batch, 32):   # the backward as nodes of 32 batch rows
            np.matmul(d[rows:rows + 32], w, out=dx[rows:rows + 32])
            req.Test()
        np.matmul(d.T, h, out=gw)
        req.Wait()

    sides = {"allreduce alone": reduce, "compute alone": compute,
             "blocking": blocking, "nonblocking": nonblocking,
             "nonblocking+Test": polled}
    times: dict[str, list] = {k: [] for k in sides}
    for fn in sides.values():
        fn()
    order = list(sides.items())
    for r in range(args.reps):
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            comm.Barrier()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {k: comm.allreduce(statistics.median(v), op=MPI.MAX) for k, v in times.items()}
    np.testing.assert_allclose(summed, comm.allreduce(bucket), rtol=1e-5, atol=1e-5)
    if comm.rank == 0:
        print(f"bucket {args.mb} MB on {comm.size} ranks, backward of Dense({args.width}) at "
              f"batch {args.batch}, {args.reps} reps a side (ABBA), {MPI.Get_library_version().splitlines()[0]}")
        for k, v in med.items():
            print(f"  {k:16s} {v * 1e3:8.2f} ms")
        hidden = (med["blocking"] - med["nonblocking"]) / min(med["allreduce alone"],
                                                               med["compute alone"])
        print(f"  overlap won      {hidden:8.2f}  of the shorter part (1 = fully hidden)")
        print(f"  ratio nonblocking / blocking {med['nonblocking'] / med['blocking']:.3f}")
        print(f"  ratio nonblocking+Test / blocking "
              f"{med['nonblocking+Test'] / med['blocking']:.3f}")


if __name__ == "__main__":
    main()
