"""set/get/reset_algo_parameters: each key msops's search has changes the strategies it
chooses (a simulated world of 8, planning only); the keys it has no counterpart for are
refused by name. Sharded == serial with them: tests/ranks/test_algo_parameters.py."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel import get_strategies


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


class Net(nn.Cell):
    """MatMul -> ReLU -> MatMul, the MatMuls configured."""

    def __init__(self, s1, s2):
        super().__init__()
        self.m1 = ops.MatMul().shard(s1)
        self.relu = ops.ReLU()
        self.m2 = ops.MatMul().shard(s2)
        self.w1 = Parameter(ones(64, 64), name="w1")
        self.w2 = Parameter(ones(64, 16), name="w2")

    def construct(self, x):
        return self.m2(self.relu(self.m1(x, self.w1)), self.w2)


@pytest.fixture
def auto(sim):
    sim(8, 3)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="auto_parallel", device_num=8, full_batch=True,
                                 search_mode="sharding_propagation")
    yield
    ms.reset_algo_parameters()
    ms.reset_auto_parallel_context()


def relu_strategy(s1, s2):
    net = Net(s1, s2)
    net.compile(ones(16, 64))
    return get_strategies(net)["relu"]


def test_defaults_and_reset():
    assert ms.get_algo_parameters("fully_use_devices") is True
    assert ms.parallel.get_algo_parameters("elementwise_op_strategy_follow") is False
    ms.set_algo_parameters(fully_use_devices=False, elementwise_op_strategy_follow=True)
    assert ms.get_algo_parameters("fully_use_devices") is False
    assert ms.get_algo_parameters("elementwise_op_strategy_follow") is True
    ms.reset_algo_parameters()
    assert ms.get_algo_parameters("fully_use_devices") is True
    assert ms.get_algo_parameters("elementwise_op_strategy_follow") is False


def test_fully_use_devices(auto):
    # the MatMuls use 2 of the 8 devices: ReLU keeping their (2, 1) split moves nothing,
    # but uses 2 devices; with fully_use_devices it must use all 8 ((2, 4): no bytes move
    # either, the 4 copies each keeping a quarter of the columns)
    s = ((2, 1), (1, 1))
    strategy = relu_strategy(s, s)
    assert int(np.prod(strategy[0])) == 8 and strategy[0][0] == 2
    ms.set_algo_parameters(fully_use_devices=False)
    assert relu_strategy(s, s) == ((2, 1),)


def test_elementwise_op_strategy_follow(auto):
    # m1's output is split by columns, m2 wants its input by rows: ReLU keeps m1's split
    # (the first choice of equal costs) unless it follows its consumer
    s1, s2 = ((1, 1), (1, 8)), ((8, 1), (1, 1))
    assert relu_strategy(s1, s2) == ((1, 8),)
    ms.set_algo_parameters(elementwise_op_strategy_follow=True)
    assert relu_strategy(s1, s2) == ((8, 1),)


@pytest.mark.parametrize("key", ["tensor_slice_align_enable", "tensor_slice_align_size",
                                 "enable_algo_approxi", "algo_approxi_epsilon"])
def test_keys_without_a_counterpart_are_refused(key):
    value = 16 if key == "tensor_slice_align_size" else 0.1 if key == "algo_approxi_epsilon" \
        else True
    with pytest.raises(ValueError, match=f"For 'set_algo_parameters', the key '{key}' has no "
                                         f"counterpart"):
        ms.set_algo_parameters(**{key: value})
    with pytest.raises(ValueError, match=f"For 'get_algo_parameters', the key '{key}'"):
        ms.get_algo_parameters(key)


def test_bad_keys_and_values():
    with pytest.raises(ValueError, match="For 'set_algo_parameters', the key should be one of"):
        ms.set_algo_parameters(fully_use=True)
    with pytest.raises(TypeError, match="'fully_use_devices' should be a bool"):
        ms.set_algo_parameters(fully_use_devices=1)
    # all-or-nothing: a bad key leaves the good one unset
    with pytest.raises(ValueError):
        ms.set_algo_parameters(elementwise_op_strategy_follow=True, nope=1)
    assert ms.get_algo_parameters("elementwise_op_strategy_follow") is False
