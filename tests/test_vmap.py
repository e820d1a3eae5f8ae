"""ms.vmap / ops.vmap: every result against a Python loop over the batch in numpy (or numpy
directly), eagerly and inside a compiled Cell / ms.jit; nested vmap, Cells, per-example
gradients against central differences, grad of vmap, the per-element path, random draws
and the errors."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.graph.ir import Graph
from msops.primitives.rules import rule_of
from numeric import finite_differences
from test_functional_forms import eager_and_compiled as _both

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def eager_and_compiled(fn, *arrays):
    """fn on Tensors of `arrays`: eagerly (PYNATIVE), inside a compiled Cell (GRAPH_MODE)
    and inside ms.jit."""
    ts = [Tensor(a) for a in arrays]
    return (*_both(fn, *ts), ms.jit(lambda *xs: fn(*xs))(*ts))


def loop(fn_np, arrays, in_axes, out_axis=0):
    """The reference: fn_np on each batch element's slices, stacked at out_axis."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else [in_axes] * len(arrays)
    size = next(a.shape[x] for a, x in zip(arrays, axes) if x is not None)
    outs = [fn_np(*[a if x is None else np.take(a, b, axis=x) for a, x in zip(arrays, axes)])
            for b in range(size)]
    if isinstance(outs[0], tuple):
        return [np.stack([o[k] for o in outs], axis=out_axis) for k in range(len(outs[0]))]
    return np.stack(outs, axis=out_axis)


def same(out, want, tol=1e-5):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    wants = want if isinstance(want, list) else [want]
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants):
        assert tuple(o.shape) == np.shape(w)
        np.testing.assert_allclose(o.asnumpy(), w, rtol=tol, atol=tol)


