"""SyncBatchNorm (one process), InstanceNorm1d/2d/3d and BatchNorm3d against numpy written
here, eager and compiled; gradients against finite differences; their argument errors.
(SyncBatchNorm across ranks: tests/ranks/test_sync_batchnorm.py.)"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences


def batch_norm_np(x, gamma, beta, axes, eps=1e-5):
    """Normalise over `axes` (biased variance), gamma/beta along dim 1."""
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    shape = [1, -1] + [1] * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shape) + beta.reshape(shape)


def run(layer, x, mode):
    ms.set_context(mode=mode)
    try:
        return layer(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 2, 2)])
def test_sync_batchnorm_alone_is_a_batchnorm(mode, shape):
    """No world (or a world of 1): the batch's own statistics, moving ones updated."""
    x = np.random.default_rng(0).standard_normal(shape) * 3 + 1
    layer = nn.SyncBatchNorm(3, momentum=0.7, gamma_init="normal", beta_init="normal",
                             dtype=ms.float64)
    layer.set_train()
    g, b = layer.gamma.asnumpy(), layer.beta.asnumpy()
    axes = (0,) + tuple(range(2, len(shape)))
    np.testing.assert_allclose(run(layer, x, mode), batch_norm_np(x, g, b, axes), rtol=1e-10)
    np.testing.assert_allclose(layer.moving_mean.asnumpy(), 0.3 * x.mean(axis=axes),
                               rtol=1e-10)
    np.testing.assert_allclose(layer.moving_variance.asnumpy(),
                               0.7 + 0.3 * x.var(axis=axes), rtol=1e-10)
    layer.set_train(False)                    # inference: the moving statistics
    mm, mv = layer.moving_mean.asnumpy(), layer.moving_variance.asnumpy()
    shp = [1, -1] + [1] * (len(shape) - 2)
    want = (x - mm.reshape(shp)) / np.sqrt(mv.reshape(shp) + 1e-5) * g.reshape(shp) + \
        b.reshape(shp)
    np.testing.assert_allclose(run(layer, x, mode), want, rtol=1e-10)


def test_sync_batchnorm_errors(sim):
    with pytest.raises(RuntimeError, match="For 'SyncBatchNorm', the 'process_groups' need"):
        nn.SyncBatchNorm(2, process_groups=[[0]])
    with pytest.raises(ValueError, match="For 'SyncBatchNorm', the 'x' should be 2 or 4-D"):
        nn.SyncBatchNorm(2)(Tensor(np.ones((2, 2, 2), np.float32)))
    with pytest.raises(ValueError, match="momentum"):
        nn.SyncBatchNorm(2, momentum=1.5)
    sim(8, 3)
    with pytest.raises(ValueError, match=r"For 'SyncBatchNorm', the rank ids in "
                                         r"'process_groups' should be in \[0, 8\), but got 9"):
        nn.SyncBatchNorm(2, process_groups=[[0, 9]])
    with pytest.raises(ValueError, match="should be unique, but got 3 twice"):
        nn.SyncBatchNorm(2, process_groups=[[3, 4], [3]])
    with pytest.raises(TypeError, match="For 'SyncBatchNorm'.*process_groups\\[0\\]"):
        nn.SyncBatchNorm(2, process_groups=[(0, 1)])
    layer = nn.SyncBatchNorm(2, process_groups=[[0, 1], [2, 3, 4]])
    assert layer.group == "ranks2,3,4"


def grads(layer, x, w, mode):
    """d sum(layer(x) * w) / d(x, gamma, beta)."""
    net = _Weighted(layer, w)
    ms.set_context(mode=mode)
    try:
        dx, (dg, db) = ms.grad(net, 0, [layer.gamma, layer.beta])(Tensor(x))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return dx.asnumpy(), dg.asnumpy(), db.asnumpy()


class _Weighted(nn.Cell):
    def __init__(self, layer, w):
        super().__init__()
        self.layer, self.w, self.sum = layer, Tensor(w), ops.ReduceSum()

    def construct(self, x):
        return self.sum(self.layer(x) * self.w)


