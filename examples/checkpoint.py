"""Save a sharded network whole and as shards, load both back elsewhere (4 ranks).

    msrun -n 4 examples/checkpoint.py

The weight is split by columns over the ranks; the integrated checkpoint holds the whole
weight (rank 0 writes it), the shard files one slice each; both load into a stand-alone
network whose output equals the sharded one.
"""
import os
import tempfile

import numpy as np
from mpi4py import MPI

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init


class Net(nn.Cell):
    def __init__(self, n):
        super().__init__()
        self.matmul = ops.MatMul().shard(((1, 1), (1, n)))
        w = np.arange(32 * 16, dtype=np.float32).reshape(32, 16) / 100
        self.w = Parameter(Tensor(w), name="w")

    def construct(self, x):
        return self.matmul(x, self.w)


def main() -> None:
    init()
    n, rank = get_group_size(), get_rank()
    folder = MPI.COMM_WORLD.bcast(tempfile.mkdtemp() if rank == 0 else None)
    x = Tensor(np.ones((8, 32), np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    net = Net(n)
    full = ms.parallel.gather_full(net(x)).asnumpy()
    print(f"rank {rank}: w layout {net.parameter_layout_dict['w'][:3]}")

    whole = os.path.join(folder, "net.safetensors")
    ms.save_checkpoint(net, whole)                                   # every rank calls it
    shards = [os.path.join(folder, f"rank{r}.safetensors") for r in range(n)]
    ms.save_checkpoint(net, shards[rank], integrated_save=False)     # each rank its slice
    MPI.COMM_WORLD.Barrier()

    ms.reset_auto_parallel_context()                                 # stand-alone from here
    alone = Net(n)
    alone.w.set_data(np.zeros((32, 16), np.float32))
    assert ms.load_param_into_net(alone, ms.load_checkpoint(whole)) == ([], [])
    assert np.allclose(alone(x).asnumpy(), full)
    alone.w.set_data(np.zeros((32, 16), np.float32))
    ms.load_distributed_checkpoint(alone, shards)
    assert np.allclose(alone(x).asnumpy(), full)
    if rank == 0:
        print(f"checkpoint on {n} ranks: whole and shard files load back stand-alone")


if __name__ == "__main__":
    main()
