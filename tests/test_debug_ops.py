"""ops.Print / ops.print_ (printed each time the graph runs, in both modes, no gradient) and
the gradient hooks HookBackward, InsertGradientOf, Tensor.register_hook: the gradients the
hooks receive and the gradients they make, against calculus written here in numpy."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops

RNG = np.random.default_rng(11)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def close(a, b):
    np.testing.assert_allclose(a.asnumpy() if isinstance(a, Tensor) else a, b, rtol=1e-5,
                               atol=1e-6)


def tensor_text(a):
    """MindSpore's print form of a Tensor, written out here."""
    dtype = {np.dtype(np.float32): "Float32", np.dtype(np.int32): "Int32"}[a.dtype]
    return f"Tensor(shape={list(a.shape)}, dtype={dtype}, value=\n{a}"


class Printing(nn.Cell):
    def __init__(self):
        super().__init__()
        self.print = ops.Print()

    def construct(self, x, y):
        self.print("x and y:", x, y)
        return x * 2


def test_print_runs_each_step(mode, capfd):
    x = np.array([[1], [2]], np.int32)
    y = np.array([[1.5, 2.0], [3.0, 4.0]], np.float32)
    net = Printing()
    if mode == ms.GRAPH_MODE:
        net.compile(Tensor(x), Tensor(y))
        assert capfd.readouterr().out == ""               # tracing prints nothing
    for step in range(2):
        close(net(Tensor(x), Tensor(y + step)), 2 * x)
    want = "".join(f"x and y:\n{tensor_text(x)})\n{tensor_text(y + s)})\n" for s in range(2))
    assert capfd.readouterr().out == want


def test_print_in_a_gradient_has_no_gradient(mode, capfd):
    x = RNG.standard_normal(3).astype(np.float32)

    def f(a):
        ops.print_("a:", a, 3)
        return (a * a).sum()

    close(ms.grad(f)(Tensor(x)), 2 * x)
    assert capfd.readouterr().out == \
        f"a:\n{tensor_text(x)})\nTensor(shape=[], dtype=Int64, value=\n3)\n"  # once


def test_print_result_and_errors():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    result = ops.Print()("hello")
    assert result.shape == () and result.dtype == ms.int32
    with pytest.raises(TypeError, match=r"For 'Print', the input 1 should be a Tensor, str, "
                                        r"bool, int, float, tuple or list, but got dict"):
        ops.Print()("x", {})


def test_hook_backward_sees_and_replaces_the_gradient():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x, y = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
    seen = []

    def hook_fn(grads):
        seen.append([g.asnumpy() for g in grads])
        return (grads[0] * 3,)

    hook = ops.HookBackward(hook_fn)

    def f(a, b):
        z = hook(a * b)
        return (ops.sin(z) * b).sum()

    gx, gy = ms.grad(f, (0, 1))(Tensor(x), Tensor(y))
    z = x * y
    dz = np.cos(z) * y                                   # what reaches the hook
    assert len(seen) == 1 and len(seen[0]) == 1
    close(seen[0][0], dz)
    close(gx, 3 * dz * y)
    close(gy, 3 * dz * x + np.sin(z))
    hook_none = ops.HookBackward(lambda grads: None)     # None keeps the gradient
    close(ms.grad(lambda a: (hook_none(a) ** 2).sum())(Tensor(x)), 2 * x)


def test_hook_backward_compiled_is_traced(mode):
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    hook = ops.HookBackward(lambda grads: (grads[0] * grads[0],))

    def f(a):
        return (hook(ops.exp(a)) * 2).sum()

    close(ms.grad(f)(Tensor(x)), 4 * np.exp(x))          # (2)^2 into exp


def test_insert_gradient_of_clips(mode):
    x = np.array([0.01, 1.0, -2.0, 0.3], np.float32)
    clip = ops.InsertGradientOf(lambda g: ops.clip_by_value(g, -0.5, 0.5))

    def f(a):
        return (clip(a * a) * a).sum()                  # d/d(a*a) = a, clipped

    want = np.clip(x, -0.5, 0.5) * 2 * x + x * x
    close(ms.grad(f)(Tensor(x)), want)
    close(ms.jit(ms.grad(f))(Tensor(x)), want)