def softmax_np(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


X = rand(4, 3, 5)
M = rand(5, 2)
SQ = rand(4, 3, 3) + 3 * np.eye(3, dtype=np.float32)
IDX = RNG.integers(0, 3, (4, 2)).astype(np.int32)
#: (name, fn, in_axes, inputs, numpy function of one batch element)
CASES = [
    ("broadcast_unmapped", lambda a, b: ops.exp(a) * b + 1.0, (0, None), (X, rand(5)),
     lambda a, b: np.exp(a) * b + 1.0),
    ("ranks_aligned", lambda a, b: a - b, 0, (X, rand(4, 5)), lambda a, b: a - b),
    ("scalar_elements", lambda a, b: a * b, (0, 1), (rand(4), rand(2, 4)), lambda a, b: a * b),
    ("negative_axis", lambda a: ops.sin(a) * 2.0, -1, (rand(3, 5, 4),), lambda a: np.sin(a) * 2),
    ("sum_axis", lambda a: ops.sum(a, 1), 1, (X,), lambda a: a.sum(1)),
    ("sum_all_keep", lambda a: ops.sum(a, keepdim=True), 0, (X,), lambda a: a.sum(keepdims=True)),
    ("mean_neg_axis", lambda a: ops.mean(a, -1), 2, (X,), lambda a: a.mean(-1)),
    ("amax", lambda a: ops.amax(a, 0), 0, (X,), lambda a: a.max(0)),
    ("argmax", lambda a: ops.argmax(a, 0), 1, (X,), lambda a: a.argmax(0)),
    ("matmul_unmapped_w", lambda a, w: ops.matmul(a, w), (0, None), (X, M), lambda a, w: a @ w),
    ("matmul_mapped_w", lambda a, w: ops.matmul(a, w), (None, 0), (rand(3, 5), rand(4, 5, 2)),
     lambda a, w: a @ w),
    ("matmul_both", lambda a, w: ops.MatMul(transpose_b=True)(a, w), (0, 2),
     (X, rand(2, 5, 4)), lambda a, w: a @ w.T),
    ("bmm_unmapped", lambda a, w: ops.bmm(a, w), (0, None), (rand(4, 2, 3, 5), rand(2, 5, 3)),
     lambda a, w: a @ w),
    ("transpose", lambda a: ops.transpose(a, (1, 0)), 1, (X,), lambda a: a.T),
    ("reshape", lambda a: ops.reshape(a, (-1,)), 0, (X,), lambda a: a.reshape(-1)),
    ("expand_squeeze", lambda a: ops.squeeze(ops.expand_dims(a, -1)), 0, (rand(4, 1, 3),),
     lambda a: a.squeeze()),
    ("batch_of_one_squeeze", lambda a: ops.squeeze(a), 0, (rand(1, 1, 3),), lambda a: a.squeeze()),
    ("concat_unmapped", lambda a, b: ops.concat((a, b), -1), (0, None), (X, rand(3, 2)),
     lambda a, b: np.concatenate([a, b], -1)),
    ("stack", lambda a, b: ops.stack((a, b), 1), (0, 0), (X, X * 2),
     lambda a, b: np.stack([a, b], 1)),
    ("split", lambda a: ops.split(a, 1, axis=1), 0, (X,), lambda a: tuple(np.split(a, 5, 1))),
    ("strided_slice", lambda a: a[1:, ::2], 0, (X,), lambda a: a[1:, ::2]),
    ("index_int", lambda a: a[-1], 2, (X,), lambda a: a[-1]),
    ("gather_params", lambda p, i: ops.gather(p, i, 1), (0, None), (X, IDX[0]),
     lambda p, i: np.take(p, i, 1)),
    ("gather_indices", lambda p, i: ops.gather(p, i, 0), (None, 0), (X[0], IDX),
     lambda p, i: np.take(p, i, 0)),
    ("gather_both", lambda p, i: ops.gather(p, i, 0), 0, (X, IDX), lambda p, i: np.take(p, i, 0)),
    ("softmax", lambda a: ops.softmax(a, 0), 2, (X,), lambda a: softmax_np(a, 0)),
    ("log_softmax", lambda a: ops.log_softmax(a), 0, (X,), lambda a: np.log(softmax_np(a))),
    ("cast", lambda a: ops.cast(a, ms.int32), 0, (X * 4,), lambda a: a.astype(np.int32)),
    ("one_hot", lambda i: ops.one_hot(i, 3, Tensor(1.0), Tensor(0.0), 0), 0, (IDX,),
     lambda i: np.eye(3, dtype=np.float32)[i].T),
    ("where", lambda c, a: ops.where(c > 0, a, -a), (0, None), (X, X[0]),
     lambda c, a: np.where(c > 0, a, -a)),
    ("tile", lambda a: ops.tile(a, (2, 1, 1)), 0, (X,), lambda a: np.tile(a, (2, 1, 1))),
    ("broadcast_to", lambda a: ops.broadcast_to(a, (2, 3, 5)), 0, (X[:, :1],),
     lambda a: np.broadcast_to(a, (2, 3, 5))),
    ("cumsum", lambda a: ops.cumsum(a, 0), 2, (X,), lambda a: a.cumsum(0)),
    ("sort", lambda a: ops.sort(a, 0)[0], 0, (X,), lambda a: np.sort(a, 0)),
    ("topk", lambda a: ops.topk(a, 2)[0], 1, (X,), lambda a: -np.sort(-a, -1)[..., :2]),
    ("det", lambda a: ops.det(a), 0, (SQ,), lambda a: np.linalg.det(a)),
    ("tril", lambda a: ops.tril(a), 0, (SQ,), lambda a: np.tril(a)),
    ("layer_norm", lambda a, g, b: ops.LayerNorm(-1, -1, 1e-5)(a, g, b)[0], (1, None, None),
     (X, rand(5), rand(5)), lambda a, g, b: (a - a.mean(-1, keepdims=True)) /
     np.sqrt(a.var(-1, keepdims=True) + 1e-5) * g + b),
    ("softmax_cross_entropy", lambda a, y: ops.SoftmaxCrossEntropyWithLogits()(a, y), (0, None),
     (X, softmax_np(X[0])), lambda a, y: (-(y * np.log(softmax_np(a))).sum(1),
                                          softmax_np(a) - y)),
    ("fallback_gather_elements", lambda a, i: ops.gather_elements(a, 0, i), (0, None),
     (X, IDX[:2, :1].repeat(5, 1).astype(np.int32)), lambda a, i: np.take_along_axis(a, i, 0)),
]


@pytest.mark.parametrize("name,fn,in_axes,inputs,ref", CASES, ids=[c[0] for c in CASES])
def test_matches_a_loop_over_the_batch(name, fn, in_axes, inputs, ref):
    want = loop(ref, inputs, in_axes)
    for out in eager_and_compiled(ms.vmap(fn, in_axes), *inputs):
        same(out, want)


def conv_np(x, w, b):
    """Valid cross-correlation, stride 1: x (N, C, H, W), w (O, C, KH, KW)."""
    win = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwkl,ockl->nohw", win, w) + b[None, :, None, None]


def test_convolution_and_pooling_fold_the_batch_into_n():
    conv = nn.Conv2d(2, 3, 3, pad_mode="valid", has_bias=True)
    w, b = conv.weight.asnumpy(), conv.bias.asnumpy()
    x = rand(3, 2, 2, 6, 6)
    net = lambda a: ops.MaxPool(2, 2)(conv(a))
    want = np.stack([conv_np(e, w, b).reshape(2, 3, 2, 2, 2, 2).max((3, 5)) for e in x])
    for out in eager_and_compiled(ms.vmap(net), x):
        same(out, want)
    graph = _traced(ms.vmap(net), x)
    assert [n.op for n in graph.nodes].count("Conv2D") == 1
    # per-example gradients through the conv's and the pools' backward ops
    loss = lambda a: ops.sum(ops.AvgPool(2, 2)(ops.MaxPool(2, 1)(conv(a))))
    weights = conv.trainable_params()
    per_example = ms.vmap(ms.grad(loss, 0, weights))(Tensor(x))
    for k, e in enumerate(x):
        gx, gw = ms.grad(loss, 0, weights)(Tensor(e))
        same(per_example[0][k], gx.asnumpy())
        for got, one in zip(per_example[1], gw):
            same(got[k], one.asnumpy(), 1e-4)


def test_the_named_families_have_rules_and_the_fallback_is_used_without_one():
    for cls in (ops.Add, ops.Exp, ops.ReduceSum, ops.MatMul, ops.BatchMatMul, ops.Reshape,
                ops.Transpose, ops.ExpandDims, ops.Squeeze, ops.Concat, ops.Stack, ops.Split,
                ops.StridedSlice, ops.Gather, ops.Softmax, ops.LogSoftmax, ops.Cast, ops.OneHot,
                ops.Select, ops.Tile, ops.BroadcastTo, ops.AddN):
        assert rule_of("batch", cls) is not None, cls.__name__
    assert rule_of("batch", ops.GatherD) is None
    # the rule path: one BatchMatMul (w given a leading 1), no per-element Unstack / Stack
    graph = _traced(ms.vmap(lambda a, w: ops.matmul(a, w), (0, None)), X, M)
    assert [n.op for n in graph.nodes] == ["ExpandDims", "BatchMatMul"]
    graph = _traced(ms.vmap(lambda a, i: ops.gather_elements(a, 0, i), (0, None)),
                    X, IDX[:2, :1].repeat(5, 1).astype(np.int32))
    ops_used = [n.op for n in graph.nodes]
    assert ops_used.count("GatherD") == 4 and "Unstack" in ops_used and "Stack" in ops_used


def _traced(fn, *arrays) -> Graph:
    """The graph ms.jit compiles for fn (the ops vmap emitted, as ordinary primitives)."""
    from msops.graph.tracer import trace
    return trace(fn, [Tensor(a) for a in arrays])


def test_out_axes_nested_inputs_and_outputs():
    a, b, c = rand(3, 4), rand(4, 3), rand(2)

    def fn(pair, scale):
        x, y = pair
        return (x + y * scale, ops.sum(x)), scale * 2.0

    v = ms.vmap(fn, in_axes=((0, 1), None), out_axes=((1, 0), None))
    for out in eager_and_compiled(lambda p0, p1, s: v((p0, p1), s), a, b, c[:1]):
        (s, t), u = out
        same(s, (a + b.T * c[0]).T)
        same(t, a.sum(1))
        same(u, c[:1] * 2)


def test_an_unmapped_output_is_repeated_along_an_int_out_axis():
    x, w = rand(3, 4), rand(4)
    out = ms.vmap(lambda a, b: (a * b, b * 2.0), (0, None), (0, -1))(Tensor(x), Tensor(w))
    same(out[0], x * w)
    same(out[1], np.repeat((w * 2)[:, None], 3, 1))


def test_list_in_axes_and_a_list_argument():
    xs = [rand(2, 3), rand(3, 2)]
    out = ms.vmap(lambda l: l[0] - l[1], in_axes=([0, 1],))(xs)
    same(out, xs[0] - xs[1].T)


def test_nested_vmap_outer_product_and_a_captured_value():
    x, y = rand(3), rand(4)
    outer = ms.vmap(ms.vmap(lambda a, b: a * b, (None, 0)), (0, None))
    for out in eager_and_compiled(outer, x, y):
        same(out, np.outer(x, y))
    # the inner function reads the outer one's mapped value
    cap = ms.vmap(lambda a, ys: ms.vmap(lambda b: ops.sin(a) + b)(ys), (0, None))
    for out in eager_and_compiled(cap, x, y):
        same(out, np.sin(x)[:, None] + y[None])
    deep = ms.vmap(ms.vmap(ms.vmap(lambda a: a * 3.0)))
    same(deep(Tensor(X)), X * 3)


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(rand(5, 4)), name="w")
        self.b = Parameter(Tensor(rand(4)), name="b")

    def construct(self, x):
        return ops.softmax(ops.tanh(ops.matmul(x, self.w) + self.b))


