"""The buffer plan: lifetimes through views, reuse by byte size, in place, outputs fresh.

Every plan is also run, and its values checked against numpy.
"""
import numpy as np

from msops import Tensor, ops
from msops.graph.buffers import FRESH, plan_buffers
from msops.graph.executor import Executor
from msops.graph.tracer import trace

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def traced(fn, *arrays):
    """(graph, {op name: [node ids in order]}, executor) of `fn` traced on `arrays`."""
    g = trace(fn, [Tensor(a) for a in arrays])
    ids = {}
    for n in g.nodes:
        ids.setdefault(n.op, []).append(n.id)
    return g, ids, Executor(g)


def test_an_element_wise_chain_runs_in_one_buffer():
    exp, square = ops.Exp(), ops.Square()
    x, y = randn(4, 8), randn(8)
    g, ids, ex = traced(lambda a, b: square(-exp(a + b) * b), x, y)
    plan = plan_buffers(g)
    assert [plan.buffer_of[i] for i in ids["Add"] + ids["Exp"] + ids["Neg"] + ids["Mul"]] == \
        [0, 0, 0, 0]
    assert plan.buffer_of[ids["Square"][0]] == FRESH and plan.nbytes == (4 * 8 * 4,)
    np.testing.assert_allclose(ex.run([x, y])[0], np.square(-np.exp(x + y) * y), rtol=1e-6)


def test_matmul_never_writes_over_its_input_and_a_freed_buffer_serves_a_later_node():
    w = randn(8, 8)
    x = randn(4, 8)
    g, ids, ex = traced(lambda a, b: ((a + 1.0) @ b) @ b, x, w)
    plan = plan_buffers(g)
    add, mm1, mm2 = ids["Add"][0], ids["MatMul"][0], ids["MatMul"][1]
    assert plan.buffer_of[mm1] != plan.buffer_of[add]
    assert plan.buffer_of[mm2] == FRESH and len(plan.nbytes) == 2
    np.testing.assert_allclose(ex.run([x, w])[0], ((x + 1) @ w) @ w, rtol=1e-5)


def test_buffers_are_shared_by_byte_size_across_shapes():
    transpose = ops.Transpose()
    x = randn(4, 8)

    def fn(a):
        t = transpose(a * 2.0, (1, 0))              # (8, 4): a*2 dies here
        return transpose(ops.Exp()(t), (1, 0)) + 1.0
    g, ids, ex = traced(fn, x)
    plan = plan_buffers(g)
    first, second = ids["Transpose"]
    assert plan.buffer_of[second] == plan.buffer_of[ids["Mul"][0]]   # (8, 4) then (4, 8)
    assert plan.buffer_of[first] != plan.buffer_of[second] and len(plan.nbytes) == 2
    np.testing.assert_allclose(ex.run([x])[0], np.exp((x * 2).T).T + 1, rtol=1e-6)


def test_a_live_view_keeps_its_buffer_busy():
    reshape = ops.Reshape()
    x, y = randn(4, 8), randn(8, 4)

    def fn(a, b):
        v = reshape(a * 2.0, (8, 4))                # a view of the Mul's buffer
        c = b * 3.0                                 # same bytes, while v is still to be read
        return c + v
    g, ids, ex = traced(fn, x, y)
    plan = plan_buffers(g)
    first, second = ids["Mul"]
    assert plan.buffer_of[first] != plan.buffer_of[second]
    for _ in range(2):
        np.testing.assert_allclose(ex.run([x, y])[0], y * 3 + (x * 2).reshape(8, 4), rtol=1e-6)


def test_memory_an_output_may_alias_is_fresh():
    split, reshape = ops.Split(0, 2), ops.Reshape()
    x = randn(4, 8)

    def fn(a):
        parts = split(a * 2.0)                      # contiguous halves: views of the Mul
        return reshape(parts[1], (16,)), ops.Exp()(a) + 1.0
    g, ids, ex = traced(fn, x)
    plan = plan_buffers(g)
    assert plan.buffer_of[ids["Mul"][0]] == FRESH
    assert plan.buffer_of[ids["Exp"][0]] != FRESH and plan.buffer_of[ids["Add"][0]] == FRESH
    half, top = ex.run([x])
    np.testing.assert_allclose(half, (x * 2)[2:].ravel(), rtol=1e-6)
    np.testing.assert_allclose(top, np.exp(x) + 1, rtol=1e-6)


def test_a_writer_nobody_reads_frees_its_buffer_at_once():
    x = randn(3, 3)
    g, ids, ex = traced(lambda a: a, x)
    unused = g.apply(ops.Exp(), [g.inputs[0]])      # (dead-node elimination would drop it)
    used = g.apply(ops.Neg(), [g.inputs[0]])
    g.outputs = [g.apply(ops.Square(), [used])]
    plan = plan_buffers(g)
    assert plan.buffer_of[unused.id] == plan.buffer_of[used.id] == 0
    np.testing.assert_allclose(Executor(g).run([x])[0], np.square(-x), rtol=1e-6)
