"""A Cell calling AllGather inside construct: graph mode = eager mode = numpy on every rank."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)


class GatherNet(nn.Cell):
    """Seed 000's example, with a local Dense before the gather."""

    def __init__(self, w):
        super().__init__()
        self.dense = nn.Dense(w.shape[1], w.shape[0], weight_init=w, has_bias=False)
        self.allgather = ops.AllGather()

    def construct(self, x):
        return self.allgather(self.dense(x))


def _both_modes(net, *args):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = net(*args).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    graph = net(*args).asnumpy()
    return eager, graph


def test_seed000_example_in_graph_mode():
    n = get_group_size()

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.allgather = ops.AllGather()

        def construct(self, x):
            return self.allgather(x)
    ms.set_context(mode=ms.GRAPH_MODE)
    out = Net()(Tensor(np.ones([2, 8], np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), np.ones([2 * n, 8], np.float32))


def test_graph_allgather_equals_eager_equals_numpy():
    n, r = get_group_size(), get_rank()
    rng = np.random.default_rng(11)                      # the same on every rank
    w = rng.standard_normal((5, 3)).astype(np.float32)
    full_x = rng.standard_normal((2 * n, 3)).astype(np.float32)
    net = GatherNet(w)
    eager, graph = _both_modes(net, Tensor(full_x[2 * r:2 * r + 2]))
    np.testing.assert_array_equal(graph, eager)
    np.testing.assert_allclose(graph, full_x @ w.T, rtol=1e-5, atol=1e-6)
    graph_ir = net.compile(Tensor(full_x[:2]))
    assert [(node.op, node.shape) for node in graph_ir.nodes] == \
        [("MatMul", (2, 5)), ("AllGather", (2 * n, 5))]


def test_compiled_gather_reruns_with_new_values_and_parameters():
    n, r = get_group_size(), get_rank()
    ms.set_context(mode=ms.GRAPH_MODE)
    net = GatherNet(np.eye(3, dtype=np.float32))
    for step in range(3):
        x = np.full((1, 3), 10 * r + step, np.float32)
        out = net(Tensor(x)).asnumpy()
        expected = np.repeat(10 * np.arange(n, dtype=np.float32)[:, None] + step, 3, 1)
        np.testing.assert_array_equal(out, expected)
    net.dense.weight.set_data(2 * np.eye(3, dtype=np.float32))
    out = net(Tensor(np.full((1, 3), r, np.float32))).asnumpy()
    np.testing.assert_array_equal(out, np.repeat(2 * np.arange(n, dtype=np.float32)[:, None], 3, 1))
    assert net._compile_cache.traces == 1


class ScaledGather(nn.Cell):
    """A Parameter and a captured Tensor around the collective."""

    def __init__(self):
        super().__init__()
        self.scale = Parameter(Tensor(np.array([1.0, -2.0], np.float32)))
        self.shift = Tensor(np.array([0.5, 0.5], np.float32))
        self.allgather = ops.AllGather()

    def construct(self, x):
        return self.allgather(x * self.scale) + self.shift


def test_gather_between_elementwise_ops():
    n, r = get_group_size(), get_rank()
    x = np.array([[r, r + 1.0]], np.float32)
    eager, graph = _both_modes(ScaledGather(), Tensor(x))
    ranks = np.arange(n, dtype=np.float32)[:, None]
    expected = np.hstack([ranks, ranks + 1]) * [1.0, -2.0] + 0.5
    np.testing.assert_array_equal(graph, eager)
    np.testing.assert_array_equal(graph, expected)


def test_compiled_collectives_enter_and_leave_the_watchdog_even_when_one_raises():
    """The step enters the watchdog around each collective (inline, no wrapper) and leaves
    it after each, and also when a kernel raises: the rank is not left 'in' the call."""
    from msops.communication import watchdog

    class Chain(nn.Cell):
        def __init__(self):
            super().__init__()
            self.all_reduce, self.all_gather = ops.AllReduce(), ops.AllGather()

        def construct(self, v):
            return self.all_gather(self.all_reduce(v) * 0.5 + v)
    n, r = get_group_size(), get_rank()
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Chain()
    x = np.arange(4, dtype=np.float32) + r
    out = net(Tensor(x)).asnumpy()
    want = np.tile((np.arange(4) * n + n * (n - 1) / 2) * 0.5, n) + \
        np.repeat(np.arange(n), 4) + np.tile(np.arange(4), n)
    np.testing.assert_array_equal(out, want.astype(np.float32))
    recent = watchdog.recent()[-2:]
    assert recent[0].startswith("#") and "AllReduce (group 'world_group', x (4,) Float32)" \
        in recent[0] and "test_graph_allgather.py" in recent[0], recent
    assert "AllGather" in recent[1], recent
    assert not watchdog._s.n & 1                          # no call in progress
    executor = net._compile_cache._last_executor
    with pytest.raises(Exception) as info:               # on every rank alike: no hang
        executor.run([np.zeros(3, np.float32)])          # not the compiled shape
    step = [e for e in info.traceback if "<msops step" in str(e.path)]
    assert step and "# AllReduce [4] Float32" in str(step[-1].statement), info
    assert not watchdog._s.n & 1                 # left, though the kernel raised
    np.testing.assert_array_equal(net(Tensor(x)).asnumpy(), out)   # and runs on
