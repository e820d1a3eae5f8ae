"""The executor's planned buffers are invisible: values equal numpy and the eager (serial)
run step after step; what a step returns is new, never reused and freed once dropped; a
steady step allocates only what it returns."""
import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.graph.executor import Executor
from msops.graph.tracer import trace

RNG = np.random.default_rng(5)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def executor_of(net, *args):
    """An executor of `net`'s compiled graph for `args` (GRAPH_MODE from here on)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    return Executor(net.compile(*args))


class Deep(nn.Cell):
    """Twelve rounds of a matmul, element-wise ops, views (Reshape, Split) and copies
    (Concat, Transpose) over (8, 8) values: buffers are reused dozens of times a step."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(randn(8, 8) * 0.3), name="w")
        self.matmul, self.exp, self.square = ops.MatMul(), ops.Exp(), ops.Square()
        self.reshape, self.split, self.concat = ops.Reshape(), ops.Split(0, 2), ops.Concat(0)
        self.transpose = ops.Transpose()

    def construct(self, x):
        h = x
        for _ in range(12):
            a = self.exp(-self.square(self.matmul(h, self.w)))
            flat = self.reshape(a, (64,))
            top, bottom = self.split(self.reshape(flat * 0.5, (8, 8)))
            h = self.transpose(self.concat((bottom, top)) + h * 0.5, (1, 0))
        return h, flat


def deep_numpy(x, w):
    h = x
    for _ in range(12):
        flat = np.exp(-np.square(h @ w)).reshape(64)
        half = (flat * 0.5).reshape(8, 8)
        h = (np.concatenate((half[4:], half[:4])) + h * 0.5).T
    return h, flat


def test_reused_buffers_give_numpys_and_the_eager_values_step_after_step():
    net = Deep()
    ex = executor_of(net, Tensor(randn(8, 8)))
    assert len(ex.plan.nbytes) < sum(n.prim.writes_output for n in ex.graph.nodes) // 10
    for _ in range(3):
        x = randn(8, 8)
        graph = [t.asnumpy() for t in net(Tensor(x))]
        for got, want in zip(graph, deep_numpy(x, net.w.asnumpy())):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        ms.set_context(mode=ms.PYNATIVE_MODE)
        for got, want in zip(graph, net(Tensor(x))):
            np.testing.assert_array_equal(got, want.asnumpy())
        ms.set_context(mode=ms.GRAPH_MODE)


def test_consecutive_results_are_distinct_and_the_first_is_not_mutated():
    net = Deep()
    ms.set_context(mode=ms.GRAPH_MODE)
    x1, x2 = randn(8, 8), randn(8, 8)
    first = net(Tensor(x1))
    kept = [t.asnumpy().copy() for t in first]
    second = net(Tensor(x2))
    for a, b, k in zip(first, second, kept):
        assert not np.shares_memory(a.asnumpy(), b.asnumpy())
        np.testing.assert_array_equal(a.asnumpy(), k)
    np.testing.assert_allclose(second[0].asnumpy(), deep_numpy(x2, net.w.asnumpy())[0],
                               rtol=1e-5, atol=1e-6)


