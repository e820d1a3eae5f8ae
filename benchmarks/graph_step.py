"""Per-step time of a compiled 8-layer MLP against the same computation as plain numpy calls.

    python benchmarks/graph_step.py [--steps 200] [--batch 256] [--width 512] [--layers 8]

Both run in one process on the same arrays, interleaved step by step so machine noise
hits both alike; prints the median step times, their ratio and the compile time.
Target (docs/performance.md, "Graph step"): ratio <= 1.10, compile < 0.5 s.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import msops as ms
from msops import Tensor, nn


class MLP(nn.Cell):
    """`layers` x (Dense(width, width) + ReLU)."""

    def __init__(self, width: int, layers: int) -> None:
        super().__init__()
        self.body = nn.SequentialCell([nn.Dense(width, width, activation="relu")
                                       for _ in range(layers)])

    def construct(self, x):
        return self.body(x)


def numpy_step(x: np.ndarray, weights: list) -> np.ndarray:
    """The reference: the same Dense+ReLU layers as direct numpy calls."""
    for w, b in weights:
        x = np.maximum(x @ w.T + b, 0)
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    args = ap.parse_args()

    ms.set_context(mode=ms.GRAPH_MODE)
    net = MLP(args.width, args.layers)
    x = Tensor(np.random.default_rng(1).standard_normal((args.batch, args.width), np.float32))
    weights = [(d.weight.asnumpy(), d.bias.asnumpy()) for d in net.body.cells()]

    t0 = time.perf_counter()
    net.compile(x)
    compile_s = time.perf_counter() - t0

    np.testing.assert_allclose(net(x).asnumpy(), numpy_step(x.asnumpy(), weights),
                               rtol=1e-5, atol=1e-6)
    graph_t, numpy_t = [], []
    for _ in range(args.steps):
        t = time.perf_counter()
        net(x)
        graph_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        numpy_step(x.asnumpy(), weights)
        numpy_t.append(time.perf_counter() - t)
    g, n = statistics.median(graph_t), statistics.median(numpy_t)
    print(f"graph_step: {args.layers}-layer MLP, batch {args.batch}, width {args.width}, "
          f"{args.steps} steps")
    print(f"  compiled step (median): {g * 1e3:.3f} ms")
    print(f"  plain numpy   (median): {n * 1e3:.3f} ms")
    print(f"  ratio compiled/numpy:   {g / n:.3f}   (target <= 1.10)")
    print(f"  compile time:           {compile_s * 1e3:.1f} ms  (target < 500 ms)")


if __name__ == "__main__":
    main()
