"""nn.Cell's MindSpore methods beyond construct/shard: bookkeeping, flags, set_inputs,
PYNATIVE hooks, to_float, recompute and set_comm_fusion -- against numpy references and
hand-computed gradients, eager and compiled."""
from collections import OrderedDict

import numpy as np
import pytest
from numeric import finite_differences

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import init, release

MODES = [ms.PYNATIVE_MODE, ms.GRAPH_MODE]
RNG = np.random.RandomState(7)


def _t(a):
    return Tensor(np.asarray(a, np.float32))


class Affine(nn.Cell):
    """y = x * w + b, elementwise (a hand-differentiable cell)."""

    def __init__(self, n=3, w=2.0, b=0.5):
        super().__init__()
        self.w = Parameter(_t(np.full(n, w)), "w")
        self.b = Parameter(_t(np.full(n, b)), "b")

    def construct(self, x):
        return x * self.w + self.b


class Chain(nn.Cell):
    def __init__(self):
        super().__init__()
        self.first = Affine(3, 2.0, 0.5)
        self.second = Affine(3, 3.0, -1.0)

    def construct(self, x):
        return ops.ReduceSum()(self.second(self.first(x)))


# -- bookkeeping ------------------------------------------------------------------------

def test_parameters_dict_names_parameters_in_order_and_recurse_false_keeps_own():
    net = Chain()
    own = Parameter(_t([1.0]), "scale")
    net.insert_param_to_cell("scale", own)
    d = net.parameters_dict()
    assert isinstance(d, OrderedDict)
    assert list(d) == ["scale", "first.w", "first.b", "second.w", "second.b"]
    assert d["first.w"] is net.first.w
    assert list(net.parameters_dict(recurse=False)) == ["scale"]


def test_insert_param_to_cell_registers_a_parameter_the_construct_reads():
    class Scaled(nn.Cell):
        def construct(self, x):
            return ops.ReduceSum()(x * self.k)

    net = Scaled()
    p = Parameter(_t([1.0, 2.0]), name=None)
    net.insert_param_to_cell("k", p)
    assert p.name == "k" and net.k is p and list(net.parameters_dict()) == ["k"]
    x = _t([3.0, 4.0])
    for mode in MODES:
        ms.set_context(mode=mode)
        assert float(net(x).asnumpy()) == pytest.approx(11.0)
        (gk,) = ms.grad(net, None, [p])(x)
        np.testing.assert_allclose(gk.asnumpy(), [3.0, 4.0])


def test_insert_param_to_cell_errors_name_the_method():
    net = Affine()
    with pytest.raises(KeyError, match="insert_param_to_cell.*should not contain '.'"):
        net.insert_param_to_cell("a.b", Parameter(_t([1.0]), "x"))
    net.insert_param_to_cell("a.b", Parameter(_t([1.0]), "x"), check_name_contain_dot=False)
    assert "x" in net.parameters_dict()
    with pytest.raises(KeyError, match="insert_param_to_cell.*non-empty"):
        net.insert_param_to_cell("", Parameter(_t([1.0]), "y"))
    with pytest.raises(TypeError, match="insert_param_to_cell.*Parameter or None, but got Tensor"):
        net.insert_param_to_cell("t", _t([1.0]))
    with pytest.raises(KeyError, match="insert_param_to_cell.*'training'.*not a Parameter"):
        net.insert_param_to_cell("training", Parameter(_t([1.0]), "z"))


def test_apply_visits_sub_cells_first_then_self_and_returns_self():
    net = Chain()
    seen = []
    assert net.apply(lambda c: seen.append(c)) is net
    assert seen == [net.first, net.second, net]

    def init_affine(c):
        if isinstance(c, Affine):
            c.w.set_data(np.ones(3, np.float32))
    net.apply(init_affine)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert float(net(Tensor(x)).asnumpy()) == pytest.approx(np.sum((x + 0.5) - 1.0))


def test_flags_set_read_and_recurse():
    net = Chain()
    assert net.add_flags(loop_can_unroll=True) is net
    assert net.get_flags() == {"loop_can_unroll": True} and net.loop_can_unroll is True
    net.add_flags_recursive(k=3)
    assert net.first.get_flags() == {"k": 3} and net.second.k == 3
    assert net.get_flags() == {"loop_can_unroll": True, "k": 3}
    net.second.add_flags(fp16=True)             # MindSpore's mixed-precision flag
    assert net.second._mixed_type == ms.float16 and net.first._mixed_type is None


