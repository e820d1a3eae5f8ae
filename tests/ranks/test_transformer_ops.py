"""The transformer op set's sharding rules under real MPI on 2, 4 and 8 ranks: each sharded op
(forward, and gradients of its inputs and parameters) equals the serial run, with the
collectives its rule predicts: a row-split embedding table is a shifted local lookup plus
one AllReduce, a column-split one needs none; a LayerNorm with its normalised dim split
AllReduces its two statistics; element-wise, shape and reduction ops keep their splits.
"""
import numpy as np
import pytest
from parallel_oracle import check, comm_ops, run_parallel, run_serial
from parallel_oracle import check_grads as sharded_grads_equal

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()
H = max(N // 2, 1)            # half the ranks: for two-axis strategies


def data(*shape, seed=0, dtype=np.float32):
    """Deterministic values per shape, so every rank builds the same inputs."""
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(dtype)


def check_grads(make_net, *inputs, rtol=1e-4, atol=1e-5):
    """Every parameter's and float input's gradient, sharded, equals the serial one."""
    floats = tuple(i for i, x in enumerate(inputs) if x.dtype in (ms.float32, ms.float64))

    def grads():
        net = make_net()
        params = net.trainable_params() or None
        _, g = ms.value_and_grad(net, grad_position=floats or None, weights=params)(*inputs)
        return list(g[0]) + list(g[1]) if floats and params else list(g)

    sharded_grads_equal(grads, rtol, atol)


class OpNet(nn.Cell):
    """`prim(*inputs, *consts)` summed against fixed weights (a scalar to differentiate);
    `params`: inputs held as Parameters (the first ones), the rest fed."""

    def __init__(self, prim, params=(), consts=(), scalar=True):
        super().__init__()
        self.prim, self.consts, self.scalar = prim, consts, scalar
        self.params = [Parameter(Tensor(p), name=f"p{i}") for i, p in enumerate(params)]
        for i, p in enumerate(self.params):
            setattr(self, f"p{i}", p)
        self.sum = ops.ReduceSum()

    def construct(self, *inputs):
        out = self.prim(*self.params, *inputs, *self.consts)
        out = out[0] if isinstance(out, tuple) else out
        return self.sum(out * out, ()) if self.scalar else out


# -- Gather / embedding ------------------------------------------------------------------
TABLE = data(16, 8)
IDS = np.array([[3, 15, 0], [7, 8, 3], [12, 1, 16], [5, 5, 9]], np.int32)   # 16: out of range


@pytest.mark.parametrize("strategy,comm", [
    (((N, 1), (1, 1)), ["AllReduce"]),          # rows split: shifted lookup + AllReduce
    (((1, N), (1, 1)), []),                     # columns split: nothing to combine
    (((1, 1), (N // 2 or 1, 1)), []),           # indices split (data parallel)
    (((2, 1), (H, 1)), ["AllReduce"]),          # both
])
def test_gather_table_splits_equal_serial(strategy, comm):
    def make(scalar=False):
        return OpNet(ops.Gather().shard(strategy), params=(TABLE,), consts=(0,), scalar=scalar)
    graph = check(make, Tensor(IDS))
    assert comm_ops(graph) == comm
    check_grads(lambda: make(True), Tensor(IDS))


class GatherDNet(nn.Cell):
    def __init__(self, strategy):
        super().__init__()
        self.gather_d = ops.GatherD().shard(strategy)

    def construct(self, x, index):
        return self.gather_d(x, 1, index)


def test_gather_data_parallel_default_splits_the_ids_not_the_table():
    ids = Tensor(np.tile(IDS, (2, 1)))
    graph = check(lambda: OpNet(ops.Gather(), params=(TABLE,), consts=(0,), scalar=False), ids,
                  mode="data_parallel")
    assert comm_ops(graph) == []
    gather = next(n for n in graph.nodes if n.op == "Gather")
    assert gather.inputs[0].shape == (16, 8) and gather.shape == (8 // N, 3, 8)


def test_gather_axis1_and_gather_d_nd_equal_serial():
    x = data(4, 16, 8)
    check(lambda: OpNet(ops.Gather().shard(((1, N, 1), (1,))), consts=(1,), scalar=False),
          Tensor(x), Tensor(np.array([15, 0, 3], np.int32)))
    idx = np.random.default_rng(1).integers(0, 16, (8, 16)).astype(np.int32)
    graph = check(lambda: GatherDNet(((N, 1), (N, 1))), Tensor(data(8, 16)), Tensor(idx))
    assert comm_ops(graph) == []
    nd_idx = np.array([[0, 1], [3, 2], [1, 1], [2, 0]] * 2, np.int32)
    graph = check(lambda: OpNet(ops.GatherNd().shard(((1, 1, H), (2, 1))), scalar=False),
                  Tensor(data(4, 3, 8)), Tensor(nd_idx))
    assert comm_ops(graph) == []


def test_embedding_row_split_trains_like_serial():
    """nn.Embedding with its table split by rows: forward and table gradient equal serial."""
    def make():
        emb = nn.Embedding(16, 8, embedding_table=Tensor(TABLE))
        emb.gather.shard(((N, 1), (1, 1)))
        return emb
    check(make, Tensor(IDS))
    check_grads(lambda: _Summed(make()), Tensor(IDS))


class _Summed(nn.Cell):
    def __init__(self, cell):
        super().__init__()
        self.cell, self.sum = cell, ops.ReduceSum()
        self.w = Tensor(data(4, 3, 8, seed=3))

    def construct(self, x):
        return self.sum(self.cell(x) * self.w, ())


# -- LayerNorm ---------------------------------------------------------------------------
@pytest.mark.parametrize("axes,shapes,strategy,comm", [
    ((-1, -1), ((8, 4, 16), (16,)), ((N, 1, 1), (1,), (1,)), []),
    ((-1, -1), ((8, 4, 16), (16,)), ((1, 1, N), (N,), (N,)), ["AllReduce"] * 2),
    ((-1, -1), ((8, 4, 16), (16,)), ((2, 1, H), (H,), (H,)), ["AllReduce"] * 2 * (H > 1)),
    ((1, 1), ((8, 4, 16), (4, 16)), ((1, 2, H), (2, H), (2, H)), ["AllReduce"] * 2),
])
def test_layer_norm_equals_serial(axes, shapes, strategy, comm):
    x_shape, g_shape = shapes
    gamma, beta = 1 + data(*g_shape, seed=1), data(*g_shape, seed=2)

    net_x = Tensor(data(*x_shape))

    class LN(nn.Cell):
        def __init__(self, scalar=False):
            super().__init__()
            self.ln = ops.LayerNorm(*axes, 1e-5).shard(strategy)
            self.gamma = Parameter(Tensor(gamma), name="gamma")
            self.beta = Parameter(Tensor(beta), name="beta")
            self.sum, self.scalar = ops.ReduceSum(), scalar

        def construct(self, x):
            y, mean, var = self.ln(x, self.gamma, self.beta)
            return self.sum(y * y, ()) + self.sum(mean, ()) if self.scalar else (y, mean, var)
    graph = check(LN, net_x, rtol=1e-4, atol=1e-4)
    assert comm_ops(graph) == comm
    check_grads(lambda: LN(True), net_x, rtol=1e-3, atol=1e-4)


# -- element-wise, comparisons, shape ops, reductions ------------------------------------
X, Y = data(8, 16), data(8, 16, seed=1)
POS = np.abs(X) + 0.5
S2 = ((2, H),)
ELEMENTWISE = [
    (ops.GeLU, S2, (X,)), (ops.FastGeLU, S2, (X,)), (ops.Sigmoid, ((N, 1),), (X,)),
    (ops.Tanh, ((1, N),), (X,)), (ops.Erf, S2, (X,)), (ops.Sqrt, S2, (POS,)),
    (ops.LogSoftmax, ((N, 1),), (X,)),
    (ops.Pow, ((2, H), (2, H)), (POS, Y)), (ops.Maximum, ((2, H), (2, H)), (X, Y)),
    (ops.Minimum, ((1, N), (1, N)), (X, Y)), (ops.TensorAdd, ((N, 1), (N, 1)), (X, Y)),
    (ops.FloorDiv, ((2, H), (2, H)), (X * 4, POS)),
    (ops.BiasAdd, ((2, H), (H,)), (X, Y[0])),
    # unary_ops (issue 19's names table): the element-wise rule keeps every split
    (ops.Abs, S2, (X,)), (ops.Rsqrt, ((1, N),), (POS,)), (ops.HSwish, ((N, 1),), (4 * X,)),
    (ops.Softplus, S2, (X,)),
]


@pytest.mark.parametrize("prim_cls,strategy,inputs", ELEMENTWISE,
                         ids=[c.__name__ for c, _, _ in ELEMENTWISE])
def test_elementwise_equals_serial(prim_cls, strategy, inputs):
    tensors = [Tensor(v) for v in inputs]
    graph = check(lambda: OpNet(prim_cls().shard(strategy), scalar=False), *tensors)
    assert comm_ops(graph) == []
    if prim_cls is not ops.FloorDiv:
        check_grads(lambda: OpNet(prim_cls().shard(strategy)), *tensors)


class CompareSelect(nn.Cell):
    """Every comparison, then Select on one of them: bool tensors keep their splits too (the
    rows' split, as the data-parallel default of the unsharded Cast, AddN and Add)."""

    def __init__(self):
        super().__init__()
        s = ((N, 1), (N, 1))
        self.cmps = [c().shard(s) for c in (ops.Greater, ops.GreaterEqual, ops.Less,
                                            ops.LessEqual, ops.NotEqual)]
        self.select = ops.Select().shard(((N, 1),) * 3)
        self.cast = ops.Cast()
        self.add = ops.AddN()
        self.zeros, self.ones = ops.ZerosLike().shard(s[:1]), ops.OnesLike().shard(s[:1])

    def construct(self, x, y):
        masks = [self.cast(c(x, y), ms.float32) for c in self.cmps]
        picked = self.select(self.cmps[0](x, y), x, y) + self.ones(x) + self.zeros(y)
        return self.add(tuple(masks) + (picked,))


def test_comparisons_and_select_equal_serial():
    graph = check(CompareSelect, Tensor(X), Tensor(np.where(X > 0, X, Y)))
    assert comm_ops(graph) == []
    check_grads(lambda: _Summed2(CompareSelect()), Tensor(X), Tensor(Y))


class _Summed2(nn.Cell):
    def __init__(self, cell):
        super().__init__()
        self.cell, self.sum = cell, ops.ReduceSum()

    def construct(self, x, y):
        out = self.cell(x, y)
        return self.sum(out * out, ())


@pytest.mark.parametrize("prim_cls,ref,strategy,axis", [
    (ops.ReduceMin, np.min, ((1, N),), 1), (ops.ReduceMin, np.min, ((2, H),), (0, 1)),
    (ops.ReduceProd, np.prod, ((1, N),), 1), (ops.ReduceProd, np.prod, ((2, H),), 0),
])
def test_reductions_over_split_axes_equal_serial(prim_cls, ref, strategy, axis):
    x = 1 + 0.1 * data(8, 16)
    net = OpNet(prim_cls().shard(strategy), consts=(axis,), scalar=False)
    graph = check(lambda: net, Tensor(x))
    assert comm_ops(graph) == ["AllReduce"]
    check_grads(lambda: OpNet(prim_cls().shard(strategy), consts=(axis,)), Tensor(x))


@pytest.mark.parametrize("make,strategy,x,comm", [
    (lambda: ops.Argmax(-1), ((N, 1),), X, []),
    (lambda: ops.ArgMax(0), ((1, N),), X, []),
    (lambda: ops.Squeeze(1), ((N, 1, 1),), data(8, 1, 4), []),
    (lambda: ops.Argmin(1, ms.int64), ((N, 1),), X, []),
])
def test_index_and_squeeze_ops_equal_serial(make, strategy, x, comm):
    graph = check(lambda: OpNet(make().shard(strategy), scalar=False), Tensor(x))
    assert comm_ops(graph) == comm


class IndexValue(nn.Cell):
    """An ArgMaxWithValue-like op's value plus its index (both outputs checked; the Cast and
    Add sharded as the outputs, `out`), or the summed square of the value (to differentiate)."""

    def __init__(self, prim, out=None, scalar=False):
        super().__init__()
        self.prim, self.scalar = prim, scalar
        self.cast, self.add, self.sum = ops.Cast(), ops.Add(), ops.ReduceSum()
        if out is not None:
            self.cast.shard((out,))
            self.add.shard((out, out))

    def construct(self, x):
        index, value = self.prim(x)
        if self.scalar:
            return self.sum(value * value, ())
        return self.add(value, self.cast(index, ms.float32))


@pytest.mark.parametrize("make,strategy,out", [
    (lambda: ops.ArgMaxWithValue(1), ((N, 1),), (N,)),
    (lambda: ops.ArgMinWithValue(0, True), ((1, N),), (1, N)),
])
def test_arg_with_value_keeps_the_other_splits_and_equals_serial(make, strategy, out):
    graph = check(lambda: IndexValue(make().shard(strategy), out), Tensor(X))
    assert comm_ops(graph) == []
    check_grads(lambda: IndexValue(make().shard(strategy), scalar=True), Tensor(X))


@pytest.mark.parametrize("prim_cls,const,strategy", [
    (ops.Tile, (1, 2), ((N, 1),)), (ops.Tile, (2, 1, 1), ((1, N),)),
    (ops.ExpandDims, 1, ((2, H),)), (ops.ExpandDims, -1, ((N, 1),)),
])
def test_shape_ops_equal_serial(prim_cls, const, strategy):
    graph = check(lambda: OpNet(prim_cls().shard(strategy), consts=(const,), scalar=False),
                  Tensor(X))
    assert comm_ops(graph) == []
    check_grads(lambda: OpNet(prim_cls().shard(strategy), consts=(const,)), Tensor(X))


# -- a transformer block's layers together -------------------------------------------------
class Block(nn.Cell):
    """Embedding (table split by rows), LayerNorm, a GeLU MLP split Megatron's way (columns,
    then rows), LogSoftmax over the vocabulary of a tied output head; a scalar loss.
    `sharded=False`: no strategies (for sharding propagation to plan)."""

    def __init__(self, sharded=True):
        super().__init__()
        v, d, f = 16, 8, 16
        self.emb = nn.Embedding(v, d, embedding_table=Tensor(TABLE))
        self.ln = nn.LayerNorm((d,), epsilon=1e-5)
        self.up = ops.MatMul()
        self.act = nn.GELU()
        self.down = ops.MatMul()
        self.head = ops.MatMul(transpose_b=True)
        self.log_softmax = ops.LogSoftmax()
        self.w1 = Parameter(Tensor(0.3 * data(d, f, seed=5)), name="w1")
        self.w2 = Parameter(Tensor(0.3 * data(f, d, seed=6)), name="w2")
        self.reshape, self.mean = ops.Reshape(), ops.ReduceMean()
        if sharded:
            self.emb.gather.shard(((N, 1), (1,)))
            self.up.shard(((1, 1), (1, N)))
            self.act.shard(((1, N),))
            self.down.shard(((1, N), (N, 1)))
            self.head.shard(((N, 1), (1, 1)))
            self.log_softmax.shard(((N, 1),))

    def construct(self, ids):
        h = self.ln(self.emb(ids))                                   # (T, d)
        h = h + self.down(self.act(self.up(h, self.w1)), self.w2)
        logits = self.head(h, self.emb.embedding_table)              # tied: (T, v)
        return self.mean(self.log_softmax(logits) * logits, ())


BLOCK_IDS = Tensor(np.array([3, 15, 0, 7, 8, 3, 12, 1] * 2, np.int32))


def test_transformer_block_forward_and_gradients_equal_serial():
    graph = check(Block, BLOCK_IDS, rtol=1e-4, atol=1e-5)
    # the embedding's AllReduce; LayerNorm's rows (data-parallel default) gathered for the
    # column-split MatMul; the row-split MatMul's AllReduce (Megatron's g); the row-split
    # table gathered for the tied head; the loss's mean
    assert comm_ops(graph) == ["AllReduce", "AllGather", "AllReduce", "AllGather", "AllReduce"]
    check_grads(Block, BLOCK_IDS, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("search_mode", ["sharding_propagation", "recursive_programming"])
def test_transformer_block_planned_by_the_strategy_search_equals_serial(search_mode):
    """Only the embedding's and the first MatMul's strategies set: the search plans the rest."""
    def make():
        net = Block(sharded=False)
        net.emb.gather.shard(((N, 1), (1,)))
        net.up.shard(((1, 1), (1, N)))
        return net
    want = run_serial(make, BLOCK_IDS)
    ms.set_auto_parallel_context(search_mode=search_mode)
    got, _ = run_parallel(make, BLOCK_IDS, mode="auto_parallel")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
