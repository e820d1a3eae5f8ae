"""Per-step time of compiled graphs against the same computation written with numpy.

    python benchmarks/graph_step.py [--steps 200] [--batch 256] [--width 512] [--layers 8]

Two comparisons, each in one process on the same arrays, the sides interleaved (ABBA)
so machine noise hits them alike; cells are medians.
  * MLP: a compiled `layers`-deep Dense+ReLU MLP (`net(x)`) against the same layers as
    plain numpy calls (`np.maximum(x @ w.T + b, 0)`).
  * Element-wise: a compiled graph of six element-wise ops against the same steps by
    hand (`out=` into one preallocated buffer, a new array for the result), at a tiny
    size (extra µs a step) and at 1 and 16 MiB (ratio). Rows: the compiled step
    (`Executor`: arrays in, Tensors out) and the Cell call (adds the compile-cache lookup).
Targets (docs/performance.md, "Graph step"): MLP ratio <= 1.03, compile < 0.5 s;
element-wise compiled step <= 1.05x by hand at >= 1 MiB and <= +3 µs a step at 16 floats.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np

import msops as ms
from msops import Tensor, nn, ops
from msops.graph.executor import Executor


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


class Elementwise(nn.Cell):
    """square(exp(-(x * y + x)) - y): six element-wise ops."""

    def __init__(self) -> None:
        super().__init__()
        self.exp, self.square = ops.Exp(), ops.Square()

    def construct(self, x, y):
        return self.square(self.exp(-(x * y + x)) - y)


def elementwise_by_hand(shape: tuple) -> Callable:
    """The same six ops with numpy: one preallocated buffer, a new array for the result."""
    buf = np.empty(shape, np.float32)

    def step(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        np.multiply(x, y, out=buf)
        np.add(buf, x, out=buf)
        np.negative(buf, out=buf)
        np.exp(buf, out=buf)
        np.subtract(buf, y, out=buf)
        return np.square(buf, out=np.empty(shape, np.float32))
    return step


def interleaved(fns: dict[str, Callable], blocks: int, inner: int = 1) -> dict[str, float]:
    """Median seconds a call of each fn, over `blocks` timed blocks of `inner` calls, the
    fns taken in turn forwards then backwards (ABBA)."""
    times: dict[str, list] = {k: [] for k in fns}
    order = list(fns.items())
    for b in range(blocks):
        for name, fn in (order if b % 2 == 0 else order[::-1]):
            t = time.perf_counter()
            for _ in range(inner):
                fn()
            times[name].append((time.perf_counter() - t) / inner)
    return {k: statistics.median(v) for k, v in times.items()}


def mlp(args: argparse.Namespace) -> None:
    ms.set_context(mode=ms.GRAPH_MODE)
    net = MLP(args.width, args.layers)
    x = Tensor(np.random.default_rng(1).standard_normal((args.batch, args.width), np.float32))
    weights = [(d.weight.asnumpy(), d.bias.asnumpy()) for d in net.body.cells()]

    t0 = time.perf_counter()
    net.compile(x)
    compile_s = time.perf_counter() - t0

    np.testing.assert_allclose(net(x).asnumpy(), numpy_step(x.asnumpy(), weights),
                               rtol=1e-5, atol=1e-6)
    m = interleaved({"graph": lambda: net(x),
                     "numpy": lambda: numpy_step(x.asnumpy(), weights)}, args.steps)
    g, n = m["graph"], m["numpy"]
    print(f"graph_step: {args.layers}-layer MLP, batch {args.batch}, width {args.width}, "
          f"{args.steps} steps")
    print(f"  compiled step (median): {g * 1e3:.3f} ms")
    print(f"  plain numpy   (median): {n * 1e3:.3f} ms")
    print(f"  ratio compiled/numpy:   {g / n:.3f}   (target <= 1.03)")
    print(f"  compile time:           {compile_s * 1e3:.1f} ms  (target < 500 ms)")


def elementwise(args: argparse.Namespace) -> None:
    ms.set_context(mode=ms.GRAPH_MODE)
    print("graph_step: element-wise graph (6 ops, float32) against the same steps by hand")
    print(f"  {'size':>10}  {'by hand':>10}  {'compiled step':>13}  {'ratio':>6}  {'Δ µs':>7}"
          f"  {'Cell call':>10}  {'ratio':>6}  {'Δ µs':>7}")
    rng = np.random.default_rng(2)
    for shape in ((4, 4), (512, 512), (2048, 2048)):
        x, y = (rng.standard_normal(shape).astype(np.float32) * 0.5 for _ in range(2))
        net = Elementwise()
        tx, ty = Tensor(x), Tensor(y)
        executor = Executor(net.compile(tx, ty))
        hand = elementwise_by_hand(shape)
        np.testing.assert_allclose(executor.run([x, y])[0], hand(x, y), rtol=1e-6)
        tiny = x.nbytes < 4096
        m = interleaved({"hand": lambda: hand(x, y), "step": lambda: executor([x, y]),
                         "cell": lambda: net(tx, ty)},
                        blocks=args.steps * (4 if tiny else 1), inner=200 if tiny else 1)
        h = m["hand"]
        size = f"{x.nbytes} B" if tiny else f"{x.nbytes >> 20} MiB"
        print(f"  {size:>10}  {h * 1e6:8.2f}µs  {m['step'] * 1e6:11.2f}µs  {m['step'] / h:6.3f}"
              f"  {(m['step'] - h) * 1e6:+7.2f}  {m['cell'] * 1e6:8.2f}µs  {m['cell'] / h:6.3f}"
              f"  {(m['cell'] - h) * 1e6:+7.2f}")
    print("  targets: compiled step <= 1.05x by hand at >= 1 MiB, <= +3 µs at 64 B")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--layers", type=int, default=8)
    args = ap.parse_args()
    mlp(args)
    elementwise(args)


if __name__ == "__main__":
    main()
