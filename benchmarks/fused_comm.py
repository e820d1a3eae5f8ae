"""Does the fused TP collectives' overlap pay on this MPI? Fused against straightforward.

    msrun -n 2 benchmarks/fused_comm.py [--rows 512] [--k 1024] [--n 1024] [--reps 10]
    MPICH_ASYNC_PROGRESS=1 msrun -n 2 benchmarks/fused_comm.py     # with a progress thread

Through msops's eager ops (each with its cross-rank check and watchdog), float32,
ABBA-alternated, medians over the ranks' worst:

  all_gather_matmul        ops.all_gather_matmul(x, w, ...)     (Ibcast per rank's block,
                           each block multiplied while the later ones travel)
  allgather then matmul    ops.AllGather()(x), then ops.matmul(gathered, w)
  matmul_reduce_scatter    ops.matmul_reduce_scatter(x, w, ...) (Ireduce per output block,
                           each block's reduction travelling while the next is multiplied)
  matmul then reducescatter  ops.matmul(x, w), then ops.ReduceScatter()(product)

and prints each pair's ratio fused / straightforward (< 1: the overlap won). MPICH moves
nonblocking transfers only inside MPI calls (the fused kernels test their requests between
row slices of the product) unless it runs a progress thread; on a machine whose cores are
all busy with the ranks' products, there is little idle time for the transfers to fill.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import msops as ms  # noqa: F401  (the package: ops' functions attached)
from msops import Tensor, ops
from msops.communication import get_group_size, get_rank, init


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=512, help="input rows per rank")
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    init()
    rank, size = get_rank(), get_group_size()
    comm, world = MPI.COMM_WORLD, "hccl_world_group"
    rng = np.random.default_rng(rank)
    x = Tensor(rng.standard_normal((args.rows, args.k)).astype(np.float32))
    w = Tensor(rng.standard_normal((args.k, args.n)).astype(np.float32))
    x_rs = Tensor(rng.standard_normal((args.rows * size, args.k)).astype(np.float32))
    gather, scatter = ops.AllGather(), ops.ReduceScatter()

    sides = {
        "all_gather_matmul": lambda: ops.all_gather_matmul(x, w, world, size)[0],
        "allgather then matmul": lambda: ops.matmul(gather(x), w),
        "matmul_reduce_scatter": lambda: ops.matmul_reduce_scatter(x_rs, w, world, size),
        "matmul then reducescatter": lambda: scatter(ops.matmul(x_rs, w)),
    }
    results = {k: fn().asnumpy() for k, fn in sides.items()}        # warm-up, and the check
    np.testing.assert_allclose(results["all_gather_matmul"], results["allgather then matmul"],
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(results["matmul_reduce_scatter"],
                               results["matmul then reducescatter"], rtol=1e-4, atol=1e-2)
    times: dict[str, list] = {k: [] for k in sides}
    order = list(sides.items())
    for r in range(args.reps):
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            comm.Barrier()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {k: comm.allreduce(statistics.median(v), op=MPI.MAX) for k, v in times.items()}
    if rank == 0:
        print(f"{size} ranks, input ({args.rows}, {args.k}) per rank @ ({args.k}, {args.n}) "
              f"float32, {args.reps} reps a side (ABBA), "
              f"{MPI.Get_library_version().splitlines()[0]}")
        for k, v in med.items():
            print(f"  {k:26s} {v * 1e3:8.2f} ms")
        print(f"  ratio all_gather_matmul / (allgather then matmul)      "
              f"{med['all_gather_matmul'] / med['allgather then matmul']:.3f}")
        print(f"  ratio matmul_reduce_scatter / (matmul then reducescatter) "
              f"{med['matmul_reduce_scatter'] / med['matmul then reducescatter']:.3f}")


if __name__ == "__main__":
    main()
