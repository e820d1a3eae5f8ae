"""A data-parallel training step against the same rank's hand-written numpy step + raw mpi4py.

    msrun -n 2 benchmarks/training.py [--steps 20] [--batch 256] [--width 1024] [--layers 4]

msops: `TrainOneStepCell(WithLossCell(MLP, MSELoss), SGD)` in GRAPH_MODE under
`data_parallel` (each rank feeds its own batch), so forward, backward, the gradient
AllReduce buckets and the SGD update run as one compiled step. Reference, in the same
processes on the same data: the MLP's forward, backward and update written by hand in
numpy (matmuls into preallocated buffers), its gradients in one flat buffer summed by one
`comm.Allreduce(MPI.IN_PLACE, flat)` (buffer form) and averaged. The two sides alternate
(ABBA) so machine noise hits them alike; cells are medians. Also printed: the collectives
in the compiled step, and the compile time of forward + backward against forward alone.
Targets (issue 15): step ratio <= 1.10, compile ratio <= 3.
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


def make_net(width: int, layers: int) -> nn.Cell:
    """`layers` x Dense(width, width), ReLU between them (not after the last)."""
    return nn.SequentialCell([nn.Dense(width, width, activation="relu" if k < layers - 1
                                       else None) for k in range(layers)])


class NumpyStep:
    """The same MLP, MSE loss (mean over the global batch) and SGD, by hand, with the
    gradients summed over the ranks by one in-place Allreduce of a flat buffer."""

    def __init__(self, weights: list, batch: int, lr: float, comm: MPI.Comm) -> None:
        self.comm, self.lr, self.n = comm, lr, comm.Get_size()
        self.w = [w.copy() for w, _ in weights]
        self.b = [b.copy() for _, b in weights]
        sizes = [a.size for w, b in zip(self.w, self.b) for a in (w, b)]
        self.flat = np.empty(sum(sizes), np.float32)
        views, start = [], 0
        for w, b in zip(self.w, self.b):
            for a in (w, b):
                views.append(self.flat[start:start + a.size].reshape(a.shape))
                start += a.size
        self.gw, self.gb = views[0::2], views[1::2]
        width = self.w[0].shape[0]
        self.h = [np.empty((batch, width), np.float32) for _ in self.w]   # layer outputs

    def __call__(self, x: np.ndarray, y: np.ndarray) -> float:
        hs, inp = [], x
        for k, (w, b) in enumerate(zip(self.w, self.b)):
            out = self.h[k]
            np.matmul(inp, w.T, out=out)
            out += b
            if k < len(self.w) - 1:
                np.maximum(out, 0, out=out)
            hs.append(inp)
            inp = out
        diff = inp - y
        count = diff.size * self.n                         # the global batch's elements
        loss = float(np.vdot(diff, diff)) / diff.size
        d = diff * (2.0 / count)
        for k in range(len(self.w) - 1, -1, -1):
            np.matmul(d.T, hs[k], out=self.gw[k])
            np.sum(d, axis=0, out=self.gb[k])
            if k:
                d = d @ self.w[k]
                d *= hs[k] > 0                             # ReLU of the layer below
        self.comm.Allreduce(MPI.IN_PLACE, self.flat)       # sum of the ranks' partial grads
        for w, b, gw, gb in zip(self.w, self.b, self.gw, self.gb):
            w -= self.lr * gw
            b -= self.lr * gb
        return loss


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=256, help="per rank")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    init()
    rank, n = get_rank(), get_group_size()
    comm = MPI.COMM_WORLD
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=n)
    ms.set_seed(0)
    lr = 0.01
    rng = np.random.default_rng(100 + rank)               # each rank its own batch
    x = rng.standard_normal((args.batch, args.width)).astype(np.float32)
    y = rng.standard_normal((args.batch, args.width)).astype(np.float32)

    # compile times (trace, passes, executor; no run): forward alone, forward + backward,
    # the whole step; each the median of 3 compiles of fresh caches, ranks in step
    net = make_net(args.width, args.layers)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    compiles: dict[str, list] = {"forward": [], "forward+backward": [], "step": []}
    for _ in range(3):
        loss_net._compile_cache.clear()
        comm.Barrier()
        compiles["forward"].append(timed(loss_net.compile, Tensor(x), Tensor(y)))
        grad_fn = ms.value_and_grad(loss_net, None, net.trainable_params())
        comm.Barrier()
        compiles["forward+backward"].append(
            timed(grad_fn._cache.get, loss_net, (Tensor(x), Tensor(y)), loss_net._tree_key()))
        train = nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), lr))
        comm.Barrier()
        compiles["step"].append(timed(train.compile, Tensor(x), Tensor(y)))
    t_fwd, t_fwd_bwd, t_step_compile = (statistics.median(compiles[k]) for k in compiles)
    graph = train.compile(Tensor(x), Tensor(y))
    collectives = [f"{nd.op}{list(nd.shape)}" for nd in graph.nodes if nd.is_communication]
    weights = [(d.weight.asnumpy(), d.bias.asnumpy()) for d in net.cells()]
    reference = NumpyStep(weights, args.batch, lr, comm)

    xt, yt = Tensor(x), Tensor(y)
    sides = {"msops": lambda: train(xt, yt), "numpy+mpi4py": lambda: reference(x, y)}
    for fn in sides.values():                             # warm up (buffers, first runs)
        fn()
    times: dict[str, list] = {k: [] for k in sides}
    order = list(sides.items())
    for s in range(args.steps):
        for name, fn in (order if s % 2 == 0 else order[::-1]):
            comm.Barrier()
            times[name].append(timed(fn))
    # both sides trained the same net on the same data: their losses agree
    loss_msops = float(train(xt, yt).asnumpy())
    loss_ref = comm.allreduce(reference(x, y)) / n
    med = {k: statistics.median(v) for k, v in times.items()}
    worst = {k: comm.allreduce(v, op=MPI.MAX) for k, v in med.items()}
    if rank == 0:
        print(f"training step: {args.layers} x Dense({args.width}), batch {args.batch} per "
              f"rank, SGD, data_parallel on {n} ranks, {args.steps} steps a side (ABBA)")
        print(f"  msops compiled step     {worst['msops'] * 1e3:8.2f} ms")
        print(f"  numpy + mpi4py step     {worst['numpy+mpi4py'] * 1e3:8.2f} ms")
        print(f"  ratio                   {worst['msops'] / worst['numpy+mpi4py']:8.3f}  "
              f"(target <= 1.10)")
        print(f"  collectives per step    {len(collectives):8d}  {collectives} "
              f"(reference: 1 Allreduce)")
        print(f"  compile forward         {t_fwd * 1e3:8.1f} ms")
        print(f"  compile forward+backward{t_fwd_bwd * 1e3:8.1f} ms  ratio "
              f"{t_fwd_bwd / t_fwd:.2f} (target <= 3)")
        print(f"  compile whole step (fwd+bwd+update) {t_step_compile * 1e3:.1f} ms")
        print(f"  loss after the run: msops {loss_msops:.6f}, reference {loss_ref:.6f}")


if __name__ == "__main__":
    main()
