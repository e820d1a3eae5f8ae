"""Seed 001 on 4 ranks: BatchNorm split by rows, MatMul with its weight split by columns.

    msrun -n 4 examples/semi_auto_parallel.py

msops inserts the one AllGather the two layouts need; each rank computes its columns,
and `gather_full` assembles the whole output, which equals the serial network's.
"""
import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init


class Submodel(nn.Cell):
    def __init__(self, shape, n):
        super().__init__()
        self.bn = nn.BatchNorm1d(shape[0])
        self.bn.shard(((n, 1),))
        self.matmul = ops.MatMul().shard(((1, 1), (1, n)))
        self.W = Parameter(Tensor(np.ones(shape, np.float32)), name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.W)


def main() -> None:
    init()
    n, rank = get_group_size(), get_rank()
    x = Tensor(np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)

    serial = Submodel((16, 32), n)(x).asnumpy()          # stand-alone: no communication

    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    net = Submodel((16, 32), n)
    graph = net.compile(x)
    local = net(x)                                        # this rank's columns
    full = ms.parallel.gather_full(local).asnumpy()
    assert np.allclose(full, serial, rtol=1e-5, atol=1e-5)
    if rank == 0:
        print(graph.dump())
        print(f"rank 0 holds {list(local.shape)} of {list(full.shape)}; "
              f"sharded output == serial output on {n} ranks")


if __name__ == "__main__":
    main()
