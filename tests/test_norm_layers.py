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
