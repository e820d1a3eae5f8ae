"""Print and InsertGradientOf in a semi-auto-parallel graph on real MPI worlds: Print
gathers its inputs, so every rank prints the whole (serial) value at every step; a
gradient hook in a sharded network gives the serial network's gradient."""
import re

import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)


class Net(nn.Cell):
    """sum(clip_grad(tanh(x @ w)) * 3) with h = x @ w row-sharded and printed."""

    def __init__(self, n):
        super().__init__()
        self.w = Parameter(Tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)), "w")
        self.matmul = ops.MatMul().shard(((n, 1), (1, 1)))
        self.tanh = ops.Tanh().shard(((n, 1),))
        self.print = ops.Print()
        self.clip = ops.InsertGradientOf(lambda g: ops.clip_by_value(g, -0.5, 0.5))

    def construct(self, x):
        h = self.matmul(x, self.w)
        self.print("h:", h)
        return (self.clip(self.tanh(h)) * 3).sum()


def test_print_and_hook_sharded_equal_serial(capfd):
    n = get_group_size()
    x = np.random.default_rng(5).standard_normal((2 * n, 3)).astype(np.float32)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    try:
        net = Net(n)
        w = net.w.asnumpy().copy()
        capfd.readouterr()
        for _ in range(2):
            net(Tensor(x))
        h = x @ w
        printed = capfd.readouterr().out
        assert printed.count("h:\n") == 2                       # each step, whole value
        for step in printed.split("h:\n")[1:]:
            assert step.startswith(f"Tensor(shape={list(h.shape)}, dtype=Float32, value=\n")
            got = [float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?",
                                                step.split("value=")[1])]
            np.testing.assert_allclose(got, h.ravel(), rtol=1e-5, atol=1e-5)
        grad = ms.grad(net, grad_position=None, weights=net.w)(Tensor(x))
        want = x.T @ (np.clip(np.full_like(h, 3.0), -0.5, 0.5) * (1 - np.tanh(h) ** 2))
        np.testing.assert_allclose(gather_full(grad).asnumpy(), want, rtol=1e-5, atol=1e-5)
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
