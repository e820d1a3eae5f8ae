"""`ms.shard` / `Cell.shard(parameter_plan=...)` planned on a simulated world: the context
switch, the layouts Parameters are stored in (slice shapes from the plan by hand), the
redistribution a plan costs, recompiles and every refused argument."""
import numpy as np
import pytest
from nets import BlockThenDense

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel import Layout


def ones(*shape):
    return Tensor(np.ones(shape, np.float32))


def block_net():
    """Dense(8, 16) -> ReLU (the block) -> Dense(16, 4)."""
    return BlockThenDense(8, 16, 4)


class ColumnMatMul(nn.Cell):
    """x @ w with the MatMul's strategy fixed: rows of x split, w whole."""

    def __init__(self, n):
        super().__init__()
        self.mm = ops.MatMul().shard(((n, 1), (1, 1)))
        self.w = Parameter(ones(8, 16), name="w")

    def construct(self, x):
        return self.mm(x, self.w)


@pytest.fixture
def world(sim):
    def make(mode="semi_auto_parallel", n=4):
        sim(n, rank=1)
        ms.set_auto_parallel_context(parallel_mode=mode, device_num=n, full_batch=True)
        ms.set_context(mode=ms.GRAPH_MODE)
    yield make
    ms.reset_auto_parallel_context()


def comm(graph):
    return [n.op for n in graph.nodes if n.is_communication]


def test_shard_switches_to_sharding_propagation(world):
    world()
    net = block_net()
    ms.shard(net.block, in_strategy=((2, 1),))
    assert ms.get_auto_parallel_context("parallel_mode") == "auto_parallel"
    assert ms.get_auto_parallel_context("search_mode") == "sharding_propagation"
    assert net.block.in_strategy == ((2, 1),)
    assert ms.parallel.shard is ms.shard


@pytest.mark.parametrize("plan,slice_shape", [((4, 1), [4, 8]), ((1, 4), [16, 2]),
                                              ((2, 2), [8, 4]), ((1, 1), [16, 8])])
def test_a_planned_parameter_is_stored_as_planned(world, plan, slice_shape):
    world()
    net = block_net()
    ms.shard(net.block, in_strategy=((2, 1),), parameter_plan={"dense.weight": plan})
    net.compile(ones(8, 8))
    layout = net.parameter_layout_dict["block.dense.weight"]
    assert list(layout.slice_shape) == slice_shape      # (16, 8) divided by the plan


def test_a_plan_by_full_name_or_layout(world):
    world()
    net = block_net()
    lay = Layout((2, 2), ("dp", "mp"))
    net.block.shard(((1, 1),), parameter_plan={"block.dense.weight": lay("mp", "dp")})
    net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["block.dense.weight"].slice_shape) == [8, 4]


def test_a_plan_the_consumer_does_not_want_is_moved_each_step(world):
    # the MatMul needs w whole; planned (1, 4) it is stored as column quarters and
    # gathered before the MatMul (semi_auto_parallel: Cell.shard keeps the mode)
    world()
    net = ColumnMatMul(4)
    net.shard(((4, 1),), parameter_plan={"w": (1, 4)})
    assert ms.get_auto_parallel_context("parallel_mode") == "semi_auto_parallel"
    graph = net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["w"].slice_shape) == [8, 4]
    assert "AllGather" in comm(graph)
    unplanned = ColumnMatMul(4)
    assert comm(unplanned.compile(ones(8, 8))) == []
    assert list(unplanned.parameter_layout_dict["w"].slice_shape) == [8, 16]


def test_a_new_plan_compiles_anew(world):
    world()
    net = ColumnMatMul(4)
    net.shard(((4, 1),))
    net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["w"].slice_shape) == [8, 16]
    net.shard(((4, 1),), parameter_plan={"w": (2, 1)})      # only the plan differs
    net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["w"].slice_shape) == [4, 16]


def test_plans_count_only_with_strategies(world):
    world("data_parallel")
    net = ColumnMatMul(4)
    net.shard(((4, 1),), parameter_plan={"w": (1, 4)})
    net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["w"].slice_shape) == [8, 16]


def test_unknown_or_replanned_names_are_skipped_with_a_warning(world):
    world()
    net = ColumnMatMul(4)
    with pytest.warns(UserWarning, match="'v', which is not a Parameter"):
        net.shard(((4, 1),), parameter_plan={"v": (1, 4)})
    net.shard(((4, 1),), parameter_plan={"w": (1, 4)})
    with pytest.warns(UserWarning, match="already has the plan"):
        net.shard(((4, 1),), parameter_plan={"w": (2, 1)})
    net.compile(ones(8, 8))
    assert list(net.parameter_layout_dict["w"].slice_shape) == [8, 4]


def test_a_plan_that_does_not_fit_names_the_parameter(world):
    world()
    net = ColumnMatMul(4)
    net.shard(((4, 1),), parameter_plan={"w": (1, 3)})
    with pytest.raises(ValueError, match=r"parameter_plan' of Parameter 'w' \(shape \[8, 16\]\)"):
        net.compile(ones(8, 8))


def test_a_function_is_compiled_with_its_layouts(world):
    world()
    f = ms.shard(lambda x, w: ops.relu(ops.matmul(x, w)), in_strategy=((4, 1), (1, 1)))
    out = f(ones(8, 8), ones(8, 16))
    assert out.shape == (2, 16)                 # this rank's rows (a simulated world runs nothing)


@pytest.mark.parametrize("call,error,match", [
    (lambda net: ms.shard(net, in_strategy=[(2, 1)]), TypeError, "in_strategy"),
    (lambda net: ms.shard(net, ((2, 1),), out_strategy=[(2, 1)]), TypeError, "out_strategy"),
    (lambda net: ms.shard(net, ((2, 1),), parameter_plan=[("w", (1, 4))]), TypeError,
     "'parameter_plan' should be a dict or None, but got list"),
    (lambda net: ms.shard(net, ((2, 1),), parameter_plan={1: (1, 4)}), TypeError,
     "keys of 'parameter_plan' should be str, but got int"),
    (lambda net: ms.shard(net, ((2, 1),), parameter_plan={"w": [1, 4]}), TypeError,
     r"'parameter_plan\['w'\]' should be a tuple of ints or a Layout, but got list"),
    (lambda net: ms.shard(net, ((2, 1),), parameter_plan={"w": (1, 4, 1)}), ValueError,
     r"one entry per dim of the Parameter \(shape \[8, 16\]\), but got \(1, 4, 1\)"),
    (lambda net: ms.shard(net, ((2, 1),), device="TPU"), ValueError, "'device' should be one of"),
    (lambda net: ms.shard(net, ((2, 1),), level=3), ValueError, "'level' should be one of"),
    (lambda net: ms.shard(3, ((2, 1),)), TypeError, "'fn' should be a Cell or a function"),
])
def test_refused_arguments(world, call, error, match):
    world()
    with pytest.raises(error, match=match):
        call(ColumnMatMul(4))


def test_shard_needs_a_parallel_mode(world):
    world("stand_alone")
    with pytest.raises(RuntimeError, match="For 'shard', the 'parallel_mode' should be one of"):
        ms.shard(block_net(), in_strategy=((2, 1),))
