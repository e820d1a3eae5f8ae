"""ops.Assign: the in-place write of a Parameter, eagerly and compiled."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.graph.ir import GraphError

F32 = np.float32


def param(values, name="w"):
    return Parameter(Tensor(np.asarray(values, F32)), name=name)


class ReadWriteRead(nn.Cell):
    """y = w * x (old w); w <- w + x; return y + w (new w)."""

    def __init__(self):
        super().__init__()
        self.w = param([1.0, 2.0, 3.0])
        self.assign = ops.Assign()

    def construct(self, x):
        y = self.w * x
        self.assign(self.w, self.w + x)
        return y + self.w


def reference(w, x, steps):
    outs = []
    for _ in range(steps):
        y = w * x
        w = w + x
        outs.append(y + w)
    return outs, w


@pytest.fixture
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def test_eager_assign_writes_in_place_and_returns_the_value():
    p = param([0.0, 0.0])
    data = p.asnumpy()
    v = Tensor(np.array([1.5, -2.0], F32))
    out = ops.Assign()(p, v)
    assert out is v and p.asnumpy() is data           # the Parameter's own array, written
    np.testing.assert_array_equal(p.asnumpy(), [1.5, -2.0])
    assert p.version == 1


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_reads_after_the_write_see_the_new_value(mode, graph_mode):
    if mode == "pynative":
        ms.set_context(mode=ms.PYNATIVE_MODE)
    net = ReadWriteRead()
    x = np.array([0.5, 1.0, -1.0], F32)
    want, w = reference(np.array([1.0, 2.0, 3.0], F32), x, 3)
    for k in range(3):
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want[k], rtol=1e-6)
    np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-6)


def test_compiled_write_is_kept_and_never_aliases_the_parameter(graph_mode):
    class WriteOnly(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = param([1.0, 2.0])
            self.assign = ops.Assign()

        def construct(self, x):
            self.assign(self.w, x * 2.0)       # its value unused: kept as a side effect
            return x + 1.0

    net = WriteOnly()
    x = Tensor(np.array([3.0, 4.0], F32))
    out = net(x)
    np.testing.assert_array_equal(net.w.asnumpy(), [6.0, 8.0])
    np.testing.assert_array_equal(out.asnumpy(), [4.0, 5.0])
    first = net.w.asnumpy()
    net(Tensor(np.array([1.0, 1.0], F32)))
    assert net.w.asnumpy() is first                    # written in place, not rebound
    np.testing.assert_array_equal(first, [2.0, 2.0])
    np.testing.assert_array_equal(out.asnumpy(), [4.0, 5.0])   # what the user got stays


def test_a_returned_parameter_is_a_copy(graph_mode):
    class Returns(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = param([1.0, 2.0])
            self.assign = ops.Assign()

        def construct(self, x):
            return self.assign(self.w, x), self.w

    net = Returns()
    a, w = net(Tensor(np.array([5.0, 6.0], F32)))
    net(Tensor(np.array([7.0, 8.0], F32)))
    np.testing.assert_array_equal(w.asnumpy(), [5.0, 6.0])
    np.testing.assert_array_equal(a.asnumpy(), [5.0, 6.0])


def test_a_parameter_owns_its_array():
    init = np.array([1.0, 2.0], F32)
    p = Parameter(Tensor(init), name="p")
    ops.Assign()(p, Tensor(np.array([9.0, 9.0], F32)))
    np.testing.assert_array_equal(init, [1.0, 2.0])
    p.set_data(init)
    ops.Assign()(p, Tensor(np.array([7.0, 7.0], F32)))
    np.testing.assert_array_equal(init, [1.0, 2.0])


def test_errors_name_the_op_and_argument(graph_mode):
    p = param([1.0, 2.0])
    with pytest.raises(ValueError, match=r"For 'Assign', the 'value' shape should be the "
                                         r"'variable' shape: \[2\], but got \[3\]"):
        ops.Assign()(p, Tensor(np.ones(3, F32)))
    with pytest.raises(TypeError, match=r"For 'Assign', the 'value' dtype should be the "
                                        r"'variable' dtype: Float32, but got Float64"):
        ops.Assign()(p, Tensor(np.ones(2, np.float64)))
    with pytest.raises(TypeError, match=r"For 'Assign', the 'variable' should be a Parameter, "
                                        r"but got Tensor"):
        ops.Assign()(Tensor(np.ones(2, F32)), Tensor(np.ones(2, F32)))

    class StaleRead(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = param([1.0, 2.0])
            self.assign = ops.Assign()
            self.reshape = ops.Reshape()

        def construct(self, x):
            old = self.reshape(self.w, (2, 1))        # a view of w's memory
            self.assign(self.w, x)
            return old * 1.0                          # read after the write: refused

    with pytest.raises(GraphError, match=r"the Parameter 'w' is written in place .* a value "
                                         r"read from it before the write .* used after it"):
        StaleRead()(Tensor(np.ones(2, F32)))


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_no_gradient_flows_through_assign(mode, graph_mode):
    if mode == "pynative":
        ms.set_context(mode=ms.PYNATIVE_MODE)
    w = param([1.0, 2.0])
    assign = ops.Assign()

    def fn(x):
        assign(w, x * 3.0)                            # no gradient from the write
        return ops.ReduceSum()(x * x)

    g = ms.grad(fn)(Tensor(np.array([1.0, -2.0], F32)))
    np.testing.assert_allclose(g.asnumpy(), [2.0, -4.0])
    np.testing.assert_allclose(w.asnumpy(), [3.0, -6.0])