def test_init_parameters_data_maps_each_parameter_to_itself():
    net = Chain()
    d = net.init_parameters_data(auto_parallel_mode=False)
    assert list(d) == list(net.get_parameters()) and all(k is v for k, v in d.items())


def test_update_parameters_name_recurse():
    net = Chain()
    net.insert_param_to_cell("own", Parameter(_t([0.0]), "own"))
    net.update_parameters_name("top.", recurse=False)
    assert [p.name for p in net.get_parameters()] == \
        ["top.own", "first.w", "first.b", "second.w", "second.b"]
    net.update_parameters_name("n.")
    assert net.first.w.name == "n.first.w" and net.own.name == "n.top.own"
    with pytest.raises(TypeError, match="update_parameters_name.*'prefix' should be a str"):
        net.update_parameters_name(1)


# -- set_inputs ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_set_inputs_free_dims_accept_and_fixed_rank_dtype_dims_are_checked(mode):
    ms.set_context(mode=mode)
    net = nn.Dense(3, 2)
    assert net.get_inputs() is None
    decl = Tensor(shape=[None, 3], dtype=ms.float32)
    net.set_inputs(decl)
    assert net.get_inputs() == (decl,)
    w, b = net.weight.asnumpy(), net.bias.asnumpy()
    for rows in (1, 4):                        # the free dim takes any length
        x = RNG.randn(rows, 3).astype(np.float32)
        np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x @ w.T + b, rtol=1e-5)
    with pytest.raises(ValueError, match=r"For 'Dense', set_inputs declared input 0 of shape "
                                         r"\[None, 3\].*got \[4, 5\]"):
        net(Tensor(np.ones((4, 5), np.float32)))
    with pytest.raises(ValueError, match=r"shape \[None, 3\].*got \[2, 2, 3\]"):
        net(Tensor(np.ones((2, 2, 3), np.float32)))
    with pytest.raises(TypeError, match="declared input 0 of dtype Float32, but the call got "
                                        "Float16"):
        net(Tensor(np.ones((4, 3), np.float16)))
    with pytest.raises(ValueError, match="declared 1 input.*got 2"):
        net(Tensor(np.ones((4, 3), np.float32)), Tensor(np.ones((4, 3), np.float32)))


def test_set_inputs_any_rank_and_bad_declarations():
    class Sum(nn.Cell):
        def construct(self, x):
            return ops.ReduceSum()(x)

    net = Sum()
    net.set_inputs(Tensor(shape=[-2], dtype=ms.float32))
    assert float(net(Tensor(np.ones((2, 3, 4), np.float32))).asnumpy()) == 24.0
    with pytest.raises(TypeError, match="'Sum.set_inputs', the input 0 should be a Tensor"):
        net.set_inputs(object())
    with pytest.raises(ValueError, match="'Sum.set_inputs', at least one input"):
        net.set_inputs()


# -- hooks ----------------------------------------------------------------------------------

def test_forward_pre_hook_replaces_inputs_forward_hook_replaces_output_and_remove():
    net = Affine(3, 2.0, 0.5)
    x = np.array([1.0, -1.0, 2.0], np.float32)
    seen = []
    h1 = net.register_forward_pre_hook(lambda cell, args: (args[0] * 10,))
    h2 = net.register_forward_hook(
        lambda cell, args, out: seen.append((cell, args[0].asnumpy(), out.asnumpy())) or out + 1)
    got = net(Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, x * 10 * 2 + 0.5 + 1)
    assert seen[0][0] is net
    np.testing.assert_allclose(seen[0][1], x * 10)          # the hook sees the new args
    np.testing.assert_allclose(seen[0][2], x * 10 * 2 + 0.5)
    h1.remove()
    h1.remove()                                               # twice: nothing more
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x * 2 + 0.5 + 1)
    h2.remove()
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), x * 2 + 0.5)


