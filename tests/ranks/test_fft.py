"""The Fourier transforms with their batch dims split on 2/4 ranks equal the serial op,
forward and gradient, with no communication; a strategy splitting a transformed dim is
refused, naming the op and the dim."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops
from test_parallel_grad import check_grads

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
X = Tensor(np.random.default_rng(3).standard_normal((2 * N, 3, 6)).astype(np.float32))


class Spectrum(nn.Cell):
    """rfft over the last dim (batch split), its complex parts weighted, or back to real."""

    def __init__(self, make, inverse=False):
        super().__init__()
        self.op, self.inverse = make(), inverse
        self.w = Tensor(np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32))

    def construct(self, x):
        y = self.op(x)
        if self.inverse:
            return ops.IRFFTN(s=(6,), dim=(2,))(y) * x
        return ops.Real()(y) * self.w + ops.Imag()(y)


MAKES = {
    "rfft": lambda: ops.RFFTN(dim=(2,)).shard(((N, 1, 1),)),
    "rfft2": lambda: ops.RFFTN(dim=(1, 2), norm="ortho").shard(((N, 1, 1),)),
}


@pytest.mark.parametrize("name,inverse", [("rfft", False), ("rfft", True), ("rfft2", False)])
def test_batch_split_equals_serial(name, inverse):
    graph = check(lambda: Spectrum(MAKES[name], inverse), X)
    assert comm_ops(graph) == []
    check_grads(lambda: Spectrum(MAKES[name], inverse), X, positions=(0,))


def test_splitting_a_transformed_dim_is_refused():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Spectrum(lambda: ops.RFFTN(dim=(1, 2)).shard(((1, 1, 2),)))
    with pytest.raises(ValueError, match=r"For 'RFFTN', input 0 dim 2 cannot be split \(the "
                                         r"transform mixes every element along it\)"):
        net.compile(X)
