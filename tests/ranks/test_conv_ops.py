"""Conv2D, MaxPool, AvgPool and PReLU, and Conv3D, Conv3DTranspose, the 3-D pools, the argmax
pools, MaxUnpool3D and the transposed layers, sharded on 2, 4 and 8 ranks equal the serial run.

Each case runs one net stand-alone and sharded (semi_auto_parallel, GRAPH_MODE): the
gathered output and every gathered gradient (of the input and the parameters) equal the
serial ones, with the collectives each split needs. Then LeNet5 (the tutorials' network)
trains a few steps data-parallel exactly as serially.
"""
import numpy as np
import pytest
from nets import LeNet5
from parallel_oracle import check, comm_ops, run_parallel

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full

RANKS = (2, 4, 8)
N = get_group_size()
H = N // 2 if N > 2 else 1          # the minor factor of a 2-D split


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(np.float32)


def serial_and_sharded(make_net, x, mode="semi_auto_parallel"):
    """(serial, sharded) of (output, input gradient, parameter gradients), all gathered;
    and the sharded loss graph. The loss is sum(out * R) for a fixed R."""
    results = []
    for parallel in (False, True):
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.GRAPH_MODE)
        if parallel:
            ms.set_auto_parallel_context(parallel_mode=mode, device_num=N, full_batch=True)
        try:
            net = make_net()
            out = gather_full(net(Tensor(x)))
            weight = Tensor(data(*out.shape, seed=9))
            mul, total = ops.Mul(), ops.ReduceSum()

            class Loss(nn.Cell):
                def __init__(self):
                    super().__init__()
                    self.net = net

                def construct(self, t):
                    return total(mul(self.net(t), weight), ())

            loss = Loss()
            fn = ms.value_and_grad(loss, grad_position=0, weights=loss.trainable_params())
            _, (dx, dws) = fn(Tensor(x))
            graph = fn._cache.get(fn.fn, (Tensor(x),), fn.fn._tree_key())[0]
            full = [gather_full(t).asnumpy() for t in (out, dx) + tuple(dws)]
        finally:
            ms.reset_auto_parallel_context()
        results.append((full, graph))
    (want, _), (got, graph) = results
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"value {k}")
    return graph


