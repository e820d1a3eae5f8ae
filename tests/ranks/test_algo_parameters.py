"""The algo parameters under real MPI: auto_parallel with fully_use_devices on or off and
elementwise_op_strategy_follow gives the serial network's output (the strategies differ,
tests/test_algo_parameters.py shows how)."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import get_strategies
from parallel_oracle import run_parallel, run_serial

RANKS = (2, 4)
N = get_group_size()


def data(*shape):
    rng = np.random.default_rng(sum(shape) + 5)
    return rng.standard_normal(shape).astype(np.float32)


class Net(nn.Cell):
    def __init__(self, s1, s2):
        super().__init__()
        self.m1 = ops.MatMul().shard(s1)
        self.relu = ops.ReLU()
        self.m2 = ops.MatMul().shard(s2)
        self.w1 = Parameter(Tensor(data(32, 32)), name="w1")
        self.w2 = Parameter(Tensor(data(32, 8)), name="w2")

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w1)), self.w2)


CASES = {"partial_use": (((2, 1), (1, 1)), ((2, 1), (1, 1))),
         "columns_then_rows": (((1, 1), (1, N)), ((N, 1), (1, 1)))}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("params", [{}, {"fully_use_devices": False},
                                    {"elementwise_op_strategy_follow": True}])
def test_sharded_equals_serial(case, params):
    s1, s2 = CASES[case]
    x = Tensor(data(16, 32))
    want = run_serial(lambda: Net(s1, s2), x)
    ms.set_algo_parameters(**params)
    nets = []

    def make():
        nets.append(Net(s1, s2))
        return nets[-1]
    try:
        got, _ = run_parallel(make, x, mode="auto_parallel", search_mode="sharding_propagation")
        relu = get_strategies(nets[-1])["relu"][0]
    finally:
        ms.reset_algo_parameters()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    if params.get("fully_use_devices", True):
        assert int(np.prod(relu)) == N
    if params.get("elementwise_op_strategy_follow") and case == "columns_then_rows":
        assert relu == (N, 1)
