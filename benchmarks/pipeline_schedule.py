"""Pipeline schedules: 1F1B (the default) against GPipe, same network, same processes.

    msrun -n 2 benchmarks/pipeline_schedule.py [--stages 2] [--micro 8] [--rows 8192]
                                               [--width 64] [--steps 30]

A Dense stack split into `--stages` stages, trained by `TrainOneStepCell(PipelineCell(...,
micro))` with Momentum; the fed batch has `--rows` rows. For each schedule: the median
step time (blocks of steps alternate, ABBA, so machine noise hits them alike) and the
bytes of intermediate buffers the executor planned on each stage (what a stage keeps
alive: 1F1B holds at most S - s micro-batches' activations, GPipe all of them). Printed as
1F1B / GPipe ratios. The losses of both are checked equal.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank, init


def use(stages: int, scheduler: str) -> None:
    """The context a step compiles (and runs) under: a step called under another context
    runs that context's compiled graph."""
    ms.reset_auto_parallel_context()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=get_group_size(),
                                 full_batch=True, pipeline_stages=stages,
                                 pipeline_config={"pipeline_scheduler": scheduler})


def build(stages: int, micro: int, width: int, scheduler: str) -> nn.Cell:
    use(stages, scheduler)
    ms.set_seed(3)
    layers = 2 * stages
    net = nn.SequentialCell([nn.Dense(width, width, activation="relu") for _ in range(layers)])
    for k, cell in enumerate(net):
        cell.pipeline_stage = k * stages // layers
    loss = nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), micro)
    return nn.TrainOneStepCell(loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", type=int, default=2)
    ap.add_argument("--micro", type=int, default=8)
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    init()
    ms.set_context(mode=ms.GRAPH_MODE)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((args.rows, args.width)).astype(np.float32))
    y = Tensor(rng.standard_normal((args.rows, args.width)).astype(np.float32))
    schedulers = ("1f1b", "gpipe")
    steps, losses, planned = {}, {}, {}
    for s in schedulers:
        steps[s] = build(args.stages, args.micro, args.width, s)
        losses[s] = float(steps[s](x, y).asnumpy())
        planned[s] = sum(steps[s]._compile_cache._last_executor.plan.nbytes)
    assert abs(losses["1f1b"] - losses["gpipe"]) <= 1e-5 * abs(losses["gpipe"]), losses
    times: dict[str, list[float]] = {s: [] for s in schedulers}
    comm = MPI.COMM_WORLD
    for k in range(4):                   # blocks in ABBA order, each under its context
        for s in (schedulers if k % 3 == 0 else schedulers[::-1]):
            use(args.stages, s)
            steps[s](x, y)
            for _ in range(max(1, args.steps // 4)):
                comm.Barrier()
                t = time.perf_counter()
                steps[s](x, y)
                times[s].append(comm.allreduce(time.perf_counter() - t, MPI.MAX))
    per_rank = comm.gather(planned)
    if get_rank() == 0:
        med = {s: statistics.median(times[s]) * 1e3 for s in schedulers}
        print(f"{get_group_size()} ranks, {args.stages} stages, {args.micro} micro-batches, "
              f"{args.rows} x {args.width} batch, {args.steps} steps")
        print(f"step (ms, median): 1f1b {med['1f1b']:.2f}  gpipe {med['gpipe']:.2f}  "
              f"ratio {med['1f1b'] / med['gpipe']:.3f}")
        for r, p in enumerate(per_rank):
            print(f"rank {r} planned buffers (KiB): 1f1b {p['1f1b'] / 1024:.0f}  gpipe "
                  f"{p['gpipe'] / 1024:.0f}  ratio {p['1f1b'] / p['gpipe']:.3f}")


if __name__ == "__main__":
    main()