def test_hooks_with_kwargs_see_and_replace_keyword_arguments():
    class Sub(nn.Cell):
        def construct(self, x, y=1.0):
            return x - y

    net = Sub()
    calls = []
    net.register_forward_pre_hook(lambda c, args, kw: (args, {"y": kw.get("y", 1.0) * 2}),
                                  with_kwargs=True)
    net.register_forward_hook(lambda c, args, kw, out: calls.append(kw) or out * 3,
                              with_kwargs=True)
    out = net(_t([5.0]), y=_t([1.5]))
    np.testing.assert_allclose(out.asnumpy(), [(5.0 - 3.0) * 3])
    np.testing.assert_allclose(calls[0]["y"].asnumpy(), [3.0])


def test_forward_pre_hook_bad_return_type():
    bad = Affine()
    bad.register_forward_pre_hook(lambda c, a, k: 1, with_kwargs=True)
    with pytest.raises(TypeError, match="register_forward_pre_hook"):
        bad(_t([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="register_forward_hook.*'hook_fn' should be a function"):
        bad.register_forward_hook(3)


def test_backward_hook_sees_input_and_output_gradients_and_replaces_the_inputs():
    """loss = sum(second(first(x))), first: x*w1+b1, second: h*w2+b2 (elementwise)."""
    net = Chain()
    x = np.array([1.0, -2.0, 0.5], np.float32)
    w1, w2 = 2.0, 3.0
    seen = {}

    def hook(cell, grad_input, grad_output):
        seen["cell"], seen["in"], seen["out"] = cell, grad_input, grad_output
        return (grad_input[0] * 0 + 10.0,)

    handle = net.second.register_backward_hook(hook)
    params = [net.first.w, net.first.b, net.second.w, net.second.b]
    gx, (gw1, gb1, gw2, gb2) = ms.grad(net, 0, params)(Tensor(x))
    assert seen["cell"] is net.second
    np.testing.assert_allclose(seen["out"][0].asnumpy(), np.ones(3))          # d loss / d out
    np.testing.assert_allclose(seen["in"][0].asnumpy(), np.full(3, w2))      # d loss / d h
    # upstream of the hook the replaced gradient (10) flows: through first
    np.testing.assert_allclose(gw1.asnumpy(), 10.0 * x)
    np.testing.assert_allclose(gb1.asnumpy(), np.full(3, 10.0))
    np.testing.assert_allclose(gx.asnumpy(), np.full(3, 10.0 * w1))
    # the hooked cell's own Parameters are not behind its input: unchanged
    np.testing.assert_allclose(gw2.asnumpy(), x * w1 + 0.5)
    np.testing.assert_allclose(gb2.asnumpy(), np.ones(3))
    handle.remove()
    gx, _ = ms.grad(net, 0, params)(Tensor(x))
    np.testing.assert_allclose(gx.asnumpy(), np.full(3, w1 * w2))


def test_backward_pre_hook_replaces_the_output_gradient():
    net = Chain()
    x = np.array([1.0, -2.0, 0.5], np.float32)
    got = []
    net.second.register_backward_pre_hook(lambda cell, g: got.append(g) or (g[0] * 2,))
    params = [net.first.w, net.second.w]
    gx, (gw1, gw2) = ms.grad(net, 0, params)(Tensor(x))
    np.testing.assert_allclose(got[0][0].asnumpy(), np.ones(3))
    np.testing.assert_allclose(gw2.asnumpy(), 2 * (x * 2.0 + 0.5))     # the cell's own too
    np.testing.assert_allclose(gw1.asnumpy(), 2 * 3.0 * x)
    np.testing.assert_allclose(gx.asnumpy(), np.full(3, 2 * 3.0 * 2.0))
    net.second.register_backward_pre_hook(lambda cell, g: (Tensor(np.ones(2, np.float32)),))
    with pytest.raises(ValueError, match="register_backward_pre_hook.*should return None or 1 "
                                         r"Tensor\(s\) of shapes \[\[3\]\]"):
        ms.grad(net, 0)(Tensor(x))


def test_backward_hook_matches_finite_differences_without_replacement():
    """A hook returning None changes nothing: the gradient is the function's own."""
    net = nn.SequentialCell([nn.Dense(3, 4), nn.Tanh(), nn.Dense(4, 1)])
    net[1].register_backward_hook(lambda c, gi, go: None)
    x = RNG.randn(2, 3).astype(np.float32)
    w1, b1 = net[0].weight.asnumpy().astype(np.float64), net[0].bias.asnumpy().astype(np.float64)
    w2, b2 = net[2].weight.asnumpy().astype(np.float64), net[2].bias.asnumpy().astype(np.float64)

    def f(v):
        return np.tanh(v @ w1.T + b1) @ w2.T + b2
    gx = ms.grad(net)(Tensor(x)).asnumpy()
    np.testing.assert_allclose(gx, finite_differences(f, x.astype(np.float64)), rtol=1e-4,
                               atol=1e-6)


def test_hooks_in_graph_mode_are_not_run_with_a_warning():
    net = Affine(3, 2.0, 0.5)
    net.register_forward_hook(lambda c, a, o: o * 100)        # registered in PYNATIVE_MODE
    x = np.array([1.0, 2.0, 3.0], np.float32)
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.warns(UserWarning, match="run in PYNATIVE_MODE only"):
        out = net(Tensor(x))
    np.testing.assert_allclose(out.asnumpy(), x * 2 + 0.5)   # as MindSpore: not run
    with pytest.warns(UserWarning, match="register_forward_pre_hook.*nothing is registered"):
        handle = net.register_forward_pre_hook(lambda c, a: (a[0] * 0,))
    handle.remove()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), (x * 2 + 0.5) * 100)


