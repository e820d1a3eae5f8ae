"""Communication fusion: the packings against numpy (the collective simulated with numpy
over n ranks' packed buffers), and the pass on simulated worlds: which collectives fuse,
in what order, and what keeps them apart. Real MPI: tests/ranks/test_parallel_optimizer.py."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.graph.fusion import fuse_communication
from msops.graph.ir import Graph
from msops.primitives import comm_ops
from msops.primitives.comm_fusion import (pack_block_major, pack_flat, unpack_flat,
                                          unpack_rank_major)
from msops.primitives.rules import reason_without, rule_of
from msops.primitives.state_ops import Assign


class _Value:
    def __init__(self, value):
        self.value = value
        self.shape = getattr(value, "shape", None)


class Eager:
    """A graph-shaped builder that runs each primitive at once (what the rules build with)."""

    def add_const(self, value):
        return _Value(value)

    def apply(self, prim, inputs):
        args = [i.value for i in inputs]
        out = prim(*args)
        return _Value(out.asnumpy() if isinstance(out, Tensor) else out)

    def make_tuple(self, nodes):
        return _Value(tuple(Tensor(n.value) for n in nodes))


SHAPES = [(2, 3), (1,), (3, 2, 2), (4,)]       # per-rank pieces of mixed ranks and sizes


def pieces(n, rows=1, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.standard_normal((s[0] * rows,) + s[1:]) * 10).astype(dtype) for s in SHAPES]
            for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16])
def test_allgather_packing_matches_numpy(n, dtype):
    """Each rank packs its pieces flat; the gathered buffer is the ranks' packs in rank
    order; piece i unpacks to the concatenation of every rank's piece i along dim 0."""
    g, xs = Eager(), pieces(n, dtype=dtype)
    packed = [pack_flat(g, [_Value(x) for x in mine]).value for mine in xs]
    assert all(p.shape == (sum(int(np.prod(s)) for s in SHAPES),) for p in packed)
    gathered = _Value(np.concatenate(packed))                   # MPI Allgather
    out = unpack_rank_major(g, gathered, n, [(n * s[0],) + s[1:] for s in SHAPES])
    for i, o in enumerate(out):
        np.testing.assert_array_equal(o.value, np.concatenate([xs[r][i] for r in range(n)]))
        assert o.value.dtype == dtype and o.value.flags.c_contiguous


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reduce_scatter_packing_matches_numpy(n, dtype):
    """Each rank packs its pieces (N*b_i, ...) block-major; the ReduceScatter of the packs
    leaves on rank r, piece by piece, block r of the summed pieces."""
    g, ys = Eager(), pieces(n, rows=n, dtype=dtype, seed=1)
    packed = [pack_block_major(g, [_Value(y) for y in mine], n).value for mine in ys]
    summed = np.sum(packed, axis=0, dtype=dtype)                # MPI Reduce_scatter_block
    for r, block in enumerate(np.split(summed, n)):
        out = unpack_flat(g, _Value(block), SHAPES)
        for i, o in enumerate(out):
            full = np.sum([ys[k][i] for k in range(n)], axis=0)
            b = SHAPES[i][0]
            np.testing.assert_array_equal(o.value, full[r * b:(r + 1) * b])
            assert o.value.dtype == dtype


def test_allreduce_packing_matches_numpy():
    g, xs = Eager(), pieces(3, seed=2)
    summed = np.sum([pack_flat(g, [_Value(x) for x in mine]).value for mine in xs], axis=0)
    for i, o in enumerate(unpack_flat(g, _Value(summed), SHAPES)):
        np.testing.assert_allclose(o.value, np.sum([xs[r][i] for r in range(3)], axis=0),
                                   rtol=1e-6)


def test_fusion_rules_sit_beside_the_collectives():
    assert rule_of("fusion", ops.AllGather) is comm_ops.allgather_fusion
    assert rule_of("fusion", ops._MiniStepAllGather) is comm_ops.allgather_fusion
    assert rule_of("fusion", ops._MicroStepAllGather) is comm_ops.allgather_fusion
    assert rule_of("fusion", ops.ReduceScatter) is comm_ops.reduce_scatter_fusion
    assert rule_of("fusion", ops.AllReduce) is comm_ops.allreduce_fusion
    for cls in (ops.Broadcast, ops.AlltoAll, ops.AllToAllV, ops.Send, ops.Barrier):
        assert rule_of("fusion", cls) is None and "do not fuse" in reason_without("fusion", cls)


# -- the pass, on simulated worlds ----------------------------------------------------------

def _gather(g, x, fusion=1, group="world_group"):
    return g.apply(ops.AllGather(group).add_prim_attr("fusion", fusion), [x])


def _comm(graph):
    return [n for n in graph.nodes if n.is_communication]


MB = 2 ** 20
LIMITS = {"allgather": 64 * MB, "reducescatter": 64 * MB, "allreduce": 64 * MB}


