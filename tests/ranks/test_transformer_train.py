"""A TransformerEncoder (2 TransformerEncoderLayers, a causal mask held by the net, a fed key
padding mask) and a Dense head trained a few SGD steps in GRAPH_MODE data_parallel on 2 and
4 ranks: losses and parameters equal the serial run's on the whole batch. And a
MultiheadAttention with its heads split over the ranks (semi_auto_parallel) equals the serial
layer, outputs and gradients. And pipelined: the encoder over 2 stages (1F1B and GPipe), and
a language model whose embedding table both stages read (tied logits)."""
import numpy as np
import pytest

from parallel_oracle import comm_ops

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
STEPS = 4
SEQ, D_MODEL, OUT = 4, 8, 3
RNG = np.random.default_rng(11)
BATCH = 2 * N
X = RNG.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32)
Y = RNG.standard_normal((BATCH, SEQ, OUT)).astype(np.float32)
PADDING = RNG.random((BATCH, SEQ)) < 0.3
PADDING[:, 0] = False                              # every query keeps one key


class EncoderNet(nn.Cell):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(D_MODEL, 2, 16, dropout=0.0, batch_first=batch_first,
                                           norm_first=not batch_first)
        self.encoder = nn.TransformerEncoder(layer, 2, nn.LayerNorm((D_MODEL,)))
        self.head = nn.Dense(D_MODEL, OUT)
        self.causal = Tensor(np.triu(np.ones((SEQ, SEQ), bool), 1))
        self.loss = nn.MSELoss()
        for k, (_, p) in enumerate(sorted(self.parameters_and_names())):
            seeded = np.random.default_rng(k).standard_normal(p.shape) * 0.3
            p.set_data(Tensor(seeded.astype(np.float32)))

    def construct(self, x, padding, y):
        return self.loss(self.head(self.encoder(x, self.causal, padding)), y)


def train(batch_first: bool, x, padding, y, **context):
    """STEPS of TrainOneStepCell(SGD with momentum); (losses, {name: parameter}, compiled
    step). Not Adam: the key bias's exact gradient is 0 (it shifts a query's scores alike),
    and Adam would scale its rounding noise up to full steps."""
    ms.reset_auto_parallel_context()
    if context:
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N, **context)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = EncoderNet(batch_first)
        step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), learning_rate=0.05,
                                                   momentum=0.9))
        args = (Tensor(x), Tensor(padding), Tensor(y))
        losses = [float(step(*args).asnumpy()) for _ in range(STEPS)]
        graph = step.compile(*args)
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)
    return np.array(losses), {p.name: p.asnumpy().copy() for p in net.trainable_params()}, graph


def seq_first(a):
    return np.ascontiguousarray(a.swapaxes(0, 1))


@pytest.mark.parametrize("batch_first", [True, False], ids=["batch_first", "seq_first"])
def test_data_parallel_training_equals_serial(batch_first):
    """batch_first: each rank feeds its batch slice (full_batch=False); seq-first inputs
    (S, N, E) are fed whole (full_batch=True) and the layers' ops split their own dim 0."""
    x, y = (X, Y) if batch_first else (seq_first(X), seq_first(Y))
    want_losses, want, _ = train(batch_first, x, PADDING, y)
    if batch_first:
        b = BATCH // N
        local = [a[R * b:(R + 1) * b] for a in (x, PADDING, y)]
        got_losses, got, graph = train(batch_first, *local, full_batch=False)
    else:
        got_losses, got, graph = train(batch_first, x, PADDING, y, full_batch=True)
    assert "AllReduce" in comm_ops(graph)             # the gradients were reduced
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)
    assert want_losses[-1] < want_losses[0]
    assert got.keys() == want.keys() and len(want) == 2 * 12 + 4
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-4, atol=1e-5, err_msg=name)


