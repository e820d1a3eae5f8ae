"""MindSpore 2.6+'s parallel API, as its tutorials write it: the network wrapped in
`AutoParallel`, configured by its methods, trained by `Model` with data-parallel feeding.

    msrun -n 4 examples/auto_parallel.py

The MLP's first MatMul splits its weight's output columns over every rank (`shard`), an
`ops.reshard` pins the hidden activation to the batch split (the redistribution between
them is inserted by msops), and `hsdp()` shards the other parameters' optimizer update
over their data-parallel replicas. Each rank reads its slice of every batch
(`dataset_strategy("data_parallel")`, the default). Rank 0 prints the loss of every step
and the check: the same steps run stand-alone in this process (the whole batch, no
communication) give the same losses.
"""
import numpy as np

import msops as ms
from msops import Layout, Parameter, Tensor, dataset as ds, nn, ops
from msops.communication import get_group_size, get_rank, init
from msops.parallel.auto_parallel import AutoParallel
from msops.train.callback import Callback

BATCH, IN, HIDDEN, OUT, STEPS = 16, 12, 32, 4, 6


class MLP(nn.Cell):
    def __init__(self, n: int = 1) -> None:
        super().__init__()
        rng = np.random.default_rng(3)                     # the same weights on every rank
        self.w1 = Parameter(Tensor(rng.standard_normal((IN, HIDDEN)).astype(np.float32) / 4),
                            name="w1")
        self.w2 = Parameter(Tensor(rng.standard_normal((HIDDEN, OUT)).astype(np.float32) / 6),
                            name="w2")
        self.matmul1 = ops.MatMul().shard(((1, 1), (1, n)))      # columns over every rank
        self.matmul2 = ops.MatMul()
        self.batch_split = Layout((n, 1), ("dp", "mp"))("dp", "None")

    def construct(self, x):
        h = ops.relu(self.matmul1(x, self.w1))
        h = ops.reshard(h, self.batch_split)          # the batch split from here on
        return self.matmul2(h, self.w2)


class Losses(Callback):
    def __init__(self) -> None:
        self.values = []

    def on_train_step_end(self, run_context) -> None:
        self.values.append(float(run_context.original_args().net_outputs.asnumpy()))


def dataset(num_shards: int | None = None, shard_id: int | None = None):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((BATCH * STEPS, IN)).astype(np.float32)
    y = np.tanh(x @ rng.standard_normal((IN, OUT))).astype(np.float32)
    data = ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False, num_shards=num_shards,
                                 shard_id=shard_id)
    return data.batch(BATCH // (num_shards or 1), drop_remainder=True)


def train(parallel: bool) -> list:
    n = get_group_size() if parallel else 1
    net = MLP(n)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    if parallel:
        loss_net = AutoParallel(loss_net, parallel_mode="semi_auto")
        loss_net.hsdp(threshold=0)
        loss_net.enable_gradients_mean()
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    losses = Losses()
    ms.Model(loss_net, optimizer=optimizer).train(1, dataset(*ds.parallel_shard()),
                                                  callbacks=[losses])
    return losses.values


def main() -> None:
    init()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = train(parallel=False)
    got = train(parallel=True)
    if get_rank() == 0:
        for step, loss in enumerate(got):
            print(f"step {step} loss {loss:.6f}")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if get_rank() == 0:
        print(f"auto_parallel == serial on {get_group_size()} ranks")


if __name__ == "__main__":
    main()
