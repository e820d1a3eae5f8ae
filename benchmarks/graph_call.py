"""Where a compiled call's time goes: collectives.py's graph row, taken apart.

    python benchmarks/graph_call.py [--sizes 8 65536 1048576]              # one process
    mpiexec -n 2 python benchmarks/graph_call.py [--sizes ...] [--rounds 40]

The graph of benchmarks/collectives.py (AllReduce -> x 0.5 -> + x -> AllGather, float32)
against the same steps by hand (intermediates preallocated, a new array for the result),
and the layers of a compiled call one by one: the generated step alone
(`Executor._step`), `Executor.run` (+ input count, lock), the Executor call (+ the
output's Tensor) and the Cell call (what users run: one generated function holding the
argument checks, the lock, the step and the output's Tensor, behind one state-epoch
compare). Also
"replica": the step's own buffer use written by hand (the AllReduce into one aligned
buffer, the element-wise ops in place in it, the AllGather from it) — if it is as slow
as the step, a per-byte cost is the buffer pattern's, not msops's call path.

Sides are timed in blocks of calls, each after a Barrier, the order reversed every
round; a block's time is the slowest rank's. Printed: the median per-call time, the
median of the per-round difference to the hand-written side, the ratio. With one
process the clock is the thread's CPU time (robust to other jobs on a shared machine:
the µs of the call path itself); with more, wall time. Not a test.
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 1 << 16, 1 << 20])
    ap.add_argument("--rounds", type=int, default=40, help="blocks of each side")
    ap.add_argument("--block", type=int, default=200, help="calls a block (fewer when large)")
    args = ap.parse_args()
    from mpi4py import MPI

    import msops as ms
    from msops import Tensor, nn, ops
    from msops.communication import init
    init()
    ms.set_context(check_collectives=False, mode=ms.GRAPH_MODE)
    comm = MPI.COMM_WORLD
    n, f32, SUM = comm.size, MPI.FLOAT, MPI.SUM
    clock = time.thread_time if n == 1 else time.perf_counter

    class Chain(nn.Cell):
        def __init__(self):
            super().__init__()
            self.all_reduce, self.all_gather = ops.AllReduce(), ops.AllGather()
            self.mul, self.add = ops.Mul(), ops.Add()
            self.half = Tensor(np.array(np.float32(0.5)))

        def construct(self, v):
            return self.all_gather(self.add(self.mul(self.all_reduce(v), self.half), v))

    for nbytes in args.sizes:
        m = max(1, nbytes // 4)
        x = np.random.default_rng(comm.rank).standard_normal(m).astype(np.float32)
        tx, half = Tensor(x), np.float32(0.5)
        net = Chain()
        net(tx)
        executor = net._compile_cache._last_executor
        reduced, scaled, summed = (np.empty(m, np.float32) for _ in range(3))
        raw = np.empty(4 * m + 64, np.uint8)
        start = -raw.ctypes.data % 64
        buffer = raw[start:start + 4 * m].view(np.float32)

        def by_hand():
            out = np.empty(n * m, np.float32)
            comm.Allreduce([x, f32], [reduced, f32], SUM)
            np.multiply(reduced, half, out=scaled)
            np.add(scaled, x, out=summed)
            comm.Allgather([summed, f32], [out, f32])
            return out

        def replica():
            comm.Allreduce([x, f32], [buffer, f32], SUM)
            np.multiply(buffer, net.half.asnumpy(), out=buffer)
            np.add(buffer, x, out=buffer)
            out = np.empty(n * m, np.float32)
            comm.Allgather([buffer, f32], [out, f32])
            return out
        arrays = [x]
        sides = {"by hand": by_hand, "replica": replica,
                 "step": lambda: executor._step(x), "Executor.run": lambda: executor.run(arrays),
                 "Executor()": lambda: executor(arrays), "Cell call": lambda: net(tx)}
        want = by_hand()
        for name, fn in sides.items():
            got = fn()
            got = got[0] if isinstance(got, list) else got
            assert np.array_equal(got.asnumpy() if hasattr(got, "asnumpy") else got, want), name
            for _ in range(20):
                fn()
        names = list(sides)
        block = max(1, min(args.block, (1 << 24) // max(nbytes, 1)))
        times = np.empty((len(names), args.rounds))
        for r in range(args.rounds):
            for i in (range(len(names)) if r % 2 == 0 else reversed(range(len(names)))):
                fn = sides[names[i]]
                comm.Barrier()
                t = clock()
                for _ in range(block):
                    fn()
                times[i, r] = (clock() - t) / block
        comm.Allreduce(MPI.IN_PLACE, times, MPI.MAX)
        if comm.rank == 0:
            med = np.median(times, axis=1) * 1e6
            diff = np.median(times - times[0], axis=1) * 1e6
            print(f"{nbytes} B a rank, {n} rank(s), {'CPU' if n == 1 else 'wall'} µs a call, "
                  f"median of {args.rounds} blocks of {block} calls:")
            for name, t, d in zip(names, med, diff):
                print(f"  {name:14s} {t:10.2f}  {d:+9.2f}  x{t / med[0]:.3f}")
        del net, executor


if __name__ == "__main__":
    main()
