"""A compiled Cell call like the last one runs as one generated function; anything that
could change what the call compiles to (the mode, train flags, the parallel context,
the inputs' shapes or dtypes, a trace, another thread) takes the general path, so every
value still equals numpy's."""
import threading

import numpy as np

import msops as ms
from msops import Parameter, Tensor, nn, ops

RNG = np.random.default_rng(11)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


class Affine(nn.Cell):
    """x @ w + b, then Dropout; counts how often its construct runs (traces and eager
    calls: a compiled call runs no Python of construct)."""

    def __init__(self, w, b, keep=1.0):
        super().__init__()
        self.w = Parameter(Tensor(w), name="w")
        self.b = Parameter(Tensor(b), name="b")
        self.matmul, self.add = ops.MatMul(), ops.Add()
        self.dropout = nn.Dropout(keep_prob=keep)
        self.constructs = 0

    def construct(self, x):
        self.constructs += 1
        return self.dropout(self.add(self.matmul(x, self.w), self.b))


def compiled_and_called_twice():
    """(w, b, x, net): an Affine net compiled for x and called twice (its generated call
    made), in GRAPH_MODE."""
    w, b, x = randn(4, 3), randn(3), randn(2, 4)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Affine(w, b)
    net(Tensor(x))
    net(Tensor(x))
    return w, b, x, net


def test_repeated_calls_equal_numpy_and_construct_runs_once():
    w, b, x = randn(4, 3), randn(3), randn(2, 4)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Affine(w, b)
    for _ in range(4):
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)
    assert net.constructs == 1                         # traced once, then compiled calls


def test_pynative_mode_runs_construct_and_graph_mode_resumes_the_compiled_call():
    w, b, x, net = compiled_and_called_twice()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)
    assert net.constructs == 2                         # eager: construct ran
    ms.set_context(mode=ms.GRAPH_MODE)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)
    assert net.constructs == 2                         # the compiled graph, not a new trace


def test_other_shapes_and_argument_kinds_take_the_general_path():
    w, b = randn(4, 3), randn(3)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Affine(w, b)
    for rows in (2, 5, 2):
        x = randn(rows, 4)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)
    x = randn(2, 4)
    got = net(Parameter(Tensor(x), name="p")).asnumpy()   # a Parameter argument
    np.testing.assert_allclose(got, x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)


def test_a_parameter_written_between_calls_is_read_by_the_next_call():
    w, b, x, net = compiled_and_called_twice()
    w2 = randn(4, 3)
    net.w.set_data(Tensor(w2))
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w2 + b, rtol=1e-6)


def test_set_train_switches_the_compiled_graph_both_ways():
    w, b, x = randn(4, 3), randn(3), randn(64, 4)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Affine(w, b, keep=0.5)
    want = x @ w + b
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want, rtol=1e-6)   # eval: identity
    net.set_train(True)
    got = net(Tensor(x)).asnumpy()
    dropped = got == 0
    assert 0.3 < dropped.mean() < 0.7                  # about half dropped, the rest x 2
    np.testing.assert_allclose(got[~dropped], 2 * want[~dropped], rtol=1e-5)
    net.set_train(False)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want, rtol=1e-6)


def test_a_cell_called_inside_another_cells_trace_is_traced_not_run():
    w, b, x = randn(4, 4), randn(4), randn(2, 4)
    ms.set_context(mode=ms.GRAPH_MODE)
    inner = Affine(w, b)
    inner(Tensor(x))
    inner(Tensor(x))                                   # its own compiled call, remembered

    class Outer(nn.Cell):
        def __init__(self):
            super().__init__()
            self.inner, self.relu = inner, ops.ReLU()

        def construct(self, v):
            return self.relu(self.inner(self.inner(v)))
    outer = Outer()
    want = np.maximum((x @ w + b) @ w + b, 0)
    np.testing.assert_allclose(outer(Tensor(x)).asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(outer(Tensor(x)).asnumpy(), want, rtol=1e-5)
    np.testing.assert_allclose(inner(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-6)


def test_threads_calling_one_compiled_cell_each_get_their_own_values():
    w, b = randn(64, 64), randn(64)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Affine(w, b)
    xs = [randn(32, 64) for _ in range(4)]
    net(Tensor(xs[0]))
    errors = []

    def work(x):
        try:
            for _ in range(200):
                np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w + b, rtol=1e-5)
        except AssertionError as err:           # reported by the main thread
            errors.append(err)
    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
