"""ops.interpolate in semi_auto_parallel on 2 and 4 ranks: an Upsample between two
parameterised ops, the batch split by the data-parallel default, equals the serial run,
forward and gradients, with the batch kept split through the resize (no collective)."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, data

import msops as ms
from msops import Parameter, nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()
B, C, H, W = 2 * N, 3, 4, 5


class UpNet(nn.Cell):
    def __init__(self, mode):
        super().__init__()
        self.scale = Parameter(data(1, C, 1, 1, seed=2), name="scale")
        self.up = nn.Upsample(size=(7, 3), mode=mode)
        self.bias = Parameter(data(1, 1, 7, 3, seed=3), name="bias")

    def construct(self, x):
        return ops.tanh(self.up(x * self.scale)) + self.bias


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest", "area"])
def test_upsample_net_equals_serial(mode):
    graph = check(lambda: UpNet(mode), data(B, C, H, W))
    assert tuple(graph.outputs[0].shape)[0] == B // N, graph.outputs[0].shape
    assert comm_ops(graph) == [], comm_ops(graph)


def test_upsample_net_gradients_equal_serial():
    x = data(B, C, H, W, seed=1)

    def grads():
        net = UpNet("bilinear")
        _, g = ms.value_and_grad(lambda t: ops.ReduceSum()(net(t) ** 2, ()), grad_position=0,
                                 weights=net.trainable_params())(x)
        return [g[0]] + list(g[1])

    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = [g.asnumpy() for g in grads()]
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    try:
        got = [gather_full(g).asnumpy() for g in grads()]
    finally:
        ms.reset_auto_parallel_context()
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
