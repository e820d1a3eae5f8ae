"""The parallel optimizer's cost: one data-parallel training step with optimizer sharding
against the same step without it, in the same run, and the per-rank bytes of parameters +
optimizer state each compiled step reads and writes.

    mpiexec -n 4 python benchmarks/parallel_optimizer.py [--steps 20] [--batch 256]
                                                        [--width 512] [--layers 4] [--profile]

Both sides: `TrainOneStepCell(WithLossCell(MLP, MSELoss), Adam)` in GRAPH_MODE under
`data_parallel` (each rank feeds its own batch). Sharded: `enable_parallel_optimizer=True`
(threshold 0): every weight and bias whose dim 0 divides is stored as its dim-0 shard, the
forward AllGathers it, the backward reduce-scatters its gradient and Adam updates the
shard; with comm_fusion's default ("auto") the gathers are one fused AllGather issued at
step start and the reduce-scatters one fused ReduceScatter (graph/fusion.py). A third side,
"unfused", shards with every fusion bucket one collective (a tiny comm_fusion size), which
is what the sharded step cost before fusion. The sides alternate (ABC CBA) so machine noise
hits them alike; cells are medians. `--profile` prints each side's time per op kind
(the kernels of the compiled step timed one by one; a collective's time includes waiting
for the slowest rank).
Targets (issue 17): step ratio <= 1.2; bytes <= 1/N of the replicated run + the
parameters that stay whole. The bytes are resident ones: the sum of `_data.nbytes` of
every Parameter of the step (the network's and the optimizer's state) that this process
holds after the compile (a sharded Parameter holds only its shard).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank, init


TINY = {"mode": "size", "config": 1e-6}          # a bucket per collective: no fusion
SIDES = {"replicated": {},
         "sharded": dict(enable_parallel_optimizer=True,
                         parallel_optimizer_config={"parallel_optimizer_threshold": 0}),
         "unfused": dict(enable_parallel_optimizer=True,
                         parallel_optimizer_config={"parallel_optimizer_threshold": 0},
                         comm_fusion={"allgather": TINY, "reducescatter": TINY})}


def set_parallel(side: str) -> None:
    """data_parallel with the side's keys (a step is compiled per context, so each side
    runs under its own)."""
    ms.reset_auto_parallel_context()
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=get_group_size(),
                                 **SIDES[side])


def make_step(width: int, layers: int, side: str) -> nn.Cell:
    set_parallel(side)
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(width, width, activation="relu" if k < layers - 1
                                      else None) for k in range(layers)])
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Adam(net.trainable_params(), learning_rate=1e-4))
    return step


def resident_bytes(step: nn.Cell) -> tuple[int, int]:
    """(bytes the step's Parameters hold on this rank, of which those held whole)."""
    params = list(step.get_parameters())
    return (sum(p._data.nbytes for p in params),
            sum(p._data.nbytes for p in params if p._layout is None))


def profiled(step: nn.Cell, totals: dict) -> None:
    """Time every kernel of the step's compiled graph into totals[op name] (the step is
    generated again around the timed kernels)."""
    executor = step._compile_cache._last_executor
    for node in executor.graph.nodes:
        kernel = executor._kernels.get(node.id)
        if kernel is not None:
            executor._kernels[node.id] = _timed(kernel, node.op, totals)
    executor._step, executor._src = executor._first_step, None    # generated again
    executor._fast_calls.clear()
    step._compile_cache.epoch = -1


def _timed(kernel, name: str, totals: dict):
    def run(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return kernel(*args, **kwargs)
        finally:
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - t0
    return run


def collectives(step: nn.Cell) -> str:
    ops = [n.op for n in step._compile_cache.last_graph().nodes if n.is_communication]
    return ", ".join(f"{ops.count(o)} {o}" for o in sorted(set(ops)))



def local_batch(args: argparse.Namespace) -> tuple[int, int, Tensor, Tensor]:
    """Initialise the world in GRAPH_MODE; (ranks, rank, x, y): this rank's seeded inputs
    and targets, (global batch / ranks, width) each."""
    init()
    ms.set_context(mode=ms.GRAPH_MODE)
    n, rank = get_group_size(), get_rank()
    rng = np.random.default_rng(rank)
    x = Tensor(rng.standard_normal((args.batch // n, args.width)).astype(np.float32))
    y = Tensor(rng.standard_normal((args.batch // n, args.width)).astype(np.float32))
    return n, rank, x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256, help="global batch")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="time per op kind")
    args = parser.parse_args()
    n, rank, x, y = local_batch(args)
    sides = {}
    for name in SIDES:
        step = make_step(args.width, args.layers, name)
        step(x, y)                                        # compile + warm up
        assert step._compile_cache.traces == 1
        totals: dict = {}
        if args.profile:
            profiled(step, totals)
        sides[name] = (step, resident_bytes(step), [], totals)
    order = list(SIDES)
    for i in range(args.steps):
        for name in order if i % 2 == 0 else order[::-1]:
            step, _, times, _ = sides[name]
            set_parallel(name)
            t0 = time.perf_counter()
            step(x, y)
            times.append(time.perf_counter() - t0)
    ms.reset_auto_parallel_context()
    if rank == 0:
        med = {k: statistics.median(v[2]) for k, v in sides.items()}
        rep = med["replicated"]
        print(f"{n} ranks, MLP {args.layers} x Dense({args.width}), global batch "
              f"{args.batch}, Adam, {args.steps} steps a side (ABC CBA), medians")
        for name, (step, _, _, totals) in sides.items():
            print(f"step  {name:10s} {med[name] * 1e3:8.2f} ms   ratio {med[name] / rep:.3f}"
                  f"   ({collectives(step)})")
            for op, t in sorted(totals.items(), key=lambda kv: -kv[1])[:6]:
                print(f"        {op:16s} {t / args.steps * 1e3:8.2f} ms a step")
        print("target: sharded / replicated <= 1.2")
        (b_rep, _), (b_shd, kept) = sides["replicated"][1], sides["sharded"][1]
        bound = (b_rep - kept) / n + kept      # 1/N of what divides + what stays whole
        print(f"resident param+state bytes/rank  replicated {b_rep}   sharded {b_shd}   "
              f"ratio {b_shd / b_rep:.3f}  (1/N = {1 / n:.3f}; target <= {bound:.0f} = "
              f"1/N of the replicated + {kept} held whole)")


if __name__ == "__main__":
    main()
