"""Dropout and DistributedGradReducer under real MPI on 2 and 4 ranks.

Dropout's mask is drawn per global element index, so a parallel graph (Dropout whole,
its input gathered from a split ReLU) gives the serial output; DistributedGradReducer
sums (or averages) each rank's gradients, checked against numpy.
"""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, run_parallel

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N = get_group_size()


class ReluDropNet(nn.Cell):
    def __init__(self, strategy=None):
        super().__init__()
        self.relu = ops.ReLU().shard(((N, 1),))
        self.drop = nn.Dropout(keep_prob=0.6)
        if strategy is not None:
            self.drop.dropout.shard(strategy)

    def construct(self, x):
        return self.drop(self.relu(x))


def make_net():
    ms.set_seed(21)                      # the serial and the parallel run draw alike
    return ReluDropNet()


def test_dropout_sharded_net_equals_serial():
    x = np.random.default_rng(3).standard_normal((4 * N, 6)).astype(np.float32)
    graph = check(make_net, Tensor(x), train=True, rtol=1e-6, atol=1e-6)
    assert "AllGather" in comm_ops(graph)                   # Dropout gets the whole x
    ms.set_seed(21)
    want = ops.Dropout(0.6)(Tensor(np.maximum(x, 0)))[0].asnumpy()
    got, _ = run_parallel(make_net, Tensor(x), train=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert 0 < (got == 0).mean() < 1                         # some dropped, some kept


def test_dropout_refuses_a_split():
    x = Tensor(np.ones((4 * N, 6), np.float32))
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = ReluDropNet(strategy=((N, 1),))
        net.set_train()
        with pytest.raises(ValueError, match="'Dropout', input 0 dim 0 cannot be split "
                                             "\\(its mask is drawn per global element"):
            net.compile(x)
    finally:
        ms.reset_auto_parallel_context()


def grads_of(rank):
    rng = np.random.default_rng(100 + rank)
    return rng.standard_normal((3, 4)).astype(np.float32), \
        rng.standard_normal((5,)).astype(np.float32)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
@pytest.mark.parametrize("mean,degree", [(True, None), (False, None), (True, 2)])
def test_grad_reducer_against_numpy(mean, degree, mode):
    ms.set_context(mode=mode)
    params = [ms.Parameter(Tensor(np.zeros((3, 4), np.float32)), name="w"),
              ms.Parameter(Tensor(np.zeros(5, np.float32)), name="b")]
    reducer = nn.DistributedGradReducer(params, mean=mean, degree=degree)
    got = reducer(tuple(Tensor(g) for g in grads_of(get_rank())))
    every = [grads_of(r) for r in range(N)]
    for i, g in enumerate(got):
        want = sum(e[i].astype(np.float64) for e in every)
        if mean:
            want = want / (degree or N)
        assert g.shape == want.shape
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_grad_reducer_checks_the_count():
    reducer = nn.DistributedGradReducer([ms.Parameter(Tensor(np.zeros(2, np.float32)), name="p")])
    with pytest.raises(ValueError, match="'DistributedGradReducer', the number of 'grads' "
                                         "should be the number of parameters: 1, but got 2"):
        reducer((Tensor(np.zeros(2, np.float32)),) * 2)
