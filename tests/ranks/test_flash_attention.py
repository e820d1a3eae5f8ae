"""FlashAttentionScore sharded under real MPI on 2, 4 and 8 ranks equals the serial op, in its
outputs and in the gradients of query, key, value and real_shift: the batch split, the
head split (BSH's hidden dim at head boundaries, grouped key heads), the query sequence
split (context parallel: keys and values whole, causal / band masks moved to each rank's
rows), with no collective inside the op; the functional's drawn dropout mask split with the
batch (data parallel); a split key sequence or key head is refused naming the op."""
import numpy as np
import pytest
from parallel_oracle import check, check_grads, comm_ops, run_serial

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()


def data(*shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(dtype)


class FANet(nn.Cell):
    """FlashAttentionScore's attention_out (and row sums) from fed q, k, v and optionals;
    `scalar`: a weighted sum to differentiate."""

    def __init__(self, prim, optional, scalar=False):
        super().__init__()
        self.prim, self.optional, self.scalar = prim, optional, scalar
        self.sum = ops.ReduceSum()

    def construct(self, q, k, v, *given):
        kw = dict(zip(self.optional, given))
        out = self.prim(q, k, v, kw.get("real_shift"), kw.get("drop_mask"), None,
                        kw.get("attn_mask"))
        if self.scalar:
            return self.sum(out[3] * out[3], ())
        return out[3], out[1]


def shapes(layout, b, n1, n2, s1, s2, d):
    return {"BSH": ((b, s1, n1 * d), (b, s2, n2 * d)), "SBH": ((s1, b, n1 * d), (s2, b, n2 * d)),
            "BNSD": ((b, n1, s1, d), (b, n2, s2, d)),
            "BSND": ((b, s1, n1, d), (b, s2, n2, d))}[layout]


# (layout, sparse_mode, which dim is split: "b" batch, "n" heads, "s" query rows)
CASES = [("BSH", 0, "b"), ("BNSD", 3, "b"), ("BSH", 2, "n"), ("BSND", 4, "n"),
         ("BNSD", 0, "n"), ("SBH", 2, "s"), ("BSH", 3, "s"), ("BNSD", 4, "s"),
         ("BSND", 0, "s")]


@pytest.mark.parametrize("layout,mode,split", CASES, ids=lambda c: str(c))
def test_split_equals_serial_with_no_communication(layout, mode, split):
    b, n1, n2, s1, s2, d = 2 * N, 2 * N, N, 2 * N, 2 * N + 3, 4
    qs, ks = shapes(layout, b, n1, n2, s1, s2, d)
    q, k, v = data(*qs), data(*ks, seed=1), data(*ks, seed=2)
    shift = data(1, n1, s1, s2, seed=3)
    optional, inputs = ["real_shift"], [Tensor(q), Tensor(k), Tensor(v), Tensor(shift)]
    mask = None
    if mode == 0:                          # an explicit mask with a band
        mask = np.random.default_rng(5).random((b, 1, s1, s2)) < 0.3
    elif mode in (2, 3, 4):
        mask = np.triu(np.ones((2048, 2048), bool), 1)
    optional.append("attn_mask")
    inputs.append(Tensor(mask))
    letters = {"BSH": "bsn", "SBH": "sbn", "BNSD": "bnsd", "BSND": "bsnd"}[layout]
    q_strategy = tuple(N if c == split else 1 for c in letters)
    kv_strategy = tuple(N if c == split and split != "s" else 1 for c in letters)
    shift_strategy = (1,) + tuple(N if c == split else 1 for c in "nst")
    if mode in (2, 3, 4):
        mask_strategy = (1, 1)
    else:
        mask_strategy = tuple(N if c == split else 1 for c in "b") + (1,) + \
            tuple(N if c == split else 1 for c in "st")
    strategy = (q_strategy, kv_strategy, kv_strategy, shift_strategy, mask_strategy)

    def make(scalar=False):
        prim = ops.FlashAttentionScore(n1, 1.0, 0.5, 3, 1, 0, layout, mode).shard(strategy)
        return FANet(prim, optional, scalar)
    graph = check(make, *inputs, rtol=1e-5, atol=1e-5)
    assert comm_ops(graph) == []
    local_q = tuple(n // c for n, c in zip(qs, q_strategy))
    ops_run = [n for n in graph.nodes if n.op == "FlashAttentionScore"]
    assert [tuple(n.inputs[1].shape) for n in ops_run] == [local_q]       # each rank its slice
    check_grads(lambda: ms.grad(make(True), (0, 1, 2, 3))(*inputs))


def test_dropout_bits_split_with_the_rows():
    b, n1, s1, s2, d = 2, N, 2 * N, 16, 4
    q, k, v = data(b, n1, s1, d), data(b, n1, s2, d, seed=1), data(b, n1, s2, d, seed=2)
    drop = np.random.default_rng(3).integers(0, 256, (b, n1, s1, 2)).astype(np.uint8)
    strategy = ((1, 1, N, 1), (1, 1, 1, 1), (1, 1, 1, 1), (1, 1, N, 1))

    def make(scalar=False):
        prim = ops.FlashAttentionScore(n1, 0.6, 1.0, input_layout="BNSD").shard(strategy)
        return FANet(prim, ["drop_mask"], scalar)
    inputs = [Tensor(q), Tensor(k), Tensor(v), Tensor(drop)]
    check(make, *inputs)
    check_grads(lambda: ms.grad(make(True), (0, 1, 2))(*inputs))


def refused(prim, q, k, match):
    """Compiling prim on (q, k, k) sharded is a ValueError matching `match`."""
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=match):
            FANet(prim, [])(Tensor(q), Tensor(k), Tensor(k))
    finally:
        ms.reset_auto_parallel_context()


def test_a_split_key_sequence_is_refused_naming_the_op():
    q, k = data(2, N, 2, 4), data(2, N, 2 * N, 4, seed=1)
    prim = ops.FlashAttentionScore(N, input_layout="BNSD").shard(
        ((1, 1, 1, 1), (1, 1, N, 1), (1, 1, N, 1)))
    refused(prim, q, k, "FlashAttentionScore.*key/value sequence")


def test_a_head_split_cutting_a_key_head_is_refused_naming_the_op():
    """BSH with one key head of size 4 * N: the hidden dims divide, the heads do not."""
    q, k = data(2, 3, 2 * N * 4 * N), data(2, 5, 4 * N, seed=1)
    prim = ops.FlashAttentionScore(2 * N).shard(((1, 1, N), (1, 1, N), (1, 1, N)))
    refused(prim, q, k, "For 'FlashAttentionScore', a split of the heads")


class DropoutNet(nn.Cell):
    """ops.flash_attention_score with keep_prob < 1: the drop mask drawn from the seed."""

    def construct(self, q, k, v):
        return ops.flash_attention_score(q, k, v, N, keep_prob=0.6, input_layout="BNSD")


def test_drawn_dropout_data_parallel_equals_serial():
    """The data-parallel default splits the batch of the drawn mask too: each rank draws its
    block of the serial mask (the counter-based stream), so the outputs agree."""
    q, k = data(2 * N, N, 3, 4), data(2 * N, N, 9, 4, seed=1)

    def make():
        ms.set_seed(7)
        return DropoutNet()
    graph = check(make, Tensor(q), Tensor(k), Tensor(k), mode="data_parallel")
    ops_run = [n for n in graph.nodes if n.op == "FlashAttentionScore"]
    assert [tuple(n.inputs[1].shape) for n in ops_run] == [(2, N, 3, 4)]     # batch split
    serial = run_serial(make, Tensor(q), Tensor(k), Tensor(k))
    s = np.einsum("bnid,bnjd->bnij", q, k)
    p = np.exp(s - s.max(-1, keepdims=True))
    undropped = np.einsum("bnij,bnjd->bnid", p / p.sum(-1, keepdims=True), k)
    assert not np.allclose(serial, undropped, atol=1e-3)                    # it did drop