class Aliases(nn.Cell):
    """Outputs that are an input, views of an input and of op results, a Parameter, a const."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(randn(4, 6)), name="w")
        self.c = Tensor(randn(4, 6))
        self.reshape, self.identity, self.split = ops.Reshape(), ops.Identity(), ops.Split(0, 2)

    def construct(self, x):
        a = x * 2.0
        b = ops.Exp()(a) + self.w
        return (x, self.reshape(x, (24,)), self.identity(a), self.split(b)[1],
                self.reshape(b * 3.0, (6, 4)), self.w, self.c, self.reshape(self.c, (24,)))


def aliases_numpy(x, w, c):
    a = x * 2
    b = np.exp(a) + w
    return x, x.reshape(24), a, b[2:], (b * 3).reshape(6, 4), w, c, c.reshape(24)


def test_outputs_that_alias_inputs_views_parameters_and_consts():
    net = Aliases()
    w, c = net.w.asnumpy().copy(), net.c.asnumpy().copy()
    x1, x2 = randn(4, 6), randn(4, 6)
    ms.set_context(mode=ms.GRAPH_MODE)
    first = [t.asnumpy() for t in net(Tensor(x1))]
    kept = [a.copy() for a in first]
    assert np.shares_memory(first[0], x1) and np.shares_memory(first[1], x1)
    first[6][...] = 99                               # a returned const is the user's copy
    second = [t.asnumpy() for t in net(Tensor(x2))]
    for got, want in zip(second, aliases_numpy(x2, w, c)):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for got, want in zip(first[:6], kept[:6]):       # the first step's results are untouched
        np.testing.assert_array_equal(got, want)
    for i in (2, 3, 4):                              # op results: new memory each step
        assert not np.shares_memory(first[i], second[i])


def test_graph_inputs_and_parameter_data_are_never_written():
    net = Deep()
    x = randn(8, 8)
    w = net.w.asnumpy().copy()
    ex = executor_of(net, Tensor(x))
    saved = x.copy()
    for _ in range(3):
        ex.run([x])
    np.testing.assert_array_equal(x, saved)
    np.testing.assert_array_equal(net.w.asnumpy(), w)


def test_a_dropped_result_is_freed():
    net = Deep()
    ms.set_context(mode=ms.GRAPH_MODE)
    net(Tensor(randn(8, 8)))                         # the first step makes the buffers
    freed = []
    h, flat = net(Tensor(randn(8, 8)))
    weakref.finalize(h.asnumpy(), freed.append, "h")
    weakref.finalize(flat.asnumpy(), freed.append, "flat")
    del h, flat
    assert sorted(freed) == ["flat", "h"]


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_rss_returns_after_dropping_80_mib_results():
    rows, cols = 5120, 4096                          # 80 MiB of float32
    x, y = randn(rows, 1), randn(1, cols)
    g = trace(lambda a, b: ops.Exp()((a + b) * 0.5), [Tensor(x), Tensor(y)])
    ex = Executor(g)
    del ex.run([x, y])[0]                            # the first step makes the 80 MiB buffer
    gc.collect()
    base = _rss_mib()
    for _ in range(4):
        out = ex.run([x, y])[0]
        del out
    assert _rss_mib() < base + 40
    kept = [ex.run([x, y])[0] for _ in range(3)]
    assert _rss_mib() > base + 200                   # the results are real, new memory
    np.testing.assert_allclose(kept[0][:3, :5], np.exp((x[:3] + y[:, :5]) * 0.5), rtol=1e-6)
    del kept
    assert _rss_mib() < base + 40


class Writers(nn.Cell):
    """Only ops that write their output: MLP layers and element-wise ops over 1 MiB values."""

    def __init__(self):
        super().__init__()
        self.layers = nn.SequentialCell([nn.Dense(512, 512, activation="relu")
                                         for _ in range(3)])
        self.exp = ops.Exp()

    def construct(self, x, y):
        h = self.layers(x)
        return self.exp(-(h * y + x)) - y


def test_a_steady_step_allocates_only_what_it_returns():
    x, y = randn(512, 512), randn(512, 512)         # 1 MiB each
    net = Writers()
    ex = executor_of(net, Tensor(x), Tensor(y))
    assert all(n.prim.writes_output for n in ex.graph.nodes)
    ex.run([x, y])                                   # the first step makes the buffers
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = ex.run([x, y])[0]
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert out.nbytes <= peak < out.nbytes + (64 << 10)     # + a few Python objects
    h = x
    for d in net.layers.cells():
        h = np.maximum(h @ d.weight.asnumpy().T + d.bias.asnumpy(), 0)
    np.testing.assert_allclose(out, np.exp(-(h * y + x)) - y, rtol=1e-4, atol=1e-5)


class Half(nn.Cell):
    """float16 through every rounding path: MatMul, reductions, Softmax, AddN, Cast."""

    def __init__(self):
        super().__init__()
        self.matmul, self.softmax = ops.MatMul(transpose_b=True), ops.Softmax()
        self.sum, self.mean, self.addn = ops.ReduceSum(True), ops.ReduceMean(), ops.AddN()

    def construct(self, x, w):
        h = ops.ReLU()(self.matmul(x, w))
        p = self.softmax(h * 0.25)
        s = self.addn((p, h, self.sum(h, 1) * p))
        return s.astype(ms.float32) * 2.0, self.mean(h, 0)


def test_float16_graph_equals_eager_and_the_float32_reference():
    x, w = randn(16, 32, dtype=np.float16), randn(24, 32, dtype=np.float16)
    net = Half()
    ms.set_context(mode=ms.GRAPH_MODE)
    for _ in range(2):
        graph = [t.asnumpy() for t in net(Tensor(x), Tensor(w))]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager = [t.asnumpy() for t in net(Tensor(x), Tensor(w))]
    assert [a.dtype for a in graph] == [np.float32, np.float16]
    for got, want in zip(graph, eager):
        np.testing.assert_array_equal(got, want)
    h = np.maximum(x.astype(np.float32) @ w.astype(np.float32).T, 0).astype(np.float16)
    z = h.astype(np.float32) * 0.25
    p = np.exp(z - z.max(1, keepdims=True))
    p = (p / p.sum(1, keepdims=True)).astype(np.float16)
    q = h.astype(np.float32).sum(1, keepdims=True).astype(np.float16) * p
    s = p.astype(np.float32) + h + q
    np.testing.assert_allclose(graph[0], s.astype(np.float16).astype(np.float32) * 2,
                               rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(graph[1], h.astype(np.float32).mean(0), rtol=2e-3, atol=2e-3)


def test_a_step_begun_while_another_runs_writes_new_arrays():
    net = Deep()
    ex = executor_of(net, Tensor(randn(8, 8)))
    x1, x2 = randn(8, 8), randn(8, 8)
    ex.run([x1])
    with ex._lock:                                   # as if another thread were mid-step
        other = ex.run([x2])
    mine = ex.run([x1])
    w = net.w.asnumpy()
    for got, want in zip(other + mine, deep_numpy(x2, w) + deep_numpy(x1, w)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_threads_running_one_executor_get_their_own_values():
    net = Deep()
    ex = executor_of(net, Tensor(randn(8, 8)))
    xs = [randn(8, 8) for _ in range(4)]
    want = [deep_numpy(x, net.w.asnumpy())[0] for x in xs]
    errors = []

    def worker(i):
        for _ in range(50):
            got = ex.run([xs[i]])[0]
            if not np.allclose(got, want[i], rtol=1e-5, atol=1e-6):
                errors.append(i)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_an_error_in_a_kernel_names_its_op_in_the_traceback():
    g = trace(lambda a: ops.Exp()(a) + 1.0, [Tensor(randn(2, 3))])
    ex = Executor(g)
    with pytest.raises(ValueError) as info:
        ex.run([randn(3, 3)])                        # not the compiled shape
    assert any("# Exp [2, 3] Float32" in str(entry.statement) for entry in info.traceback)
