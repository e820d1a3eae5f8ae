"""Dry runs of the parallel pass on simulated worlds: layouts, local shapes, collectives, errors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import SimulationError
from nets import ReduceNet, ReshapeNet


@pytest.fixture
def semi(sim):
    """A simulated semi-auto-parallel world: semi(N, rank)."""
    def make(n, rank=0, **kw):
        sim(n, rank)
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=n,
                                     full_batch=True, **kw)
        ms.set_context(mode=ms.GRAPH_MODE)
    yield make
    ms.reset_auto_parallel_context()


class Submodel(nn.Cell):
    def __init__(self, n, rows=64, cols=16):
        super().__init__()
        self.bn = nn.BatchNorm1d(rows)
        self.bn.shard(((n, 1),))
        self.matmul = ops.MatMul().shard(((1, 1), (1, n)))
        self.W = Parameter(Tensor(np.ones((rows, cols * n), np.float32)), name="w")

    def construct(self, x):
        return self.matmul(self.bn(x), self.W)


def comm(graph):
    return [(n.op, n.prim.rank_size, n.comm_bytes) for n in graph.nodes if n.is_communication]


@pytest.mark.parametrize("n", [4, 64, 4096])
def test_seed001_dry_run_any_world(semi, n):
    semi(n, rank=n - 1)
    batch = 2 * n
    graph = Submodel(n).compile(Tensor(np.ones((batch, 64), np.float32)))
    assert [x.op for x in graph.nodes] == ["BatchNorm", "TupleGetItem", "AllGather", "MatMul"]
    assert graph.inputs[0].shape == (2, 64)                 # this rank's rows
    assert graph.nodes[2].shape == (batch, 64)              # gathered
    assert graph.nodes[3].shape == (batch, 16)              # this rank's weight columns
    # one AllGather over all ranks; each sends its (2, 64) float32 slice to n - 1 peers
    assert comm(graph) == [("AllGather", n, (n - 1) * 2 * 64 * 4)]
    text = graph.dump()
    assert "AllGather" in text and f"bytes={(n - 1) * 512}" in text


def test_running_a_simulated_graph_raises(semi):
    semi(4, rank=1)
    with pytest.raises(SimulationError, match=r"For 'AllGather', data cannot move in a "
                                              r"simulated world"):
        Submodel(4)(Tensor(np.ones((8, 64), np.float32)))


class MatMulNet(nn.Cell):
    def __init__(self, strategy, a=(16, 32), b=(32, 64)):
        super().__init__()
        self.mm = ops.MatMul().shard(strategy)
        self.w = Parameter(Tensor(np.ones(b, np.float32)), name="w")
        self.shape = a

    def construct(self, x):
        return self.mm(x, self.w)


def test_full_use_of_64_devices(semi):
    semi(64, rank=13)
    graph = MatMulNet(((2, 4), (4, 8))).compile(Tensor(np.ones((16, 32), np.float32)))
    mm = [x for x in graph.nodes if x.op == "MatMul"][0]
    assert mm.layout.device_matrix == (2, 4, 8)
    assert mm.inputs[0].shape == (8, 8) and mm.inputs[1].shape == (8, 8)
    # the split reduction dim (4 ways) is summed by an AllReduce over 4 ranks
    assert comm(graph) == [("AllReduce", 4, 2 * 3 * (8 * 8 * 4) // 4)]


def test_repeated_calculation_on_64_devices(semi):
    semi(64, rank=13)
    graph = MatMulNet(((2, 4), (4, 1))).compile(Tensor(np.ones((16, 32), np.float32)))
    mm = [x for x in graph.nodes if x.op == "MatMul"][0]
    # 8 devices do the work; the repeat axis (8) is appended on the right
    assert mm.layout.device_matrix == (2, 4, 8)
    assert mm.layout.tensor_map == (2, -1)
    assert mm.shape == (8, 64)
    ar = [x for x in graph.nodes if x.op == "AllReduce"][0]
    assert ar.prim.rank_size == 4
    # rank 13 = coords (0, 1, 5): its reduction group varies the middle axis only
    from msops.communication import get_group
    assert get_group(ar.prim.group).ranks == (5, 13, 21, 29)


@pytest.mark.parametrize("strategy,match", [
    (((2, 4), (2, 8)), r"For 'MatMul', the strategies of input 0 dim 1 and input 1 dim 0 "
                       r"should agree on the shared reduction dim 'k', but got 4 and 2"),
    (((3, 1), (1, 1)), r"For 'MatMul', input 0 dim 0 of size 16 \(shape \(16, 32\)\) should "
                       r"be divisible by its strategy value 3"),
    (((8, 8), (8, 8)), r"needs 512 devices, but the stage has only 64"),
    (((2, 1),), r"should have one entry per tensor input \(2\), but got 1"),
    (((2, 1, 1), (1, 1)), r"the strategy of input 0 should have length 2"),
    (((0, 1), (1, 1)), r"every strategy value should be >= 1"),
])
def test_invalid_strategy_names_op_and_user_line(semi, strategy, match):
    semi(64, rank=0)
    with pytest.raises(ValueError, match=match) as err:
        MatMulNet(strategy).compile(Tensor(np.ones((16, 32), np.float32)))
    assert "test_parallel_plan.py" in str(err.value)       # the user's construct line


def test_softmax_axis_split_rejected_at_compile(semi):
    semi(4)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.sm = ops.Softmax().shard(((1, 4),))

        def construct(self, x):
            return self.sm(x)

    with pytest.raises(ValueError, match=r"For 'Softmax', input 0 dim 1 cannot be split"):
        Net().compile(Tensor(np.ones((8, 8), np.float32)))


def test_explicit_collective_in_parallel_graph_is_rejected(semi):
    semi(4)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.ag = ops.AllGather()

        def construct(self, x):
            return self.ag(x)

    with pytest.raises(ValueError, match=r"For 'AllGather', explicit communication ops "
                                         r"cannot be used inside a parallel graph"):
        Net().compile(Tensor(np.ones((8, 8), np.float32)))


def test_device_num_must_match_world(sim):
    sim(8, 0)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=4)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=r"'device_num' should equal the world size 8"):
            MatMulNet(((2, 1), (1, 1))).compile(Tensor(np.ones((16, 32), np.float32)))
    finally:
        ms.reset_auto_parallel_context()


def test_parameters_hold_only_their_slice_after_compile(semi):
    semi(4, rank=2)
    net = MatMulNet(((1, 1), (1, 4)))
    whole = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    net.w.set_data(whole)
    graph = net.compile(Tensor(np.ones((16, 32), np.float32)))
    w = graph.parameters[0]
    assert w.feed is None and w.value is net.w and w.shape == (32, 16)
    assert net.w.shape == (32, 16) and net.w._full_shape == (32, 64)   # as MindSpore
    np.testing.assert_array_equal(net.w.asnumpy(), whole[:, 32:48])
    assert net.w.asnumpy().flags.c_contiguous and net.w.asnumpy().base is None
    assert net.parameter_layout_dict["w"].slice_shape == [32, 16]
    # the same compile again (a new signature) traces the whole shape and moves nothing
    held = net.w.asnumpy()
    net.compile(Tensor(np.ones((8, 32), np.float32)))
    assert net.w.asnumpy() is held


def test_chain_planning_shows_alltoall_between_device_matrices(semi):
    semi(8, rank=5)

    class Chain(nn.Cell):
        def __init__(self):
            super().__init__()
            self.m1 = ops.MatMul().shard(((4, 2), (2, 1)))
            self.m2 = ops.MatMul().shard(((2, 4), (4, 1)))
            self.w1 = Parameter(Tensor(np.ones((32, 16), np.float32)), name="w1")
            self.w2 = Parameter(Tensor(np.ones((16, 8), np.float32)), name="w2")

        def construct(self, x):
            return self.m2(self.m1(x, self.w1), self.w2)

    graph = Chain().compile(Tensor(np.ones((16, 32), np.float32)))
    ops_ = [n.op for n in graph.nodes if n.is_communication]
    # m1's partial sum, then (4,2)->(2,4) rows-to-columns: all-to-all, no gather; m2's sum
    assert ops_ == ["AllReduce", "AlltoAll", "AllReduce"]


class TestContext:
    def test_set_get_reset(self):
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=8,
                                     gradients_mean=True, full_batch=True)
        assert ms.get_auto_parallel_context("parallel_mode") == "data_parallel"
        assert ms.get_auto_parallel_context("device_num") == 8
        assert ms.get_auto_parallel_context("gradients_mean") is True
        ms.reset_auto_parallel_context()
        assert ms.get_auto_parallel_context("parallel_mode") == "stand_alone"
        assert ms.get_auto_parallel_context("full_batch") is False

    @pytest.mark.parametrize("kw,err,match", [
        ({"parallel_mode": "model_parallel"}, ValueError, r"the 'parallel_mode' should be one "
                                                          r"of \['stand_alone'"),
        ({"device_num": 0}, ValueError, r"the 'device_num' should be in \[1, 4096\], but got 0"),
        ({"device_num": 4097}, ValueError, r"but got 4097"),
        ({"global_rank": -1}, ValueError, r"the 'global_rank' should be in \[0, 4095\]"),
        ({"full_batch": 1}, TypeError, r"the type of 'full_batch' should be bool"),
        ({"pipeline": 2}, ValueError, r"the key should be one of"),
    ])
    def test_validation(self, kw, err, match):
        with pytest.raises(err, match=match):
            ms.set_auto_parallel_context(**kw)
        ms.reset_auto_parallel_context()

    def test_search_mode_validation(self):
        with pytest.raises(ValueError, match=r"the 'search_mode' should be one of "
                                             r"\['recursive_programming', 'sharding_propaga"):
            ms.set_auto_parallel_context(search_mode="greedy")
        assert ms.get_auto_parallel_context("search_mode") == "recursive_programming"


def test_leaves_returned_as_outputs(semi):
    semi(4, rank=1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mm = ops.MatMul().shard(((1, 1), (1, 4)))
            self.w = Parameter(Tensor(np.ones((32, 8), np.float32)), name="w")
            self.b = Parameter(Tensor(np.ones((3,), np.float32)), name="b")

        def construct(self, x):
            return x, self.mm(x, self.w), self.b

    graph = Net().compile(Tensor(np.ones((16, 32), np.float32)))
    x_out, mm_out, b_out = graph.outputs
    assert x_out.kind == "input" and x_out.shape == (16, 32)       # bound replicated by mm
    assert mm_out.shape == (16, 2)
    assert b_out.kind == "parameter" and b_out.shape == (3,)


class OutStrategyNet(nn.Cell):
    def __init__(self, strategy, out_strategy, rows=16, transpose_a=False):
        super().__init__()
        self.mm = ops.MatMul(transpose_a=transpose_a).shard(strategy, out_strategy)
        self.w = Parameter(Tensor(np.ones((32, 16), np.float32)), name="w")
        self.rows = rows

    def construct(self, x):
        return self.mm(x, self.w)


def comm_groups(graph):
    """(op, reduce op, group ranks, bytes) of every collective, in execution order."""
    from msops.communication import get_group
    return [(n.op, getattr(n.prim, "op", None), get_group(n.prim.group).ranks, n.comm_bytes)
            for n in graph.nodes if n.is_communication]


# ((2, 2), (2, 2)) on 8 ranks: dm (2, 2, 2), rank 5 = coords (1, 0, 1). The device axes
# follow the letters' first appearance: m, k, n (x1 is (m, k)), or k, m, n (x1 is (k, m)).
TRANSPOSES = [(False, (5, 7), 2, (8, 12)),   # (transpose_a, k's group, m's axis, rows)
              (True, (1, 5), 1, (4, 8))]


@pytest.mark.parametrize("transpose_a,group,m_axis,rows", TRANSPOSES)
def test_matmul_out_strategy_plain_form_all_reduces(semi, transpose_a, group, m_axis, rows):
    semi(8, rank=5)
    x = np.ones((32, 16) if transpose_a else (16, 32), np.float32)
    graph = OutStrategyNet(((2, 2), (2, 2)), ((2, 2),), transpose_a=transpose_a).compile(
        Tensor(x))
    partial = 8 * 8 * 4                       # this rank's (8, 8) float32 partial product
    assert [n.op for n in graph.nodes] == ["MatMul", "AllReduce"]
    assert comm_groups(graph) == [("AllReduce", "sum", group, 2 * 1 * partial // 2)]
    out = graph.outputs[0]
    assert out.shape == (8, 8) and out.layout.tensor_map == (m_axis, 0)


@pytest.mark.parametrize("transpose_a,group,m_axis,rows", TRANSPOSES)
def test_matmul_out_strategy_rows_by_reduction_reduce_scatters(semi, transpose_a, group, m_axis,
                                                               rows):
    semi(8, rank=5)
    x = np.ones((32, 16) if transpose_a else (16, 32), np.float32)
    graph = OutStrategyNet(((2, 2), (2, 2)), ((4, 2),), transpose_a=transpose_a).compile(
        Tensor(x))
    partial = 8 * 8 * 4
    assert [n.op for n in graph.nodes] == ["MatMul", "ReduceScatter"]
    assert comm_groups(graph) == [("ReduceScatter", "sum", group, 1 * partial // 2)]
    out = graph.outputs[0]
    # rows split by a, then by b (minor): rank 5 holds row block 2*a_coord + b_coord of 4
    assert out.shape == (4, 8) and out.layout.tensor_map == ((m_axis, 3 - m_axis), 0)
    assert out.layout.slice_of(5) == (slice(*rows), slice(8, 16))


def test_matmul_out_strategy_with_a_repeat_axis(semi):
    semi(8, rank=6)         # ((2, 2), (2, 1)) uses 4 devices: dm (2, 2, 2), the repeat on the right
    graph = OutStrategyNet(((2, 2), (2, 1)), ((4, 1),)).compile(Tensor(np.ones((16, 32),
                                                                                np.float32)))
    # rank 6 = coords (1, 1, 0): its reduction group varies the middle axis
    assert comm_groups(graph) == [("ReduceScatter", "sum", (4, 6), 8 * 16 * 4 // 2)]
    assert graph.outputs[0].shape == (4, 16)


@pytest.mark.parametrize("strategy,out_strategy,rows,match", [
    (((2, 2), (2, 2)), ((4, 1),), 16,
     r"For 'MatMul', the 'out_strategy' should be \(\(2, 2\),\) \(the partial sums "
     r"AllReduced\) or \(\(4, 2\),\) \(rows split by the reduction too: ReduceScatter\) for "
     r"the in_strategy \(\(2, 2\), \(2, 2\)\), but got \(\(4, 1\),\)"),
    (((2, 2), (2, 2)), ((8, 2),), 16, r"but got \(\(8, 2\),\)"),
    (((2, 2), (2, 2)), ((2, 2), (1, 1)), 16, r"but got \(\(2, 2\), \(1, 1\)\)"),
    (((2, 2), (2, 2)), ((2, 2, 1),), 16, r"but got \(\(2, 2, 1\),\)"),
    (((2, 1), (1, 2)), ((2, 2), ), 16, None),                        # b = 1: plain is fine
    (((2, 1), (1, 2)), ((4, 2),), 16,
     r"the 'out_strategy' should be \(\(2, 2\),\) \(the partial sums AllReduced\) for the "
     r"in_strategy \(\(2, 1\), \(1, 2\)\), but got \(\(4, 2\),\)"),
    (((2, 2), (2, 2)), ((4, 2),), 6,
     r"the 'out_strategy' \(\(4, 2\),\) splits the 6 output rows 4 ways, which should divide "
     r"them"),
])
def test_bad_matmul_out_strategies(semi, strategy, out_strategy, rows, match):
    semi(8)
    net = OutStrategyNet(strategy, out_strategy)
    x = Tensor(np.ones((rows, 32), np.float32))
    if match is None:
        assert comm_groups(net.compile(x)) == []
        return
    with pytest.raises(ValueError, match=match) as err:
        net.compile(x)
    assert "test_parallel_plan.py" in str(err.value)       # the user's construct line


def test_out_strategy_of_an_op_without_out_strategy_rule(semi):
    semi(4)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.relu = ops.ReLU().shard(((2, 1),), ((2, 1),))

        def construct(self, x):
            return self.relu(x)

    with pytest.raises(ValueError, match=r"For 'ReLU', the 'out_strategy' should be None \(the "
                                         r"op has no out-strategy rule\), but got \(\(2, 1\),\)"):
        Net().compile(Tensor(np.ones((8, 8), np.float32)))


@pytest.mark.parametrize("prim,nodes,op", [
    (ops.ReduceSum(), ["ReduceSum", "AllReduce"], "sum"),
    (ops.ReduceMax(), ["ReduceMax", "AllReduce"], "max"),
    (ops.ReduceMean(), ["ReduceMean", "AllReduce", "Mul"], "sum"),       # then times 1/4
])
def test_reduction_over_a_split_axis_combines_partials(semi, prim, nodes, op):
    semi(4, rank=1)
    graph = ReduceNet(prim, ((1, 4),), 1).compile(Tensor(np.ones((8, 16), np.float32)))
    assert [n.op for n in graph.nodes] == nodes
    assert comm_groups(graph) == [("AllReduce", op, (0, 1, 2, 3), 2 * 3 * (8 * 4) // 4)]
    if prim.name == "ReduceMean":
        assert graph.nodes[-1].inputs[1].value == np.float32(0.25)
    assert graph.outputs[0].shape == (8,) and graph.outputs[0].layout.tensor_map == (-1,)


def test_reduction_over_two_split_axes_scales_the_mean_by_both(semi):
    semi(8, rank=3)
    graph = ReduceNet(ops.ReduceMean(keep_dims=True), ((2, 4),), (0, 1)).compile(
        Tensor(np.ones((8, 16), np.float32)))
    assert comm_groups(graph) == [("AllReduce", "sum", tuple(range(8)), 2 * 7 * 4 // 8)]
    assert graph.nodes[-1].op == "Mul" and graph.nodes[-1].inputs[1].value == np.float32(1 / 8)


def test_reduction_of_a_whole_axis_needs_no_communication(semi):
    semi(4, rank=1)
    graph = ReduceNet(ops.ReduceSum(), ((4, 1),), 1).compile(Tensor(np.ones((8, 16), np.float32)))
    assert [n.op for n in graph.nodes] == ["ReduceSum"]
    assert graph.outputs[0].shape == (2,) and graph.outputs[0].layout.tensor_map == (0,)


def test_softmax_cross_entropy_split_classes_reduces_across_them(semi):
    semi(4, rank=2)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.ce = ops.SoftmaxCrossEntropyWithLogits().shard(((1, 4), (1, 4)))

        def construct(self, x, labels):
            return self.ce(x, labels)

    x = Tensor(np.ones((8, 16), np.float32))
    graph = Net().compile(x, x)
    row = 8 * 4                                   # an (8,) or (8, 1) float32 per rank
    assert comm_groups(graph) == [("AllReduce", "max", (0, 1, 2, 3), 2 * 3 * row // 4),
                                  ("AllReduce", "sum", (0, 1, 2, 3), 2 * 3 * row // 4),
                                  ("AllReduce", "sum", (0, 1, 2, 3), 2 * 3 * row // 4)]
    loss, dlogits = graph.outputs[0], graph.outputs[1]
    assert loss.shape == (8,) and dlogits.shape == (8, 4)


def test_batchnorm_training_split_batch_uses_global_statistics(semi):
    semi(4, rank=0)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(16)
            self.bn.shard(((4, 1),))

        def construct(self, x):
            return self.bn(x)

    net = Net()
    net.set_train()
    graph = net.compile(Tensor(np.ones((8, 16), np.float32)))
    stats = 16 * 4                                # the (16,) float32 sums, one per channel
    assert comm_groups(graph) == [("AllReduce", "sum", (0, 1, 2, 3), 2 * 3 * stats // 4)] * 2
    assert graph.outputs[0].shape == (2, 16)


@pytest.mark.parametrize("strategy", [((4, 1),), None])        # None: the data-parallel default
def test_reshape_keeping_dim0_keeps_its_split(semi, strategy):
    semi(4, rank=2)
    graph = ReshapeNet((8, 3, 2), strategy).compile(Tensor(np.ones((8, 6), np.float32)))
    reshape = graph.nodes[-1]
    assert [n.op for n in graph.nodes] == ["Reshape"]
    assert reshape.inputs[1].value == (2, 3, 2) and reshape.shape == (2, 3, 2)
    assert reshape.layout.tensor_map == (0, -1, -1)


@pytest.mark.parametrize("x_shape,shape,strategy,local,tensor_map", [
    # attention's heads: (B*S, 3d) -> (B, S, H, 3dh), rows over 2 ranks and columns over 2
    ((16, 12), (4, 4, 2, 6), ((2, 2),), (2, 4, 1, 6), (1, -1, 0, -1)),
    # and back: (B, S, H, dh) -> (B*S, d)
    ((4, 4, 2, 6), (16, 12), ((2, 1, 2, 1),), (8, 6), (1, 0)),
])
def test_reshape_keeps_the_split_of_each_blocks_leading_dim(semi, x_shape, shape, strategy,
                                                            local, tensor_map):
    """A Megatron attention's head reshapes run locally (no collective), keeping the row and
    head splits (values: examples/transformer.py == serial, tests/test_examples.py)."""
    semi(4, rank=3)
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape)
    graph = ReshapeNet(shape, strategy).compile(Tensor(x))
    assert [n.op for n in graph.nodes] == ["Reshape"]
    assert graph.nodes[-1].shape == local and graph.nodes[-1].layout.tensor_map == tensor_map


@pytest.mark.parametrize("x_shape,shape", [((8, 6), (6, 8)), ((16, 8), (2, 64))])
def test_reshape_changing_dim0_runs_replicated(semi, x_shape, shape):
    """The data-parallel default splits dim 0 only when the split divides the output's too."""
    semi(4, rank=2)
    graph = ReshapeNet(shape).compile(Tensor(np.ones(x_shape, np.float32)))
    assert [n.op for n in graph.nodes] == ["Reshape"] and graph.nodes[0].shape == shape


