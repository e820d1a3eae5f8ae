"""TensorScatterUpdate (its unaddressed dim split over the ranks) and ScatterNd in a
semi_auto_parallel graph: the loss and the gradients equal the serial run's."""
import numpy as np

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()
INDICES = Tensor(np.array([[2], [0]], np.int32))


class Net(nn.Cell):
    def __init__(self, shard):
        super().__init__()
        w = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        self.w = ms.Parameter(Tensor(w), "w")
        self.update = ops.TensorScatterUpdate()
        self.scatter = ops.ScatterNd()
        if shard:
            self.update.shard(((1, N), (1, 1), (1, N)))

    def construct(self, x):
        y = self.update(self.w, INDICES, x)
        z = self.scatter(INDICES, x * 2, (4, 8))
        return ((y + z) ** 2).sum()


def test_scatter_ops_equal_serial():
    x = Tensor(np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    serial = Net(False)
    want, (want_x, want_w) = ms.value_and_grad(serial, 0, serial.trainable_params())(x)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    net = Net(True)
    got, (got_x, got_w) = ms.value_and_grad(net, 0, net.trainable_params())(x)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(gather_full(got_x).asnumpy(), want_x.asnumpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(gather_full(got_w[0]).asnumpy(), want_w[0].asnumpy(),
                               rtol=1e-5, atol=1e-6)
