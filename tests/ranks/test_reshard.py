"""ops.reshard under real MPI: nets whose reshard forces a redistribution (semi-auto, and
sharding propagation starting from the reshard) equal the serial net, outputs and
gradients (of the input and the weights); the resharded tensor has the given layout."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import Layout, TensorLayout, gather_full
from parallel_oracle import data

RANKS = (2, 4, 8)
N = get_group_size()
LAY = Layout((2, N // 2), ("dp", "mp"))


class ReluReshardMatmul(nn.Cell):
    """relu (rows split) -> reshard(layout) -> @ w."""

    def __init__(self, layout, shard):
        super().__init__()
        self.relu = ops.ReLU()
        self.matmul = ops.MatMul()
        if shard:
            self.relu.shard(((N, 1),))
        self.layout = layout
        self.w = Parameter(data(16, 8), "w")

    def construct(self, x):
        return self.matmul(ops.reshard(self.relu(x), self.layout), self.w)


class TwoMatmuls(nn.Cell):
    """x @ w1 (rows split) -> reshard(layout) -> @ w2 (contraction split): a real
    redistribution on each side of the reshard, forwards and backwards."""

    def __init__(self, layout, shard):
        super().__init__()
        self.mm1, self.mm2 = ops.MatMul(), ops.MatMul()
        if shard:
            self.mm1.shard(((N, 1), (1, 1)))
            self.mm2.shard(((1, N), (N, 1)))
        self.layout = layout
        self.w1 = Parameter(data(16, 16, seed=1), "w1")
        self.w2 = Parameter(data(16, 8, seed=2), "w2")

    def construct(self, x):
        return self.mm2(ops.reshard(self.mm1(x, self.w1), self.layout), self.w2)


def _loss_and_grads(net, x):
    loss_net = _Loss(net)
    params = net.trainable_params()
    loss, (gx, gw) = ms.value_and_grad(loss_net, 0, params)(x)
    return loss.asnumpy(), gather_full(gx).asnumpy(), [gather_full(g).asnumpy() for g in gw]


class _Loss(nn.Cell):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x):
        return (self.net(x) ** 2).sum()


# (id, net, layout, parallel mode, whether the layouts force data to move)
CASES = [
    ("relu_matmul", ReluReshardMatmul, LAY("None", "mp"), "semi_auto_parallel", True),
    ("relu_matmul_dp", ReluReshardMatmul, LAY("dp", "mp"), "semi_auto_parallel", N > 2),
    ("two_matmuls", TwoMatmuls, LAY("mp", "dp"), "semi_auto_parallel", True),
    # propagation lays the matmuls out around the reshard's layout (moving nothing here)
    ("propagation", TwoMatmuls, LAY(("dp", "mp"), "None"), "auto_parallel", False),
]


@pytest.mark.parametrize("name,make,layout,mode,moves", CASES, ids=[c[0] for c in CASES])
def test_reshard_net_equals_serial(name, make, layout, mode, moves):
    x = data(16, 16, seed=3)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.reset_auto_parallel_context()
    want = _loss_and_grads(make(layout, shard=False), x)
    extra = {"search_mode": "sharding_propagation"} if mode == "auto_parallel" else {}
    ms.set_auto_parallel_context(parallel_mode=mode, device_num=N, full_batch=True, **extra)
    try:
        net = make(layout, shard=mode != "auto_parallel")
        got = _loss_and_grads(net, x)
        graph = net.compile(x)
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    for g, w in zip([got[1]] + got[2], [want[1]] + want[2]):     # float32 sums of ~1e3
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6 * np.abs(w).max())
    node = next(n for n in graph.nodes if n.op == "Reshard")
    want_layout = TensorLayout(LAY.device_matrix, layout.tensor_map, (16, 16))
    assert [node.layout.slice_of(r) for r in range(N)] == \
        [want_layout.slice_of(r) for r in range(N)]
    assert any(n.is_communication for n in graph.nodes) == moves
