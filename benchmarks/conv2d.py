"""Conv2D, its two backward ops and MaxPool against numpy's own formulation, in the same run.

    python benchmarks/conv2d.py [--reps 20]

The reference is what a numpy user writes: `np.lib.stride_tricks.sliding_window_view`
and `np.einsum(..., optimize=True)` (forward: "nchwij,ocij->nohw"; filter gradient:
"nohw,nchwij->ocij"), max over the same view for the pool. Each row prints the median
time of msops's lowered kernel (what eager calls and compiled graphs run), the
reference's, and their ratio (< 1: msops faster). Outputs are compared first. Last, one
compiled LeNet5 training step (loss, gradients, Momentum update), absolute.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import msops as ms                                               # noqa: E402
from msops import Tensor, nn, ops                                # noqa: E402
from msops.primitives.conv_ops import Conv2DBackpropFilter, Conv2DBackpropInput  # noqa: E402

SHAPES = [  # (name, x shape, out_channel, kernel)
    ("LeNet conv1, batch 32", (32, 1, 32, 32), 6, 5),
    ("LeNet conv2, batch 32", (32, 6, 14, 14), 16, 5),
    ("3x3, 64 ch, 28x28, batch 8", (8, 64, 28, 28), 64, 3),
]


def median_s(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def lowered(prim, *args):
    """The kernel msops runs for these arguments (inferred and lowered once)."""
    from msops.primitives.lowering import Abstract, _abstract_of, _inferred
    ins = [_abstract_of(a, i in prim.const_inputs) for i, a in enumerate(args)]
    shape, dtype = prim.infer([_inferred(a, "shape") for a in ins],
                              [_inferred(a, "dtype") for a in ins])
    kernel = prim.lower(ins, Abstract("op", tuple(shape), dtype))
    return lambda: kernel(*args)


def windows(x, k):
    return np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    reps = parser.parse_args().reps
    rng = np.random.default_rng(0)
    print(f"{'op':<12} {'shape':<28} {'msops ms':>9} {'numpy ms':>9} {'ratio':>6}")
    for name, xs, o, k in SHAPES:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal((o, xs[1], k, k)).astype(np.float32)
        conv = ops.Conv2D(o, k)
        y = lowered(conv, x, w)()
        dy = rng.standard_normal(y.shape).astype(np.float32)

        def ref_fwd():
            return np.einsum("nchwij,ocij->nohw", windows(x, k), w, optimize=True)

        def ref_dw():
            return np.einsum("nohw,nchwij->ocij", dy, windows(x, k), optimize=True)

        def ref_pool():
            return windows(x, 2)[:, :, ::2, ::2].max(axis=(4, 5))
        rows = [
            ("Conv2D", lowered(conv, x, w), ref_fwd),
            ("dW", lowered(Conv2DBackpropFilter(o, k), dy, x, w.shape), ref_dw),
            ("dX", lowered(Conv2DBackpropInput(o, k), dy, w, xs), None),
            ("MaxPool 2x2", lowered(ops.MaxPool(2, 2), x), ref_pool),
        ]
        for op, mine, ref in rows:
            if ref is not None:
                np.testing.assert_allclose(mine(), ref(), rtol=1e-3, atol=1e-3)
            t_mine = median_s(mine, reps)
            t_ref = median_s(ref, reps) if ref is not None else float("nan")
            print(f"{op:<12} {name:<28} {t_mine * 1e3:>9.2f} {t_ref * 1e3:>9.2f} "
                  f"{t_mine / t_ref:>6.2f}")

    from nets import LeNet5
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(1)
    net = LeNet5()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(
        reduction="mean")), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    xb = Tensor(rng.standard_normal((32, 1, 32, 32)).astype(np.float32))
    yb = Tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)])
    t = median_s(lambda: step(xb, yb), reps)
    print(f"LeNet5 training step, batch 32, compiled: {t * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
