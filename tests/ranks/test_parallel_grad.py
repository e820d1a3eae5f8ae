"""The parallel backward: sharded gradients and training steps equal the serial network's.

Each test differentiates one network stand-alone and sharded (GRAPH_MODE), gathers every
sharded gradient with `gather_full` and compares it with the serial gradient.
"""
import numpy as np
import pytest
from parallel_oracle import DenseDP, assert_held, comm_ops, data

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full

RANKS = (2, 4, 8)


def _grads(make_net, inputs, train, positions):
    net = make_net()
    net.set_train(train)
    params = net.trainable_params()
    fn = ms.value_and_grad(net, grad_position=positions, weights=params)
    out, grads = fn(*inputs)
    return out, grads, [p.name for p in params], fn


def check_grads(make_net, *inputs, train=False, positions=None, mode="semi_auto_parallel",
                full_batch=True, rtol=1e-4, atol=1e-5, **context):
    """Assert every sharded parameter (and input) gradient equals the serial one; returns
    the compiled local graph."""
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    _, want, names, _ = _grads(make_net, inputs, train, positions)
    n, r = get_group_size(), get_rank()
    fed = inputs
    if not full_batch:            # each rank feeds its batch slice
        fed = [Tensor(x.asnumpy()[r * x.shape[0] // n:(r + 1) * x.shape[0] // n])
               for x in inputs]
    ms.set_auto_parallel_context(parallel_mode=mode, device_num=n, full_batch=full_batch,
                                 **context)
    try:
        _, got, _, fn = _grads(make_net, fed, train, positions)
        graph = fn._cache.get(fn.fn, fed, fn.fn._tree_key())[0]
        if positions is not None:
            got = tuple(got[0]) + tuple(got[1])
            want = tuple(want[0]) + tuple(want[1])
            names = [f"input{p}" for p in positions] + names
        full = [gather_full(g).asnumpy() for g in got]
    finally:
        ms.reset_auto_parallel_context()
    assert len(full) == len(want)
    # float32 rounding is relative to the largest gradient (a BatchNorm's beta and gamma
    # gradients cancel to about 0 under a linear head)
    atol *= max(1.0, max(float(np.abs(w.asnumpy()).max()) for w in want))
    for name, g, w in zip(names, full, want):
        np.testing.assert_allclose(g, w.asnumpy(), rtol=rtol, atol=atol, err_msg=name)
    return graph


class DenseNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.d1 = nn.Dense(32, 16, weight_init=data(16, 32))
        self.act = nn.ReLU()
        self.d2 = nn.Dense(16, 8, weight_init=data(8, 16))
        self.mean = ops.ReduceMean()

    def construct(self, x):
        y = self.d2(self.act(self.d1(x)))
        return self.mean(y * y)


#: (full_batch, gradients_mean, bucket MB or None for auto, gradient AllReduces)
DP_CASES = [(True, False, None, 1), (False, False, None, 1), (False, True, None, 1),
            (True, False, 2.1 / 2 ** 10, 2),       # 2.1 KiB: w2 + b2 (done first), then w1 + b1
            (True, False, 1e-6, 4)]                # smaller than any gradient: one each


@pytest.mark.parametrize("full_batch,gradients_mean,bucket_mb,reductions", DP_CASES)
def test_data_parallel_dense(full_batch, gradients_mean, bucket_mb, reductions):
    """The loss is the global loss, so the reduced gradients are the serial ones whichever
    gradients_mean is (docs/design.md, Autodiff); the replicated parameters' gradients
    are fused into buckets of comm_fusion's size."""
    fusion = None if bucket_mb is None else {"allreduce": {"mode": "size",
                                                           "config": bucket_mb}}
    graph = check_grads(DenseNet, data(16, 32), mode="data_parallel", full_batch=full_batch,
                        gradients_mean=gradients_mean, comm_fusion=fusion, positions=(0,))
    # the loss's AllReduce and its transpose, then the buckets of the 2 weights and 2
    # biases; the batch-split input's gradient needs none
    assert comm_ops(graph) == ["AllReduce"] * (2 + reductions)


class Dense3(nn.Cell):
    """Three equal Dense layers: 288 bytes of gradient each (weight 256, bias 32)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.SequentialCell([nn.Dense(8, 8, weight_init=data(8, 8, seed=k),
                                                  activation="relu" if k < 2 else None)
                                         for k in range(3)])
        self.mean = ops.ReduceMean()

    def construct(self, x):
        y = self.layers(x)
        return self.mean(y * y)


def _ancestors(node):
    seen, stack = {}, [node]
    while stack:
        n = stack.pop()
        if n.id not in seen:
            seen[n.id] = n
            stack.extend(n.inputs)
    return seen


def test_buckets_are_issued_as_soon_as_complete():
    """Buckets are formed in the order the backward completes the gradients (the last
    layer's first) and each AllReduce runs right after its bucket's last gradient, before
    the earlier layers' backward: 600 bytes = layers 3 + 2, then layer 1."""
    fusion = {"allreduce": {"mode": "size", "config": 600 / 2 ** 20}}
    graph = check_grads(Dense3, data(8, 8), mode="data_parallel", comm_fusion=fusion)
    n_out = len(graph.outputs) - 6                 # the loss, then 3 x (weight, bias) grads
    grads = graph.outputs[n_out:]
    pos = {n.id: k for k, n in enumerate(graph.nodes)}

    def bucket_of(g):                              # the AllReduce a reduced gradient comes from
        return max((n for n in _ancestors(g).values() if n.op == "AllReduce"),
                   key=lambda n: pos[n.id])

    a1, a2, a3 = (bucket_of(grads[2 * k]) for k in range(3))
    assert a2 is a3 and a1 is not a3
    assert all(bucket_of(g) is a for g, a in zip(grads[1::2], (a1, a2, a3)))   # biases
    # layer 1's weight-gradient MatMul (the [8, 8] one the first bucket does not need)
    # runs after the first bucket's AllReduce
    late = [n for i, n in _ancestors(a1).items()
            if n.op == "MatMul" and n.shape == (8, 8) and i not in _ancestors(a3)]
    assert len(late) == 1 and pos[late[0].id] > pos[a3.id]
    # and the first bucket's AllReduce follows its last gradient at once
    # (its only inputs since then: the flatten/concat of that bucket)
    first_grad = max((n for n in _ancestors(a3).values()
                      if n.prim is not None and n.op not in ("Reshape", "Concat",
                                                              "MakeTuple", "AllReduce")),
                     key=lambda n: pos[n.id])
    between = graph.nodes[pos[first_grad.id] + 1:pos[a3.id]]
    assert all(n.op in ("Reshape", "Concat", "MakeTuple") for n in between), between


class MegatronMLP(nn.Cell):
    """Column-split then row-split MatMul: ((1,1),(1,N)) then ((1,N),(N,1))."""

    def __init__(self, n):
        super().__init__()
        self.m1 = ops.MatMul().shard(((1, 1), (1, n)))
        self.act = ops.ReLU().shard(((1, n),))
        self.m2 = ops.MatMul().shard(((1, n), (n, 1)))
        self.w1 = Parameter(data(16, 32), name="w1")
        self.w2 = Parameter(data(32, 8, seed=1), name="w2")

    def construct(self, x):
        return self.m2(self.act(self.m1(x, self.w1)), self.w2)


def test_megatron_mlp_column_then_row_split():
    n = get_group_size()
    graph = check_grads(lambda: MegatronMLP(n), data(8, 16), positions=(0,))
    # Megatron's f and g: the row-split MatMul's AllReduce, its transpose, and the
    # replicated input's gradient; the split weights need no reduction
    assert comm_ops(graph) == ["AllReduce"] * 3


def test_megatron_mlp_each_rank_feeds_its_batch_slice():
    """full_batch=False: the fed slice is gathered for the replicated MatMul input; its
    gradient comes back through the AllGather's transpose as this rank's batch slice."""
    n = get_group_size()
    graph = check_grads(lambda: MegatronMLP(n), data(8, 16), positions=(0,), full_batch=False)
    assert comm_ops(graph) == ["AllGather", "AllReduce", "AllReduce", "ReduceScatter"]


@pytest.mark.parametrize("split_batch", [True, False])
def test_matmul_2d_grid(split_batch):
    n = get_group_size()
    a = 2 if n >= 4 else 1
    b = n // a

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            s = ((a, b), (b, 1)) if split_batch else ((1, a), (a, b))
            self.mm = ops.MatMul().shard(s)
            self.w = Parameter(data(16, 8), name="w")

        def construct(self, x):
            return self.mm(x, self.w)

    check_grads(Net, data(8, 16), positions=(0,))


def test_batchnorm_split_batch_training():
    n = get_group_size()

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(8)
            self.bn.shard(((n, 1),))
            self.mm = ops.MatMul()
            self.w = Parameter(data(8, 4), name="w")

        def construct(self, x):
            y = self.mm(self.bn(x), self.w)
            return y * y

    check_grads(Net, data(16, 8), train=True, positions=(0,), atol=1e-4)


def test_softmax_cross_entropy_split_class():
    n = get_group_size()

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mm = ops.MatMul().shard(((1, 1), (1, n)))
            self.ce = ops.SoftmaxCrossEntropyWithLogits().shard(((1, n), (1, n)))
            self.mean = ops.ReduceMean()
            self.w = Parameter(data(16, 8), name="w")

        def construct(self, x, labels):
            return self.mean(self.ce(self.mm(x, self.w), labels)[0])

    labels = Tensor(np.eye(8, dtype=np.float32)[np.arange(16) % 8])
    check_grads(Net, data(16, 16), labels, positions=(0,))


class Submodel(nn.Cell):
    """Seed 001 (examples/semi_auto_parallel.py): BatchNorm split by rows, then MatMul with
    the weight split by columns."""

    def __init__(self, n):
        super().__init__()
        self.bn = nn.BatchNorm1d(16)
        self.bn.shard(((n, 1),))
        self.matmul = ops.MatMul().shard(((1, 1), (1, n)))
        self.W = Parameter(Tensor(np.arange(16 * 32, dtype=np.float32).reshape(16, 32) / 100),
                           name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.W)


class Squared(nn.Cell):
    """`net(x) ** 2`: a loss whose gradient reaches BatchNorm's gamma (with the plain sum
    of a linear output, gamma's gradient is 0 up to rounding)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def construct(self, x):
        y = self.net(x)
        return y * y


@pytest.mark.parametrize("train", [False, True])
def test_seed001_submodel(train):
    n = get_group_size()
    check_grads(lambda: Submodel(n), data(16, 16), train=train, positions=(0,))
    check_grads(lambda: Squared(Submodel(n)), data(16, 16), train=train, positions=(0,))


def _train(make_net, x, y, optimizer, sens, steps=20):
    """`steps` TrainOneStepCell steps with an MSE loss: (losses, {name: (param, layout)})."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = make_net()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    step = nn.TrainOneStepCell(loss_net, optimizer(net.trainable_params()), sens=sens)
    losses = [float(step(x, y).asnumpy()) for _ in range(steps)]
    fn = step._value_and_grad
    graph = fn._cache.get(fn.fn, (x, y), fn.fn._tree_key())[0]
    layouts = {id(n.value): n.layout for n in graph.parameters}
    return losses, {p.name: (p.asnumpy(), layouts.get(id(p))) for p in net.trainable_params()}


OPTIMIZERS = {      # (optimizer, sens)
    "sgd_momentum": (lambda ps: nn.SGD(ps, learning_rate=0.02, momentum=0.9), 1.0),
    "momentum": (lambda ps: nn.Momentum(ps, learning_rate=0.04, momentum=0.9,
                                        weight_decay=0.01), 0.5),
    "adam": (lambda ps: nn.Adam(ps, learning_rate=0.01, weight_decay=0.01), 1.0),
    "adam_weight_decay": (lambda ps: nn.AdamWeightDecay(ps, learning_rate=[0.01, 0.005],
                                                        weight_decay=0.1), 1.0),
}


class Grid2D(nn.Cell):
    """A 2-D MatMul grid, ((a, b), (b, 1)), then a column-split MatMul."""

    def __init__(self, n):
        super().__init__()
        a = 2 if n >= 4 else 1
        self.m1 = ops.MatMul().shard(((a, n // a), (n // a, 1)))
        self.m2 = ops.MatMul().shard(((1, 1), (1, n)))
        self.w1 = Parameter(data(16, 32), name="w1")
        self.w2 = Parameter(data(32, 8, seed=1), name="w2")

    def construct(self, x):
        return self.m2(self.m1(x, self.w1), self.w2)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("net", ["data_parallel", "megatron", "grid2d"])
def test_twenty_training_steps_equal_serial(net, optimizer):
    """Each rank updates its own slice; the loss is the global loss; after 20 steps every
    rank's slice (and the gathered parameter) equals the serial parameter."""
    n, r = get_group_size(), get_rank()
    make, mode = {"data_parallel": (DenseDP, "data_parallel"),
                  "megatron": (lambda: MegatronMLP(n), "semi_auto_parallel"),
                  "grid2d": (lambda: Grid2D(n), "semi_auto_parallel")}[net]
    x, y = data(16, 16, seed=3), data(16, 8, seed=4)
    ms.reset_auto_parallel_context()
    want_losses, want = _train(make, x, y, *OPTIMIZERS[optimizer])
    ms.set_auto_parallel_context(parallel_mode=mode, device_num=n, full_batch=True)
    try:
        got_losses, got = _train(make, x, y, *OPTIMIZERS[optimizer])
        for name, (value, layout) in got.items():
            mine = value          # a Parameter holds only its slice after a parallel compile
            assert mine.shape == layout.slice_shape, name
            np.testing.assert_allclose(mine, want[name][0][layout.slice_of(r)], rtol=1e-4,
                                       atol=1e-5, err_msg=name)
            t = Tensor(mine)
            t.layout = layout
            np.testing.assert_allclose(gather_full(t).asnumpy(), want[name][0], rtol=1e-4,
                                       atol=1e-5, err_msg=name)
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)
    assert want_losses[-1] < want_losses[0]


def test_checkpoint_after_parallel_training_equals_serial(tmp_path_factory):
    """After training only this rank's slice of a Parameter's array is current: the
    integrated checkpoint must gather slices by the layout the training step used."""
    from mpi4py import MPI
    n = get_group_size()
    x, y = data(16, 16, seed=3), data(16, 8, seed=4)
    ms.reset_auto_parallel_context()
    _, want = _train(lambda: MegatronMLP(n), x, y, *OPTIMIZERS["sgd_momentum"])
    path = MPI.COMM_WORLD.bcast(str(tmp_path_factory.mktemp("ckpt") / "trained.safetensors"))
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net = MegatronMLP(n)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   OPTIMIZERS["sgd_momentum"][0](net.trainable_params()))
        for _ in range(20):
            step(x, y)
        assert set(net.parameter_layout_dict) == {p.name for p in net.trainable_params()}
        ms.save_checkpoint(net, path)
    finally:
        ms.reset_auto_parallel_context()
    saved = ms.load_checkpoint(path)
    for name, (value, _) in want.items():
        np.testing.assert_allclose(saved[name].asnumpy(), value, rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def _steps_by_hand(make_net, x, y, steps=5):
    """value_and_grad, then the optimizer called on the (sliced) gradients: its update is
    compiled alone, each Parameter and moment read and written as the gradient's slice."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = make_net()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    opt = nn.Momentum(net.trainable_params(), learning_rate=[0.04, 0.02], momentum=0.9)
    grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)
    losses = []
    for _ in range(steps):
        loss, grads = grad_fn(x, y)
        opt(grads)
        losses.append(float(loss.asnumpy()))
    return losses, net, opt, grads


def test_an_optimizer_called_on_sliced_gradients_updates_each_slice():
    n = get_group_size()
    x, y = data(16, 16, seed=3), data(16, 8, seed=4)
    ms.reset_auto_parallel_context()
    want_losses, want_net, _, _ = _steps_by_hand(lambda: Grid2D(n), x, y)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                 full_batch=True)
    try:
        got_losses, got_net, opt, grads = _steps_by_hand(lambda: Grid2D(n), x, y)
        for p, w, g in zip(got_net.trainable_params(), want_net.trainable_params(), grads):
            assert_held(p, w.asnumpy(), g.layout, rtol=1e-4, atol=1e-5)
        assert opt._compiled.traces == 1
        assert int(opt.global_step.asnumpy()[0]) == 5

        @ms.jit
        def step(x, y):       # a gradient function made anew each trace: compiled as one
            return ms.value_and_grad(nn.WithLossCell(got_net, nn.MSELoss()), None,
                                     opt.parameters)(x, y)[0]
        outside = ms.value_and_grad(nn.WithLossCell(got_net, nn.MSELoss()), None,
                                    opt.parameters)(x, y)[0]
        np.testing.assert_allclose(step(x, y).asnumpy(), outside.asnumpy(), rtol=1e-6)
    finally:
        ms.reset_auto_parallel_context()
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4, atol=1e-6)


class ShapeReader(nn.Cell):
    """A construct that reads its Parameter's shape in Python (a composite would)."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(np.arange(32.0, dtype=np.float32).reshape(4, 8) / 10), name="w")
        self.mm = ops.MatMul().shard(((1, 1), (1, get_group_size())))

    def construct(self, x):
        scale = ops.arange(1, self.w.shape[1] + 1).astype(ms.float32)     # (8,): the whole width
        return ops.ReduceSum()(self.mm(x, self.w) * scale, ())


def test_a_construct_retraced_after_a_sharded_step_sees_whole_parameter_shapes():
    """After a parallel gradient each rank holds its slice of w; a later compile of the
    same net still traces the whole network (w.shape is (4, 8), not the slice)."""
    x = Tensor(np.ones((2, 4), np.float32))
    w = np.arange(32.0).reshape(4, 8) / 10
    want = float((np.ones((2, 4)) @ w * np.arange(1, 9)).sum())
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=get_group_size(),
                                 full_batch=True)
    net = ShapeReader()
    loss, _ = ms.value_and_grad(net, None, net.trainable_params())(x)
    assert net.w.asnumpy().shape == (4, 8 // get_group_size())          # the slice is held
    net.compile(x)
    np.testing.assert_allclose([float(loss.asnumpy()), float(net(x).asnumpy())], [want, want],
                               rtol=1e-5)