def test_hooks_under_jit_in_pynative_are_not_run_with_a_warning():
    net = Affine(3, 2.0, 0.5)
    net.register_forward_hook(lambda c, a, o: o * 100)

    @ms.jit
    def f(x):
        return net(x)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    with pytest.warns(UserWarning, match="not in GRAPH_MODE or under ms.jit"):
        np.testing.assert_allclose(f(Tensor(x)).asnumpy(), x * 2 + 0.5)


# -- to_float -------------------------------------------------------------------------------

def _f16(a):
    return np.asarray(a).astype(np.float16)


class ConvNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, pad_mode="valid", has_bias=True, weight_init="normal",
                              bias_init="normal")
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.dense = nn.Dense(3 * 2 * 2, 2)

    def construct(self, x):
        return self.dense(self.flatten(self.relu(self.conv(x))))


def _conv_ref(x, w, b):
    """valid 2-D cross-correlation, NCHW / OIHW, in x's dtype."""
    n, _, hh, ww = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, hh - kh + 1, ww - kw + 1), x.dtype)
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,ochw->no", x[:, :, i:i + kh, j:j + kw], w)
    return out + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("mode", MODES)
def test_to_float16_conv_dense_net_matches_a_float16_reference_and_grads_reach_float32(mode):
    ms.set_context(mode=mode)
    ms.set_seed(1)
    net = ConvNet()
    assert net.to_float(ms.float16) is net
    x = RNG.randn(2, 2, 4, 4).astype(np.float32)
    out = net(Tensor(x))
    assert out.dtype == ms.float16
    wc, bc = _f16(net.conv.weight.asnumpy()), _f16(net.conv.bias.asnumpy())
    wd, bd = _f16(net.dense.weight.asnumpy()), _f16(net.dense.bias.asnumpy())
    h = np.maximum(_conv_ref(_f16(x), wc, bc), 0).reshape(2, -1)
    ref = h @ wd.T + bd
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), ref.astype(np.float32),
                               rtol=2e-2, atol=2e-2)
    params = net.trainable_params()
    grads = ms.grad(lambda v: ops.ReduceSum()(ops.Cast()(net(v), ms.float32)), None,
                    params)(Tensor(x))
    assert [g.dtype for g in grads] == [ms.float32] * 4
    assert all(p.dtype == ms.float32 for p in params)       # the Parameters stay float32
    # d sum / d dense.bias = batch size; d / d dense.weight = sum over the batch of h
    np.testing.assert_allclose(grads[3].asnumpy(), [2.0, 2.0])
    np.testing.assert_allclose(grads[2].asnumpy(),
                               np.tile(h.astype(np.float32).sum(0), (2, 1)), rtol=2e-2,
                               atol=2e-2)


