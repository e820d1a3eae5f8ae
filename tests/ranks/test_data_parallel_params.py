"""data_parallel keeps every Parameter whole on every rank (as MindSpore) while the batch
is split wherever the graph carries it: trained on 2 and 4 ranks, each rank holds the
serial network's whole parameters."""
import numpy as np
from parallel_oracle import data

import msops as ms
from msops import Parameter, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()


class ParamsFirst(nn.Cell):
    """A reshaped bias and a transposed weight (Parameters as first inputs) and a MatMul
    whose batch is its second input's dim 1."""

    def __init__(self):
        super().__init__()
        self.b = Parameter(data(8, seed=1), name="b")
        self.w = Parameter(data(8, 8, seed=2), name="w")
        self.mm = ops.MatMul()

    def construct(self, x):
        wt = ops.transpose(self.w, (1, 0))
        y = ops.tanh(self.mm(x, wt) + ops.reshape(self.b, (1, 8)))
        return ops.transpose(self.mm(wt, ops.transpose(y, (1, 0))), (1, 0))


def train(x, y):
    net = ParamsFirst()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Momentum(net.trainable_params(), 0.1, 0.9))
    losses = [float(step(x, y).asnumpy()) for _ in range(4)]
    return losses, {p.name: p.asnumpy().copy() for p in net.trainable_params()}, \
        net.parameter_layout_dict


def test_data_parallel_training_keeps_parameters_whole():
    x, y = data(4 * N, 8, seed=3), data(4 * N, 8, seed=4)
    ms.set_context(mode=ms.GRAPH_MODE)
    want_losses, want, _ = train(x, y)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N, full_batch=True)
    try:
        losses, got, layouts = train(x, y)
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    assert want_losses[-1] < want_losses[0]
    for name, value in want.items():
        assert list(layouts[name].slice_shape) == list(value.shape), name   # held whole
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
