"""ops.Custom (func_type="pyfunc"): a user's numpy function as an op, eager and compiled,
its declared inference checked at each call, its gradient the user's bprop (against
finite differences), its sharding declared by shard (planned on a simulated world).

Custom is not in the fixed-kernel tables (tests/test_compute_contract.py, test_grad_ops.py):
its kernel is whatever the user writes, so its contract (outputs exactly as declared) is
enforced by the op at each call and tested here."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.communication import init, release
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(31)


def r(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture(autouse=True)
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


def cube_op(calls=None):
    """x**3 as a Custom op with its bprop 3 x^2 dout, built of msops ops."""
    def cube(x):
        if calls is not None:
            calls.append(x.shape)
        return x ** 3
    return ops.Custom(cube, out_shape=lambda s: s, out_dtype=lambda d: d,
                      bprop=lambda x, out, dout: (3 * x * x * dout,))


def test_values_eager_and_compiled_kernel_runs_each_step():
    calls = []
    op, x = cube_op(calls), r(2, 3)
    np.testing.assert_allclose(op(Tensor(x)).asnumpy(), x ** 3)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Call(op)
    graph = net.compile(Tensor(x))
    assert "Custom" in [n.op for n in graph.nodes]
    before = len(calls)
    for _ in range(3):
        y = r(2, 3)
        np.testing.assert_allclose(net(Tensor(y)).asnumpy(), y ** 3)
    assert len(calls) - before == 3                         # one kernel call per step


def test_declared_values_several_outputs_and_dtype_conversion():
    op = ops.Custom(lambda a, b: (np.sin(a) + b, np.sum(a, axis=1)),
                    out_shape=((2, 3), (2,)), out_dtype=(ms.float32, ms.float32))
    a, b = r(2, 3, dtype=np.float32), r(2, 3, dtype=np.float32)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        s, t = Call(op)(Tensor(a), Tensor(b))
        assert s.dtype == ms.float32 and tuple(t.shape) == (2,)
        np.testing.assert_allclose(s.asnumpy(), np.sin(a) + b, rtol=1e-6)
        np.testing.assert_allclose(t.asnumpy(), a.sum(axis=1), rtol=1e-6)
    # None: like the first input; np.sin of float32 stays float32, float64 results cast down
    same = ops.Custom(lambda x: np.sin(x.astype(np.float64)))
    got = same(Tensor(a))
    assert got.dtype == ms.float32 and got.shape == (2, 3)
    np.testing.assert_allclose(got.asnumpy(), np.sin(a), rtol=1e-6)


def test_gradient_against_finite_differences_eager_and_compiled():
    op, x = cube_op(), r(3, 4)
    w = r(3, 4)

    def loss(t):
        return (op(t) * Tensor(w)).sum()
    eager = ms.grad(loss)(Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = ms.grad(loss)(Tensor(x)).asnumpy()
    want = finite_differences(lambda v: v ** 3 * w, x)
    np.testing.assert_allclose(eager, want, rtol=1e-6)
    np.testing.assert_allclose(compiled, want, rtol=1e-6)


def test_bprop_of_two_inputs_built_of_another_custom():
    """a * b with a bprop that calls a second Custom (multiplication by numpy)."""
    mul = ops.Custom(lambda a, b: a * b, out_shape=lambda s, t: s, out_dtype=lambda d, e: d)
    op = ops.Custom(lambda a, b: a * b, out_shape=lambda s, t: s, out_dtype=lambda d, e: d,
                    bprop=lambda a, b, out, dout: (mul(dout, b), mul(dout, a)))
    a, b, w = r(2, 3), r(2, 3), r(2, 3)

    def loss(s, t):
        return (op(s, t) * Tensor(w)).sum()
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        ga, gb = ms.grad(loss, (0, 1))(Tensor(a), Tensor(b))
        np.testing.assert_allclose(ga.asnumpy(), finite_differences(lambda v: v * b * w, a),
                                   rtol=1e-6)
        np.testing.assert_allclose(gb.asnumpy(), finite_differences(lambda v: a * v * w, b),
                                   rtol=1e-6)


def test_several_outputs_bprop_gets_tuples():
    def bp(x, out, dout):
        assert isinstance(out, tuple) and isinstance(dout, tuple) and len(dout) == 2
        return (dout[0] * 2 + dout[1] * 3 * x * x,)
    op = ops.Custom(lambda x: (2 * x, x ** 3), out_shape=lambda s: (s, s),
                    out_dtype=lambda d: (d, d), bprop=bp)
    x, w0, w1 = r(4), r(4), r(4)

    def loss(t):
        u, v = op(t)
        return (u * Tensor(w0)).sum() + (v * Tensor(w1)).sum()
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        g = ms.grad(loss)(Tensor(x)).asnumpy()
        np.testing.assert_allclose(g, finite_differences(lambda v: 2 * v * w0 + v ** 3 * w1, x),
                                   rtol=1e-6)


def test_without_bprop_differentiating_names_the_op():
    op = ops.Custom(lambda x: x * 2, out_shape=lambda s: s, out_dtype=lambda d: d)
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        with pytest.raises(NotImplementedError, match=r"For 'Custom', the op <lambda> cannot "
                                                      r"be differentiated: it has no 'bprop'"):
            ms.grad(lambda t: op(t).sum())(Tensor(r(3)))


@pytest.mark.parametrize("func_type", ["aot", "akg", "tbe", "aicpu", "julia", "hybrid"])
def test_other_func_types_say_pyfunc_only(func_type):
    with pytest.raises(ValueError, match=r"For 'Custom', the 'func_type' should be 'pyfunc' "
                                         r"\(msops runs Python functions of numpy arrays only\), "
                                         rf"but got '{func_type}'"):
        ops.Custom("add.so:add", (2,), ms.float32, func_type)


@pytest.mark.parametrize("kwargs,err,msg", [
    (dict(func="add.so:add"), TypeError, "the 'func' should be a Python function"),
    (dict(out_shape="2x3"), TypeError, "the 'out_shape' should be a shape"),
    (dict(out_dtype=np.float32), TypeError, "the 'out_dtype' should be an msops dtype"),
    (dict(bprop=3), TypeError, "the 'bprop' should be a function"),
    (dict(func_type=1), TypeError, "the 'func_type' should be a str"),
])
def test_bad_arguments(kwargs, err, msg):
    with pytest.raises(err, match=f"For 'Custom', {msg}"):
        ops.Custom(**{"func": lambda x: x, **kwargs})


def test_results_not_as_declared_are_errors_eager_and_compiled():
    wrong_shape = ops.Custom(lambda x: x.reshape(-1), out_shape=lambda s: s,
                             out_dtype=lambda d: d)
    to_int = ops.Custom(lambda x: x, out_shape=lambda s: s, out_dtype=ms.int32)
    two = ops.Custom(lambda x: x, out_shape=lambda s: (s, s), out_dtype=lambda d: (d, d))
    x = Tensor(r(2, 3))
    for mode in (ms.PYNATIVE_MODE, ms.GRAPH_MODE):
        ms.set_context(mode=mode)
        with pytest.raises(ValueError, match=r"For 'Custom', the output 0 of 'func' <lambda> "
                                             r"should have the declared shape \[2, 3\], "
                                             r"but got \[6\]"):
            Call(wrong_shape)(x)
        with pytest.raises(TypeError, match=r"should have the declared dtype Int32 \(or one "
                                            r"of its kind\), but got float64"):
            Call(to_int)(x)
        with pytest.raises(ValueError, match=r"should return 2 array\(s\)"):
            Call(two)(x)


def test_reg_info_is_accepted_and_ignored():
    info = ops.CustomRegOp().input(0, "x").output(0, "y").dtype_format(
        ops.DataType.F32_Default, ops.DataType.F32_Default).target("CPU").get_op_info()
    assert info["calls"][-1] == ("target", ("CPU",), {})
    assert ops.DataType.F32_Default == ("F32", "Default")
    op = ops.Custom(lambda x: x + 1, (3,), ms.float64, "pyfunc", None, info)
    np.testing.assert_allclose(op(Tensor(np.zeros(3))).asnumpy(), np.ones(3))


@pytest.fixture
def world8():
    init("simulation", world_size=8, rank=3)
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=8,
                                 full_batch=True)
    yield
    ms.reset_auto_parallel_context()
    release()


def test_sharding_whole_unless_a_batch_is_declared(world8):
    ms.set_context(mode=ms.GRAPH_MODE)
    x = Tensor(r(16, 4, dtype=np.float32))
    plain = Call(cube_op()).compile(x)
    node = next(n for n in plain.nodes if n.op == "Custom")
    assert tuple(node.shape) == (16, 4)                     # whole, not data-parallel split
    declared = Call(cube_op().shard(((8, 1),))).compile(x)
    node = next(n for n in declared.nodes if n.op == "Custom")
    assert tuple(node.shape) == (2, 4)
    with pytest.raises(ValueError, match=r"For 'Custom', input 0 dim 1 cannot be split "
                                         r"\(a Custom op's shard\(...\) declares dim 0 a batch "
                                         r"dim; only it may split\)"):
        Call(cube_op().shard(((1, 2),))).compile(x)
    rows = ops.Custom(lambda x: x.sum(axis=0, keepdims=True), out_shape=lambda s: [1, s[1]],
                      out_dtype=lambda d: d).shard(((8, 1),))
    with pytest.raises(ValueError, match=r"input 0 dim 0 cannot be split \(shard\(...\) declares "
                                         r"dim 0 a batch dim, but the inputs' and outputs' dim 0 "
                                         r"differ \(\[\[16, 4\], \[1, 4\]\]\)\)"):
        Call(rows).compile(x)


def test_trains_a_parameter_in_a_compiled_step():
    """A Custom op of a Parameter inside TrainOneStepCell: SGD moves w by -lr * the bprop's
    gradient (column sums of x for sum(x * w))."""
    from msops import Parameter, nn

    class Scale(nn.Cell):
        def __init__(self):
            super().__init__()
            self.w = Parameter(Tensor(np.ones(3, np.float32)), name="w")
            self.op = ops.Custom(lambda x, w: x * w, lambda s, t: s, lambda d, e: d,
                                 bprop=lambda x, w, out, dout: (dout * w, (dout * x).sum(0)))

        def construct(self, x):
            return self.op(x, self.w).sum()
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Scale()
    step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 0.1))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.ones(3, np.float32)
    for _ in range(2):
        loss = step(Tensor(x))
        np.testing.assert_allclose(loss.asnumpy(), (x * w).sum(), rtol=1e-6)
        w = w - 0.1 * x.sum(0)
        np.testing.assert_allclose(net.w.asnumpy(), w, rtol=1e-6)