@pytest.mark.parametrize("mode", MODES)
def test_to_float_casts_constant_tensors_and_a_sub_cell_keeps_its_own_type(mode):
    ms.set_context(mode=mode)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.scale = Tensor(np.array([1.0 + 2 ** -12], np.float32))   # not a float16
            self.bn = nn.BatchNorm1d(2)
            self.dense = nn.Dense(2, 2)

        def construct(self, x):
            h = x * self.scale
            b = self.bn(h)
            return self.dense(b), h, b

    net = Net()
    fine = np.array([1.0 + 2 ** -12, 2.0 - 2 ** -11], np.float32)   # not float16 values
    net.bn.gamma.set_data(fine)
    net.to_float(ms.float16)
    net.bn.to_float(ms.float32)
    x = RNG.randn(4, 2).astype(np.float32)
    out, h, b = net(Tensor(x))
    assert h.dtype == ms.float16 and out.dtype == ms.float16 and b.dtype == ms.float32
    # the constant read in float16 rounds 1 + 2**-12 to 1
    np.testing.assert_array_equal(h.asnumpy(), _f16(x))
    # BatchNorm (inference: moving mean 0, variance 1) in float32 with its float32 gamma
    ref = _f16(x).astype(np.float32) / np.sqrt(np.float32(1 + 1e-5)) * fine
    np.testing.assert_allclose(b.asnumpy(), ref, rtol=1e-6)
    if mode == ms.PYNATIVE_MODE:
        seen = []
        net.bn.register_forward_hook(lambda c, a, o: seen.append((a[0].dtype, o.dtype)))
        net(Tensor(x))
        assert seen == [(ms.float16, ms.float32)]     # BatchNorm computes in float32


@pytest.mark.parametrize("mode", MODES)
def test_to_float16_batchnorm_training_writes_its_float32_statistics(mode):
    """A Parameter written in place keeps its dtype: the batch mean (computed in float16)
    is converted to the float32 moving mean."""
    ms.set_context(mode=mode)
    bn = nn.BatchNorm1d(3, momentum=0.9)
    bn.set_train()
    bn.to_float(ms.float16)
    x = RNG.randn(8, 3).astype(np.float32)
    out = bn(Tensor(x))
    assert out.dtype == ms.float16 and bn.moving_mean.dtype == ms.float32
    x16 = _f16(x).astype(np.float32)
    np.testing.assert_allclose(bn.moving_mean.asnumpy(), 0.1 * x16.mean(0), rtol=1e-2,
                               atol=1e-3)
    ref = (x16 - x16.mean(0)) / np.sqrt(x16.var(0) + 1e-5)
    np.testing.assert_allclose(out.asnumpy().astype(np.float32), ref, rtol=1e-2, atol=1e-2)


def test_to_float_is_part_of_the_tree_key_and_checks_dst_type():
    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.Dense(3, 2)
    x = Tensor(RNG.randn(4, 3).astype(np.float32))
    assert net(x).dtype == ms.float32
    net.to_float(ms.float16)
    assert net(x).dtype == ms.float16
    net.to_float(ms.bfloat16)
    assert net(x).dtype == ms.bfloat16
    net.to_float(ms.float32)          # casts float inputs to float32: a graph of its own
    assert net(x).dtype == ms.float32
    assert net._compile_cache.traces == 4
    net.to_float(ms.float16)
    assert net(x).dtype == ms.float16
    assert net._compile_cache.traces == 4        # the float16 graph again: no retrace
    with pytest.raises(ValueError, match=r"For 'Dense.to_float', the 'dst_type' should be one "
                                         r"of .*but got Int32"):
        net.to_float(ms.int32)


@pytest.mark.parametrize("mode", MODES)
def test_to_float16_training_step_lowers_the_loss_of_float32_parameters(mode):
    ms.set_context(mode=mode)
    ms.set_seed(3)
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 1)])
    net.to_float(ms.float16)
    loss_net = nn.WithLossCell(nn.SequentialCell([net, _ToFloat32()]), nn.MSELoss())
    step = nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), 0.05))
    x = RNG.randn(16, 4).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [1.5]], np.float32)).astype(np.float32)
    before = net[0].weight.asnumpy().copy()
    losses = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
    assert net[0].weight.dtype == ms.float32 and not np.array_equal(before,
                                                                    net[0].weight.asnumpy())


class _ToFloat32(nn.Cell):
    def construct(self, x):
        return ops.Cast()(x, ms.float32)


# -- recompute, set_comm_fusion ------------------------------------------------------------

