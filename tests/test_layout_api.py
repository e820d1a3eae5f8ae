"""msops.parallel.Layout: construction, tensor maps, errors, and shard() with Layouts planning
exactly what the equivalent tuple strategy plans (simulated world of 8)."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel import Layout, get_shard_strategy


@pytest.fixture
def semi8(sim):
    sim(8, rank=5)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    yield
    ms.reset_auto_parallel_context()


class TestLayout:
    def test_tensor_map_counts_axes_from_the_right(self):
        layout = Layout((2, 2, 2), ("dp", "sp", "mp"))
        d = layout("dp", "mp").to_dict()
        assert d["device_matrix"] == (2, 2, 2) and d["tensor_map"] == (2, 0)
        assert d["interleaved_parallel"] is False and d["rank_list"] == list(range(8))
        assert layout(("dp", "mp"), "None").tensor_map == ((2, 0), -1)
        assert layout("None", ("sp", "dp")).tensor_map == (-1, (1, 2))

    def test_equality_and_repr(self):
        layout = Layout((2, 4), ("dp", "mp"))
        assert layout("dp", "None") == Layout((2, 4), ("dp", "mp"))("dp", "None")
        assert layout("dp", "None") != layout("mp", "None")
        assert repr(layout("dp", "None")) == "Layout((2, 4), ('dp', 'mp'))('dp', 'None')"

    @pytest.mark.parametrize("args,err,match", [
        (([2, 4], ("dp", "mp")), TypeError, r"'device_matrix' should be a tuple"),
        (((2, 4), ["dp", "mp"]), TypeError, r"'alias_name' should be a tuple"),
        (((2, 4), ("dp",)), ValueError, r"length of 'alias_name' should equal"),
        (((2, 4.0), ("dp", "mp")), TypeError, r"'device_matrix\[1\]' should be an int"),
        (((2, 0), ("dp", "mp")), ValueError, r"'device_matrix\[1\]' should be >= 1"),
        (((2, 4), ("dp", 1)), TypeError, r"'alias_name\[1\]' should be a str"),
        (((2, 4), ("dp", "None")), ValueError, r"other than 'None'"),
        (((2, 4), ("dp", "")), ValueError, r"non-empty name"),
        (((2, 4), ("dp", "dp")), ValueError, r"should not repeat a name"),
        (((2, 2), ("dp", "interleaved_parallel")), ValueError, r"not supported by msops"),
    ])
    def test_construction_errors(self, args, err, match):
        with pytest.raises(err, match=match):
            Layout(*args)

    def test_rank_list(self):
        assert Layout((2, 2), ("a", "b"), rank_list=[0, 1, 2, 3]).device_matrix == (2, 2)
        with pytest.raises(ValueError, match=r"'rank_list' should be None or list\(range\(4\)\)"):
            Layout((2, 2), ("a", "b"), rank_list=[1, 0, 2, 3])

    def test_call_errors(self):
        layout = Layout((2, 4), ("dp", "mp"))
        with pytest.raises(ValueError, match=r"alias of dim 1 should be one of \('dp', 'mp', "
                                             r"'None'\), but got 'tp'"):
            layout("dp", "tp")
        with pytest.raises(ValueError, match=r"'dp' is used by dim 0 and dim 1"):
            layout("dp", ("mp", "dp"))
        with pytest.raises(ValueError, match=r"needs one alias per tensor dim"):
            layout()
        with pytest.raises(ValueError, match=r"to_dict\(\) needs a tensor map"):
            layout.to_dict()


class _MatMul(nn.Cell):
    def __init__(self, in_s, out_s=None, b=16):
        super().__init__()
        self.mm = ops.MatMul().shard(in_s, out_s)
        self.w = Parameter(Tensor(np.ones((32, b), np.float32)), name="w")

    def construct(self, x):
        return self.mm(x, self.w)


X = Tensor(np.ones((16, 32), np.float32))


def _plan(graph):
    return [(n.op, n.shape, str(n.layout)) for n in graph.nodes]


class TestShardWithLayouts:
    @pytest.mark.parametrize("dm,aliases,tuples", [
        ((2, 4), (("dp", "mp"), ("mp", "None")), ((2, 4), (4, 1))),
        # a tuple strategy's repeat axis goes on the right of its device matrix
        ((4, 2), (("None", "None"), ("None", "dp")), ((1, 1), (1, 4))),
        ((2, 4), (("dp", "None"), ("None", "None")), ((2, 1), (1, 1))),
    ])
    def test_same_plan_as_the_tuple_strategy(self, semi8, dm, aliases, tuples):
        layout = Layout(dm, ("dp", "mp"))
        by_layout = _MatMul(tuple(layout(*a) for a in aliases)).compile(X)
        by_tuple = _MatMul(tuples).compile(X)
        assert _plan(by_layout) == _plan(by_tuple)

    def test_dim_split_over_two_axes(self, semi8):
        layout = Layout((2, 4), ("dp", "mp"))
        graph = _MatMul((layout(("dp", "mp"), "None"), layout("None", "None"))).compile(X)
        mm = next(n for n in graph.nodes if n.op == "MatMul")
        assert mm.shape == (2, 16) and mm.layout.tensor_map == ((1, 0), -1)
        assert not [n for n in graph.nodes if n.is_communication]
        # row-major over (dp, mp): rank 5 = (1, 1) holds rows block 1*4+1 = 5
        assert mm.layout.slice_of(5)[0] == slice(10, 12)

    def test_reduction_over_two_axes_all_reduces_both(self, semi8):
        layout = Layout((2, 4), ("dp", "mp"))
        graph = _MatMul((layout("None", ("dp", "mp")), layout(("dp", "mp"), "None"))).compile(X)
        comm = [n for n in graph.nodes if n.is_communication]
        assert [n.op for n in comm] == ["AllReduce"] and comm[0].prim.rank_size == 8

    def test_out_layout_reduce_scatter(self, semi8):
        layout = Layout((2, 4), ("dp", "mp"))
        net = _MatMul((layout("dp", "mp"), layout("mp", "None")),
                      (layout(("dp", "mp"), "None"),))
        graph = net.compile(X)
        assert [n.op for n in graph.nodes if n.is_communication] == ["ReduceScatter"]
        assert graph.outputs[0].shape == (2, 16)
        tuple_graph = _MatMul(((2, 4), (4, 1)), ((8, 1),)).compile(X)
        assert _plan(graph) == _plan(tuple_graph)

    def test_read_out(self, semi8):
        layout = Layout((2, 4), ("dp", "mp"))
        strategy = (layout("dp", "mp"), layout("mp", "None"))
        net = _MatMul(strategy)
        net.compile(X)
        assert get_shard_strategy(net) == {"_MatMul/MatMul-op0": strategy}

    def test_plain_cell_shard_takes_layouts(self, semi8):
        class Block(nn.Cell):
            def __init__(self):
                super().__init__()
                self.relu = ops.ReLU()

            def construct(self, x):
                return self.relu(x)

        class Outer(nn.Cell):
            def __init__(self):
                super().__init__()
                self.block = Block()
                self.block.shard((layout("mp", "dp"),))

            def construct(self, x):
                return self.block(x)

        layout = Layout((2, 4), ("dp", "mp"))
        graph = Outer().compile(X)
        pinned = next(n for n in graph.nodes if n.op == "Identity")
        assert pinned.shape == (4, 16) and pinned.layout.tensor_map == (0, 1)

    @pytest.mark.parametrize("make,err,match", [
        (lambda l: (l("dp", "mp"), ((4, 1))), TypeError, r"should be all Layouts or all tuples"),
        (lambda l: (l, l("mp", "None")), ValueError, r"should be a called Layout"),
        (lambda l: (l("dp", "mp"), Layout((8,), ("x",))("x", "None")), ValueError,
         r"should share one device matrix"),
    ])
    def test_shard_argument_errors(self, make, err, match):
        with pytest.raises(err, match=match):
            ops.MatMul().shard(make(Layout((2, 4), ("dp", "mp"))))

    @pytest.mark.parametrize("aliases,match", [
        ((("dp", "mp"), ("dp", "None")),
         r"For 'MatMul', the layouts of input 0 dim 1 and input 1 dim 0 should split the "
         r"shared dimension"),
        ((("dp", "mp", "None"), ("mp", "None")), r"the strategy of input 0 should have length 2"),
    ])
    def test_strategy_errors_at_compile(self, semi8, aliases, match):
        layout = Layout((2, 4), ("dp", "mp"))
        with pytest.raises(ValueError, match=match):
            _MatMul(tuple(layout(*a) for a in aliases)).compile(X)

    def test_device_matrix_must_match_the_world(self, semi8):
        layout = Layout((2, 2), ("dp", "mp"))
        with pytest.raises(ValueError, match=r"For 'MatMul', the Layout's device matrix \(2, 2\) "
                                             r"should hold the 8 devices of the stage"):
            _MatMul((layout("dp", "mp"), layout("mp", "None"))).compile(X)

    def test_indivisible_dim(self, semi8):
        layout = Layout((2, 4), ("dp", "mp"))
        with pytest.raises(ValueError, match=r"input 1 dim 1 of size 6 .* divisible by the 4 "
                                             r"devices"):
            _MatMul((layout("dp", "None"), layout("None", "mp")), b=6).compile(X)


def test_dense_shard_takes_a_layout(semi8):
    layout = Layout((2, 4), ("dp", "mp"))

    class Net(nn.Cell):
        def __init__(self, strategy):
            super().__init__()
            self.dense = nn.Dense(32, 8)
            self.dense.shard(strategy)

        def construct(self, x):
            return self.dense(x)

    by_layout = Net((layout("dp", "mp"),)).compile(X)
    by_tuple = Net(((2, 4),)).compile(X)
    assert _plan(by_layout) == _plan(by_tuple)
    assert ms.Layout is Layout