class ConvNet(nn.Cell):
    def __init__(self, strategy, group=1, **attrs):
        super().__init__()
        self.conv = ops.Conv2D(8, 3, group=group, **attrs).shard(strategy)
        self.w = Parameter(Tensor(data(8, 8 // group, 3, 3, seed=1)), name="w")

    def construct(self, x):
        return self.conv(x, self.w)


CONV_CASES = [  # (strategy, group, attrs, collectives in the loss-and-gradients graph)
    (((N, 1, 1, 1), (1, 1, 1, 1)), 1, dict(pad_mode="same"), "batch"),
    (((1, 1, 1, 1), (N, 1, 1, 1)), 1, dict(pad_mode="pad", pad=1, stride=2), "out channels"),
    (((1, N, 1, 1), (1, N, 1, 1)), 1, dict(), "in channels"),
    (((2, 1, 1, 1), (H, 1, 1, 1)), 1, dict(pad_mode="same", dilation=2), "batch x out"),
    (((2, H, 1, 1), (1, H, 1, 1)), 1, dict(pad_mode="same"), "batch x in"),
    (((N, 1, 1, 1), (1, 1, 1, 1)), 2, dict(pad_mode="same"), "batch, 2 groups"),
]


@pytest.mark.parametrize("strategy,group,attrs,what", CONV_CASES, ids=[c[3] for c in CONV_CASES])
def test_conv2d_sharded_equals_serial(strategy, group, attrs, what):
    graph = serial_and_sharded(lambda: ConvNet(strategy, group, **attrs), data(8, 8, 6, 6))
    comm = comm_ops(graph)
    assert "AllGather" not in comm      # no split is undone
    if what == "in channels":           # + the partial sums of the split input channels
        assert comm.count("AllReduce") > comm_ops(serial_and_sharded(
            lambda: ConvNet(((N, 1, 1, 1), (1, 1, 1, 1)), **attrs), data(8, 8, 6, 6))).count(
            "AllReduce")


HEIGHT_CASES = [  # H split: each rank gets its neighbours' halo rows (NeighborExchangeV2)
    (((1, 1, N, 1), (1, 1, 1, 1)), dict(pad_mode="same"), "height"),
    (((1, 1, N, 1), (1, 1, 1, 1)), dict(pad_mode="pad", pad=(1, 1, 0, 2)), "height, pad"),
    (((2, 1, H, 1), (1, 1, 1, 1)), dict(pad_mode="same", dilation=2), "batch x height"),
    (((1, 1, 2, 1), (H, 1, 1, 1)), dict(pad_mode="same"), "height x out"),
    (((1, 2, H, 1), (1, 2, 1, 1)), dict(pad_mode="same"), "in x height"),
]


@pytest.mark.parametrize("strategy,attrs,what", HEIGHT_CASES, ids=[c[2] for c in HEIGHT_CASES])
def test_conv2d_height_split_equals_serial(strategy, attrs, what):
    graph = serial_and_sharded(lambda: ConvNet(strategy, **attrs), data(4, 8, 16, 6))
    if strategy[0][2] > 1:              # the halo exchange, and its transpose
        assert {"NeighborExchangeV2", "NeighborExchangeV2Grad"} <= set(comm_ops(graph))


class PoolNet(nn.Cell):
    def __init__(self, prim, strategy):
        super().__init__()
        self.pool = prim.shard(strategy)

    def construct(self, x):
        return self.pool(x)


@pytest.mark.parametrize("prim", [lambda: ops.MaxPool(2, 2), lambda: ops.AvgPool(3, 2, "same")],
                         ids=["max", "avg"])
@pytest.mark.parametrize("strategy", [((N, 1, 1, 1),), ((1, N, 1, 1),), ((2, H, 1, 1),)],
                         ids=["batch", "channels", "both"])
def test_pools_sharded_equal_serial(prim, strategy):
    _pools_sharded_equal_serial(prim, strategy, (8, 8, 6, 6))


@pytest.mark.parametrize("prim", [lambda: ops.MaxPool(2, 2), lambda: ops.AvgPool(2, 2, "same")],
                         ids=["max", "avg"])
@pytest.mark.parametrize("strategy", [((1, 1, N, 1),), ((1, 2, 1, H),), ((1, 1, 2, H),)],
                         ids=["height", "channels x width", "height x width"])
def test_pools_tiling_a_split_dim_equal_serial(prim, strategy):
    """Windows that tile H and W (stride == kernel) pool each slice locally."""
    _pools_sharded_equal_serial(prim, strategy, (2, 4, 16, 8))


def _pools_sharded_equal_serial(prim, strategy, shape):
    x = np.random.default_rng(3).permutation(int(np.prod(shape))).reshape(shape) / 100.0
    serial_and_sharded(lambda: PoolNet(prim(), strategy), x.astype(np.float32))
    _, forward = run_parallel(lambda: PoolNet(prim(), strategy), Tensor(x.astype(np.float32)))
    assert comm_ops(forward) == []      # each rank pools its own slice


class PReLUNet(nn.Cell):
    def __init__(self, strategy):
        super().__init__()
        self.prelu = nn.PReLU(8, 0.2)
        self.prelu.w.set_data(Tensor(data(8, seed=2)))
        self.prelu.shard(strategy)

    def construct(self, x):
        return self.prelu(x)


@pytest.mark.parametrize("strategy", [((N, 1, 1, 1),), ((1, N, 1, 1),), ((2, H, 1, 1),)],
                         ids=["batch", "channels", "both"])
def test_prelu_sharded_equals_serial(strategy):
    serial_and_sharded(lambda: PReLUNet(strategy), data(8, 8, 3, 3))


class ConvLayers(nn.Cell):
    """nn.Conv2d with a bias, then a pool on the same split."""

    def __init__(self, conv_strategy, pool_strategy):
        super().__init__()
        ms.set_seed(5)
        self.conv = nn.Conv2d(8, 8, 3, has_bias=True, bias_init="normal")
        self.conv.shard(conv_strategy)
        self.pool = nn.MaxPool2d(2, 2)
        self.pool.shard(pool_strategy)

    def construct(self, x):
        return self.pool(self.conv(x))


@pytest.mark.parametrize("conv_strategy,pool_strategy", [
    (((2, 1, 1, 1), (H, 1, 1, 1)), ((2, H, 1, 1),)),          # batch x out channels
    (((1, 1, N, 1),), ((1, 1, N, 1),)),                        # height (halo rows)
], ids=["batch x out", "height"])
def test_conv2d_layer_with_bias_sharded_equals_serial(conv_strategy, pool_strategy):
    serial_and_sharded(lambda: ConvLayers(conv_strategy, pool_strategy), data(2, 8, 16, 8))


def _train_lenet(steps, x, y):
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(1)
    net = LeNet5()
    loss = nn.SoftmaxCrossEntropyWithLogits(reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss),
                               nn.Momentum(net.trainable_params(), 0.05, 0.9))
    losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
    return losses, {p.name: p.asnumpy() for p in net.trainable_params()}


@pytest.mark.parametrize("full_batch", [True, False])
def test_lenet5_data_parallel_training_equals_serial(full_batch):
    """4 Momentum steps of LeNet5 on 16 images: data_parallel == serial, loss and weights
    (every parameter is replicated, so each rank holds the whole serial value)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 1, 32, 32)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]     # one-hot labels
    ms.reset_auto_parallel_context()
    want_losses, want = _train_lenet(4, Tensor(x), Tensor(y))
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                 full_batch=full_batch)
    r = get_rank()
    fed = (x, y) if full_batch else (x[r * 16 // N:(r + 1) * 16 // N],
                                     y[r * 16 // N:(r + 1) * 16 // N])
    try:
        got_losses, got = _train_lenet(4, Tensor(fed[0]), Tensor(fed[1]))
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-5)
    assert want_losses[-1] < want_losses[0]
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-3, atol=1e-5, err_msg=name)


# -- 3-D convolution and pooling, the transposed layers, argmax pools and unpooling ----------
class Conv3dNet(nn.Cell):
    def __init__(self, strategy, group=1, **attrs):
        super().__init__()
        self.conv = ops.Conv3D(8, 3, group=group, **attrs).shard(strategy)
        self.w = Parameter(Tensor(data(8, 8 // group, 3, 3, 3, seed=1)), name="w")

    def construct(self, x):
        return self.conv(x, self.w)


CONV3D_CASES = [  # (strategy, group, attrs)
    (((N, 1, 1, 1, 1), (1, 1, 1, 1, 1)), 1, dict(pad_mode="same"), "batch"),
    (((1, 1, 1, 1, 1), (N, 1, 1, 1, 1)), 1, dict(pad_mode="pad", pad=1, stride=2), "out"),
    (((1, N, 1, 1, 1), (1, N, 1, 1, 1)), 1, dict(), "in"),
    (((2, 1, 1, 1, 1), (H, 1, 1, 1, 1)), 1, dict(pad_mode="same", dilation=2), "batch x out"),
    (((N, 1, 1, 1, 1), (1, 1, 1, 1, 1)), 2, dict(pad_mode="same"), "batch, 2 groups"),
]


@pytest.mark.parametrize("strategy,group,attrs,what", CONV3D_CASES,
                         ids=[c[3] for c in CONV3D_CASES])
def test_conv3d_sharded_equals_serial(strategy, group, attrs, what):
    graph = serial_and_sharded(lambda: Conv3dNet(strategy, group, **attrs), data(8, 8, 4, 5, 4))
    assert "AllGather" not in comm_ops(graph)


DEPTH_CASES = [  # D split: each rank gets its neighbours' halo planes (NeighborExchangeV2)
    (((1, 1, N, 1, 1), (1, 1, 1, 1, 1)), dict(pad_mode="same"), "depth"),
    (((1, 1, N, 1, 1), (1, 1, 1, 1, 1)), dict(pad_mode="pad", pad=(1, 1, 0, 2, 1, 0)),
     "depth, pad"),
    (((2, 1, H, 1, 1), (1, 1, 1, 1, 1)), dict(pad_mode="same", dilation=2), "batch x depth"),
    (((1, 1, 2, 1, 1), (H, 1, 1, 1, 1)), dict(pad_mode="same"), "depth x out"),
    (((1, 2, H, 1, 1), (1, 2, 1, 1, 1)), dict(pad_mode="same"), "in x depth"),
]


@pytest.mark.parametrize("strategy,attrs,what", DEPTH_CASES, ids=[c[2] for c in DEPTH_CASES])
def test_conv3d_depth_split_equals_serial(strategy, attrs, what):
    graph = serial_and_sharded(lambda: Conv3dNet(strategy, **attrs), data(4, 8, 16, 3, 4))
    if strategy[0][2] > 1:              # the halo exchange, and its transpose
        assert {"NeighborExchangeV2", "NeighborExchangeV2Grad"} <= set(comm_ops(graph))


class Conv3dTransposeNet(nn.Cell):
    def __init__(self, strategy, **attrs):
        super().__init__()
        self.op = ops.Conv3DTranspose(8, 8, 2, **attrs).shard(strategy)
        self.w = Parameter(Tensor(data(8, 8, 2, 2, 2, seed=2)), name="w")

    def construct(self, x):
        return self.op(x, self.w)


@pytest.mark.parametrize("strategy", [
    ((N, 1, 1, 1, 1), (1, 1, 1, 1, 1)),          # batch
    ((1, N, 1, 1, 1), (N, 1, 1, 1, 1)),          # dout channels: partial sums
    ((1, 1, 1, 1, 1), (1, N, 1, 1, 1)),          # output channels
    ((2, H, 1, 1, 1), (H, 1, 1, 1, 1)),          # batch x dout channels
], ids=["batch", "in", "out", "batch x in"])
def test_conv3d_transpose_sharded_equals_serial(strategy):
    serial_and_sharded(lambda: Conv3dTransposeNet(strategy, stride=2, pad_mode="pad", pad=1,
                                                  output_padding=1), data(8, 8, 3, 2, 3))


class Conv3dLayers(nn.Cell):
    """nn.Conv3d, nn.Conv3dTranspose (both with a bias) and a 3-D max pool, each sharded."""

    def __init__(self):
        super().__init__()
        ms.set_seed(7)
        self.conv = nn.Conv3d(8, 8, 3, has_bias=True, bias_init="normal")
        self.conv.shard(((2, 1, 1, 1, 1), (H, 1, 1, 1, 1)))
        self.deconv = nn.Conv3dTranspose(8, 4, 2, stride=2, has_bias=True, bias_init="normal")
        self.deconv.shard(((2, H, 1, 1, 1), (H, 1, 1, 1, 1)))
        self.pool = ops.MaxPool3D(2, 2).shard(((2, 1, H, 1, 1),))

    def construct(self, x):
        return self.pool(self.deconv(self.conv(x)))


def test_conv3d_layers_with_bias_sharded_equal_serial():
    serial_and_sharded(Conv3dLayers, data(4, 8, 4, 4, 3))


class Conv1dTransposeNet(nn.Cell):
    def __init__(self, strategy):
        super().__init__()
        ms.set_seed(8)
        self.deconv = nn.Conv1dTranspose(8, 8, 3, stride=2, has_bias=True, bias_init="normal")
        self.deconv.shard(strategy)

    def construct(self, x):
        return self.deconv(x)


@pytest.mark.parametrize("strategy", [((N, 1, 1),), ((1, N, 1), (N, 1, 1)), ((2, 1, 1), (1, H, 1))],
                         ids=["batch", "in", "batch x out"])
def test_conv1d_transpose_sharded_equals_serial(strategy):
    serial_and_sharded(lambda: Conv1dTransposeNet(strategy), data(8, 8, 5))


POOL3D = [lambda: ops.MaxPool3D(2, 1, "pad", 1, True), lambda: ops.AvgPool3D(3, 2, "same"),
          lambda: ops.AvgPool3D(3, 2, "pad", 1, True, False, 0)]


@pytest.mark.parametrize("prim", POOL3D, ids=["max pad ceil", "avg same", "avg pad ceil"])
@pytest.mark.parametrize("strategy", [((N, 1, 1, 1, 1),), ((1, N, 1, 1, 1),),
                                      ((2, H, 1, 1, 1),)], ids=["batch", "channels", "both"])
def test_pools3d_sharded_equal_serial(prim, strategy):
    x = np.random.default_rng(4).permutation(8 * 8 * 4 * 5 * 3).reshape(8, 8, 4, 5, 3) / 100.0
    serial_and_sharded(lambda: PoolNet(prim(), strategy), x.astype(np.float32))


@pytest.mark.parametrize("strategy", [((1, 1, N, 1, 1),), ((1, 1, 2, 1, H),)],
                         ids=["depth", "depth x width"])
def test_pools3d_tiling_a_split_dim_equal_serial(strategy):
    x = np.random.default_rng(5).permutation(2 * 4 * 16 * 4 * 8).reshape(2, 4, 16, 4, 8) / 10.0
    for prim in (lambda: ops.MaxPool3D(2, 2), lambda: ops.AvgPool3D(2, 2)):
        serial_and_sharded(lambda: PoolNet(prim(), strategy), x.astype(np.float32))
        _, forward = run_parallel(lambda: PoolNet(prim(), strategy), Tensor(x.astype(np.float32)))
        assert comm_ops(forward) == []


class ArgmaxUnpoolNet(nn.Cell):
    """A max pool with indices, then the unpool of its values: both sharded alike."""

    def __init__(self, strategy):
        super().__init__()
        self.pool = ops.MaxPool3DWithArgmax(2, 2, 0).shard(strategy)
        self.unpool = ops.MaxUnpool3D(2).shard(strategy * 2)

    def construct(self, x):
        values, index = self.pool(x)
        return self.unpool(values * 2.0, index)


@pytest.mark.parametrize("strategy", [((N, 1, 1, 1, 1),), ((1, N, 1, 1, 1),),
                                      ((2, H, 1, 1, 1),)], ids=["batch", "channels", "both"])
def test_argmax_pool_and_unpool_sharded_equal_serial(strategy):
    x = np.random.default_rng(6).permutation(8 * 8 * 4 * 4 * 2).reshape(8, 8, 4, 4, 2) / 50.0
    serial_and_sharded(lambda: ArgmaxUnpoolNet(strategy), x.astype(np.float32))


class IndicesNet(nn.Cell):
    def __init__(self, strategy):
        super().__init__()
        self.pool = ops.MaxPoolWithArgmaxV2(3, 2, 1, 2).shard(strategy)

    def construct(self, x):
        return self.pool(x)


@pytest.mark.parametrize("strategy", [((N, 1, 1, 1),), ((2, H, 1, 1),)], ids=["batch", "both"])
def test_argmax_indices_sharded_equal_serial(strategy):
    x = np.random.default_rng(7).permutation(8 * 8 * 7 * 6).reshape(8, 8, 7, 6).astype(np.float32)
    check(lambda: IndicesNet(strategy), Tensor(x))


class Pool3dLayers(nn.Cell):
    """nn.AvgPool3d then nn.MaxPool3d (with indices: its MaxPool3DWithArgmax), each sharded."""

    def __init__(self, strategy):
        super().__init__()
        self.avg = nn.AvgPool3d(3, 1, "pad", 1, count_include_pad=False)
        self.avg.shard(strategy)
        self.max = nn.MaxPool3d(2, 1, "pad", 1, (1, 2, 1), return_indices=True, ceil_mode=True)
        self.max.shard(strategy)

    def construct(self, x):
        return self.max(self.avg(x))[0]


@pytest.mark.parametrize("strategy", [((N, 1, 1, 1, 1),), ((2, H, 1, 1, 1),)],
                         ids=["batch", "batch x channels"])
def test_pool3d_layers_sharded_equal_serial(strategy):
    x = np.random.default_rng(8).permutation(8 * 8 * 4 * 5 * 3).reshape(8, 8, 4, 5, 3) / 100.0
    graph = serial_and_sharded(lambda: Pool3dLayers(strategy), x.astype(np.float32))
    assert "AllGather" not in comm_ops(graph)      # each rank pools its own batch and channels
