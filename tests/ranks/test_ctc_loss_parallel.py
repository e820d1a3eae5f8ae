"""CTCLossV2 in semi_auto_parallel: the batch split over the ranks (each sample's frames,
classes and target whole) gives the serial losses, log_alpha and gradient; a strategy
splitting frames is refused by name."""
import numpy as np
import pytest
from parallel_oracle import check
from test_parallel_grad import check_grads

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
T, B, C, S = 6, 8, 5, 3
RNG = np.random.default_rng(5)
X = Tensor(RNG.standard_normal((T, B, C)).astype(np.float32))
TARGETS = Tensor(RNG.integers(1, C, (B, S)).astype(np.int32))
INPUT_LENGTHS = Tensor(RNG.integers(4, T + 1, B).astype(np.int32))
TARGET_LENGTHS = Tensor(RNG.integers(0, S + 1, B).astype(np.int32))


class Ctc(nn.Cell):
    """log_softmax over the classes, then the CTC loss of each sample (and log_alpha)."""

    def __init__(self, strategy, both=True):
        super().__init__()
        self.log_softmax = ops.LogSoftmax(-1)
        self.ctc = ops.CTCLossV2().shard(strategy)
        self.both = both

    def construct(self, x):
        loss, log_alpha = self.ctc(self.log_softmax(x) * 1.0, TARGETS, INPUT_LENGTHS,
                                   TARGET_LENGTHS)
        return (loss * 2.0, log_alpha) if self.both else loss.sum()


def batch_split(n):
    return ((1, n, 1), (n, 1), (n,), (n,))


def test_sharded_ctc_loss_equals_serial():
    n = get_group_size()
    check(lambda: Ctc(batch_split(n)), X)
    check(lambda: Ctc(batch_split(n // 2)), X)            # part of the ranks: repeated


def test_sharded_ctc_gradient_equals_serial():
    check_grads(lambda: Ctc(batch_split(get_group_size()), both=False), X, positions=(0,))


def test_splitting_frames_is_refused():
    with pytest.raises(ValueError, match="CTC's recursions run over every frame"):
        check(lambda: Ctc(((2, 1, 1), (1, 1), (1,), (1,))), X)
