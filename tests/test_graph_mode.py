"""Graph mode against eager mode and plain numpy: networks, the compile cache, user errors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.graph import GraphError

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run_both(net, *args):
    """(eager output, graph output) of the same Cell on the same inputs, as numpy."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = net(*args)
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = net(*args)
    return eager, graph


def as_np(out):
    return tuple(o.asnumpy() for o in out) if isinstance(out, tuple) else out.asnumpy()


class MLP(nn.Cell):
    def __init__(self, sizes):
        super().__init__()
        self.body = nn.SequentialCell([nn.Dense(a, b, activation="relu")
                                       for a, b in zip(sizes[:-1], sizes[1:-1])])
        self.head = nn.Dense(sizes[-2], sizes[-1])

    def construct(self, x):
        return self.head(self.body(x))


def numpy_mlp(net, x):
    for d in net.body.cells():
        x = np.maximum(x @ d.weight.asnumpy().T + d.bias.asnumpy(), 0)
    return x @ net.head.weight.asnumpy().T + net.head.bias.asnumpy()


def test_mlp_graph_equals_eager_equals_numpy():
    net = MLP([12, 32, 16, 5])
    for d in list(net.body.cells()) + [net.head]:       # non-trivial weights and biases
        d.weight.set_data(randn(*d.weight.shape))
        d.bias.set_data(randn(*d.bias.shape))
    x = randn(6, 12)
    eager, graph = run_both(net, Tensor(x))
    np.testing.assert_array_equal(graph.asnumpy(), eager.asnumpy())
    np.testing.assert_allclose(graph.asnumpy(), numpy_mlp(net, x), rtol=1e-5, atol=1e-5)
    assert graph.shape == (6, 5) and graph.dtype == ms.float32


class Submodel(nn.Cell):
    """Seed 001: BatchNorm followed by MatMul (unsharded)."""

    def __init__(self, shape):
        super().__init__()
        self.bn = nn.BatchNorm1d(shape[0])
        self.matmul = ops.MatMul()
        self.W = Parameter(Tensor(RNG.standard_normal(shape).astype(np.float32)), name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.W)


def numpy_bn(x, gamma, beta, mean, var, eps=1e-5):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("training", [True, False])
def test_batchnorm_matmul_seed001(training):
    net = Submodel((16, 32))
    net.bn.gamma.set_data(randn(16))
    net.bn.beta.set_data(randn(16))
    net.bn.moving_mean.set_data(randn(16))
    net.bn.moving_variance.set_data(np.abs(randn(16)) + 0.5)
    net.set_train(training)
    x = randn(8, 16) * 3 + 1
    eager, graph = run_both(net, Tensor(x))
    np.testing.assert_array_equal(graph.asnumpy(), eager.asnumpy())
    if training:
        mean, var = x.mean(axis=0), x.var(axis=0)
    else:
        mean, var = net.bn.moving_mean.asnumpy(), net.bn.moving_variance.asnumpy()
    ref = numpy_bn(x, net.bn.gamma.asnumpy(), net.bn.beta.asnumpy(), mean, var) @ net.W.asnumpy()
    np.testing.assert_allclose(graph.asnumpy(), ref, rtol=1e-4, atol=1e-4)


