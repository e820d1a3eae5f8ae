"""Cell.set_comm_fusion and Cell.recompute under real MPI on 2 and 4 ranks: GRAPH_MODE
data_parallel training with the second layer's gradients in a fusion bucket of their own,
and the network recomputed, trains as the serial network on the whole batch, and the
compiled step reduces the two layers' gradients with one AllReduce each."""
import numpy as np

from parallel_oracle import DenseDP, data

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
STEPS = 4
X, Y = data(4 * N, 16, seed=5), data(4 * N, 8, seed=6)


def _train(parallel, fusion=False, recompute=False):
    """STEPS of TrainOneStepCell + SGD; (losses, trained parameters, the step's graph)."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                     gradients_mean=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = DenseDP()
        if fusion:
            net.d2.set_comm_fusion(2)
        if recompute:            # the backward reads its ReLU's output: re-emitted
            net.recompute()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.SGD(net.trainable_params(), learning_rate=0.05))
        b = X.shape[0] // N
        x = Tensor(X.asnumpy()[R * b:(R + 1) * b]) if parallel else X
        y = Tensor(Y.asnumpy()[R * b:(R + 1) * b]) if parallel else Y
        losses = [float(step(x, y).asnumpy()) for _ in range(STEPS)]
        graph = step._compile_cache.last_graph()
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}, \
        graph


def test_fused_by_id_and_recomputed_data_parallel_training_equals_serial():
    _, serial, _ = _train(False)
    _, plain, plain_graph = _train(True)
    _, fused, graph = _train(True, fusion=True, recompute=True)
    for name in serial:
        np.testing.assert_allclose(fused[name], serial[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)
        np.testing.assert_allclose(plain[name], serial[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)

    def gradient_reductions(g):
        return sorted(n.shape for n in g.nodes if n.op == "AllReduce" and n.shape)
    first, second = 16 * 32 + 32, 32 * 8 + 8
    assert gradient_reductions(plain_graph) == [(first + second,)]
    assert gradient_reductions(graph) == [(second,), (first,)]

    def matmuls(g):
        return sum(n.op == "MatMul" for n in g.nodes)
    assert matmuls(graph) > matmuls(plain_graph)     # the partitioned forward, re-emitted
