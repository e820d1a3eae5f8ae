"""The parallel optimizer's cost: one data-parallel training step with optimizer sharding
against the same step without it, in the same run, and the per-rank bytes of parameters +
optimizer state each compiled step reads and writes.

    mpiexec -n 4 python benchmarks/parallel_optimizer.py [--steps 20] [--batch 256]
                                                        [--width 512] [--layers 4]

Both sides: `TrainOneStepCell(WithLossCell(MLP, MSELoss), Adam)` in GRAPH_MODE under
`data_parallel` (each rank feeds its own batch). Sharded: `enable_parallel_optimizer=True`
(threshold 0): every weight and bias whose dim 0 divides is stored as its dim-0 shard, the
forward AllGathers it, the backward reduce-scatters its gradient and Adam updates the
shard. The sides alternate (ABBA) so machine noise hits them alike; cells are medians.
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


def set_parallel(sharded: bool) -> None:
    """data_parallel, with or without the parallel optimizer (a step is compiled per
    context, so each side runs under its own)."""
    ms.reset_auto_parallel_context()
    keys = dict(enable_parallel_optimizer=True,
                parallel_optimizer_config={"parallel_optimizer_threshold": 0}) if sharded else {}
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=get_group_size(),
                                 **keys)


def make_step(width: int, layers: int, sharded: bool) -> nn.Cell:
    set_parallel(sharded)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256, help="global batch")
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    init()
    ms.set_context(mode=ms.GRAPH_MODE)
    n, rank = get_group_size(), get_rank()
    rng = np.random.default_rng(rank)
    x = Tensor(rng.standard_normal((args.batch // n, args.width)).astype(np.float32))
    y = Tensor(rng.standard_normal((args.batch // n, args.width)).astype(np.float32))
    sides = {}
    for name, sharded in (("replicated", False), ("sharded", True)):
        step = make_step(args.width, args.layers, sharded)
        step(x, y)                                        # compile + warm up
        assert step._compile_cache.traces == 1
        sides[name] = (step, resident_bytes(step), [], sharded)
    order = ["replicated", "sharded", "sharded", "replicated"]
    for i in range(args.steps):
        for name in order if i % 2 == 0 else order[::-1]:
            step, _, times, sharded = sides[name]
            set_parallel(sharded)
            t0 = time.perf_counter()
            step(x, y)
            times.append(time.perf_counter() - t0)
    ms.reset_auto_parallel_context()
    if rank == 0:
        rep, shd = (statistics.median(sides[k][2]) for k in ("replicated", "sharded"))
        (b_rep, _), (b_shd, kept) = sides["replicated"][1], sides["sharded"][1]
        bound = (b_rep - kept) / n + kept      # 1/N of what divides + what stays whole
        print(f"{n} ranks, MLP {args.layers} x Dense({args.width}), global batch "
              f"{args.batch}, Adam, {args.steps} x 2 steps a side (ABBA)")
        print(f"step  replicated {rep * 1e3:8.2f} ms   sharded {shd * 1e3:8.2f} ms   "
              f"ratio {shd / rep:.3f}  (target <= 1.2)")
        print(f"resident param+state bytes/rank  replicated {b_rep}   sharded {b_shd}   "
              f"ratio {b_shd / b_rep:.3f}  (1/N = {1 / n:.3f}; target <= {bound:.0f} = "
              f"1/N of the replicated + {kept} held whole)")


if __name__ == "__main__":
    main()
