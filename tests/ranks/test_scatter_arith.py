"""The arithmetic tensor scatters and unsorted_segment_sum/max in a semi_auto_parallel
graph, the unaddressed dim split over the ranks (no communication inside the ops): the loss
and the gradients (Max's routed to the winners) equal the serial run's."""
import numpy as np

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()
INDICES = Tensor(np.array([[2], [0], [2]], np.int32))          # row 2 addressed twice
IDS = Tensor(np.array([1, 0, 1, 3], np.int32))


class Net(nn.Cell):
    def __init__(self, shard):
        super().__init__()
        w = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
        self.w = ms.Parameter(Tensor(w), "w")
        self.scatters = [ops.TensorScatterAdd(), ops.TensorScatterSub(), ops.TensorScatterMul(),
                         ops.TensorScatterDiv(), ops.TensorScatterMax(), ops.TensorScatterMin()]
        if shard:
            for s in self.scatters:
                s.shard(((1, N), (1, 1), (1, N)))

    def construct(self, x):
        add, sub, mul, div, top, low = self.scatters
        u = x * 0.5
        y = add(self.w, INDICES, x) + sub(self.w, INDICES, u) + mul(self.w, INDICES, u)
        y = y + div(self.w, INDICES, ops.abs(x) + 1.0) + top(self.w, INDICES, x) \
            + low(self.w, INDICES, u)
        seg = ops.unsorted_segment_sum(self.w, IDS, 4) + ops.unsorted_segment_max(y, IDS, 4)
        return (y ** 2).sum() + (seg * self.w).sum()


def test_arithmetic_scatters_equal_serial():
    x = Tensor(np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    serial = Net(False)
    want, (want_x, want_w) = ms.value_and_grad(serial, 0, serial.trainable_params())(x)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    try:
        net = Net(True)
        got, (got_x, got_w) = ms.value_and_grad(net, 0, net.trainable_params())(x)
        full_x, full_w = gather_full(got_x).asnumpy(), gather_full(got_w[0]).asnumpy()
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(full_x, want_x.asnumpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(full_w, want_w[0].asnumpy(), rtol=1e-5, atol=1e-5)