def mlp_np(net, x):
    return softmax_np(np.tanh(x @ net.w.asnumpy() + net.b.asnumpy()))


def test_a_cell_with_parameters_is_mapped_over_its_input_only():
    net = Mlp()
    x = rand(6, 5)
    for out in eager_and_compiled(ms.vmap(net), x):
        same(out, loop(lambda e: mlp_np(net, e), (x,), 0))
    xt = np.ascontiguousarray(x.T)
    same(ms.vmap(net, in_axes=1, out_axes=1)(Tensor(xt)), mlp_np(net, x).T)


def loss(x, w):
    return ops.sum(ops.tanh(ops.matmul(ops.expand_dims(x, 0), w)) ** 2)


def loss_np(x, w):
    return np.sum(np.tanh(x[None] @ w) ** 2)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_per_example_gradients_match_central_differences(mode):
    ms.set_context(mode=mode)
    xs, w = rand(5, 3), rand(3, 2)
    want = np.stack([finite_differences(lambda ww: loss_np(x.astype(np.float64), ww),
                                        w.astype(np.float64)) for x in xs])
    per_example = ms.vmap(ms.grad(loss, grad_position=1), (0, None))
    same(per_example(Tensor(xs), Tensor(w)), want, 1e-4)
    same(ms.jit(lambda a, b: per_example(a, b))(Tensor(xs), Tensor(w)), want, 1e-4)
    # both inputs' gradients, and the value with them
    vg = ms.vmap(ms.value_and_grad(loss, grad_position=(0, 1)), (0, None))
    value, (gx, gw) = vg(Tensor(xs), Tensor(w))
    same(value, np.array([loss_np(x, w) for x in xs]))
    same(gw, want, 1e-4)
    same(gx, np.stack([finite_differences(lambda xx: loss_np(xx, w.astype(np.float64)),
                                          x.astype(np.float64)) for x in xs]), 1e-4)


