"""Training outside TrainOneStepCell's GRAPH_MODE path, under real MPI on 2 and 4 ranks.

PYNATIVE_MODE data parallel: each rank differentiates its local loss on its own batch
slice and `DistributedGradReducer` (made by TrainOneStepCell, or by hand) averages the
gradients over the world; with gradients_mean=True it trains as GRAPH_MODE data_parallel
and as the serial network on the whole batch.
"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
STEPS = 5


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return Tensor(rng.standard_normal(shape).astype(np.float32))


class DenseDP(nn.Cell):
    def __init__(self):
        super().__init__()
        self.d1 = nn.Dense(16, 32, weight_init=data(32, 16))
        self.act = nn.ReLU()
        self.d2 = nn.Dense(32, 8, weight_init=data(8, 32, seed=1))

    def construct(self, x):
        return self.d2(self.act(self.d1(x)))


OPTIMIZERS = {
    "sgd_momentum": lambda ps: nn.SGD(ps, learning_rate=0.02, momentum=0.9),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01),
}
X, Y = data(4 * N, 16, seed=3), data(4 * N, 8, seed=4)


def local(t):
    """This rank's dim-0 slice of the global batch."""
    b = t.shape[0] // N
    return Tensor(t.asnumpy()[R * b:(R + 1) * b])


def _train_cell(mode, optimizer, x, y, parallel=None, **context):
    """STEPS of TrainOneStepCell; (losses, trained parameters)."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, **context)
    try:
        ms.set_context(mode=mode)
        net = DenseDP()
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   OPTIMIZERS[optimizer](net.trainable_params()))
        losses = [float(step(x, y).asnumpy()) for _ in range(STEPS)]
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}


def _assert_params(got, want):
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_pynative_data_parallel_equals_graph_and_serial(optimizer):
    """Each rank feeds its batch slice; PYNATIVE losses are the ranks' local losses (their
    mean is the global loss), GRAPH_MODE's the global loss; the parameters agree."""
    want_losses, want = _train_cell(ms.GRAPH_MODE, optimizer, X, Y)
    graph_losses, graph = _train_cell(ms.GRAPH_MODE, optimizer, local(X), local(Y),
                                      "data_parallel", gradients_mean=True)
    py_losses, py = _train_cell(ms.PYNATIVE_MODE, optimizer, local(X), local(Y),
                                "data_parallel", gradients_mean=True)
    _assert_params(graph, want)
    _assert_params(py, want)
    np.testing.assert_allclose(graph_losses, want_losses, rtol=1e-4, atol=1e-6)
    from mpi4py import MPI
    mean_losses = MPI.COMM_WORLD.allreduce(py_losses) / N
    np.testing.assert_allclose(mean_losses, want_losses, rtol=1e-4, atol=1e-6)
    assert want_losses[-1] < want_losses[0]


def _serial_grads():
    ms.reset_auto_parallel_context()
    net = DenseDP()
    loss, grads = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                    net.trainable_params())(X, Y)
    return float(loss.asnumpy()), [g.asnumpy() for g in grads]


@pytest.mark.parametrize("mean", [True, False])
def test_pynative_value_and_grad_with_a_reducer_by_hand(mean):
    """MindSpore 2.x's loop: value_and_grad gives the local loss's gradients, the reducer
    sums them over the world (and divides by the degree when mean): the serial gradients
    of the global mean loss, or N times them without mean."""
    _, want = _serial_grads()
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 gradients_mean=mean)
    try:
        net = DenseDP()
        params = net.trainable_params()
        grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None, params)
        reducer = nn.DistributedGradReducer(params, mean=mean)
        _, grads = grad_fn(local(X), local(Y))
        got = reducer(grads)
    finally:
        ms.reset_auto_parallel_context()
    for p, g, w in zip(params, got, want):
        np.testing.assert_allclose(g.asnumpy(), w if mean else N * w, rtol=1e-4, atol=1e-5,
                                   err_msg=p.name)


def test_pynative_semi_auto_parallel_is_refused():
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N)
    try:
        net = nn.WithLossCell(DenseDP(), nn.MSELoss())
        with pytest.raises(RuntimeError, match=r"For 'value_and_grad', the parallel mode "
                                               r"'semi_auto_parallel' .* should run in "
                                               r"GRAPH_MODE .* or inside ms.jit, but got "
                                               r"PYNATIVE_MODE"):
            ms.value_and_grad(net, None, net.trainable_params())(X, Y)
    finally:
        ms.reset_auto_parallel_context()
