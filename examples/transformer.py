"""The flagship: a small GPT trained 20 steps with Megatron strategies plus data parallel.

    python examples/transformer.py                 # serial only
    msrun -n 4 examples/transformer.py             # dp=2 x mp=2, checked against serial
    msrun -n 8 examples/transformer.py             # dp=4 x mp=2
    msrun -n 4 examples/transformer.py --propagate # a few strategies, the rest propagated

Token + position embedding, N blocks of causal multi-head self-attention and a GeLU MLP
(pre-LayerNorm, residuals), a final LayerNorm and an output head tied to the embedding
table, trained with nn.Adam through TrainOneStepCell on a bundled synthetic corpus (a
repeating token pattern: no download). Megatron's split: the fused QKV and the first MLP
MatMul split by columns over "mp" (each rank owns whole heads), the attention output and
second MLP MatMul split by rows (one AllReduce each), the batch over "dp".

Every rank also trains a stand-alone copy of the same net from the same seed and the run
fails (exit 1) if the loss curve or the final parameters differ beyond a float32
tolerance, or if the compiled plan's collectives per block differ from Megatron's.
"""
import argparse
import inspect
import os
import sys

import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group, get_group_size, get_rank, init
from msops.parallel import gather_full
from msops.parallel.slices import local_slice

VOCAB, SEQ, HIDDEN, HEADS, LAYERS, BATCH, STEPS = 32, 8, 16, 2, 2, 8, 20
MP = 2                  # model-parallel ranks (they split the 2 heads); the rest is "dp"
RTOL, ATOL = 1e-4, 1e-5