def test_set_train_switches_the_compiled_graph():
    net = Submodel((4, 3))
    net.bn.moving_mean.set_data(np.full(4, 10.0, np.float32))
    x = Tensor(randn(5, 4))
    ms.set_context(mode=ms.GRAPH_MODE)
    infer = net(x).asnumpy()
    train = net.set_train(True)(x).asnumpy()
    again = net.set_train(False)(x).asnumpy()
    assert net._compile_cache.traces == 2
    xn = x.asnumpy()
    # the training call moved the moving statistics (momentum 0.9) before the second inference
    moved = numpy_bn(xn, 1, 0, 0.9 * 10.0 + 0.1 * xn.mean(0), 0.9 + 0.1 * xn.var(0))
    np.testing.assert_allclose(again, moved @ net.W.asnumpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(train, numpy_bn(xn, 1, 0, xn.mean(0), xn.var(0)) @ net.W.asnumpy(),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(infer, numpy_bn(xn, 1, 0, 10.0, 1.0) @ net.W.asnumpy(),
                               rtol=1e-4, atol=1e-4)


class Counting(nn.Cell):
    """Counts how often construct runs: in graph mode only when traced."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.w = Parameter(Tensor(np.full((3,), 2.0, np.float32)))

    def construct(self, x, scale=1.0):
        self.calls += 1
        return x * self.w * scale


def test_compile_cache_second_call_does_not_retrace():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Counting()
    x = randn(4, 3)
    out1 = net(Tensor(x))
    out2 = net(Tensor(x + 1))                   # same signature, new values
    assert net.calls == 1
    np.testing.assert_array_equal(out1.asnumpy(), x * 2)
    np.testing.assert_array_equal(out2.asnumpy(), (x + 1) * 2)


def test_compile_cache_retraces_on_new_shape_dtype_or_static_value():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Counting()
    net(Tensor(randn(4, 3)))
    out = net(Tensor(randn(2, 5, 3)))              # new shape
    assert net.calls == 2 and out.shape == (2, 5, 3)
    out = net(Tensor(np.ones((4, 3), np.float64)))     # a new dtype is traced again
    assert net.calls == 3 and out.dtype == ms.float64   # float64 * the float32 weight
    np.testing.assert_array_equal(out.asnumpy(), np.full((4, 3), 2.0))
    x = randn(4, 3)
    np.testing.assert_allclose(net(Tensor(x), 3.0).asnumpy(), x * 6, rtol=1e-6)
    np.testing.assert_allclose(net(Tensor(x), scale=3.0).asnumpy(), x * 6, rtol=1e-6)
    assert net.calls == 4                           # keyword and positional: one signature
    assert net._compile_cache.traces == 4           # one trace per signature
    for _ in range(2):                              # a failed trace is not cached: again
        with pytest.raises(ValueError, match="For 'Mul'"):
            net(Tensor(np.ones((4, 4), np.float32)))
    assert net.calls == 6 and net._compile_cache.traces == 4


def test_parameter_update_is_seen_without_retrace():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Counting()
    x = randn(2, 3)
    net(Tensor(x))
    net.w.set_data(np.array([1.0, -1.0, 0.5], np.float32))
    np.testing.assert_array_equal(net(Tensor(x)).asnumpy(), x * [1.0, -1.0, 0.5])
    assert net.calls == 1


def test_eager_mode_runs_construct_every_call():
    net = Counting()
    net(Tensor(randn(2, 3)))
    net(Tensor(randn(2, 3)))
    assert net.calls == 2


class StaticControlFlow(nn.Cell):
    """Python control flow on shapes and attributes unrolls while tracing."""

    def __init__(self, repeats):
        super().__init__()
        self.repeats = repeats
        self.add = ops.Add()

    def construct(self, x, y):
        for _ in range(self.repeats):
            x = self.add(x, y)
        if x.shape[0] > 2:
            x = x * 10.0
        return x, y


@pytest.mark.parametrize("rows", [2, 3])
def test_static_control_flow_unrolls(rows):
    net = StaticControlFlow(3)
    x, y = randn(rows, 4), randn(rows, 4)
    eager, graph = run_both(net, Tensor(x), Tensor(y))
    ref = (x + y + y + y) * (10.0 if rows > 2 else 1.0)
    for out in (as_np(eager), as_np(graph)):
        np.testing.assert_allclose(out[0], ref, rtol=1e-6)
        np.testing.assert_array_equal(out[1], y)
    assert [n.op for n in net.compile(Tensor(x), Tensor(y)).nodes] == \
        ["Add"] * 3 + (["Mul"] if rows > 2 else [])


class BadMatMul(nn.Cell):
    def __init__(self):
        super().__init__()
        self.matmul = ops.MatMul()
        self.w = Parameter(Tensor(np.ones((5, 2), np.float32)))

    def construct(self, x):
        y = x * 2.0
        return self.matmul(y, self.w)   # the offending line


def test_shape_error_names_op_shapes_and_user_line():
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(ValueError, match=r"(?s)For 'MatMul'.*\[3, 4\] Float32, \[5, 2\] Float32"
                                         r".*test_graph_mode\.py:\d+: return self\.matmul\(y, "
                                         r"self\.w\)   # the offending line"):
        BadMatMul()(Tensor(np.ones((3, 4), np.float32)))


class DataDependent(nn.Cell):
    def construct(self, x):
        if x:   # data-dependent
            return x
        return x * 2.0


class ReadsValue(nn.Cell):
    def construct(self, x):
        return Tensor(x.asnumpy() + 1)


class Iterates(nn.Cell):
    def construct(self, x):
        return [r for r in x]


def test_data_dependent_branch_raises_graph_error():
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(GraphError, match=r"data-dependent branch.*at .*test_graph_mode\.py:\d+: "
                                         r"if x:   # data-dependent"):
        DataDependent()(Tensor(np.ones((1,), np.float32)))
    with pytest.raises(GraphError, match=r"no value at compile time, but asnumpy\(\) was called "
                                         r"at .*test_graph_mode\.py:\d+: return Tensor"):
        ReadsValue()(Tensor(np.ones((2,), np.float32)))
    with pytest.raises(GraphError, match=r"iterating a traced Tensor of shape \[2, 3\]"):
        Iterates()(Tensor(np.ones((2, 3), np.float32)))


def test_failed_trace_leaves_no_hook_and_eager_still_works():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = DataDependent()
    with pytest.raises(GraphError):
        net(Tensor(np.ones((1,), np.float32)))
    assert len(net._compile_cache) == 0
    out = ops.Add()(Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), [2.0, 2.0])


def test_loss_cell_graph_equals_eager_equals_numpy():
    logits, labels = randn(6, 4), np.array([0, 3, 1, 1, 2, 0], np.int32)
    logp = logits - logits.max(1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(1, keepdims=True))
    per_sample = -logp[np.arange(6), labels]
    for reduction, ref in (("none", per_sample), ("mean", per_sample.mean()),
                           ("sum", per_sample.sum())):
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction=reduction)
        eager, graph = run_both(loss, Tensor(logits), Tensor(labels))
        np.testing.assert_array_equal(graph.asnumpy(), eager.asnumpy())
        np.testing.assert_allclose(graph.asnumpy(), ref, rtol=1e-5)


def test_compile_cache_retraces_when_the_parallel_context_changes():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Counting()
    x = Tensor(randn(2, 3))
    net(x)
    try:
        ms.set_auto_parallel_context(gradients_mean=True)
        net(x)
        net(x)
    finally:
        ms.reset_auto_parallel_context()
    net(x)
    assert net.calls == 2 and net._compile_cache.traces == 2


def test_a_cleared_compile_cache_compiles_again_for_the_last_signature():
    """Cell.shard clears the cache: the next call with the same signature must not run the
    executor compiled before (the last-call shortcut included)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.ReLU()
    x = Tensor(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(net(x).asnumpy(), [0.0, 2.0])
    net(x)
    assert net._compile_cache.traces == 1
    net.shard(((1,),))
    np.testing.assert_array_equal(net(x).asnumpy(), [0.0, 2.0])
    assert net._compile_cache.traces == 2