def test_per_example_gradients_of_a_cell_weights():
    net = Mlp()
    xs = rand(4, 5)
    weights = net.trainable_params()
    grads = ms.vmap(ms.grad(lambda x: ops.sum(net(x) * ops.arange(4.0)), None, weights))(
        Tensor(xs))
    for k, x in enumerate(xs):
        one = ms.grad(lambda x: ops.sum(net(x) * ops.arange(4.0)), None, weights)(Tensor(x))
        for g, o in zip(grads, one):
            same(g[k], o.asnumpy(), 1e-5)
    w0 = net.w.asnumpy().astype(np.float64)
    fd = finite_differences(lambda w: (softmax_np(np.tanh(xs[1] @ w + net.b.asnumpy()))
                                       * np.arange(4.0)).sum(), w0)
    same(grads[0][1], fd, 1e-4)
    # grad of vmap: the weights' gradient of the batch's total, in both modes
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        total = ms.grad(lambda x: ops.sum(ms.vmap(net)(x) * ops.arange(4.0)), None, weights)(
            Tensor(xs))
        for t, g in zip(total, grads):
            same(t, g.asnumpy().sum(0), 1e-5)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_grad_of_vmap(mode):
    ms.set_context(mode=mode)
    xs, w = rand(5, 3), rand(3, 2)
    batched = lambda ww, a: ops.sum(ms.vmap(loss, (0, None))(a, ww) * ops.arange(5.0))
    want = finite_differences(
        lambda ww: sum(k * loss_np(x.astype(np.float64), ww) for k, x in enumerate(xs)),
        w.astype(np.float64))
    same(ms.grad(batched)(Tensor(w), Tensor(xs)), want, 1e-4)
    # the weight captured by the mapped function, not passed to vmap
    captured = lambda ww: ops.sum(ms.vmap(lambda x: loss(x, ww))(Tensor(xs)) * ops.arange(5.0))
    same(ms.grad(captured)(Tensor(w)), want, 1e-4)
    same(ms.jit(lambda ww, a: ms.grad(batched)(ww, a))(Tensor(w), Tensor(xs)), want, 1e-4)


