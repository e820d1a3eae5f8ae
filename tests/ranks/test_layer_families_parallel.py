"""The activation, patch, combined and image layers (nn.CELU ... nn.LRN, nn.ChannelShuffle,
nn.Unfold, nn.BiDense, nn.TimeDistributed, nn.Conv2dBnAct, nn.DenseBnAct, nn.CentralCrop,
nn.ImageGradients, nn.PSNR, nn.SSIM, nn.MSSSIM) in semi_auto_parallel with the
data-parallel default (the batch split) equal the serial layers on 2/4/8 ranks, output
and gradients; RReLU's training draws are the same sharded as serially."""
import numpy as np
import pytest
from parallel_oracle import check, run_serial
from test_activation_layers import Squared
from test_parallel_grad import check_grads

import msops as ms
from msops import Tensor, nn, ops

from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
RNG = np.random.default_rng(12)
X4 = Tensor(RNG.standard_normal((2 * N, 6, 5, 8)).astype(np.float32))
X3 = Tensor(RNG.standard_normal((2 * N, 3, 8)).astype(np.float32))
W_STEP = RNG.standard_normal((4, 8)).astype(np.float32)
X2 = Tensor(RNG.standard_normal((4 * N, 8)).astype(np.float32))
IMG = RNG.random((2 * N, 2, 34, 36)).astype(np.float32)
IMG1, IMG2 = Tensor(IMG), Tensor(np.clip(IMG + 0.1 * RNG.standard_normal(IMG.shape), 0,
                                         1).astype(np.float32))


class Patches(nn.Cell):
    """ops.fold(ops.unfold(x) * 2): im2col and col2im together."""

    def construct(self, x):
        cols = ops.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        return ops.fold(cols * 2.0, (5, 8), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))


LAYERS = {
    "CELU": (lambda: nn.CELU(0.5), X4),
    "GLU": (lambda: nn.GLU(axis=1), X4),
    "Softmin": (lambda: nn.Softmin(), X4),
    "Softmax2d": (lambda: nn.Softmax2d(), X4),
    "Threshold": (lambda: nn.Threshold(0.2, -1.0), X4),
    "RReLU_eval": (lambda: nn.RReLU(), X4),
    "LRN": (lambda: nn.LRN(2, 1.0, 0.5, 0.75), X4),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(3), X4),
    "Unfold": (lambda: nn.Unfold([1, 2, 3, 1], [1, 2, 2, 1], [1, 1, 2, 1], "same"), X4),
    "unfold_fold": (Patches, X4),
    "TimeDistributed": (lambda: nn.TimeDistributed(
        nn.Dense(8, 4, weight_init=Tensor(W_STEP)), 1, 0), X3),
    "Conv2dBnAct": (lambda: ms.set_seed(2) or nn.Conv2dBnAct(6, 4, 3, has_bn=True,
                                                            activation="relu"), X4),
    "DenseBnAct": (lambda: ms.set_seed(3) or nn.DenseBnAct(8, 5, has_bn=True,
                                                          activation="tanh"), X2),
    "CentralCrop": (lambda: nn.CentralCrop(0.6), X4),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_batch_split_equals_serial(name):
    make, x = LAYERS[name]
    check(make, x)
    check_grads(lambda: Squared(make()), x, positions=(0,))


class Pair(nn.Cell):
    """sum(layer(a, b) ** 2) (the first output of a tuple)."""

    def __init__(self, layer):
        super().__init__()
        self.layer, self.sum = layer, ops.ReduceSum()

    def construct(self, a, b):
        out = self.layer(a, b)
        return self.sum(out * out, ())


PAIRS = {
    "PSNR": lambda: nn.PSNR(),
    "SSIM": lambda: nn.SSIM(filter_size=7),
    "MSSSIM": lambda: nn.MSSSIM(power_factors=(0.5, 0.3, 0.2), filter_size=5),
    "BiDense": lambda: ms.set_seed(4) or nn.BiDense(36, 36, 3),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_two_input_layers_equal_serial(name):
    check(PAIRS[name], IMG1, IMG2, rtol=1e-4, atol=1e-5)
    check_grads(lambda: Pair(PAIRS[name]()), IMG1, IMG2, positions=(0, 1))


def test_image_gradients_equal_serial():
    check(nn.ImageGradients, X4)


def test_rrelu_training_draws_equal_serial():
    def make():
        ms.set_seed(6)
        return nn.RReLU(0.1, 0.5)
    out = run_serial(make, X4, train=True)
    slopes = out[X4.asnumpy() < 0] / X4.asnumpy()[X4.asnumpy() < 0]
    assert slopes.min() >= 0.1 and slopes.max() < 0.5 + 1e-6 and slopes.std() > 0.05
    check(make, X4, train=True)
