"""The ELU-family and composed activation layers sharded under real MPI: `layer.shard(((a,
b),))` shards every primitive of the layer alike (nn.LogSigmoid, Hardtanh and Tanhshrink
are several), so the sharded output and input gradient equal the serial ones with no
communication. (The primitives' own strategies: tests/ranks/test_fuzz_strategies.py.)
"""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_parallel_grad import check_grads

from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
H = max(N // 2, 1)
X = Tensor((3 * np.random.default_rng(7).standard_normal((4, 2 * N))).astype(np.float32))

LAYERS = [
    lambda: nn.ELU(0.7), lambda: nn.SeLU(), lambda: nn.Softsign(), lambda: nn.Mish(),
    lambda: nn.SoftShrink(0.4), lambda: nn.HShrink(), lambda: nn.LogSigmoid(),
    lambda: nn.Hardtanh(-0.5, 1.5), lambda: nn.Tanhshrink(),
]
IDS = ["ELU", "SeLU", "Softsign", "Mish", "SoftShrink", "HShrink", "LogSigmoid", "Hardtanh",
       "Tanhshrink"]


class Squared(nn.Cell):
    """sum(layer(x) ** 2): a scalar to differentiate."""

    def __init__(self, layer):
        super().__init__()
        self.layer, self.sum = layer, ops.ReduceSum()

    def construct(self, x):
        out = self.layer(x)
        return self.sum(out * out, ())


@pytest.mark.parametrize("strategy", [((2, H),), ((1, N),)], ids=["2xH", "1xN"])
@pytest.mark.parametrize("make", LAYERS, ids=IDS)
def test_sharded_layer_equals_serial_without_communication(make, strategy):
    layer = make().shard(strategy)
    for prim in layer._primitives.values():       # every primitive got x's split
        assert prim.in_strategy[0] == strategy[0], (prim.name, prim.in_strategy)
    graph = check(lambda: make().shard(strategy), X)
    assert comm_ops(graph) == []
    check_grads(lambda: Squared(make().shard(strategy)), X, positions=(0,))
