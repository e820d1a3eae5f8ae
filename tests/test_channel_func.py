"""Channel dropout (ops.dropout1d/2d/3d, nn.Dropout1d/2d/3d) and pixel (un)shuffle
(ops.pixel_shuffle / pixel_unshuffle, nn.PixelShuffle / PixelUnshuffle) against numpy
written here, eager and compiled; their errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]


def run(layer, mode, x, seed=None):
    ms.set_context(mode=mode)
    try:
        if seed is not None:
            ms.set_seed(seed)
        return layer(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


CASES = [(nn.Dropout1d, (3, 40, 5), 2), (nn.Dropout1d, (40, 5), 1),
         (nn.Dropout2d, (3, 40, 2, 3), 2), (nn.Dropout3d, (2, 40, 2, 1, 3), 2)]


@pytest.mark.parametrize("cls,shape,lead", CASES)
def test_channel_dropout_zeroes_whole_channels(cls, shape, lead):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) + 5  # no zeros
    layer = cls(p=0.3)
    layer.set_train()
    outs = [run(layer, mode, x, seed=7) for mode in MODES]
    np.testing.assert_array_equal(outs[0], outs[1])        # eager == compiled, one seed
    out = outs[0]
    per_channel = out.reshape(shape[:lead] + (-1,))
    scaled = x.reshape(per_channel.shape) / np.float32(0.7)
    dropped = (per_channel == 0).all(axis=-1)
    kept = np.isclose(per_channel, scaled, rtol=1e-6).all(axis=-1)
    assert (dropped ^ kept).all()                           # each channel all or nothing
    assert 0.15 < dropped.mean() < 0.45                     # about p of them
    assert not np.array_equal(run(layer, ms.PYNATIVE_MODE, x, seed=8), out)
    layer.set_train(False)
    np.testing.assert_array_equal(run(layer, ms.GRAPH_MODE, x), x)


def test_channel_dropout_edges_and_gradient():
    x = np.random.default_rng(1).standard_normal((2, 6, 3)).astype(np.float32)
    np.testing.assert_array_equal(ops.dropout1d(Tensor(x), 0.0).asnumpy(), x)
    np.testing.assert_array_equal(ops.dropout1d(Tensor(x), 1.0).asnumpy(), np.zeros_like(x))
    np.testing.assert_array_equal(ops.dropout1d(Tensor(x), 0.5, False).asnumpy(), x)
    w = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)

    def loss(t):
        ms.set_seed(4)
        return (ops.dropout1d(t, 0.4) * Tensor(w)).sum()
    for mode in MODES:
        ms.set_context(mode=mode)
        try:
            dx = ms.grad(loss)(Tensor(x)).asnumpy()
            ms.set_seed(4)
            kept = ops.dropout1d(Tensor(np.ones_like(x)), 0.4).asnumpy()   # 0 or 1 / 0.6
        finally:
            ms.set_context(mode=ms.PYNATIVE_MODE)
        np.testing.assert_allclose(dx, w * kept, rtol=1e-6)


def test_channel_dropout_errors():
    with pytest.raises(ValueError, match=r"For 'Dropout2d', the 'p' should be in \[0, 1\], "
                                         r"but got 1.5"):
        nn.Dropout2d(1.5)
    with pytest.raises(TypeError, match="For 'Dropout3d'.*'p'"):
        nn.Dropout3d(1)
    with pytest.raises(ValueError, match=r"For 'dropout2d', the 'input' should be 4-D, but "
                                         r"got shape \[2, 3\]"):
        ops.dropout2d(Tensor(np.ones((2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"For 'dropout1d', the 'input' should be 2 or 3-D"):
        ops.dropout1d(Tensor(np.ones(3, np.float32)))
    with pytest.raises(TypeError, match="For 'dropout1d', the 'input' should have a float"):
        ops.dropout1d(Tensor(np.ones((2, 3), np.int32)))
    with pytest.raises(TypeError, match="For 'dropout3d'.*'training'"):
        ops.dropout3d(Tensor(np.ones((1, 1, 1, 1, 1), np.float32)), 0.5, 1)


def shuffle_np(x, r):
    """output[..., c, h * r + i, w * r + j] = x[..., c * r * r + i * r + j, h, w]."""
    *lead, c, h, w = x.shape
    out = np.empty(tuple(lead) + (c // (r * r), h * r, w * r), x.dtype)
    for cc in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., cc, i::r, j::r] = x[..., cc * r * r + i * r + j, :, :]
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape,r", [((2, 8, 2, 3), 2), ((9, 1, 2), 3), ((2, 1, 4, 1, 1), 2)])
def test_pixel_shuffle_and_unshuffle(mode, shape, r):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    y = run(nn.PixelShuffle(r), mode, x)
    np.testing.assert_array_equal(y, shuffle_np(x, r))
    np.testing.assert_array_equal(run(nn.PixelUnshuffle(r), mode, y), x)
    np.testing.assert_array_equal(ops.pixel_shuffle(Tensor(x), r).asnumpy(), y)


def test_pixel_shuffle_errors():
    with pytest.raises(ValueError, match=r"For 'PixelShuffle', the channels of 'input' should "
                                         r"be divisible by upscale_factor \*\* 2 = 4"):
        nn.PixelShuffle(2)(Tensor(np.ones((1, 6, 2, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'PixelUnshuffle', the height and width"):
        nn.PixelUnshuffle(2)(Tensor(np.ones((1, 1, 3, 2), np.float32)))
    with pytest.raises(ValueError, match=r"For 'pixel_shuffle', the 'input' should have rank "
                                         r">= 3"):
        ops.pixel_shuffle(Tensor(np.ones((4, 2), np.float32)), 2)
    with pytest.raises(ValueError, match="For 'PixelShuffle'.*'upscale_factor'"):
        nn.PixelShuffle(0)
