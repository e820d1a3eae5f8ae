"""A strategy on one op, the rest planned by sharding propagation (MindSpore's auto_parallel).

    msrun -n 4 examples/sharding_propagation.py

The first MatMul is split by columns with a Layout; propagation gives the ReLU the same
split and the second MatMul the row split Megatron would choose (one AllReduce), because
that moves the fewest bytes. The output equals the serial network's.
"""
import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank, init
from msops.parallel import Layout, gather_full, get_shard_strategy


class Mlp(nn.Cell):
    def __init__(self, n):
        super().__init__()
        mp = Layout((n,), ("mp",))
        self.up = ops.MatMul().shard((mp("None", "None"), mp("None", "mp")))
        self.act = ops.ReLU()                     # no strategy: propagated
        self.down = ops.MatMul()                  # no strategy: propagated
        rng = np.random.default_rng(0)
        self.w1 = Parameter(Tensor(rng.standard_normal((64, 128)).astype(np.float32)), name="w1")
        self.w2 = Parameter(Tensor(rng.standard_normal((128, 8)).astype(np.float32)), name="w2")

    def construct(self, x):
        return self.down(self.act(self.up(x, self.w1)), self.w2)


def main() -> None:
    init()
    n, rank = get_group_size(), get_rank()
    x = Tensor(np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)

    serial = Mlp(n)(x).asnumpy()                  # stand-alone: no communication

    ms.set_auto_parallel_context(parallel_mode="auto_parallel",
                                 search_mode="sharding_propagation", device_num=n,
                                 full_batch=True)
    net = Mlp(n)
    graph = net.compile(x)
    full = gather_full(net(x)).asnumpy()
    assert np.allclose(full, serial, rtol=1e-4, atol=1e-4)
    if rank == 0:
        for name, strategy in get_shard_strategy(net).items():
            print(f"{name:16} {strategy}")
        print("collectives:", [node.op for node in graph.nodes if node.is_communication])
        print(f"sharding propagation == serial on {n} ranks")


if __name__ == "__main__":
    main()
