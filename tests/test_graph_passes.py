"""The tracer's node kinds, dead-node elimination and the executor's releases and feeds."""
import weakref

import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import SimulationError
from msops.graph import Graph, GraphError
from msops.graph.dead_nodes import eliminate_dead_nodes
from msops.graph.executor import Executor
from msops.graph.tracer import trace
from msops.pipeline import compile_graph


def f32(*values):
    return np.array(values, np.float32)


class Mixed(nn.Cell):
    """A parameter used twice, a captured Tensor, a tuple input and a multi-output op."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(f32(1, 2, 3, 4)))
        self.offset = Tensor(f32(10, 20, 30, 40))
        self.addn = ops.AddN()
        self.split = ops.Split(axis=0, output_num=2)

    def construct(self, x, y):
        a = x * self.w
        b = y * self.w
        s = self.addn((a, b, self.offset))
        first, second = self.split(s)
        return second - first


def test_trace_node_kinds():
    x, y = Tensor(f32(1, 1, 1, 1)), Tensor(f32(0, 1, 0, 1))
    g = trace(Mixed().construct, [x, y], "Mixed")
    assert [n.name for n in g.inputs] == ["x", "y"]
    assert [n.name for n in g.parameters] == ["w"]             # once, though used twice
    assert [n.op for n in g.nodes] == ["Mul", "Mul", "MakeTuple", "AddN", "Split",
                                       "TupleGetItem", "TupleGetItem", "Sub"]
    tensor_consts = [c for c in g.consts if c.dtype is not None]
    assert len(tensor_consts) == 1 and tensor_consts[0].shape == (4,)
    np.testing.assert_array_equal(tensor_consts[0].value, [10, 20, 30, 40])
    split = g.nodes[4]
    assert split.shape == ((2,), (2,)) and split.dtype == (ms.float32, ms.float32)
    assert g.nodes[5].inputs[1].value == 0 and g.nodes[6].inputs[1].value == 1
    assert g.outputs == [g.nodes[7]] and not g.output_is_tuple


def test_trace_runs_like_numpy():
    x, y = f32(1, 2, 3, 4), f32(0, 1, 0, 1)
    net = Mixed()
    ms.set_context(mode=ms.GRAPH_MODE)
    s = x * [1, 2, 3, 4] + y * [1, 2, 3, 4] + [10, 20, 30, 40]
    np.testing.assert_array_equal(net(Tensor(x), Tensor(y)).asnumpy(), s[2:] - s[:2])


def test_python_scalar_takes_the_tensor_dtype():
    g = trace(lambda x: 2 - x * 0.5, [Tensor(np.ones(3, np.float16))])
    assert [n.op for n in g.nodes] == ["Mul", "Sub"]
    assert all(n.dtype == ms.float16 for n in g.nodes)
    scalar = [c for c in g.consts if c.dtype is not None]
    assert [(c.shape, c.dtype) for c in scalar] == [((), ms.float16), ((), ms.float16)]


def test_tensor_from_another_trace_is_rejected():
    kept = []

    def keep(x):
        kept.append(x)
        return x * 1.0
    trace(keep, [Tensor(f32(1))])
    with pytest.raises(GraphError, match="traced in another graph"):
        trace(lambda x: x + kept[0], [Tensor(f32(1))])


def test_dead_nodes_and_their_parameters_are_eliminated():
    class Dead(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(f32(1, 2)))
            self.unused = Parameter(Tensor(f32(5, 5)))

        def construct(self, x):
            _ = ops.Square()(x * self.unused)          # computed, never used
            return x + self.w
    g = trace(Dead().construct, [Tensor(f32(1, 1))])
    assert [n.op for n in g.nodes] == ["Mul", "Square", "Add"]
    eliminate_dead_nodes(g)
    assert [n.op for n in g.nodes] == ["Add"]
    assert [p.name for p in g.parameters] == ["w"]
    np.testing.assert_array_equal(Executor(g)([f32(3, 4)]).asnumpy(), [4, 6])


def test_side_effect_ops_survive_elimination():
    g = trace(lambda x: (ops.Square()(x), x)[1], [Tensor(f32(1))])
    g.nodes[0].prim.add_prim_attr("side_effect_mem", True)
    assert [n.op for n in eliminate_dead_nodes(g).nodes] == ["Square"]


def _graph_with_feeds():
    """out = x_fed + w_fed, built with the IR directly."""
    w = Parameter(Tensor(f32(1, 2, 3, 4)), name="w")
    g = Graph("fed")
    x = g.add_input((2,), ms.float32, "x")
    p = g.add_parameter(w, shape=(2,))
    g.outputs = [g.apply(ops.Add(), [x, p])]
    return g, x, p, w


def test_executor_feeds_inputs_and_parameters_hold_their_slice(sim):
    """Inputs are fed (sliced each call); a Parameter node laid out as a slice makes the
    Parameter hold only that slice, read directly each step (no per-step copy)."""
    from msops.parallel.layout import TensorLayout
    from msops.parallel import param_store  # noqa: F401  (installs the relayout hook)
    sim(2, 1)
    g, x, p, w = _graph_with_feeds()
    x.feed = lambda a: a[2:]                         # this rank's half of the input
    p.layout = TensorLayout((2,), (0,), (4,))        # rank 1 holds w[2:]
    ex = Executor(g)
    assert w.shape == (2,) and w._full_shape == (4,)
    np.testing.assert_array_equal(w.asnumpy(), [3, 4])
    held = w.asnumpy()
    np.testing.assert_array_equal(ex([f32(0, 0, 10, 20)]).asnumpy(), [13, 24])
    assert w.asnumpy() is held                       # read in place, nothing re-sliced
    w.set_data(f32(5, 6, 7, 8))                      # the whole shape: this rank's slice kept
    np.testing.assert_array_equal(w.asnumpy(), [7, 8])
    np.testing.assert_array_equal(ex([f32(0, 0, 1, 1)]).asnumpy(), [8, 9])
    w.set_data(f32(1, 2))                            # the slice's shape: taken as the slice
    np.testing.assert_array_equal(ex([f32(0, 0, 1, 1)]).asnumpy(), [2, 3])
    with pytest.raises(ValueError, match=r"For 'Parameter.set_data', the data of 'w' .* "
                                         r"should have the whole shape \[4\] or the slice "
                                         r"shape \[2\], but got \[3\]"):
        w.set_data(f32(1, 2, 3))


class _Doubled(ops.PrimitiveWithInfer):
    """x * 2 in a new array (not a `writes_output` op); `made` holds weak references to it."""

    made: list = []

    @ops.prim_attr_register
    def __init__(self):
        pass

    def infer_shape(self, x_shape):
        return x_shape

    def infer_dtype(self, x_dtype):
        return x_dtype

    def kernel(self, x):
        out = x * 2
        _Doubled.made.append(weakref.ref(out))
        return out


class _CountAlive(_Doubled):
    """x itself; records how many arrays _Doubled made are still alive."""

    alive: list = []

    def kernel(self, x):
        _CountAlive.alive.append(sum(r() is not None for r in _Doubled.made))
        return x


def test_executor_releases_intermediates_and_keeps_outputs():
    g = trace(lambda x: (_CountAlive()(ops.Square()(_Doubled()(x))), x * 3.0),
              [Tensor(f32(1, 2))])
    ex = Executor(g)
    sq, tripled = ex([f32(1, 2)])
    assert _CountAlive.alive == [0]                  # dropped after Square, its last reader
    np.testing.assert_array_equal(sq.asnumpy(), [4, 16])
    np.testing.assert_array_equal(tripled.asnumpy(), [3, 6])


def test_outputs_may_be_inputs_parameters_or_consts():
    w = Parameter(Tensor(f32(7)), name="w")
    c = Tensor(f32(9))
    g = trace(lambda x: (x, w, c), [Tensor(f32(1))])
    assert [n.kind for n in g.outputs] == ["input", "parameter", "const"]
    assert [o.asnumpy()[0] for o in Executor(g)([f32(3)])] == [3, 7, 9]


def test_non_tensor_output_is_rejected():
    with pytest.raises(GraphError, match=r"construct output 1 should be a Tensor.*got str"):
        trace(lambda x: (x, "label"), [Tensor(f32(1))], "Net")


def test_compile_in_simulation_then_running_needs_mpi(sim):
    sim(4, 1)

    class Gather(nn.Cell):
        def __init__(self):
            super().__init__()
            self.allgather = ops.AllGather()

        def construct(self, x):
            return self.allgather(x * 2.0)
    net = Gather()
    graph, ex = compile_graph(net, [Tensor(np.ones((2, 8), np.float32))])
    assert [(n.op, n.shape, n.is_communication) for n in graph.nodes] == \
        [("Mul", (2, 8), False), ("AllGather", (8, 8), True)]
    with pytest.raises(SimulationError):
        ex([np.ones((2, 8), np.float32)])


def test_astype_traces_a_cast_and_len_is_static():
    def fn(x):
        assert len(x) == 3
        return x.astype(ms.float16) * 2.0
    g = trace(fn, [Tensor(f32(1.5, 2.5, -1))])
    assert [(n.op, n.dtype) for n in g.nodes] == [("Cast", ms.float16), ("Mul", ms.float16)]
    out = Executor(g)([f32(1.5, 2.5, -1)]).asnumpy()
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, [3, 5, -2])


def test_schedule_early_moves_nodes_right_after_their_inputs():
    """Hoisted nodes land right after their last input (at the start when they read only
    leaves), keep their own order, and the step computes the same values."""
    from msops.graph.schedule import schedule_early
    from msops.primitives.math_ops import Exp, Neg

    g = Graph("hoist")
    x = g.add_input((3,), ms.float32)
    a = g.apply(Neg(), [x])
    b = g.apply(Exp(), [a])
    c = g.apply(Exp(), [b])
    d = g.apply(Neg(), [a])                  # reads a: belongs right after a
    e = g.apply(Exp(), [d])                  # reads d: right after d
    f = g.apply(Neg(), [x])                  # reads only the input: first
    g.outputs = [c, e, f]
    schedule_early(g, [d, e, f])
    assert [n.id for n in g.nodes] == [f.id, a.id, d.id, e.id, b.id, c.id]
    v = f32(0.5, -1, 2)
    got = Executor(g).run([v])
    np.testing.assert_allclose(got[0], np.exp(np.exp(-v)), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(v), rtol=1e-6)
    np.testing.assert_allclose(got[2], -v)
