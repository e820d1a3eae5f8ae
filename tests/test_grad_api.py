"""The gradient API: ms.grad, ms.value_and_grad, ops.GradOperation, ops.stop_gradient —
MindSpore's return structures, Cells and plain functions, GRAPH_MODE == PYNATIVE_MODE,
compiled once per signature, and the errors. References are numpy formulas."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.graph.ir import GraphError
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register

RNG = np.random.default_rng(7)
MODES = [ms.GRAPH_MODE, ms.PYNATIVE_MODE]


@pytest.fixture(params=MODES, ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Net(nn.Cell):
    """loss = sum(relu(x @ w + b) * y): weights w, b."""

    def __init__(self):
        super().__init__()
        self.w = Parameter(Tensor(RNG.standard_normal((3, 4)).astype(np.float32)), "w")
        self.b = Parameter(Tensor(RNG.standard_normal(4).astype(np.float32)), "b")
        self.matmul, self.relu, self.sum = ops.MatMul(), ops.ReLU(), ops.ReduceSum()

    def construct(self, x, y):
        return self.sum(self.relu(self.matmul(x, self.w) + self.b) * y, ())


def reference(net, x, y):
    """(loss, dx, dy, dw, db) in numpy."""
    w, b = net.w.asnumpy(), net.b.asnumpy()
    h = x @ w + b
    mask = (h > 0).astype(np.float32)
    dh = mask * y
    return (np.maximum(h, 0) * y).sum(), dh @ w.T, np.maximum(h, 0), x.T @ dh, dh.sum(0)


def data():
    return (RNG.standard_normal((5, 3)).astype(np.float32),
            RNG.standard_normal((5, 4)).astype(np.float32))


def close(a, b):
    np.testing.assert_allclose(a.asnumpy() if isinstance(a, Tensor) else a, b, rtol=1e-5,
                               atol=1e-5)


def test_grad_return_structures(mode):
    net = Net()
    x, y = data()
    loss, dx, dy, dw, db = reference(net, x, y)
    X, Y = Tensor(x), Tensor(y)
    close(ms.grad(net)(X, Y), dx)                                    # position 0: a Tensor
    gx, gy = ms.grad(net, (0, 1))(X, Y)                              # a tuple position: tuple
    close(gx, dx), close(gy, dy)
    (gw, gb) = ms.grad(net, None, ms.ParameterTuple(net.trainable_params()))(X, Y)  # tuple
    close(gw, dw), close(gb, db)
    close(ms.grad(net, None, net.w)(X, Y), dw)                       # one Parameter: a Tensor
    gx, (gw, gb) = ms.grad(net, 0, net.trainable_params())(X, Y)     # both: (inputs, weights)
    close(gx, dx), close(gw, dw), close(gb, db)
    value, (gx, gy) = ms.value_and_grad(net, (0, 1))(X, Y)
    close(value, loss), close(gx, dx), close(gy, dy)


def test_has_aux_differentiates_the_first_output_only(mode):
    def f(x, w):
        h = ops.MatMul()(x, w)
        return ops.ReduceSum()(ops.Square()(h), ()), h

    x, w = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))
    h = x @ w
    g, aux = ms.grad(f, 1, has_aux=True)(Tensor(x), Tensor(w))
    close(g, x.T @ (2 * h))
    assert isinstance(aux, tuple) and len(aux) == 1
    close(aux[0], h)
    (value, aux_value), g = ms.value_and_grad(f, 1, has_aux=True)(Tensor(x), Tensor(w))
    close(value, (h ** 2).sum()), close(aux_value, h), close(g, x.T @ (2 * h))
    # without has_aux every output is differentiated: d(sum(h^2)) + d(sum(h))
    close(ms.grad(f, 1)(Tensor(x), Tensor(w)), x.T @ (2 * h + 1))


def test_grad_operation_forms(mode):
    net = Net()
    x, y = data()
    _, dx, dy, dw, db = reference(net, x, y)
    X, Y = Tensor(x), Tensor(y)
    params = net.trainable_params()
    close(ops.GradOperation()(net)(X, Y), dx)
    gx, gy = ops.GradOperation(get_all=True)(net)(X, Y)
    close(gx, dx), close(gy, dy)
    gw, gb = ops.GradOperation(get_by_list=True)(net, params)(X, Y)
    close(gw, dw), close(gb, db)
    (gx, gy), (gw, gb) = ops.GradOperation(get_all=True, get_by_list=True)(net, params)(X, Y)
    close(gx, dx), close(gy, dy), close(gw, dw), close(gb, db)
    sens = np.float32(3.0)
    gw, gb = ops.GradOperation(get_by_list=True, sens_param=True)(net, params)(
        X, Y, Tensor(np.array(sens)))
    close(gw, sens * dw), close(gb, sens * db)


def test_sens_of_a_tuple_output(mode):
    def f(x):
        return ops.Square()(x), ops.Exp()(x)

    x = RNG.standard_normal(4)
    s1, s2 = RNG.standard_normal(4), RNG.standard_normal(4)
    g = ops.GradOperation(sens_param=True)(f)(Tensor(x), (Tensor(s1), Tensor(s2)))
    close(g, 2 * x * s1 + np.exp(x) * s2)


def test_stop_gradient_cuts_and_unused_inputs_get_zeros(mode):
    def f(x, y, z):
        return ops.ReduceSum()(x * ops.stop_gradient(x * y), ())

    x, y, z = (RNG.standard_normal(3) for _ in range(3))
    gx, gy, gz = ms.grad(f, (0, 1, 2))(Tensor(x), Tensor(y), Tensor(z))
    close(gx, x * y), close(gy, np.zeros(3)), close(gz, np.zeros(3))


def test_shared_values_accumulate_and_ints_get_none_through():
    def f(x, idx):
        h = ops.Exp()(x)
        hot = ops.OneHot()(idx, 3, 1.0, 0.0)
        return ops.ReduceSum()(h * h + h * ops.Cast()(hot, ms.float64), ())

    x = RNG.standard_normal((2, 3))
    idx = np.array([2, 0], np.int32)
    hot = np.eye(3)[idx]
    close(ms.grad(f)(Tensor(x), Tensor(idx)), 2 * np.exp(2 * x) + np.exp(x) * hot)


def test_graph_equals_pynative_and_compiles_once_per_signature():
    net = Net()
    x, y = data()
    results = {}
    for mode in MODES:
        ms.set_context(mode=mode)
        f = ms.value_and_grad(net, (0, 1), net.trainable_params())
        results[mode] = f(Tensor(x), Tensor(y))
        f(Tensor(x), Tensor(y))
        if mode == ms.GRAPH_MODE:
            assert f._cache.traces == 1
            f(Tensor(x[:2]), Tensor(y[:2]))
            assert f._cache.traces == 2
    ms.set_context(mode=ms.PYNATIVE_MODE)
    flat = [[t.asnumpy() for t in (r[0],) + r[1][0] + r[1][1]] for r in results.values()]
    for a, b in zip(*flat):
        np.testing.assert_array_equal(a, b)


class NoRule(PrimitiveWithInfer):
    """A primitive without a backward rule."""

    @prim_attr_register
    def __init__(self):
        pass

    def infer_shape(self, x):
        return x

    def infer_dtype(self, x):
        return x

    def kernel(self, x):
        return x.copy()


def test_an_op_without_a_rule_names_the_op_and_the_line(mode):
    x = Tensor(np.ones(3, np.float32))
    with pytest.raises(NotImplementedError, match=r"For 'NoRule', there is no backward rule: "
                                                  r"none is registered\.\n  In .*test_grad_api"
                                                  r"\.py:\d+: .*NoRule\(\)\(x\)"):
        ms.grad(lambda x: NoRule()(x))(x)


def test_pynative_differentiates_data_dependent_python():
    def f(x):
        if ops.ReduceSum()(x, ()).asnumpy() > 0:
            return ops.ReduceSum()(ops.Square()(x), ())
        return ops.ReduceSum()(ops.Neg()(x), ())

    x = RNG.standard_normal(3)
    want = 2 * x if x.sum() > 0 else -np.ones(3)
    close(ms.grad(f)(Tensor(x)), want)
    close(ms.grad(f)(Tensor(-x)), -2 * x if -x.sum() > 0 else -np.ones(3))


def test_errors(sim):
    sim(2, 0)
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"For '_MiniStepAllGather', the 'z' should be a "
                                        r"Parameter \(the gradient accumulation buffer"):
        ms.grad(lambda x: ops._MiniStepAllGather()(x, x))(x)
    with pytest.raises(TypeError, match=r"For '_MicroStepAllGather', the 'z' should be a "
                                        r"Parameter"):
        ms.grad(lambda x: ops._MicroStepAllGather()(x, x))(x)
    with pytest.raises(TypeError, match=r"For 'grad', the 'grad_position' should be a "
                                        r"non-negative int"):
        ms.grad(lambda x: x, -1)
    with pytest.raises(TypeError, match=r"the 'weights' should be a Parameter"):
        ms.grad(lambda x: x, 0, [x])
    with pytest.raises(ValueError, match=r"'grad_position' 1 should name a Tensor argument "
                                         r"of '<lambda>', but got int"):
        ms.grad(lambda x, k: x * k, 1)(x, 2)
    with pytest.raises(TypeError, match=r"the output 0 of '<lambda>' should be a float "
                                        r"Tensor to differentiate, but got Int32"):
        ms.grad(lambda x: ops.Cast()(x, ms.int32))(x)
    with pytest.raises(GraphError, match="data-dependent branch"):
        ms.grad(lambda x: x if ops.ReduceSum()(x, ()) else -x)(x)


def test_semi_auto_parallel_gradients_refuse_pynative(sim):
    sim(2, 0)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=2)
    x, y = Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones((2, 4), np.float32))
    try:
        with pytest.raises(RuntimeError, match=r"For 'grad', the parallel mode "
                                               r"'semi_auto_parallel' \(set_auto_parallel_"
                                               r"context\(parallel_mode=...\)\) should run in "
                                               r"GRAPH_MODE .* but got PYNATIVE_MODE"):
            ms.grad(Net())(x, y)
    finally:
        ms.reset_auto_parallel_context()


@pytest.mark.parametrize("fusion,reductions", [(None, 1), ({"allreduce": {"mode": "size",
                                                                           "config": 1e-6}}, 2)])
def test_parallel_backward_plan_data_parallel(sim, fusion, reductions):
    """Planned on a simulated world of 4: the loss AllReduce, its transpose, then the
    replicated parameters' gradients summed over the whole replica group, fused into
    buckets of comm_fusion's size (auto: one for w and b; a tiny bucket: one each). The
    input gradient (batch split, no replicas) is not reduced."""
    sim(4, 1)
    ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=4, full_batch=True,
                                 comm_fusion=fusion)
    ms.set_context(mode=ms.GRAPH_MODE)
    x, y = Tensor(np.ones((8, 3), np.float32)), Tensor(np.ones((8, 4), np.float32))
    try:
        net = Net()
        fn = ms.grad(net, 0, net.trainable_params())
        graph = fn._cache.get(net, (x, y), net._tree_key())[0]
    finally:
        ms.reset_auto_parallel_context()
    comm = [n for n in graph.nodes if n.is_communication]
    assert [n.op for n in comm] == ["AllReduce"] * (2 + reductions)
    assert comm[-1].prim.group == "world_group"             # every rank holds w and b
    assert all(n.comm_bytes for n in comm)                 # the dump shows them all
    dx, dw, db = graph.outputs[1:]
    assert dx.shape == (2, 3) and dx.layout.tensor_shape == (8, 3)
    assert dw.shape == (3, 4) and db.shape == (4,)
    assert dw.layout.replica_axes() == db.layout.replica_axes() == (0,)
    # the loss is replicated on the 4 ranks: each seeds 1/4, so their objectives sum to it
    assert any(isinstance(n.value, np.ndarray) and n.value.shape == () and n.value == 0.25
               for n in graph.consts)


@pytest.mark.parametrize("bad", [{"broadcast": {"mode": "auto"}},
                                 {"allreduce": {"mode": "size"}},
                                 {"allreduce": {"mode": "size", "config": 0}},
                                 {"allreduce": {"mode": "index", "config": [2]}}, 32])
def test_comm_fusion_is_checked(bad):
    with pytest.raises(ValueError, match=r"For 'set_auto_parallel_context', the "
                                         r"'comm_fusion' should be None or"):
        ms.set_auto_parallel_context(comm_fusion=bad)
    ms.reset_auto_parallel_context()


def test_parameter_tuple_and_set_grad():
    net = Net()
    assert net.set_grad() is net
    params = ms.ParameterTuple(net.trainable_params())
    assert isinstance(params, tuple) and [p.name for p in params] == ["w", "b"]
    with pytest.raises(TypeError, match=r"For 'ParameterTuple', every element should be a "
                                        r"Parameter, but got Tensor at index 1"):
        ms.ParameterTuple([net.w, Tensor(np.ones(1))])


def test_a_rule_that_cannot_handle_its_ops_configuration_names_it_and_the_line(sim):
    sim(2, 0)
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match=r"For 'ReduceScatter', there is no backward "
                                                  r"rule for op 'max' \(only sum\)\.\n  In the "
                                                  r"backward of 'ReduceScatter'\n  In .*"
                                                  r"test_grad_api\.py:\d+"):
        ms.grad(lambda x: ops.ReduceScatter("max")(x))(x)


def test_backward_nodes_carry_the_users_line():
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(RNG.standard_normal((2, 3)))
    f = ms.grad(lambda x: ops.ReduceSum()(ops.Exp()(x), ()))   # the line every node names
    f(x)
    graph = f._cache.get(f.fn, (x,), ())[0]
    assert {n.op for n in graph.nodes} >= {"Exp", "ReduceSum", "Add", "Mul"}
    assert all("test_grad_api.py" in n.source and "ops.Exp()(x)" in n.source
               for n in graph.nodes)


def test_the_ops_spellings_of_grad_and_value_and_grad():
    """MindSpore 2.0's tutorials write `ops.value_and_grad(...)` and `ops.grad(...)`."""
    x = np.array([0.5, -1.0, 2.0], np.float32)

    def cube(t):
        return ops.ReduceSum()(t * t * t)

    np.testing.assert_allclose(ops.grad(cube)(Tensor(x)).asnumpy(), 3 * x ** 2, rtol=1e-6)
    value, grad = ops.value_and_grad(cube)(Tensor(x))
    np.testing.assert_allclose(value.asnumpy(), (x ** 3).sum(), rtol=1e-6)
    np.testing.assert_allclose(grad.asnumpy(), 3 * x ** 2, rtol=1e-6)
