"""BatchNorm's moving statistics in parallel training equal the serial run's: the batch split
(the statistics are the global batch's) and the channels split (each rank writes its slice),
semi_auto_parallel and data_parallel, after 3 TrainOneStepCell + Momentum steps."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank
from parallel_oracle import assert_held

RANKS = (2, 4, 8)
STEPS = 3


class Net(nn.Cell):
    """Dense -> BatchNorm1d -> Dense, or BatchNorm2d (NCHW) -> Flatten -> Dense;
    `bn_strategy` shards the BatchNorm."""

    def __init__(self, two_d, bn_strategy):
        super().__init__()
        ms.set_seed(3)
        self.two_d = two_d
        self.bn = nn.BatchNorm2d(2) if two_d else nn.BatchNorm1d(8)
        if bn_strategy is not None:
            self.bn.shard(bn_strategy)
        self.head = nn.SequentialCell(nn.Flatten(), nn.Dense(8, 2)) if two_d else \
            nn.SequentialCell(nn.Dense(4, 8), self.bn, nn.Dense(8, 2))

    def construct(self, x):
        return self.head(self.bn(x)) if self.two_d else self.head(x)


def batches(n_rows, two_d):
    rng = np.random.default_rng(11)
    shape = (n_rows, 2, 2, 2) if two_d else (n_rows, 4)
    return [((rng.standard_normal(shape) * (k + 1) + k).astype(np.float32),
             rng.standard_normal((n_rows, 2)).astype(np.float32)) for k in range(STEPS)]


def train(net, data):
    net.set_train()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Momentum(net.trainable_params(), 0.05, 0.9))
    return [float(step(Tensor(x), Tensor(y)).asnumpy()) for x, y in data]


def strategies(n):
    half = n // 2
    return {
        "1d_batch": (False, ((n, 1),)),
        "1d_batch_and_channels": (False, ((half, 2),)),
        "2d_batch": (True, ((n, 1, 1, 1),)),
        "2d_batch_and_channels": (True, ((half, 2, 1, 1),)),
    }


@pytest.mark.parametrize("case", ["1d_batch", "1d_batch_and_channels", "2d_batch",
                                  "2d_batch_and_channels", "data_parallel"])
def test_moving_statistics_equal_the_serial_run(case):
    n, rank = get_group_size(), get_rank()
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    two_d, strategy = strategies(n).get(case, (False, None))
    data = batches(4 * n, two_d)
    serial = Net(two_d, None)
    serial_losses = train(serial, data)
    if case == "data_parallel":
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=n,
                                     full_batch=False)
        fed = [(x[rank * 4:(rank + 1) * 4], y[rank * 4:(rank + 1) * 4]) for x, y in data]
    else:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                     full_batch=True)
        fed = data
    try:
        net = Net(two_d, strategy)
        losses = train(net, fed)
        layouts = net.parameter_layout_dict
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(losses, serial_losses, rtol=1e-5)
    for name in ("moving_mean", "moving_variance"):
        want = getattr(serial.bn, name).asnumpy()
        assert not np.allclose(want, np.zeros(want.shape)) and not np.allclose(want, 1.0)
        # this rank's slice (all of it unless the channels are split)
        assert_held(getattr(net.bn, name), want, layouts[getattr(net.bn, name).name].layout,
                    rtol=1e-5, atol=1e-6)
