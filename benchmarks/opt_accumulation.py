"""The parallel optimizer with gradient accumulation: one optimizer step of k mini-steps
(`grad_accumulation_step=k`, the gathers `_MiniStepAllGather`) and one step of m
micro-batches (`nn.GradAccumulationCell`, the gathers `_MicroStepAllGather`), each with
optimizer sharding against the same step without it, in the same run.

    mpiexec -n 4 python benchmarks/opt_accumulation.py [--steps 10] [--batch 256]
                                                       [--width 512] [--layers 4] [--k 4]

Both sides: `TrainOneStepCell(WithLossCell(MLP, MSELoss), Adam)` in GRAPH_MODE under
`data_parallel` (each rank feeds its own batch); sharded: `enable_parallel_optimizer=True`
(threshold 0). Mini: an optimizer step is k calls on batch/k rows; the sharded side adds
each call's unreduced gradient into its gathered-size buffer and reduce-scatters only in
the k-th call, the replicated side AllReduces every call. Micro: one call on the batch in
k micro-batches; the sharded side gathers and reduce-scatters once a step. The sides
alternate (ABBA) so machine noise hits them alike; cells are medians. Also printed: the
per-rank bytes of the compiled steps' Parameter nodes (parameters, optimizer state and
accumulation buffers).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size
from parallel_optimizer import local_batch   # (this directory: run as a script)


def set_parallel(sharded: bool, k: int) -> None:
    """data_parallel with `grad_accumulation_step=k`, with or without the parallel optimizer."""
    ms.reset_auto_parallel_context()
    keys = dict(enable_parallel_optimizer=True,
                parallel_optimizer_config={"parallel_optimizer_threshold": 0}) if sharded else {}
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=get_group_size(),
                                 grad_accumulation_step=k, **keys)


def make_step(width: int, layers: int, micro: int) -> nn.Cell:
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(width, width, activation="relu" if i < layers - 1
                                      else None) for i in range(layers)])
    loss = nn.WithLossCell(net, nn.MSELoss())
    if micro > 1:
        loss = nn.GradAccumulationCell(loss, micro)
    return nn.TrainOneStepCell(loss, nn.Adam(net.trainable_params(), learning_rate=1e-4),
                               sens=1.0 / micro)


def stored_bytes(step: nn.Cell) -> int:
    """Bytes of the Parameter nodes of every compiled graph of `step` (each counted once)."""
    params = {id(p.value): p for g, _ in step._compile_cache._entries.values()
              for p in g.parameters}
    return sum(int(np.prod(p.shape)) * p.value.asnumpy().dtype.itemsize
               for p in params.values())


def measure(args, kind: str, x: Tensor, y: Tensor) -> dict:
    """{side: (median seconds per optimizer step, bytes)} for kind "mini" or "micro"."""
    k = args.k
    calls, acc, micro = (k, k, 1) if kind == "mini" else (1, 1, k)
    rows = x.shape[0] // calls
    parts = [(Tensor(x.asnumpy()[i * rows:(i + 1) * rows]),
              Tensor(y.asnumpy()[i * rows:(i + 1) * rows])) for i in range(calls)]
    sides = {}
    for name, sharded in (("replicated", False), ("sharded", True)):
        set_parallel(sharded, acc)
        step = make_step(args.width, args.layers, micro)
        for part in parts:                                # compile + warm up
            step(*part)
        sides[name] = (step, [], sharded)
    order = ["replicated", "sharded", "sharded", "replicated"]
    for i in range(args.steps):
        for name in order if i % 2 == 0 else order[::-1]:
            step, times, sharded = sides[name]
            set_parallel(sharded, acc)
            t0 = time.perf_counter()
            for part in parts:
                step(*part)
            times.append(time.perf_counter() - t0)
    ms.reset_auto_parallel_context()
    return {name: (statistics.median(times), stored_bytes(step))
            for name, (step, times, _) in sides.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps a side")
    parser.add_argument("--batch", type=int, default=256, help="global batch a step")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--k", type=int, default=4, help="mini-steps / micro-batches")
    args = parser.parse_args()
    n, rank, x, y = local_batch(args)
    results = {kind: measure(args, kind, x, y) for kind in ("mini", "micro")}
    if rank == 0:
        print(f"{n} ranks, MLP {args.layers} x Dense({args.width}), global batch "
              f"{args.batch} a step, Adam, k = {args.k}, {args.steps} x 2 steps a side (ABBA)")
        for kind, res in results.items():
            (rep, b_rep), (shd, b_shd) = res["replicated"], res["sharded"]
            print(f"{kind:5s} step  replicated {rep * 1e3:8.2f} ms   sharded {shd * 1e3:8.2f} ms"
                  f"   ratio {shd / rep:.3f}   bytes/rank {b_rep} -> {b_shd} "
                  f"({b_shd / b_rep:.3f})")


if __name__ == "__main__":
    main()