def test_random_draws_differ_per_element():
    ms.set_seed(5)
    out = ms.vmap(lambda x: x + ops.standard_normal((3,)))(Tensor(np.zeros((4, 3), np.float32)))
    rows = out.asnumpy()
    assert len({tuple(r) for r in rows}) == 4
    assert abs(rows.mean()) < 1.5 and 0.2 < rows.std() < 3
    drop = ms.vmap(lambda x: ops.dropout(x, p=0.5))(Tensor(np.ones((6, 40), np.float32)))
    kept = drop.asnumpy() != 0
    assert len({tuple(r) for r in kept}) == 6
    np.testing.assert_allclose(drop.asnumpy()[kept], 2.0)
    # compiled: every element its own draws, and new ones on every run
    step = ms.jit(lambda x: ms.vmap(lambda r: ops.dropout(r, p=0.5) +
                                    ops.standard_normal((40,)))(x))
    first, second = (step(Tensor(np.ones((5, 40), np.float32))).asnumpy() for _ in range(2))
    assert len({tuple(r) for r in first}) == 5 and np.abs(first - second).max() > 0


def test_errors_in_mindspore_form():
    x, y = Tensor(rand(3, 4)), Tensor(rand(5, 4))
    f = lambda a, b: a + b
    with pytest.raises(ValueError, match=r"For 'vmap', the 'in_axes' of the arguments\[0\] "
                                         r"should be in range \[-2, 2\).*got 2"):
        ms.vmap(f, (2, 0))(x, x)
    with pytest.raises(ValueError, match="one entry per positional argument: 2, but got 3"):
        ms.vmap(f, (0, 0, 0))(x, x)
    with pytest.raises(ValueError, match=r"should match its structure: 2 items, but got 1"):
        ms.vmap(lambda p: p[0] + p[1], ((0,),))((x, x))
    with pytest.raises(ValueError, match=r"should all have one size, but got 3 \(input 0, axis "
                                         r"0\), 5 \(input 1, axis 0\)"):
        ms.vmap(f)(x, y)
    with pytest.raises(ValueError, match="at least one input should be mapped"):
        ms.vmap(f, None)(x, x)
    with pytest.raises(TypeError, match="the 'in_axes' should be an int, None, or a tuple"):
        ms.vmap(f, 1.0)
    with pytest.raises(TypeError, match="the 'fn' should be a function, a Cell or a CellList"):
        ms.vmap(3)
    with pytest.raises(ValueError, match="only a Tensor can be mapped"):
        ms.vmap(lambda a, s: a * s)(x, 2.0)
    with pytest.raises(ValueError, match="'out_axes' of output 0 is None"):
        ms.vmap(lambda a: a * 2, out_axes=None)(x)
    with pytest.raises(ValueError, match=r"the 'out_axes' of output 0 should be in range "
                                         r"\[-2, 2\)"):
        ms.vmap(lambda a: a * 2, out_axes=3)(x)


