"""ops.reshard / ops.Reshard: the identity stand-alone (eager and compiled, values and
gradients against numpy), its errors, and dry runs of the parallel pass on simulated
worlds (up to 4096 ranks): the result has exactly the given layout, and the redistribution
inserted before it moves the fewest bytes a rank must receive, computed by hand."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.parallel import Layout, TensorLayout, plan
from msops.parallel.function import reshard as parallel_reshard

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6)).astype(np.float32)
W = RNG.standard_normal((6, 3)).astype(np.float32)
LAY = Layout((2, 2), ("dp", "mp"))


class ReshardNet(nn.Cell):
    """relu(x) -> reshard(layout) -> @ w: MindSpore's documented use."""

    def __init__(self, layout, relu_strategy=None, cols=16):
        super().__init__()
        self.relu = ops.ReLU()
        if relu_strategy is not None:
            self.relu.shard(relu_strategy)
        self.matmul = ops.MatMul()
        self.layout = layout
        self.w = Parameter(Tensor(np.ones((cols, 8), np.float32)), "w")

    def construct(self, x):
        return self.matmul(ops.reshard(self.relu(x), self.layout), self.w)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE])
def test_reshard_is_the_identity_with_its_gradient(mode):
    ms.set_context(mode=mode)

    def f(x, w):
        y = ops.reshard(x, LAY("dp", "mp"))
        return (parallel_reshard(ops.matmul(y, w), LAY("None", "mp")) ** 2).sum()

    loss, (gx, gw) = ms.value_and_grad(f, (0, 1))(Tensor(X), Tensor(W))
    out = X @ W                               # d sum(out^2) = 2 out
    np.testing.assert_allclose(loss.asnumpy(), (out ** 2).sum(), rtol=1e-5)
    np.testing.assert_allclose(gx.asnumpy(), 2 * out @ W.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gw.asnumpy(), 2 * X.T @ out, rtol=1e-5, atol=1e-5)


def test_the_primitive_carries_its_layout_as_strategy():
    prim = ops.Reshard((LAY("dp", "None"),), (LAY("dp", "None"),), in_strategy=((2, 1),))
    assert prim.in_strategy == (LAY("dp", "None"),) and prim.layout == LAY("dp", "None")
    np.testing.assert_array_equal(prim(Tensor(X)).asnumpy(), X)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.reshard(X, LAY("dp", "mp")), TypeError,
     r"For 'reshard', the 'tensor' should be a Tensor, but got ndarray"),
    (lambda: ops.reshard(Tensor(X), ("dp", "mp")), TypeError,
     r"For 'reshard', the 'layout' should be a Layout, but got tuple"),
    (lambda: parallel_reshard(Tensor(X), None), TypeError,
     r"For 'reshard', the 'layout' should be a Layout, but got NoneType"),
    (lambda: ops.reshard(Tensor(X), LAY), ValueError,
     r"For 'reshard', the 'layout' should be called with one alias per dim"),
    (lambda: ops.reshard(Tensor(X), LAY("dp")), ValueError,
     r"For 'Reshard', the layout should have one entry per dim of the input \(rank 2"),
    (lambda: ops.Reshard(LAY("dp"), (LAY("dp"),)), TypeError,
     r"For 'Reshard', the 'in_layout' should be a tuple of one Layout, but got Layout"),
    (lambda: ops.Reshard((LAY("dp"),), (LAY("mp"),)), ValueError,
     r"For 'Reshard', the 'out_layout' should equal the 'in_layout'"),
    (lambda: ops.Reshard((LAY("dp"),), (LAY("dp"),), ((4,),)), ValueError,
     r"For 'Reshard', the 'in_strategy' should be None or the split of 'in_layout', "
     r"\(\(2,\),\)"),
])
def test_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.fixture
def world(sim):
    def make(n, rank=0, mode="semi_auto_parallel"):
        sim(n, rank)
        extra = {"search_mode": "sharding_propagation"} if mode == "auto_parallel" else {}
        ms.set_auto_parallel_context(parallel_mode=mode, device_num=n, full_batch=True,
                                     **extra)
        ms.set_context(mode=ms.GRAPH_MODE)
    yield make
    ms.reset_auto_parallel_context()


def _between(graph, first, last):
    """The communication nodes after the first `first` node and before the first `last`."""
    ops_ = [n.op for n in graph.nodes]
    a, b = ops_.index(first), ops_.index(last)
    return [n for n in graph.nodes[a + 1:b] if n.is_communication]


_KIND = {"AllGatherDim": "AllGather", "AllToAllDims": "AlltoAll"}


@pytest.mark.parametrize("n,dp", [(4, 2), (8, 2), (4096, 64)])
def test_dry_run_plans_the_cheapest_redistribution_into_the_layout(world, n, dp):
    """Rows split over all n ranks -> columns split over the minor 'mp' axis, replicated
    over 'dp': every rank must receive the (rows - rows/n) x cols/mp elements of its new
    slice it does not hold, and the plan moves exactly those."""
    world(n, rank=n - 1)
    mp = n // dp
    rows, cols = 2 * n, 2 * mp
    layout = Layout((dp, mp), ("dp", "mp"))("None", "mp")
    graph = ReshardNet(layout, relu_strategy=((n, 1),), cols=cols).compile(
        Tensor(np.ones((rows, cols), np.float32)))
    src = TensorLayout((n,), (0, -1), (rows, cols))           # the relu's rows split
    dst = TensorLayout((dp, mp), (-1, 0), (rows, cols))       # the layout, by hand
    node = next(x for x in graph.nodes if x.op == "Reshard")
    assert node.layout == dst and node.shape == (rows, cols // mp)
    moved = _between(graph, "ReLU", "Reshard")
    steps = plan(src, dst)
    assert [x.op for x in moved] == [_KIND[type(s).__name__] for s in steps
                                     if type(s).__name__ in _KIND]
    assert sum(x.comm_bytes for x in moved) == (rows - rows // n) * (cols // mp) * 4


def test_propagation_starts_from_the_reshard(world):
    """sharding_propagation: the reshard keeps its layout, the relu before it takes a layout
    that slices into it without communication (replicated, as the full-batch input)."""
    world(8, rank=5, mode="auto_parallel")
    layout = Layout((2, 4), ("dp", "mp"))("dp", "mp")
    graph = ReshardNet(layout).compile(Tensor(np.ones((16, 16), np.float32)))
    node = next(x for x in graph.nodes if x.op == "Reshard")
    assert node.layout == TensorLayout((2, 4), (1, 0), (16, 16)) and node.shape == (8, 4)
    assert _between(graph, "ReLU", "Reshard") == []


def test_a_layout_over_another_device_count_names_the_op(world):
    world(8)
    with pytest.raises(ValueError, match=r"For 'Reshard', the Layout's device matrix \(2, 2\) "
                                         r"should hold the 8 devices"):
        ReshardNet(LAY("dp", "None")).compile(Tensor(np.ones((16, 16), np.float32)))