def check_grads(layer, x, axes, mode):
    """Gradients against central differences of the numpy forward (float64)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal(x.shape)
    g, b = layer.gamma.asnumpy(), layer.beta.asnumpy()
    dx, dg, db = grads(layer, x, w, mode)

    def f(x_=x, g_=g, b_=b):
        return batch_norm_np(x_, g_, b_, axes) * w
    np.testing.assert_allclose(dx, finite_differences(lambda v: f(x_=v), x), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(dg, finite_differences(lambda v: f(g_=v), g), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(db, finite_differences(lambda v: f(b_=v), b), rtol=1e-5,
                               atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls,shape", [(nn.InstanceNorm1d, (2, 3, 4)),
                                       (nn.InstanceNorm2d, (2, 3, 2, 3)),
                                       (nn.InstanceNorm3d, (2, 3, 2, 1, 2))])
def test_instance_norm(mode, cls, shape):
    """Per sample and channel over the spatial dims, in training and inference alike."""
    x = np.random.default_rng(1).standard_normal(shape) * 2 + 0.5
    layer = cls(3, gamma_init="normal", beta_init="normal", dtype=ms.float64)
    g, b = layer.gamma.asnumpy(), layer.beta.asnumpy()
    axes = tuple(range(2, len(shape)))
    want = batch_norm_np(x, g, b, axes)
    for train in (True, False):
        layer.set_train(train)
        np.testing.assert_allclose(run(layer, x, mode), want, rtol=1e-10, atol=1e-12)
    check_grads(layer, x, axes, mode)


@pytest.mark.parametrize("mode", MODES)
def test_batchnorm3d(mode):
    x = np.random.default_rng(2).standard_normal((3, 2, 2, 2, 3)) * 2 + 1
    layer = nn.BatchNorm3d(2, momentum=0.6, gamma_init="normal", beta_init="normal",
                           dtype=ms.float64)
    layer.set_train()
    g, b = layer.gamma.asnumpy(), layer.beta.asnumpy()
    axes = (0, 2, 3, 4)
    np.testing.assert_allclose(run(layer, x, mode), batch_norm_np(x, g, b, axes), rtol=1e-10)
    np.testing.assert_allclose(layer.moving_mean.asnumpy(), 0.4 * x.mean(axis=axes),
                               rtol=1e-10)
    np.testing.assert_allclose(layer.moving_variance.asnumpy(), 0.6 + 0.4 * x.var(axis=axes),
                               rtol=1e-10)
    check_grads(layer, x, axes, mode)
    layer.set_train(False)
    mm, mv = layer.moving_mean.asnumpy(), layer.moving_variance.asnumpy()
    shp = (1, -1, 1, 1, 1)
    want = (x - mm.reshape(shp)) / np.sqrt(mv.reshape(shp) + 1e-5) * g.reshape(shp) + \
        b.reshape(shp)
    np.testing.assert_allclose(run(layer, x, mode), want, rtol=1e-10)


def test_instance_norm_and_batchnorm3d_errors():
    with pytest.raises(ValueError, match=r"For 'InstanceNorm2d', the 'x' should be 4-D "
                                         r"\(N, C, ...\) with C = num_features 3, but got "
                                         r"shape \[2, 4, 2, 2\]"):
        nn.InstanceNorm2d(3)(Tensor(np.ones((2, 4, 2, 2), np.float32)))
    with pytest.raises(ValueError, match="For 'InstanceNorm1d', the 'x' should be 3-D"):
        nn.InstanceNorm1d(3)(Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(TypeError, match="For 'InstanceNorm3d'.*'eps'"):
        nn.InstanceNorm3d(3, eps=1)
    with pytest.raises(ValueError, match=r"For 'InstanceNorm2d', the 'momentum' should be in "
                                         r"\[0, 1\], but got 1.5"):
        nn.InstanceNorm2d(3, momentum=1.5)
    with pytest.raises(ValueError, match="For 'InstanceNorm2d', the 'eps' should be > 0"):
        nn.InstanceNorm2d(3, eps=float("nan"))
    with pytest.raises(ValueError, match="For 'InstanceNorm2d'.*num_features"):
        nn.InstanceNorm2d(0)
    with pytest.raises(ValueError, match=r"For 'BatchNorm3d', the 'x' should be 5-D"):
        nn.BatchNorm3d(2)(Tensor(np.ones((2, 2, 2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'BatchNorm3d', the strategy should be"):
        nn.BatchNorm3d(2).shard(((2, 2, 1, 1, 1),))
    layer = nn.InstanceNorm2d(2, affine=False)
    assert not layer.gamma.requires_grad and not layer.beta.requires_grad
