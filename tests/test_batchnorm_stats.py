"""BatchNorm1d/2d's moving statistics in training: MindSpore's convention
(moving = momentum * moving + (1 - momentum) * batch statistic, the batch's biased
variance) against numpy, written back by ops.Assign in PYNATIVE_MODE and in the compiled
step in GRAPH_MODE, through calls, gradient functions and TrainOneStepCell."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]
CASES = {   # name: (make the layer, input shape, the channel axis)
    "1d": (lambda **kw: nn.BatchNorm1d(3, **kw), (8, 3), 1),
    "2d_nchw": (lambda **kw: nn.BatchNorm2d(3, **kw), (4, 3, 2, 2), 1),
    "2d_nhwc": (lambda **kw: nn.BatchNorm2d(3, data_format="NHWC", **kw), (4, 2, 2, 3), 3),
}


def batches(shape, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * (k + 1) + k).astype(np.float32)
            for k in range(steps)]


def numpy_moving(xs, axis, momentum, mean=0.0, var=1.0):
    others = tuple(d for d in range(xs[0].ndim) if d != axis)
    for x in xs:
        mean = momentum * mean + (1 - momentum) * x.astype(np.float64).mean(others)
        var = momentum * var + (1 - momentum) * x.astype(np.float64).var(others)
    return mean, var


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_training_steps_update_the_moving_statistics(case, mode):
    """4 TrainOneStepCell steps (SGD on gamma/beta) on changing batches; one compile."""
    ms.set_context(mode=mode)
    make, shape, axis = CASES[case]
    bn = make(momentum=0.8)
    bn.set_train()
    train = nn.TrainOneStepCell(nn.WithLossCell(bn, nn.MSELoss()),
                                nn.SGD(bn.trainable_params(), 0.1))
    xs = batches(shape, 4)
    for x in xs:
        train(Tensor(x), Tensor(np.zeros(shape, np.float32)))
    mean, var = numpy_moving(xs, axis, 0.8)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.moving_variance.asnumpy(), var, rtol=1e-5, atol=1e-6)
    if mode == ms.GRAPH_MODE:
        assert train._compile_cache.traces == 1       # one graph: forward, backward, update
    # inference normalises with them
    bn.set_train(False)
    x = xs[0]
    bshape = [-1 if d == axis else 1 for d in range(x.ndim)]
    g, b = bn.gamma.asnumpy().reshape(bshape), bn.beta.asnumpy().reshape(bshape)
    want = (x - mean.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) * g + b
    np.testing.assert_allclose(bn(Tensor(x)).asnumpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), mean, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_which_calls_update(mode):
    """Training calls and use_batch_statistics=True update (MindSpore's bn_train runs);
    inference and use_batch_statistics=False do not; a sub-cell in a bigger net too."""
    ms.set_context(mode=mode)
    xs = batches((6, 3), 2, seed=1)
    bn = nn.BatchNorm1d(3)
    bn(Tensor(xs[0]))                                     # inference: no update
    np.testing.assert_array_equal(bn.moving_mean.asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(bn.moving_variance.asnumpy(), np.ones(3))
    forced = nn.BatchNorm1d(3, use_batch_statistics=True)
    for x in xs:
        forced(Tensor(x))
    mean, var = numpy_moving(xs, 1, 0.9)
    np.testing.assert_allclose(forced.moving_mean.asnumpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(forced.moving_variance.asnumpy(), var, rtol=1e-5, atol=1e-6)
    frozen = nn.BatchNorm1d(3, use_batch_statistics=False).set_train()
    frozen(Tensor(xs[0]))
    np.testing.assert_array_equal(frozen.moving_mean.asnumpy(), np.zeros(3))

    dense = nn.Dense(3, 4, weight_init="ones", dtype=ms.float32)
    net = nn.SequentialCell(dense, nn.BatchNorm1d(4)).set_train()
    loss_and_grads = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None,
                                       net.trainable_params())
    loss_and_grads(Tensor(xs[0]), Tensor(np.zeros((6, 4), np.float32)))
    h = xs[0] @ np.ones((3, 4)) + dense.bias.asnumpy()
    np.testing.assert_allclose(net[1].moving_mean.asnumpy(), 0.1 * h.mean(0), rtol=1e-5,
                               atol=1e-6)