def corpus(batch: int, seq: int, vocab: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token windows of a bundled synthetic text (an arithmetic pattern with noise) and
    their next tokens: ids (batch, seq), labels (batch * seq,)."""
    rng = np.random.default_rng(seed)
    text = (np.arange(batch * seq + 1 + 64) * 5 + rng.integers(0, 2, batch * seq + 65)) % vocab
    starts = rng.integers(0, 64, batch)
    ids = np.stack([text[s:s + seq] for s in starts]).astype(np.int32)
    labels = np.stack([text[s + 1:s + seq + 1] for s in starts]).astype(np.int32)
    return ids, labels.reshape(-1)


def weight(rng: np.random.Generator, *shape: int, scale: float = 0.2) -> Tensor:
    return Tensor((scale * rng.standard_normal(shape)).astype(np.float32))


class Attention(nn.Cell):
    """Causal multi-head self-attention on (batch*seq, hidden) rows. The fused QKV weight's
    columns are head-major (head h owns [q_h, k_h, v_h]), so splitting its columns over
    "mp" gives each rank whole heads, as Megatron does."""

    def __init__(self, rng: np.random.Generator, batch: int, dp: int, mp: int,
                 shard: str | bool) -> None:
        super().__init__()
        self.batch, self.dh = batch, HIDDEN // HEADS
        self.w_qkv = Parameter(weight(rng, HIDDEN, 3 * HIDDEN), name="w_qkv")
        self.w_out = Parameter(weight(rng, HIDDEN, HIDDEN), name="w_out")
        self.qkv = ops.MatMul()
        self.out = ops.MatMul()
        self.split_heads, self.merge_heads = ops.Reshape(), ops.Reshape()
        self.to_heads, self.from_heads = ops.Transpose(), ops.Transpose()
        self.split = ops.Split(3, 3)
        self.scores = ops.BatchMatMul(transpose_b=True)
        self.context = ops.BatchMatMul()
        self.scale, self.add_mask = ops.Mul(), ops.Add()
        self.softmax = ops.Softmax()
        mask = np.triu(np.full((SEQ, SEQ), -1e4, np.float32), 1)     # no looking ahead
        self.mask = Tensor(mask)
        if shard:
            self.qkv.shard(((dp, 1), (1, mp)))
            self.out.shard(((dp, mp), (mp, 1)))
        if shard == "all":
            heads = (dp, mp, 1, 1)
            self.split_heads.shard(((dp, mp),))
            self.merge_heads.shard(((dp, 1, mp, 1),))
            self.to_heads.shard(((dp, 1, mp, 1),))
            self.split.shard((heads,))
            self.scores.shard((heads, heads))
            self.scale.shard((heads, ()))
            self.add_mask.shard((heads, (1, 1)))
            self.softmax.shard((heads,))
            self.context.shard((heads, heads))
            self.from_heads.shard((heads,))

    def construct(self, x):
        qkv = self.split_heads(self.qkv(x, self.w_qkv), (self.batch, SEQ, HEADS, 3 * self.dh))
        q, k, v = self.split(self.to_heads(qkv, (0, 2, 1, 3)))          # (b, heads, s, dh)
        scores = self.add_mask(self.scale(self.scores(q, k), 1 / np.sqrt(self.dh)), self.mask)
        ctx = self.from_heads(self.context(self.softmax(scores), v), (0, 2, 1, 3))
        return self.out(self.merge_heads(ctx, (self.batch * SEQ, HIDDEN)), self.w_out)


class Mlp(nn.Cell):
    """Dense -> GeLU -> Dense, Megatron's column then row split."""

    def __init__(self, rng: np.random.Generator, dp: int, mp: int, shard: str | bool) -> None:
        super().__init__()
        self.w_up = Parameter(weight(rng, HIDDEN, 4 * HIDDEN), name="w_up")
        self.w_down = Parameter(weight(rng, 4 * HIDDEN, HIDDEN), name="w_down")
        self.up, self.down, self.act = ops.MatMul(), ops.MatMul(), nn.GELU()
        if shard:
            self.up.shard(((dp, 1), (1, mp)))
            self.down.shard(((dp, mp), (mp, 1)))
        if shard == "all":
            self.act.shard(((dp, mp),))

    def construct(self, x):
        return self.down(self.act(self.up(x, self.w_up)), self.w_down)


class Block(nn.Cell):
    """Pre-LayerNorm residual block: x + attn(ln1(x)), then + mlp(ln2(.))."""

    def __init__(self, rng: np.random.Generator, batch: int, dp: int, mp: int,
                 shard: str | bool) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm((HIDDEN,)), nn.LayerNorm((HIDDEN,))
        self.attn = Attention(rng, batch, dp, mp, shard)
        self.mlp = Mlp(rng, dp, mp, shard)
        self.add1, self.add2 = ops.Add(), ops.Add()
        if shard == "all":
            for ln in (self.ln1, self.ln2):
                ln.shard(((dp, 1),))
            self.add1.shard(((dp, 1), (dp, 1)))
            self.add2.shard(((dp, 1), (dp, 1)))

    def construct(self, x):
        x = self.add1(x, self.attn(self.ln1(x)))
        return self.add2(x, self.mlp(self.ln2(x)))


class GPT(nn.Cell):
    """Token + position embedding, `LAYERS` blocks, final LayerNorm, tied output head;
    returns the mean next-token cross entropy. `shard`: "all" (every op's Megatron
    strategy), "few" (only the MatMuls': sharding propagation plans the rest) or False."""

    def __init__(self, batch: int, dp: int = 1, mp: int = 1, shard: str | bool = "all",
                 seed: int = 0) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.batch = batch
        self.embedding = nn.Embedding(VOCAB, HIDDEN, embedding_table=weight(rng, VOCAB, HIDDEN))
        self.position = Parameter(weight(rng, SEQ, HIDDEN), name="position")
        self.blocks = [Block(rng, batch, dp, mp, shard) for _ in range(LAYERS)]
        for i, block in enumerate(self.blocks):
            setattr(self, f"block{i}", block)
        self.ln_f = nn.LayerNorm((HIDDEN,))
        self.add_pos, self.reshape = ops.Add(), ops.Reshape()
        self.head = ops.MatMul(transpose_b=True)
        self.loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        if shard == "all":
            self.embedding.gather.shard(((1, 1), (dp, 1)))
            self.add_pos.shard(((dp, 1, 1), (1, 1)))
            self.reshape.shard(((dp, 1, 1),))
            self.ln_f.shard(((dp, 1),))
        if shard:                                # the tied table whole: rows over "dp"
            self.head.shard(((dp, 1), (1, 1)))

    def construct(self, ids, labels):
        x = self.add_pos(self.embedding(ids), self.position)           # (b, s, hidden)
        x = self.reshape(x, (self.batch * SEQ, HIDDEN))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x), self.embedding.embedding_table)   # tied
        return self.loss(logits, labels)


def train(net: GPT, ids: Tensor, labels: Tensor) -> tuple[list, nn.TrainOneStepCell]:
    step = nn.TrainOneStepCell(net, nn.Adam(net.trainable_params(), learning_rate=0.01))
    losses = [float(step(ids, labels).asnumpy()) for _ in range(STEPS)]
    return losses, step


def parameter_layouts(step: nn.TrainOneStepCell, *args) -> dict:
    """id(Parameter) -> the layout the compiled training step gave it."""
    return {id(n.value): n.layout for n in step.compile(*args).parameters}


def full_params(net: GPT, layouts: dict | None = None) -> dict:
    """name -> the whole parameter. After a parallel step only this rank's slice of each
    array is current: take it and gather the slices by the step's layout."""
    rank, out = get_rank(), {}
    for p in net.trainable_params():
        layout = (layouts or {}).get(id(p))
        if layout is None:
            out[p.name] = p.asnumpy()
            continue
        t = Tensor(local_slice(p.asnumpy(), layout, rank))   # a Parameter holds its slice
        t.layout = layout
        out[p.name] = gather_full(t).asnumpy()
    return out


