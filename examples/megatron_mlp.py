"""A Megatron-style MLP trained in semi_auto_parallel mode: tensor (model) parallel inside the
MLP, data parallel over the rest of the devices.

    msrun -n 4 examples/megatron_mlp.py [--steps 20]     # 2-way model x 2-way data parallel
    python examples/megatron_mlp.py --serial             # the reference: one process

The MLP is y = relu(x @ W1 + b1) @ W2 + b2 (x (B, H), W1 (H, F), W2 (F, H)). As in
Megatron-LM, the first MatMul splits W1 by columns and the second W2 by rows over `mp`
devices, so the hidden activation (B, F) stays split by columns between them and the
only collective of the forward is the AllReduce of the second MatMul's partial sums; the
batch is split over the other `dp` devices (mp = 2 when the world size is even, dp = the
rest). `nn.TrainOneStepCell` with `nn.Momentum` trains it in GRAPH_MODE; msops adds the
backward's collectives and the data-parallel gradient reductions.

Every rank prints nothing but rank 0, which prints `step <k> loss <loss>` every few steps
and, at the end, each parameter's sum of squares (the whole parameter, gathered) and the
final check: the same steps run stand-alone in this process (no communication) give the
same loss curve and the same parameters.
"""
import argparse

import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init
from msops.parallel import gather_full
from msops.parallel.slices import local_slice

BATCH, HIDDEN, FFN = 16, 8, 32


class MegatronMLP(nn.Cell):
    """Column-parallel MatMul + bias + ReLU, then row-parallel MatMul + bias, over a (dp, mp)
    device grid (dp = mp = 1: the serial network)."""

    def __init__(self, dp: int = 1, mp: int = 1) -> None:
        super().__init__()
        rng = np.random.default_rng(7)                       # the same weights on every rank
        self.w1 = Parameter(Tensor((rng.standard_normal((HIDDEN, FFN)) / np.sqrt(HIDDEN))
                                   .astype(np.float32)), name="w1")
        self.b1 = Parameter(Tensor(np.zeros(FFN, np.float32)), name="b1")
        self.w2 = Parameter(Tensor((rng.standard_normal((FFN, HIDDEN)) / np.sqrt(FFN))
                                   .astype(np.float32)), name="w2")
        self.b2 = Parameter(Tensor(np.zeros(HIDDEN, np.float32)), name="b2")
        self.matmul1 = ops.MatMul().shard(((dp, 1), (1, mp)))       # W1 split by columns
        self.add1 = ops.Add().shard(((dp, mp), (mp,)))
        self.relu = ops.ReLU().shard(((dp, mp),))
        self.matmul2 = ops.MatMul().shard(((dp, mp), (mp, 1)))      # W2 split by rows
        self.add2 = ops.Add().shard(((dp, 1), (1,)))

    def construct(self, x):
        h = self.relu(self.add1(self.matmul1(x, self.w1), self.b1))
        return self.add2(self.matmul2(h, self.w2), self.b2)


def data(steps: int) -> list:
    """A regression task: targets from a fixed random teacher, a new batch every step."""
    rng = np.random.default_rng(2024)
    teacher = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
    batches = []
    for _ in range(steps):
        x = rng.standard_normal((BATCH, HIDDEN)).astype(np.float32)
        batches.append((x, np.tanh(x @ teacher).astype(np.float32)))
    return batches


def train(net: nn.Cell, batches: list, lr: float, momentum: float) -> list:
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Momentum(net.trainable_params(), lr, momentum))
    return [float(step(Tensor(x), Tensor(y)).asnumpy()) for x, y in batches]


def whole_parameters(net: nn.Cell, parallel: bool) -> dict:
    """name -> the whole value of each parameter (its slices gathered from every rank)."""
    out = {}
    layouts = net.parameter_layout_dict if parallel else {}
    for p in net.trainable_params():
        value = p.asnumpy()
        if p.name in layouts:
            layout = layouts[p.name].layout
            piece = Tensor(local_slice(value, layout, get_rank()))   # held: the slice
            piece.layout = layout
            value = gather_full(piece).asnumpy()
        out[p.name] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--print_every", type=int, default=5)
    parser.add_argument("--serial", action="store_true",
                        help="train the serial network only, in one process (the reference)")
    args = parser.parse_args()
    ms.set_context(mode=ms.GRAPH_MODE)
    batches = data(args.steps)

    if args.serial:
        n, rank, mp = 1, 0, 1
    else:
        init()
        n, rank = get_group_size(), get_rank()
        mp = 2 if n % 2 == 0 else 1
    dp = n // mp
    if BATCH % dp or FFN % mp:
        raise SystemExit(f"{n} ranks: the batch {BATCH} must split over dp={dp} and the "
                         f"hidden size {FFN} over mp={mp}")

    serial_net = MegatronMLP()                    # stand-alone: no communication
    serial_losses = train(serial_net, batches, args.lr, args.momentum)
    serial_params = whole_parameters(serial_net, parallel=False)
    if args.serial:
        net, losses, params = serial_net, serial_losses, serial_params
    else:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                     full_batch=True)
        try:
            net = MegatronMLP(dp, mp)
            losses = train(net, batches, args.lr, args.momentum)
            params = whole_parameters(net, parallel=True)
        finally:
            ms.reset_auto_parallel_context()

    if rank == 0:
        for k, loss in enumerate(losses, 1):
            if k % args.print_every == 0 or k == 1:
                print(f"step {k} loss {loss:.7f}", flush=True)
        for name in sorted(params):
            print(f"param {name} sumsq {float(np.sum(params[name].astype(np.float64) ** 2)):.7f}")
    same_losses = np.allclose(losses, serial_losses, rtol=1e-5, atol=1e-7)
    same_params = all(np.allclose(params[k], serial_params[k], rtol=1e-5, atol=1e-6)
                      for k in serial_params)
    if not (same_losses and same_params):
        raise SystemExit(f"rank {rank}: the parallel run differs from the serial run "
                         f"(losses equal: {same_losses}, parameters equal: {same_params})")
    if rank == 0:
        print(f"Megatron MLP on {n} rank(s) (data parallel {dp} x model parallel {mp}): "
              f"{args.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
              f"loss curve and parameters == the serial run")


if __name__ == "__main__":
    main()
