"""The composed functional forms under real MPI on 2 and 4 ranks: a small causal-attention
net built from einsum, tril, masked_fill (a causal mask), pad and index_select, run in
semi_auto_parallel with the data-parallel default strategy (the batch split over every
rank, no collective before the output), equals the serial run, forward and gradients.
"""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, data

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size
from msops.parallel import gather_full

RANKS = (2, 4)
N = get_group_size()
B, S, H = 2 * N, 5, 6


class CausalNet(nn.Cell):
    """Scores q.k over a causal mask, softmax, the weighted values, padded and re-indexed."""

    def __init__(self, mode):
        super().__init__()
        self.wq = Parameter(data(H, H, seed=3), name="wq")
        self.mode = mode

    def construct(self, x):
        q = ops.einsum("bsh,hd->bsd", x, self.wq)
        scores = ops.einsum("bsd,btd->bst", q, x)
        future = ops.equal(ops.tril(ops.ones((S, S), ms.float32)), 0.0)
        scores = ops.masked_fill(ops.tril(scores, 1), future, -1e4)
        out = ops.einsum("bst,btd->bsd", ops.softmax(scores, -1), x)
        out = ops.pad(out, (1, 2, 0, 1), self.mode)
        return ops.index_select(out, -1, Tensor(np.array([0, 3, 8, 3], np.int32)))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
def test_causal_net_equals_serial(mode):
    graph = check(lambda: CausalNet(mode), data(B, S, H))
    # the batch stays split through every op: only the einsum with the replicated weight
    # may gather nothing, and the graph's output is this rank's slice of the batch
    assert tuple(graph.outputs[0].shape)[0] == B // N, graph.outputs[0].shape
    assert comm_ops(graph) == [], comm_ops(graph)


def grads(mode, x):
    net = CausalNet(mode)
    _, g = ms.value_and_grad(lambda t: ops.ReduceSum()(net(t) * net(t), ()),
                             grad_position=0, weights=net.trainable_params())(x)
    return [g[0]] + list(g[1])


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_causal_net_gradients_equal_serial(mode):
    x = data(B, S, H, seed=1)
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = [g.asnumpy() for g in grads(mode, x)]
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    try:
        got = [gather_full(g).asnumpy() for g in grads(mode, x)]
    finally:
        ms.reset_auto_parallel_context()
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