class Block(nn.Cell):
    """Dense(d, 4d) -> Tanh -> [Dropout] -> Dense(4d, d): wide inner activations."""

    def __init__(self, d, dropout=False):
        super().__init__()
        self.a, self.t, self.b = nn.Dense(d, 4 * d), nn.Tanh(), nn.Dense(4 * d, d)
        self.drop = nn.Dropout(p=0.5) if dropout else None

    def construct(self, x):
        h = self.t(self.a(x))
        if self.drop is not None:
            h = self.drop(h)
        return self.b(h)


def _blocks(recompute, dropout=False):
    ms.set_seed(0)
    net = nn.SequentialCell([Block(16, dropout) for _ in range(4)])
    net.set_train(dropout)
    if recompute:
        for block in net:
            block.recompute()
    return net


def _value_and_grads(net, x):
    gf = ms.value_and_grad(lambda v: ops.ReduceSum()(net(v)), 0, net.trainable_params())
    ms.set_seed(5)                       # the same dropout draws for both nets
    out, (gx, grads) = gf(x)
    graph, executor = next(iter(gf._cache._entries.values()))
    return out.asnumpy(), [gx.asnumpy()] + [g.asnumpy() for g in grads], graph, executor


def _compare_recompute(plain, marked, x):
    """value_and_grad of both nets compiled: the same outputs and gradients, and the
    recomputed forward in the marked one's backward (more MatMuls); (graph, executor) each."""
    out0, grads0, graph0, exe0 = _value_and_grads(plain, x)
    out1, grads1, graph1, exe1 = _value_and_grads(marked, x)
    np.testing.assert_array_equal(out1, out0)
    for a, b in zip(grads1, grads0):
        np.testing.assert_array_equal(a, b)

    def matmuls(g):
        return sum(n.op == "MatMul" for n in g.nodes)
    assert matmuls(graph1) > matmuls(graph0)
    return graph0, exe0, graph1, exe1


@pytest.mark.parametrize("dropout", [False, True])
def test_recompute_keeps_outputs_and_gradients_and_lowers_the_planned_bytes(dropout):
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(RNG.randn(64, 16).astype(np.float32))
    graph0, exe0, graph1, exe1 = _compare_recompute(_blocks(False, dropout),
                                                    _blocks(True, dropout), x)
    if dropout:             # a random draw is never made twice: its output is kept instead
        assert [sum(n.op == "Dropout" for n in g.nodes) for g in (graph0, graph1)] == [4, 4]
    else:
        assert sum(exe1.plan.nbytes) < 0.75 * sum(exe0.plan.nbytes)


def test_recompute_training_step_matches_and_pynative_is_unchanged():
    x = Tensor(RNG.randn(8, 16).astype(np.float32))
    y = Tensor(RNG.randn(8, 16).astype(np.float32))
    weights = []
    for rec in (False, True):
        ms.set_context(mode=ms.GRAPH_MODE)
        net = _blocks(rec)
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.SGD(net.trainable_params(), 0.1))
        for _ in range(3):
            step(x, y)
        weights.append([p.asnumpy().copy() for p in net.trainable_params()])
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    out0, grads0, _, _ = _pynative_value_and_grads(_blocks(False), x)
    out1, grads1, _, _ = _pynative_value_and_grads(_blocks(True), x)
    np.testing.assert_array_equal(out1, out0)
    for a, b in zip(grads1, grads0):
        np.testing.assert_array_equal(a, b)


def _pynative_value_and_grads(net, x):
    out, (gx, grads) = ms.value_and_grad(lambda v: ops.ReduceSum()(net(v)), 0,
                                         net.trainable_params())(x)
    return out.asnumpy(), [gx.asnumpy()] + [g.asnumpy() for g in grads], None, None


class BlockChain(nn.Cell):
    """Four Blocks, each called through ms.recompute(block, x) when `functional`."""

    def __init__(self, functional):
        super().__init__()
        ms.set_seed(0)
        self.blocks = nn.CellList([Block(16) for _ in range(4)])
        self.functional = functional

    def construct(self, x):
        for block in self.blocks:
            x = ms.recompute(block, x) if self.functional else block(x)
        return x


