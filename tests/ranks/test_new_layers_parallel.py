"""Composite layers (adaptive and 1-D pooling, padding, pixel shuffle, InstanceNorm) in
semi_auto_parallel with the data-parallel default (the batch split) equal the serial
layers on 2/4/8 ranks, output and input gradient."""
import numpy as np
import pytest
from parallel_oracle import check, run_serial
from test_activation_layers import Squared
from test_parallel_grad import check_grads

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
X4 = Tensor(np.random.default_rng(5).standard_normal((2 * N, 4, 5, 7)).astype(np.float32))
X3 = Tensor(np.random.default_rng(6).standard_normal((2 * N, 3, 9)).astype(np.float32))


LAYERS = {
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), X4),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((2, 3)), X4),
    "AvgPool1d": (lambda: nn.AvgPool1d(3, 2, "pad", 1, count_include_pad=False), X3),
    "MaxPool1d": (lambda: nn.MaxPool1d(2, 2), X3),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d((1, 2, 0, 1)), X4),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), X4),
    "InstanceNorm1d": (lambda: ms.set_seed(1) or nn.InstanceNorm1d(3, gamma_init="normal"),
                       X3),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_batch_split_equals_serial(name):
    make, x = LAYERS[name]
    check(make, x)
    check_grads(lambda: Squared(make()), x, positions=(0,))


def test_channel_dropout_equals_serial():
    """Dropout2d in training: the (N, C, 1, 1) mask is the Dropout primitive's draw, the
    same in the sharded graph as serially after the same set_seed."""
    def make():
        ms.set_seed(3)
        return nn.Dropout2d(0.4)
    dropped = (run_serial(make, X4, train=True) == 0).all(axis=(2, 3))
    assert dropped.any() and not dropped.all()
    check(make, X4, train=True)
