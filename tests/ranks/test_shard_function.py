"""`ms.shard` under real MPI on 2 and 4 ranks: a block sharded with a parameter plan, a
sharded function, and training through planned Parameters equal the serial run."""
import numpy as np
import pytest
from nets import BlockThenDense
from parallel_oracle import assert_held, data, run_serial

import msops as ms
from msops import nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()


def Net():
    """Dense(16, 32) -> ReLU (the block) -> Dense(32, 8), fixed weights."""
    return BlockThenDense(16, 32, 8, (data(32, 16), data(8, 32, seed=1)))


def sharded(plan):
    net = Net()
    ms.shard(net.block, in_strategy=((N, 1),), parameter_plan=plan)
    return net


def parallel(make, fn):
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return fn(make())
    finally:
        ms.reset_auto_parallel_context()


PLANS = [None, {"dense.weight": (N, 1)}, {"dense.weight": (1, N)},
         {"dense.weight": (1, N), "dense.bias": (N,)}]


@pytest.mark.parametrize("plan", PLANS)
def test_a_sharded_block_equals_serial(plan):
    x = data(8, 16, seed=2)
    want = run_serial(Net, x)
    got = parallel(lambda: sharded(plan), lambda net: gather_full(net(x)).asnumpy())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("plan", PLANS[1:])
def test_training_through_planned_parameters_equals_serial(plan):
    x, y = data(8, 16, seed=3), data(8, 8, seed=4)

    def train(net):
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.Momentum(net.trainable_params(), 0.05, 0.9))
        losses = [float(step(x, y).asnumpy()) for _ in range(4)]
        return losses, net, net.parameter_layout_dict

    ms.set_context(mode=ms.GRAPH_MODE)
    want_losses, serial, _ = train(Net())
    want = {p.name: p.asnumpy() for p in serial.trainable_params()}
    got_losses, net, layouts = parallel(lambda: sharded(plan), train)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5, atol=1e-6)
    assert want_losses[-1] < want_losses[0]
    for name, split in plan.items():
        full = f"block.{name}"
        want_slice = [d // s for d, s in zip(want[full].shape, split)]
        assert list(layouts[full].slice_shape) == want_slice      # stored as the plan says
    for p in net.trainable_params():
        assert_held(p, want[p.name], layouts[p.name].layout, rtol=1e-4, atol=1e-5)


def test_a_sharded_function_equals_numpy():
    x, w = data(8, 16, seed=5), data(16, 4, seed=6)

    def call(_):
        f = ms.shard(lambda a, b: ops.relu(ops.matmul(a, b)), in_strategy=((N, 1), (1, 1)))
        return gather_full(f(x, w)).asnumpy()
    got = parallel(lambda: None, call)
    np.testing.assert_allclose(got, np.maximum(x.asnumpy() @ w.asnumpy(), 0), rtol=1e-5,
                               atol=1e-5)


def test_a_sharded_function_inside_a_construct_equals_serial():
    x = data(8, 16, seed=7)

    class Outer(nn.Cell):
        def __init__(self, shard_it):
            super().__init__()
            self.inner = Net()
            self.f = ms.shard(self.square, in_strategy=((1, N),)) if shard_it else self.square

        @staticmethod
        def square(t):
            return ops.mul(t, t)

        def construct(self, t):
            return self.f(self.inner(t))

    want = run_serial(lambda: Outer(False), x)
    got = parallel(lambda: Outer(True), lambda net: gather_full(net(x)).asnumpy())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
