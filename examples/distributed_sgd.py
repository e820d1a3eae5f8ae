"""Distributed synchronous SGD on scikit-learn's digits (the seeds' `average_gradients`).

    msrun -n 4 examples/distributed_sgd.py [--epochs 10] [--plot loss.png]
    python examples/distributed_sgd.py --serial          # the reference: one process

Every rank holds the same network (same seed) and, at every step, its own quarter of the
same global batch. It computes its gradients with `ms.value_and_grad`, sums them over the
ranks with `ops.AllReduce` and divides by the world size -- the mean of the shards'
gradients, which is the gradient of the global batch's mean loss -- then steps `nn.SGD`.
So N ranks follow the serial run (whole global batches) step for step. Rank 0 prints one
`epoch <k> loss <mean loss>` line per epoch; `pip install -e '.[examples]'` adds
scikit-learn, a tqdm progress bar and the matplotlib loss plot (`--plot FILE.png`).
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init

try:
    from tqdm import tqdm
except ImportError:                                    # optional: no progress bar
    tqdm = None

GLOBAL_BATCH = 64                                      # split evenly over 1, 2, 4 or 8 ranks


def average_gradients(grads, size):
    """The seed's average_gradients: AllReduce(sum) every gradient, then / world size."""
    all_reduce = ops.AllReduce(ops.ReduceOp.SUM)
    return tuple(all_reduce(g) / size for g in grads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--serial", action="store_true",
                        help="one process trains on whole global batches (the reference)")
    parser.add_argument("--plot", default=None, help="save the loss curve to this PNG")
    args = parser.parse_args()

    if args.serial:
        rank, size = 0, 1
    else:
        init()
        rank, size = get_rank(), get_group_size()
    if GLOBAL_BATCH % size:
        raise SystemExit(f"the global batch {GLOBAL_BATCH} does not split over {size} ranks")
    local = GLOBAL_BATCH // size

    digits = load_digits()                             # bundled with scikit-learn: no download
    x_all = (digits.data / 16.0).astype(np.float32)    # (1797, 64) pixels in [0, 1]
    y_all = digits.target.astype(np.int32)             # (1797,) classes 0..9
    steps = len(x_all) // GLOBAL_BATCH                 # the last partial batch is dropped

    ms.set_seed(args.seed)                             # same initial weights on every rank
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.SequentialCell([nn.Dense(64, 32, activation="relu"), nn.Dense(32, 10)])
    loss_net = nn.WithLossCell(net, nn.CrossEntropyLoss())
    grad_fn = ms.value_and_grad(loss_net, None, net.trainable_params())
    optimizer = nn.SGD(net.trainable_params(), args.lr, momentum=0.5)
    rng = np.random.default_rng(args.seed)             # same batch order on every rank

    bar = tqdm(total=args.epochs * steps, desc="train") if tqdm and rank == 0 else None
    curve = []
    for epoch in range(args.epochs):
        order = rng.permutation(len(x_all))
        epoch_loss = 0.0
        for step in range(steps):
            batch = order[step * GLOBAL_BATCH:(step + 1) * GLOBAL_BATCH]
            shard = batch[rank * local:(rank + 1) * local]     # this rank's part of it
            loss, grads = grad_fn(Tensor(x_all[shard]), Tensor(y_all[shard]))
            if size > 1:
                grads = average_gradients(grads, size)
                loss = ops.AllReduce()(loss) / size            # the global batch's loss
            optimizer(grads)
            epoch_loss += float(loss.asnumpy())
            if bar is not None:
                bar.update()
        curve.append(epoch_loss / steps)
        if rank == 0:
            msg = f"epoch {epoch + 1} loss {curve[-1]:.7f}"
            print(msg, flush=True) if bar is None else bar.write(msg)
    if bar is not None:
        bar.close()

    if rank == 0 and args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: no plot (pip install -e '.[examples]')")
        else:
            plt.plot(range(1, len(curve) + 1), curve, marker="o")
            plt.xlabel("epoch")
            plt.ylabel("mean training loss")
            plt.title(f"distributed SGD on digits, {size} rank(s)")
            plt.savefig(args.plot)
            print(f"loss curve saved to {args.plot}")
    if rank == 0:
        print(f"distributed SGD on {size} rank(s), {local} of every {GLOBAL_BATCH}-sample "
              f"batch each: {args.epochs} epochs, final loss {curve[-1]:.4f}")


if __name__ == "__main__":
    main()