def block_collectives(graph) -> list[str]:
    """The collectives a compiled graph runs inside the blocks' attention and MLP, in
    execution order, as "AllReduce(mp)" (over this rank's "mp" group) or "Op(ranks)" (nodes,
    backward ones too, carry the source line of the call that made them)."""
    lines = set()
    for cell in (Attention, Mlp):
        code, first = inspect.getsourcelines(cell.construct)
        lines.update(f"{os.path.basename(__file__)}:{first + k}" for k in range(len(code)))
    mp_group = tuple(get_rank() // MP * MP + k for k in range(MP))   # mp is the inner axis
    found = []
    for n in graph.nodes:
        where = os.path.basename((n.source or "").split(": ")[0])
        if n.is_communication and where in lines:
            ranks = tuple(get_group(n.prim.group).ranks)
            found.append(f"{n.op}({'mp' if ranks == mp_group else ranks})")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--propagate", action="store_true",
                        help="set only the MatMuls' strategies; sharding propagation plans the rest")
    args = parser.parse_args(argv)
    init()
    n, rank = get_group_size(), get_rank()
    if n > 1 and (n % MP or BATCH % (n // MP)):
        raise ValueError(f"For 'transformer.py', the number of ranks should be 1 or {MP} x a "
                         f"divisor of the batch {BATCH}, but got {n}.")
    mp, dp = MP, n // MP
    ids_np, labels_np = corpus(BATCH, SEQ, VOCAB)
    ids, labels = Tensor(ids_np), Tensor(labels_np)
    ms.set_context(mode=ms.GRAPH_MODE)

    ms.reset_auto_parallel_context()
    serial_net = GPT(BATCH, shard=False)
    want_losses, _ = train(serial_net, ids, labels)
    want = full_params(serial_net)
    if n == 1:
        print("losses:", " ".join(f"{v:.4f}" for v in want_losses))
        print(f"serial GPT trained {STEPS} steps: loss {want_losses[0]:.4f} -> {want_losses[-1]:.4f}")
        return 0 if want_losses[-1] < want_losses[0] else 1

    ms.set_auto_parallel_context(
        parallel_mode="auto_parallel" if args.propagate else "semi_auto_parallel",
        search_mode="sharding_propagation", device_num=n, full_batch=True)
    net = GPT(BATCH, dp, mp, shard="few" if args.propagate else "all")
    got_losses, step = train(net, ids, labels)
    graph = step.compile(ids, labels)
    got = full_params(net, parameter_layouts(step, ids, labels))
    forward = block_collectives(net.compile(ids, labels))
    backward = block_collectives(graph)[len(forward):]
    ms.reset_auto_parallel_context()

    loss_diff = float(np.max(np.abs(np.array(got_losses) - want_losses)))
    param_diff = max(float(np.max(np.abs(got[k] - want[k]))) for k in want)
    close = (np.allclose(got_losses, want_losses, rtol=RTOL, atol=ATOL) and
             all(np.allclose(got[k], want[k], rtol=RTOL, atol=ATOL) for k in want))
    # Megatron: per block one AllReduce after attention and one after the MLP (the row
    # splits), and in backward their mirrors (the column splits' input gradients)
    megatron = ["AllReduce(mp)"] * 2 * LAYERS
    planned = forward == megatron and backward == megatron
    if rank == 0:
        mode = "sharding propagation" if args.propagate else "Megatron strategies"
        print(f"GPT on {n} ranks (dp={dp}, mp={mp}, {mode}), {STEPS} Adam steps")
        print("parallel losses:", " ".join(f"{v:.4f}" for v in got_losses))
        for b in range(LAYERS):      # the backward runs the blocks in reverse order
            back = backward[len(backward) - 2 * (b + 1):len(backward) - 2 * b]
            print(f"block {b}: forward {forward[2 * b:2 * b + 2]}, backward {back}")
        print(f"all {LAYERS} blocks: {len(forward)} forward, {len(backward)} backward "
              f"collectives (Megatron predicts {len(megatron)} AllReduce over mp each)")
        print(f"max |loss diff| {loss_diff:.3g}, max |param diff| {param_diff:.3g} vs serial")
        if close and planned:
            print(f"transformer == serial on {n} ranks"
                  + (" (sharding propagation)" if args.propagate else ""))
        else:
            print("MISMATCH: " + ("values differ beyond float32 tolerance " if not close else "")
                  + ("collectives differ from Megatron's" if not planned else ""))
    return 0 if close and planned else 1


if __name__ == "__main__":
    sys.exit(main())