@pytest.mark.parametrize("shape,strategy,match", [
    ((6, 8), ((4, 1),), r"For 'Reshape', input 0 dim 0 cannot be split \(Reshape \(8, 6\) -> "
                        r"\(6, 8\) splits only the leading dim of each block of merged or split dims\), "
                        r"but the "
                        r"strategy gives it 4"),
    # 6 -> (3, 2): a split of 6 by 2 keeps its block's leading dim 3, which 2 cannot divide
    ((8, 3, 2), ((1, 2),), r"For 'Reshape', output 0 dim 1 of size 3 \(shape \(8, 3, 2\)\) "
                           r"should be divisible by the split 2"),
])
def test_reshape_strategy_errors(semi, shape, strategy, match):
    semi(4)
    with pytest.raises(ValueError, match=match):
        ReshapeNet(shape, strategy).compile(Tensor(np.ones((8, 6), np.float32)))


@pytest.mark.parametrize("begin,end,masks,np_index", [
    ((0, 0), (16, 8), {}, np.s_[:, 0:8]),             # both dims whole: dim 0 may stay split
    ((-16, 2), (16, 6), {}, np.s_[:, 2:6]),           # dim 0 whole via a negative begin
    ((0, 0), (8, 8), {}, None),                       # dim 0 cut
    ((3, 0), (4, 8), {"shrink_axis_mask": 1}, None),  # dim 0 shrunk
    ((0, 0), (0, 8), {"begin_mask": 1, "end_mask": 1}, np.s_[:, 0:8]),
])
def test_strided_slice_keeps_only_whole_dims_split(semi, begin, end, masks, np_index):
    semi(4, rank=3)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.ss = ops.StridedSlice(**masks).shard(((4, 1),))

        def construct(self, x):
            return self.ss(x, begin, end, (1, 1))

    x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    if np_index is None:
        with pytest.raises(ValueError, match=r"For 'StridedSlice', input 0 dim 0 cannot be split"):
            Net().compile(Tensor(x))
        return
    graph = Net().compile(Tensor(x))
    ss = [n for n in graph.nodes if n.op == "StridedSlice"][0]
    # this rank's rows, sliced locally with the global bounds, are numpy's slice of its rows
    want = x[np_index][12:16]
    got = ss.prim(Tensor(x[12:16]), *[c.value for c in ss.inputs[1:]]).asnumpy()
    np.testing.assert_array_equal(got, want)


def test_a_strategy_changed_after_a_compile_compiles_anew(semi):
    """The compiled graph follows the strategies as they are now: a primitive's `shard`
    (or a Cell's) after a compile plans again instead of reusing the old partition."""
    semi(4)
    net = Submodel(4)
    x = Tensor(np.ones((8, 64), np.float32))
    ops_of = lambda graph: [n.op for n in graph.nodes]            # noqa: E731
    assert ops_of(net.compile(x)) == ["BatchNorm", "TupleGetItem", "AllGather", "MatMul"]
    net.bn.shard(((1, 1),))                       # BatchNorm whole on the full batch: no gather
    assert ops_of(net.compile(x)) == ["BatchNorm", "TupleGetItem", "MatMul"]
    net.bn.shard(((4, 1),))                       # and back: the first plan again
    assert ops_of(net.compile(x)) == ["BatchNorm", "TupleGetItem", "AllGather", "MatMul"]
    assert net._compile_cache.traces == 2
