"""nn.RNN / LSTM / GRU in semi_auto_parallel with the data-parallel default (the batch split
over every rank) equal the serial layers on 2 and 4 ranks: outputs, final states, and the
gradients of the inputs, the initial states and every Parameter; with per-sequence lengths,
two bidirectional layers, both layouts, and the inter-layer dropout in training."""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, run_parallel
from test_parallel_grad import check_grads

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4)
N = get_group_size()
B, T, I, H = 2 * N, 3, 3, 4
CLASSES = {"RNN": nn.RNN, "LSTM": nn.LSTM, "GRU": nn.GRU}


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Net(nn.Cell):
    """The layer on (x, h0[, c0], seq_length) -> (output, h_n[, c_n]) flat, or with `loss` a
    scalar: sum(output ** 2) + sum of the final states' squares (to differentiate)."""

    def __init__(self, layer, lstm, loss=False):
        super().__init__()
        self.layer, self.lstm, self.loss, self.sum = layer, lstm, loss, ops.ReduceSum()

    def construct(self, x, h0, *rest):
        hx, lengths = ((h0, rest[0]), rest[1]) if self.lstm else (h0, rest[0])
        out, h = self.layer(x, hx, lengths)
        outs = (out,) + (tuple(h) if self.lstm else (h,))
        if not self.loss:
            return outs
        total = self.sum(out * out, ())
        for s in outs[1:]:
            total = total + self.sum(s * s, ())
        return total


def case(name, batch_first, layers=2, bidirectional=True, dropout=0.0):
    lstm, dirs = name == "LSTM", 2 if bidirectional else 1
    x = arr(*((B, T, I) if batch_first else (T, B, I)), seed=1)
    states = [Tensor(arr(layers * dirs, B, H, seed=2 + i)) for i in range(2 if lstm else 1)]
    lengths = Tensor(np.array([(3, 1, 2, 0)[b % 4] for b in range(B)], np.int32))

    def make(loss=False):
        ms.set_seed(5)
        layer = CLASSES[name](I, H, layers, batch_first=batch_first, dropout=dropout,
                              bidirectional=bidirectional)
        return Net(layer, lstm, loss)
    return make, (Tensor(x), *states, lengths), len(states)


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "time_major"])
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_batch_split_equals_serial(name, batch_first):
    make, inputs, n_states = case(name, batch_first)
    check(make, *inputs)
    check_grads(lambda: make(loss=True), *inputs, positions=tuple(range(1 + n_states)))


def test_batch_first_layers_split_the_batch_without_communication():
    """Every op has the batch on dim 0: the forward moves no data, and each rank holds
    its B / N rows of the output and the final states."""
    make, inputs, _ = case("LSTM", batch_first=True)
    (out, h, c), graph = run_parallel(make, *inputs)
    assert comm_ops(graph) == []
    assert out.shape == (B, T, 2 * H) and h.shape == c.shape == (4, B, H)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        local = make()(*inputs)
    finally:
        ms.reset_auto_parallel_context()
    assert local[0].shape == (B // N, T, 2 * H) and local[1].shape == (4, B // N, H)


def test_dropout_in_training_equals_serial():
    """The inter-layer dropout draws the serial mask in the sharded graph (same set_seed)."""
    make, inputs, n_states = case("GRU", batch_first=True, layers=3, dropout=0.4)
    check(make, *inputs, train=True)
    check_grads(lambda: make(loss=True), *inputs, train=True,
                positions=tuple(range(1 + n_states)))