def test_ops_vmap_is_ms_vmap():
    assert ops.vmap is ms.vmap


@pytest.mark.parametrize("jac", [ms.jacrev, ms.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobians_are_one_mapped_product_not_a_loop(jac):
    from msops.graph.tracer import trace
    fn = lambda x: ops.sin(x) * ops.sum(x)
    sizes = []
    for n in (3, 12):
        x = rand(n)
        graph = trace(lambda t: jac(fn)(t), [Tensor(x)])
        sizes.append(len(graph.nodes))
        want = np.diag(np.cos(x) * x.sum()) + np.sin(x)[:, None]
        same(ms.jit(lambda t: jac(fn)(t))(Tensor(x)), want, 1e-5)
        same(jac(fn)(Tensor(x)), want, 1e-5)
    assert sizes[0] == sizes[1]          # the graph does not grow with the element count


def test_a_cell_list_maps_each_cell_on_its_element():
    nets = [Mlp() for _ in range(3)]
    cells = nn.CellList(nets)
    x = rand(3, 2, 5)
    want = np.stack([mlp_np(n, e) for n, e in zip(nets, x)])
    for out in eager_and_compiled(ms.vmap(cells), x):
        same(out, want)
    shared = rand(2, 5)                          # every model on the same data
    same(ms.vmap(cells, in_axes=None)(Tensor(shared)),
         np.stack([mlp_np(n, shared) for n in nets]))
    # per-model gradients through the stacked Parameters
    weights = [n.w for n in nets]
    grads = ms.grad(lambda a: ops.sum(ms.vmap(cells)(a)[:, :, 0]), None, weights)(Tensor(x))
    for n, e, g in zip(nets, x, grads):
        fd = finite_differences(lambda w: softmax_np(np.tanh(e.astype(np.float64) @ w +
                                                             n.b.asnumpy()))[:, 0].sum(),
                                n.w.asnumpy().astype(np.float64))
        same(g, fd, 1e-4)
    with pytest.raises(ValueError, match=r"should have the size of the CellList: 3 cells, but "
                                         r"got 4 \(input 0, axis 0\)"):
        ms.vmap(cells)(Tensor(rand(4, 2, 5)))
    odd = nn.CellList([Mlp(), nn.Dense(5, 4)])
    with pytest.raises(ValueError, match="the cells of the CellList should have the same "
                                         "structure"):
        ms.vmap(odd)(Tensor(rand(2, 2, 5)))


def test_per_example_gradients_through_layer_norm():
    ln = nn.LayerNorm((5,))
    x = rand(4, 3, 5)
    loss = lambda a: ops.sum(ln(a) ** 3)
    weights = ln.trainable_params()
    per_example = ms.vmap(ms.grad(loss, None, weights))(Tensor(x))
    for k, e in enumerate(x):
        for got, one in zip(per_example, ms.grad(loss, None, weights)(Tensor(e))):
            same(got[k], one.asnumpy(), 1e-4)
