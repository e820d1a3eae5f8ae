"""Small one-op Cells shared by the simulated planner tests and the MPI tests."""
from msops import nn, ops
from msops.common.initializer import Normal


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


class LeNet5(nn.Cell):
    """The LeNet-5 of MindSpore's tutorials: x (N, num_channel, 32, 32) -> (N, num_class)."""

    def __init__(self, num_class=10, num_channel=1):
        super().__init__()
        self.conv1 = nn.Conv2d(num_channel, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120, weight_init=Normal(0.02))
        self.fc2 = nn.Dense(120, 84, weight_init=Normal(0.02))
        self.fc3 = nn.Dense(84, num_class, weight_init=Normal(0.02))
        self.relu = nn.ReLU()
        self.max_pool2d = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.max_pool2d(self.relu(self.conv1(x)))
        x = self.max_pool2d(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class DenseBlock(nn.Cell):
    """Dense(d_in, d_out) -> ReLU: the block `ms.shard` tests lay out."""

    def __init__(self, d_in, d_out, weight_init="normal"):
        super().__init__()
        self.dense = nn.Dense(d_in, d_out, weight_init=weight_init)
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(self.dense(x))


class BlockThenDense(nn.Cell):
    """DenseBlock(d_in, d_mid) -> Dense(d_mid, d_out), weights from `inits` (or "normal")."""

    def __init__(self, d_in, d_mid, d_out, inits=("normal", "normal")):
        super().__init__()
        self.block = DenseBlock(d_in, d_mid, inits[0])
        self.out = nn.Dense(d_mid, d_out, weight_init=inits[1])

    def construct(self, x):
        return self.out(self.block(x))
