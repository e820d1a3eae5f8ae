"""Small one-op Cells shared by the simulated planner tests and the MPI tests."""
from msops import nn, ops


class ReduceNet(nn.Cell):
    """`prim` (a reduction) sharded by `strategy`, over `axis`."""

    def __init__(self, prim, strategy, axis):
        super().__init__()
        self.reduce = prim.shard(strategy)
        self.axis = axis

    def construct(self, x):
        return self.reduce(x, self.axis)


class ReshapeNet(nn.Cell):
    """A Reshape to `shape`, sharded by `strategy` (None: the data-parallel default)."""

    def __init__(self, shape, strategy=None):
        super().__init__()
        self.reshape = ops.Reshape().shard(strategy) if strategy else ops.Reshape()
        self.shape = shape

    def construct(self, x):
        return self.reshape(x, self.shape)
