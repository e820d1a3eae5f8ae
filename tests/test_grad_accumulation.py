"""Gradient accumulation in one process, GRAPH and PYNATIVE mode: micro-batches
(nn.GradAccumulationCell) and mini-steps (grad_accumulation_step) against one step on the
whole batch; the multi-rank cases are in tests/ranks/test_grad_accumulation.py."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

RNG = np.random.default_rng(3)
X = RNG.standard_normal((8, 5)).astype(np.float32)
Y = RNG.standard_normal((8, 3)).astype(np.float32)


def make():
    ms.set_seed(5)
    net = nn.SequentialCell([nn.Dense(5, 8, activation="relu"), nn.Dense(8, 3)])
    return net, nn.SGD(net.trainable_params(), learning_rate=0.05, momentum=0.9)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.PYNATIVE_MODE)


def whole_batch(steps=3):
    net, opt = make()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    for _ in range(steps):
        step(Tensor(X), Tensor(Y))
    return [p.asnumpy().copy() for p in net.trainable_params()]


def test_micro_batches_sum_their_losses_and_equal_the_whole_batch(mode):
    want = whole_batch()
    net, opt = make()
    loss = float(nn.WithLossCell(net, nn.MSELoss())(Tensor(X), Tensor(Y)).asnumpy())
    cell = nn.GradAccumulationCell(nn.WithLossCell(net, nn.MSELoss()), 4)
    step = nn.TrainOneStepCell(cell, opt, sens=0.25)
    got = [float(step(Tensor(X), Tensor(Y)).asnumpy()) for _ in range(3)]
    np.testing.assert_allclose(got[0], 4 * loss, rtol=1e-5)
    for p, w in zip(net.trainable_params(), want):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-5, atol=1e-6)


def test_mini_steps_apply_once_every_k_calls(mode):
    want = whole_batch()
    ms.set_auto_parallel_context(grad_accumulation_step=4)
    net, opt = make()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    before = [p.asnumpy().copy() for p in net.trainable_params()]
    for s in range(3):
        for i in range(4):
            step(Tensor(X[2 * i:2 * i + 2]), Tensor(Y[2 * i:2 * i + 2]))
            if s == 0 and i < 3:        # accumulating calls leave the weights alone
                for p, b in zip(net.trainable_params(), before):
                    np.testing.assert_array_equal(p.asnumpy(), b)
    assert int(opt.global_step.asnumpy()[0]) == 3
    for p, w in zip(net.trainable_params(), want):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-5, atol=1e-6)
    assert all(not b.asnumpy().any() for b in step._mini.buffers)   # drained


def test_errors():
    net, _ = make()
    with pytest.raises(ValueError, match=r"For 'GradAccumulationCell', the 'micro_size' "):
        nn.GradAccumulationCell(net, 0)
    cell = nn.GradAccumulationCell(nn.WithLossCell(net, nn.MSELoss()), 3)
    with pytest.raises(ValueError, match=r"For 'GradAccumulationCell', the inputs' dim 0 "
                                         r"should be divisible by micro_size: 3, but got "
                                         r"shape \[8, 5\]"):
        cell(Tensor(X), Tensor(Y))
