"""Run by tests/test_checkpoint_crossrun.py under mpiexec (not a pytest file).

    crossrun_checkpoint.py save   DIR   # 4 ranks: 3 steps, shards + strategy file saved
    crossrun_checkpoint.py resume DIR   # 2 or 8 ranks, another strategy: reshard, load, 3 steps

`resume` reshards the 4-rank shards offline for its own strategy (transform_checkpoints,
on rank 0), loads them with load_distributed_checkpoint, trains on and writes the final
integrated checkpoint and every step's loss, which the test compares with an
uninterrupted serial run.
"""
import json
import os
import sys

import numpy as np
from mpi4py import MPI

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init

STEPS = 3
LR = 0.05


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(np.float32)


class MLP(nn.Cell):
    """MatMul -> ReLU -> MatMul with the strategies given (None: stand-alone)."""

    def __init__(self, s1=None, s2=None, seed=0):
        super().__init__()
        self.m1 = ops.MatMul()
        self.act = ops.ReLU()
        self.m2 = ops.MatMul()
        if s1:
            self.m1.shard(s1)
            self.m2.shard(s2)
        self.w1 = Parameter(Tensor(data(16, 32, seed=seed)), name="w1")
        self.w2 = Parameter(Tensor(data(32, 8, seed=seed + 1)), name="w2")

    def construct(self, x):
        return self.m2(self.act(self.m1(x, self.w1)), self.w2)


X, Y = Tensor(data(16, 16, seed=3)), Tensor(data(16, 8, seed=4))
#: 4 ranks: Megatron column then row split; resumed on 2 ranks: a batch x hidden grid, on
#: 8 ranks: batch x Megatron
SAVE_AS = (((1, 1), (1, 4)), ((1, 4), (4, 1)))
RESUME_AS = {2: (((2, 1), (1, 1)), ((1, 1), (1, 2))),
             8: (((2, 1), (1, 4)), ((2, 4), (4, 1)))}


def steps(net, n):
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.SGD(net.trainable_params(), learning_rate=LR))
    return [float(step(X, Y).asnumpy()) for _ in range(n)]


def main(phase, folder):
    init()
    n, rank = get_group_size(), get_rank()
    ms.set_context(mode=ms.GRAPH_MODE)
    strategy = os.path.join(folder, f"strategy_{phase}.json")
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True, strategy_ckpt_save_file=strategy)
    if phase == "save":
        net = MLP(*SAVE_AS)
        losses = steps(net, STEPS)
        shard_dir = os.path.join(folder, "shards", f"rank_{rank}")
        os.makedirs(shard_dir, exist_ok=True)
        ms.save_checkpoint(net, os.path.join(shard_dir, "net.safetensors"),
                           integrated_save=False)
    else:
        net = MLP(*RESUME_AS[n], seed=10)                 # other values: the load must win
        net.compile(X)                                 # writes this run's strategy file
        resharded = os.path.join(folder, "resharded")
        if rank == 0:
            ms.transform_checkpoints(os.path.join(folder, "shards"), resharded, "net_",
                                     os.path.join(folder, "strategy_save.json"), strategy)
        MPI.COMM_WORLD.Barrier()
        files = [os.path.join(resharded, f"rank_{r}", f"net_{r}.safetensors")
                 for r in range(n)]
        assert ms.load_distributed_checkpoint(net, files) == ([], [])
        losses = steps(net, STEPS)
        ms.save_checkpoint(net, os.path.join(folder, "final.safetensors"))
    if rank == 0:
        json.dump(losses, open(os.path.join(folder, f"losses_{phase}.json"), "w"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
