"""ops.ctc_greedy_decoder against a step-by-step loop of TensorFlow's greedy decoder
written here (the previous class kept across blanks), MindSpore's documented example, and
its errors (a traced input decides the output's shape: a ValueError)."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

RNG = np.random.default_rng(77)


def decode_ref(logits, lengths, merge):
    max_time, batch, classes = logits.shape
    blank = classes - 1
    seqs, logp = [], np.zeros((batch, 1), logits.dtype)
    for b in range(batch):
        prev, seq = -1, []
        for t in range(lengths[b]):
            row = logits[t, b]
            k = int(np.argmax(row))
            logp[b, 0] -= row[k]
            if k != blank and (prev == -1 or not merge or k != prev):
                seq.append(k)
            prev = k
        seqs.append(seq)
    idx = [[b, i] for b, s in enumerate(seqs) for i in range(len(s))]
    vals = [v for s in seqs for v in s]
    return (np.array(idx, np.int64).reshape(-1, 2), np.array(vals, np.int64),
            np.array([batch, max(map(len, seqs))], np.int64), logp)


@pytest.mark.parametrize("merge", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_reference_loop(merge, dtype):
    # few classes and long sequences: repeats, blanks between repeats, ties
    logits = np.round(RNG.standard_normal((9, 4, 3)), 1).astype(dtype)
    lengths = np.array([9, 0, 4, 7], np.int32)
    got = ops.ctc_greedy_decoder(Tensor(logits), Tensor(lengths), merge)
    want = decode_ref(logits, lengths, merge)
    for g, w in zip(got, want):
        assert g.asnumpy().dtype == w.dtype
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-6)
        assert g.shape == w.shape


def test_documented_example():
    inputs = Tensor(np.array([[[0.6, 0.4, 0.2], [0.8, 0.6, 0.3]],
                              [[0.0, 0.6, 0.0], [0.5, 0.4, 0.5]]], np.float32))
    idx, vals, shape, logp = ops.ctc_greedy_decoder(inputs, Tensor(np.array([2, 2], np.int32)))
    np.testing.assert_array_equal(idx.asnumpy(), [[0, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(vals.asnumpy(), [0, 1, 0])
    np.testing.assert_array_equal(shape.asnumpy(), [2, 2])
    np.testing.assert_allclose(logp.asnumpy(), [[-1.2], [-1.3]], rtol=1e-6)


class Decode(nn.Cell):
    def construct(self, x, n):
        return ops.ctc_greedy_decoder(x, n)[1]


def test_errors():
    x = Tensor(np.zeros((3, 2, 4), np.float32))
    with pytest.raises(ValueError, match="every 'sequence_length' should be in \\[0, max_time"):
        ops.ctc_greedy_decoder(x, Tensor(np.array([4, 1], np.int32)))
    with pytest.raises(ValueError, match="the 'inputs' should be 3-D"):
        ops.ctc_greedy_decoder(Tensor(np.zeros((3, 4), np.float32)),
                               Tensor(np.array([1], np.int32)))
    with pytest.raises(TypeError, match="the 'sequence_length'"):
        ops.ctc_greedy_decoder(x, Tensor(np.array([1, 1], np.int64)))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match="decides the output's shape"):
            Decode()(x, Tensor(np.array([1, 1], np.int32)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