class HeadParallel(nn.Cell):
    """MultiheadAttention with its heads split over the ranks (semi_auto_parallel: the
    scores, softmax, mask and context primitives sharded along the head dim)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(D_MODEL, 4, batch_first=True)
        heads = (1, N, 1, 1)
        self.attn.scores.shard((heads, heads))
        self.attn.add_mask.shard((heads, (1, 1, 1, 1)))
        self.attn.softmax.shard((heads,))
        self.attn.context.shard((heads, heads))
        for k, (_, p) in enumerate(sorted(self.parameters_and_names())):
            p.set_data(Tensor(np.random.default_rng(k).standard_normal(p.shape)
                              .astype(np.float32) * 0.3))

    def construct(self, x, padding):
        out, weights = self.attn(x, x, x, padding, average_attn_weights=False)
        return out, weights


def test_head_parallel_attention_equals_serial():
    """Forward (output and per-head weights) and the gradients of every Parameter."""
    from parallel_oracle import check
    x, padding = Tensor(X), Tensor(PADDING)
    graph = check(HeadParallel, x, padding, rtol=1e-5, atol=1e-6)
    scores = [n for n in graph.nodes if n.op == "BatchMatMul"]
    assert scores and all(n.shape[1] == 4 // N for n in scores)     # each rank: its heads
    c = Tensor(RNG.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32))

    def grads(**context):
        ms.reset_auto_parallel_context()
        if context:
            ms.set_auto_parallel_context(device_num=N, full_batch=True, **context)
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            net = HeadParallel()
            fn = ms.grad(lambda a, b: ops.sum(net(a, b)[0] * c), None, net.trainable_params())
            out = fn(x, padding)
            from msops.parallel import gather_full
            return [gather_full(g).asnumpy() if context else g.asnumpy() for g in out]
        finally:
            ms.reset_auto_parallel_context()
            ms.set_context(mode=ms.PYNATIVE_MODE)
    want = grads()
    got = grads(parallel_mode="semi_auto_parallel")
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("scheduler", ["1f1b", "gpipe"])
def test_encoder_over_two_pipeline_stages_equals_serial(scheduler):
    """Encoder layer 0 on stage 0; layer 1, the final norm and the head on stage 1
    (pipeline_stages=2, 4 micro-batches, AdamWeightDecay): the losses on every rank and
    each stage's parameters equal the serial run's. Attention's multi-output values cross
    the stage boundary element by element."""
    def run(stages):
        ms.reset_auto_parallel_context()
        if stages > 1:
            ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                         full_batch=True, pipeline_stages=stages,
                                         pipeline_config={"pipeline_scheduler": scheduler})
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            net = EncoderNet(batch_first=True)
            if stages > 1:
                net.encoder.layers[0].pipeline_stage = 0
                for cell in (net.encoder.layers[1], net.encoder.norm, net.head, net.loss):
                    cell.pipeline_stage = 1
            step = nn.TrainOneStepCell(nn.PipelineCell(net, 4),
                                       nn.AdamWeightDecay(net.trainable_params(), 1e-2))
            args = (Tensor(X), Tensor(PADDING), Tensor(Y))
            losses = [float(step(*args).asnumpy()) for _ in range(3)]
        finally:
            ms.reset_auto_parallel_context()
            ms.set_context(mode=ms.PYNATIVE_MODE)
        return losses, net
    want, serial = run(1)
    got, net = run(2)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    stage = R // (N // 2)
    mine = net.encoder.layers[0] if stage == 0 else net.head
    ref = serial.encoder.layers[0] if stage == 0 else serial.head
    for p, q in zip(mine.get_parameters(), ref.get_parameters()):
        np.testing.assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=p.name)



VOCAB = 16
TOKENS = RNG.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
TARGETS = RNG.integers(0, VOCAB, (BATCH * SEQ,)).astype(np.int32)


class TiedLM(nn.Cell):
    """Embedding -> 2 encoder layers -> logits against the embedding table (tied), cross
    entropy. Pipelined: the embedding and layer 0 on stage 0, the rest on stage 1, so
    both stages read the table."""

    def __init__(self, stages, strategy=None):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, 2, 16, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.logits = ops.MatMul(transpose_b=True)
        if strategy is not None:
            self.logits.shard(strategy)
        self.reshape = ops.Reshape()
        self.loss = nn.CrossEntropyLoss()
        for k, (_, p) in enumerate(sorted(self.parameters_and_names())):
            p.set_data(Tensor((np.random.default_rng(k).standard_normal(p.shape) * 0.3)
                              .astype(np.float32)))
        if stages > 1:
            self.pipeline_stage = 1
            self.embed.pipeline_stage = 0
            self.encoder.layers[0].pipeline_stage = 0

    def construct(self, tokens, targets):
        h = self.reshape(self.encoder(self.embed(tokens)), (-1, D_MODEL))
        return self.loss(self.logits(h, self.embed.embedding_table), targets)


def test_tied_embedding_language_model_over_two_pipeline_stages():
    """Both stages read the embedding table (lookup, output logits; on 4 ranks the logits
    MatMul also split by rows over a stage's 2 devices): losses and the table equal the
    serial run's on every rank (the updating stage copies the table to the other)."""
    def run(stages, strategy=None):
        ms.reset_auto_parallel_context()
        if stages > 1:
            ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                         full_batch=True, pipeline_stages=stages)
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            net = TiedLM(stages, strategy)
            step = nn.TrainOneStepCell(nn.PipelineCell(net, 2),
                                       nn.Adam(net.trainable_params(), 1e-2))
            losses = [float(step(Tensor(TOKENS), Tensor(TARGETS)).asnumpy()) for _ in range(3)]
        finally:
            ms.reset_auto_parallel_context()
            ms.set_context(mode=ms.PYNATIVE_MODE)
        return losses, net
    want, serial = run(1)
    for strategy in [None] + ([((2, 1), (1, 1))] if N >= 4 else []):
        got, net = run(2, strategy)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        np.testing.assert_allclose(net.embed.embedding_table.asnumpy(),
                                   serial.embed.embedding_table.asnumpy(), rtol=1e-4,
                                   atol=1e-6)
