"""The network and training loop of the pipeline tests (test_pipeline_*.py)."""
import numpy as np

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size, get_rank

STEPS = 3


def batch(rows=16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((rows, 6)).astype(np.float32),
            rng.standard_normal((rows, 4)).astype(np.float32))


class Block(nn.Cell):
    """x @ w (+ relu); `strategy` shards the MatMul over a stage's devices."""

    def __init__(self, n_in, n_out, seed, relu=True, strategy=None):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = ms.Parameter(Tensor((rng.standard_normal((n_in, n_out)) * 0.4)
                                     .astype(np.float32)), f"w{seed}")
        self.matmul = ops.MatMul()
        if strategy is not None:
            self.matmul.shard(strategy)
        self.relu = ops.ReLU() if relu else None

    def construct(self, x):
        y = self.matmul(x, self.w)
        return self.relu(y) if self.relu is not None else y


class Net(nn.Cell):
    """Four blocks; block k on stage k * stages // 4."""

    def __init__(self, stages=1, strategy=None):
        super().__init__()
        sizes = [6, 8, 8, 8, 4]
        self.blocks = nn.CellList([Block(sizes[k], sizes[k + 1], k, relu=k < 3,
                                         strategy=strategy) for k in range(4)])
        for k, b in enumerate(self.blocks):
            b.pipeline_stage = k * stages // 4

    def construct(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class Tied(nn.Cell):
    """x @ w -> relu -> 2 blocks -> @ w.T: the first and the last stage share w (tied
    input and output embeddings)."""

    def __init__(self, stages):
        super().__init__()
        self.first = Block(6, 8, 0)
        self.blocks = nn.CellList([Block(8, 8, 1), Block(8, 8, 2)])
        self.out = ops.MatMul(transpose_b=True)
        self.first.pipeline_stage = 0
        for k, b in enumerate(self.blocks):
            b.pipeline_stage = (k + 1) * stages // 4 if stages > 2 else k
        self.pipeline_stage = stages - 1          # the tied output runs on the last stage

    def construct(self, x):
        h = self.first(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h, self.first.w)


OPTIMIZERS = {
    "momentum": lambda ps: nn.Momentum(ps, learning_rate=0.05, momentum=0.9),
    "adam": lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01),
}


def pipelined(stages, **context):
    """GRAPH_MODE, and semi_auto_parallel over `stages` pipeline stages (full_batch unless
    `context` says otherwise) when stages > 1; stand-alone otherwise."""
    ms.reset_auto_parallel_context()
    if stages > 1:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel",
                                     device_num=get_group_size(), pipeline_stages=stages,
                                     **dict({"full_batch": True}, **context))
    ms.set_context(mode=ms.GRAPH_MODE)


def train(stages, optimizer, micro, x, y, strategy=None, load=None, make=None, **context):
    """Losses of STEPS training steps, the network (pipelined when stages > 1; `make(stages)`
    builds another than Net) and its training cell; `load`: a checkpoint's parameters
    loaded into the network first."""
    pipelined(stages, **context)
    net = make(stages) if make is not None else Net(stages, strategy if stages > 1 else None)
    if load is not None:
        assert ms.load_param_into_net(net, load)[0] == []
    opt = OPTIMIZERS[optimizer](net.trainable_params())
    step = nn.TrainOneStepCell(nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), micro), opt)
    losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(STEPS)]
    return losses, net, step


def my_stage(stages):
    return get_rank() // (get_group_size() // stages)


def check_stage_params(net, serial, stages):
    """This rank's stage's parameters equal the serial run's (the slice of this rank's
    position in its stage, when the stage's devices split them)."""
    layouts = net.parameter_layout_dict
    position = get_rank() % (get_group_size() // stages)
    checked = 0
    for b, want in zip(net.blocks, serial.blocks):
        if b.pipeline_stage == my_stage(stages):
            whole = want.w.asnumpy()
            lay = layouts[b.w.name].layout if b.w.name in layouts else None
            if lay is not None and any(lay.dim_axes):
                whole = whole[lay.slice_of(position)]
            np.testing.assert_allclose(b.w.asnumpy(), whole, rtol=2e-5, atol=1e-6)
            checked += 1
    assert checked >= 1