def test_independent_gathers_fuse_into_one_issued_where_their_inputs_complete(sim):
    sim(4, 1)
    g = Graph("g")
    x = g.add_input((2, 3), ms.float32)
    a = _gather(g, x)                                    # ready at the start
    y = g.apply(ops.Neg(), [x])
    b = _gather(g, g.apply(ops.Exp(), [y]))              # ready after Exp
    c = _gather(g, x, fusion=0)                          # fusion id 0: never fused
    d = _gather(g, g.add_input((5,), ms.float32))        # another shape: fuses too
    e = _gather(g, g.apply(ops.Cast(), [x, g.add_const(ms.float16)]))  # another dtype
    out = g.apply(ops.AddN(), [g.make_tuple([a, b, c])])
    g.outputs = [out, d, e]
    assert fuse_communication(g, LIMITS) == 2
    comm = _comm(g)
    assert [(n.op, n.shape, n.prim.fusion) for n in comm] == [
        ("AllGather", (4 * 2 * 3 + 4 * 2 * 3 + 4 * 5,), 1), ("AllGather", (8, 3), 0),
        ("AllGather", (8, 3), 1)]
    fused = comm[0]
    assert g.nodes.index(fused) > max(g.nodes.index(n) for n in g.nodes if n.op == "Exp")
    assert fused.comm_bytes == 3 * (6 + 6 + 5) * 4
    assert g.outputs[1].shape == (20,) and g.outputs[1].op == "Reshape"
    _check_topological(g)


def test_a_gather_of_a_gathered_value_is_not_in_the_same_bucket(sim):
    sim(4, 1)
    g = Graph("g")
    x = g.add_input((2, 3), ms.float32)
    a = _gather(g, x)
    b = _gather(g, g.apply(ops.Neg(), [a]))              # depends on a
    c = _gather(g, x)
    g.outputs = [b, c]
    assert fuse_communication(g, LIMITS) == 1            # a with c; b after them
    assert [n.shape for n in _comm(g)] == [(48,), (32, 3)]
    _check_topological(g)


def test_bucket_size_limits_and_kinds(sim):
    sim(4, 1)
    g = Graph("g")
    xs = [g.add_input((4, 4), ms.float32) for _ in range(5)]      # 64 bytes each
    g.outputs = [_gather(g, x) for x in xs]
    assert fuse_communication(g, dict(LIMITS, allgather=130)) == 2    # buckets 2 + 2 + 1
    assert [n.shape for n in _comm(g)] == [(128,), (128,), (16, 4)]
    g = Graph("g")
    xs = [g.add_input((4, 4), ms.float32) for _ in range(3)]
    g.outputs = [_gather(g, x) for x in xs]
    assert fuse_communication(g, {"reducescatter": MB}) == 0         # allgather not fused


def test_a_write_between_two_reads_keeps_them_apart(sim):
    """p read (gathered), then written in place, then read again: the second gather must
    see the write, so it cannot join the first one's bucket at the start."""
    sim(2, 0)
    g = Graph("g")
    p = g.add_parameter(ms.Parameter(Tensor(np.ones((2, 2), np.float32)), "p"))
    q = g.add_parameter(ms.Parameter(Tensor(np.ones((2, 2), np.float32)), "q"))
    a = _gather(g, p)
    w = g.apply(Assign(), [p, g.apply(ops.Neg(), [p])])
    b = _gather(g, p)                                    # reads the written data
    c = _gather(g, q)
    g.outputs = [a, b, c, w]
    assert fuse_communication(g, LIMITS) == 1
    order = [n.op for n in g.nodes]
    assert order.index("Assign") < max(k for k, n in enumerate(g.nodes) if n.op == "AllGather")
    gathers = _comm(g)
    assert gathers[0].shape == (16,)                     # a with c, issued first
    assert gathers[1].inputs[0] is p and g.nodes.index(gathers[1]) > order.index("Assign")
    _check_topological(g)


def _check_topological(g):
    seen = {n.id for n in g.inputs + g.parameters + g.consts}
    for n in g.nodes:
        assert all(i.id in seen for i in n.inputs), n
        seen.add(n.id)
    assert all(o.id in seen for o in g.outputs)


def test_parallel_optimizer_step_gathers_once_and_reduce_scatters_once(sim):
    """data_parallel on a simulated world of 4, Adam, every weight and bias opt-sharded:
    one fused AllGather issued before any compute, one fused ReduceScatter; a tiny
    comm_fusion size gives one collective a parameter again."""
    def step_graph(fusion=None):
        sim(4, 1)
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=4,
                                     enable_parallel_optimizer=True, comm_fusion=fusion,
                                     parallel_optimizer_config={"parallel_optimizer_threshold": 0})
        ms.set_context(mode=ms.GRAPH_MODE)
        try:
            ms.set_seed(0)
            net = nn.SequentialCell([nn.Dense(8, 16, activation="relu"), nn.Dense(16, 4)])
            step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                       nn.Adam(net.trainable_params(), learning_rate=0.01))
            x, y = Tensor(np.ones((2, 8), np.float32)), Tensor(np.ones((2, 4), np.float32))
            return step._compile_step(step, (x, y))[0]
        finally:
            ms.reset_auto_parallel_context()

    graph = step_graph()
    comm = _comm(graph)
    assert [n.op for n in comm if n.op != "AllReduce"] == ["AllGather", "ReduceScatter"]
    total = 8 * 16 + 16 + 16 * 4 + 4
    assert comm[0].shape == (total,) and comm[-1].shape == (total // 4,)
    first_compute = min(k for k, n in enumerate(graph.nodes) if n.op == "MatMul")
    assert graph.nodes.index(comm[0]) < first_compute
    tiny = {"allgather": {"mode": "size", "config": 1e-6},
            "reducescatter": {"mode": "size", "config": 1e-6}}
    ops_ = [n.op for n in _comm(step_graph(tiny)) if n.op != "AllReduce"]
    assert ops_.count("AllGather") == ops_.count("ReduceScatter") == 4
