"""Data-parallel training with the parallel optimizer and gradient accumulation.

    mpiexec -n 4 python examples/optimizer_sharding.py [--steps 10] [--micro 2] [--mini 2]
                                                       [--shard_size -1]

An MLP regresses a fixed random target under `data_parallel` with
`enable_parallel_optimizer=True`: every weight and bias whose dim 0 divides over the ranks
is stored as its dim-0 shard, with its Adam state; the forward gathers it, the backward
reduce-scatters its gradient and each rank updates its shard. Each optimizer step sees
`--mini` training-step calls (`grad_accumulation_step`), each on `--micro` micro-batches
(`nn.GradAccumulationCell`, whose summed micro losses are rescaled by sens=1/micro): one
step covers mini x global batch samples. The gathers carry the accumulation: with
`--mini` > 1 each sharded weight is gathered once a call by a `_MiniStepAllGather` that
adds the call's gradient (summed over the micro-batches) into its buffer and
reduce-scatters only in the mini-th call; with `--mini 1` and `--micro` > 1 by a
`_MicroStepAllGather` (one reduce-scatter a call). `--shard_size` (the
`optimizer_weight_shard_size`) shards over groups of that many replicas and AllReduces
the shards' gradients across the groups. Every rank also trains the same network alone
(stand-alone, whole batches of mini x global batch) and checks that its shard of every
parameter matches; rank 0 prints the losses and the per-rank parameter + state bytes.
"""
import argparse

import numpy as np

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank, init

GLOBAL_BATCH = 32                  # per training-step call; splits over 1, 2, 4 or 8 ranks


def make_net() -> nn.Cell:
    ms.set_seed(7)
    return nn.SequentialCell([nn.Dense(16, 32, activation="relu"),
                              nn.Dense(32, 32, activation="relu"), nn.Dense(32, 4)])


def data(steps: int, mini: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps * mini * GLOBAL_BATCH, 16)).astype(np.float32)
    w = rng.standard_normal((16, 4)).astype(np.float32)
    return x, np.tanh(x @ w)


def train(x, y, steps, mini, micro, parallel, shard_size=-1):
    """`steps` optimizer steps; returns (the network, its losses, the per-rank parameter +
    state bytes, the parameter layouts, the collectives of each compiled step)."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="data_parallel", full_batch=True,
                                     device_num=get_group_size(), grad_accumulation_step=mini,
                                     enable_parallel_optimizer=True,
                                     parallel_optimizer_config={
                                         "parallel_optimizer_threshold": 0,
                                         "optimizer_weight_shard_size": shard_size})
    net = make_net()
    opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    if parallel:
        step = nn.TrainOneStepCell(nn.GradAccumulationCell(loss_net, micro), opt,
                                   sens=1.0 / micro)
        calls, rows = mini, GLOBAL_BATCH
    else:                                      # the reference: one call per optimizer step
        step = nn.TrainOneStepCell(loss_net, opt)
        calls, rows = 1, mini * GLOBAL_BATCH
    losses = []
    for s in range(steps * calls):
        got = step(Tensor(x[s * rows:(s + 1) * rows]), Tensor(y[s * rows:(s + 1) * rows]))
        losses.append(float(got.asnumpy()) / (micro if parallel else 1))
    graph = step._compile_cache.last_graph()
    nbytes = sum(p.value.asnumpy().nbytes for p in graph.parameters)   # what the rank holds
    layouts = net.parameter_layout_dict if parallel else {}
    ms.reset_auto_parallel_context()
    comms = [_collectives(g) for g, _ in step._compile_cache._entries.values()]
    return net, losses, nbytes, layouts, comms


def _collectives(graph) -> str:
    """The collectives of one compiled step, counted: "2 AllReduce, 5 ReduceScatter, ..."."""
    names = [nd.op for nd in graph.nodes if nd.is_communication]
    return ", ".join(f"{names.count(k)} {k}" for k in sorted(set(names)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="optimizer steps")
    parser.add_argument("--micro", type=int, default=2, help="micro-batches per call")
    parser.add_argument("--mini", type=int, default=2, help="calls per optimizer step")
    parser.add_argument("--shard_size", type=int, default=-1,
                        help="optimizer_weight_shard_size (-1: every replica)")
    args = parser.parse_args()
    init()
    ms.set_context(mode=ms.GRAPH_MODE)
    rank, n = get_rank(), get_group_size()
    x, y = data(args.steps, args.mini)
    serial, serial_losses, serial_bytes, _, _ = train(x, y, args.steps, args.mini, 1, False)
    net, losses, nbytes, layouts, comms = train(x, y, args.steps, args.mini, args.micro, True,
                                                args.shard_size)
    worst = 0.0
    for p, want in zip(net.trainable_params(), serial.trainable_params()):
        part = layouts[p.name].layout.slice_of(rank)   # the shard this rank keeps (and holds)
        worst = max(worst, float(np.abs(p.asnumpy() - want.asnumpy()[part]).max()))
    sharded = sorted(k for k, lay in layouts.items() if lay.opt_shard_group)
    if rank == 0:
        print(f"{n} ranks, {args.steps} optimizer steps of {args.mini} calls x "
              f"{args.micro} micro-batches")
        print(f"loss: first call {losses[0]:.5f}, last call {losses[-1]:.5f}; serial first "
              f"step {serial_losses[0]:.5f}, last {serial_losses[-1]:.5f}")
        print(f"sharded parameters: {', '.join(sharded)}")
        print(f"param + Adam state bytes per rank: {nbytes} (stand-alone {serial_bytes})")
        for k, text in enumerate(comms):
            print(f"compiled step {k}: {text}")
        print(f"max |sharded - serial| over this rank's shards: {worst:.2e}")
    if worst > 1e-4:
        raise SystemExit(f"rank {rank}: the sharded run left the serial one by {worst}")


if __name__ == "__main__":
    main()