def test_functional_recompute_marks_the_call():
    """MindSpore 2.3+'s `ms.recompute(block, *args)`: compiled, the call's forward is
    re-emitted in the backward (same numbers, fewer bytes kept); eagerly, the same numbers."""
    x = Tensor(RNG.randn(64, 16).astype(np.float32))
    ms.set_context(mode=ms.GRAPH_MODE)
    _, exe0, _, exe1 = _compare_recompute(BlockChain(False), BlockChain(True), x)
    assert sum(exe1.plan.nbytes) < 0.75 * sum(exe0.plan.nbytes)
    compiled = _value_and_grads(BlockChain(False), x)[0]
    ms.set_context(mode=ms.PYNATIVE_MODE)
    eager, _, _, _ = _pynative_value_and_grads(BlockChain(True), x)
    np.testing.assert_allclose(eager, compiled, rtol=1e-6, atol=1e-5)
    with pytest.raises(TypeError, match="For 'recompute', the 'block' should be a Cell, but "
                                        "got function"):
        ms.recompute(lambda v: v, x)
    with pytest.raises(TypeError, match="use_reentrant"):
        ms.recompute(Block(16), x, use_reentrant=1)


def test_recompute_records_options_and_checks_them():
    net = Chain()
    net.recompute(recompute_slice_activation=True)
    assert net.first._recompute == {"mp_comm_recompute": True,
                                    "parallel_optimizer_comm_recompute": False,
                                    "recompute_slice_activation": True}
    ms.set_context(mode=ms.GRAPH_MODE)        # a mark after a compile compiles anew
    net = _blocks(False)
    x = Tensor(RNG.randn(64, 16).astype(np.float32))
    gf = ms.grad(lambda v: ops.ReduceSum()(net(v)), None, net.trainable_params())
    gf(x)
    before = len(next(iter(gf._cache._entries.values()))[0].nodes)
    for block in net:
        block.recompute()
    gf(x)
    assert gf._cache.traces == 2
    assert len(next(iter(gf._cache._entries.values()))[0].nodes) > before
    with pytest.raises(ValueError, match="For 'recompute', the keyword 'fast' is not "
                                         "recognized"):
        net.recompute(fast=True)
    with pytest.raises(TypeError, match="For 'recompute', the 'mp_comm_recompute' should be a "
                                        "bool"):
        net.recompute(mp_comm_recompute=1)


def _gradient_allreduces(fuse_second):
    init("simulation", world_size=4, rank=1)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=4)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        ms.set_seed(0)
        net = nn.SequentialCell([nn.Dense(8, 16, activation="relu"), nn.Dense(16, 4)])
        if fuse_second:
            assert net[1].set_comm_fusion(2) is net[1]
            assert net[1].weight.comm_fusion == 2 and not hasattr(net[0].weight, "comm_fusion")
        step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                                   nn.SGD(net.trainable_params(), 0.1))
        x, y = Tensor(np.ones((2, 8), np.float32)), Tensor(np.ones((2, 4), np.float32))
        graph = step._compile_step(step, (x, y))[0]
        return sorted(n.shape for n in graph.nodes if n.op == "AllReduce" and n.shape)
    finally:
        ms.reset_auto_parallel_context()
        release()


def test_set_comm_fusion_splits_the_gradient_buckets_by_fusion_id():
    first = 8 * 16 + 16
    second = 16 * 4 + 4
    assert _gradient_allreduces(False) == [(first + second,)]     # one bucket
    assert _gradient_allreduces(True) == [(second,), (first,)]    # one per fusion id
    with pytest.raises(TypeError, match="set_comm_fusion.*non-negative int, but got -1"):
        nn.Dense(2, 2).set_comm_fusion(-1)


def test_a_set_inputs_placeholder_is_not_data():
    """`Tensor(shape=[None, 3], dtype=...)` declares inputs; computing on it (an empty
    array) would return an empty answer: eager ops and compiles refuse it by name."""
    placeholder = Tensor(shape=[None, 3], dtype=ms.float32)
    match = r"shape placeholder \(Tensor\(shape=\[None, 3\], dtype=Float32\), for Cell.set_inputs\)"
    with pytest.raises(TypeError, match="For 'Exp', the input 0 is a " + match):
        ops.exp(placeholder)
    ms.set_context(mode=ms.GRAPH_MODE)
    with pytest.raises(TypeError, match="For 'Dense', the input 'x' is a " + match):
        nn.Dense(3, 2)(placeholder)