def test_register_hook_inside_the_function(mode):
    x, y = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)

    def f(a, b):
        z = a * b
        z.register_hook(lambda g: g * 2)
        return (z * z * b).sum()

    gx, gy = ms.grad(f, (0, 1))(Tensor(x), Tensor(y))
    z = x * y
    dz = 2 * (2 * z * y)                                  # doubled by the hook
    close(gx, dz * y)
    close(gy, dz * x + z * z)


def test_register_hook_on_an_input_and_remove():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    x = RNG.standard_normal(3).astype(np.float32)
    t = Tensor(x)
    seen = []
    handle = t.register_hook(lambda g: seen.append(g.asnumpy()) or g * 10)
    f = ms.grad(lambda a: (ops.sin(a)).sum())
    close(f(t), 10 * np.cos(x))
    close(seen[0], np.cos(x))                           # the gradient reaching the input
    handle.remove()
    close(f(t), np.cos(x))
    assert len(seen) == 1


def test_hook_errors():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with pytest.raises(TypeError, match="For 'HookBackward', the 'hook_fn' should be a Python "
                                        "function, but got int"):
        ops.HookBackward(1)
    with pytest.raises(TypeError, match="For 'InsertGradientOf', the input should be a Tensor"):
        ops.InsertGradientOf(lambda g: g)(1.0)
    with pytest.raises(TypeError, match="For 'Tensor.register_hook', the 'hook' should be a "
                                        "function"):
        Tensor(np.ones(2, np.float32)).register_hook(3)
    bad = ops.HookBackward(lambda grads: (grads[0][:1],))
    with pytest.raises(ValueError, match=r"For 'HookBackward', the hook should return 1 "
                                         r"Tensor\(s\) of shapes \[\[2\]\]"):
        ms.grad(lambda a: bad(a).sum())(Tensor(np.ones(2, np.float32)))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        t = Tensor(np.ones(2, np.float32))
        t.register_hook(lambda g: g)
        with pytest.raises(NotImplementedError, match="registered outside the function: in "
                                                      "GRAPH_MODE"):
            ms.grad(lambda a: a.sum())(t)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


class Checked(nn.Cell):
    def __init__(self):
        super().__init__()
        self.check = ops.Assert(2)

    def construct(self, x):
        self.check(x.sum() > 0, [x])
        return x * 2


def test_assert_checks_each_run(mode, capfd):
    net = Checked()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    close(net(Tensor(x)), 2 * x)
    assert capfd.readouterr().out == ""
    with pytest.raises(RuntimeError, match="For 'Assert', the condition is false"):
        net(Tensor(-x))
    assert capfd.readouterr().out == "For 'Assert' condition is false.\n" \
                                     f"input data: {-x[:2]}\n"        # summarize=2 entries
    with pytest.raises(TypeError, match="For 'Assert', the 'summarize' should be an int"):
        ops.Assert(2.0)
    with pytest.raises(TypeError, match="For 'Assert', the 'input_data' should be a tuple or "
                                        "list of Tensors"):
        ops.Assert()(True, Tensor(x))


def test_hooks_with_several_inputs_and_higher_order(mode):
    x = np.array([0.5, -1.0, 2.0], np.float32)
    scale = ops.InsertGradientOf(lambda g: g * 3)

    def f(a):
        return scale(a * a * a).sum()                      # d/da = 9 a^2

    close(ms.grad(lambda a: ms.grad(f)(a).sum())(Tensor(x)), 18 * x)
    hook = ops.HookBackward(lambda grads: (grads[0] * 2, grads[1] * 5))

    def h(a, b):
        p, q = hook(a, b)
        return (p * q).sum()

    gx, gy = ms.grad(h, (0, 1))(Tensor(x), Tensor(x + 1))
    close(gx, 2 * (x + 1))
    close(gy, 5 * x)
