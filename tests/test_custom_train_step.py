"""MindSpore's way of customising a training step, ported by changing the imports: a
TrainOneStepCell subclass whose construct uses `P.Fill`/`P.DType`/`P.Shape`, `self.grad`
(C.GradOperation), `self.grad_reducer`, `ops.clip_by_global_norm` and `F.depend`; its own
construct is what runs, eagerly and compiled, against the numpy MLP of test_training.
Also the clipping functions and the value functions against numpy."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.ops import composite as C
from msops.ops import functional as F
from msops.ops import operations as P
from test_training import MLP, X, Y, numpy_grads


class TrainWithClip(nn.TrainOneStepCell):
    def __init__(self, network, optimizer, sens=1.0, clip=0.05):
        super().__init__(network, optimizer, sens)
        self.clip = clip
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)

    def construct(self, *inputs):
        weights = self.weights
        loss = self.network(*inputs)
        sens = P.Fill()(P.DType()(loss), P.Shape()(loss), self.sens)
        grads = self.grad(self.network, weights)(*inputs, sens)
        grads = self.grad_reducer(grads)
        grads = ops.clip_by_global_norm(grads, self.clip)
        return F.depend(loss, self.optimizer(grads))


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_a_subclass_construct_is_what_trains(mode):
    ms.set_context(mode=mode)
    try:
        net = MLP()
        params = {n: p.asnumpy().copy() for n, p in net.parameters_and_names()}
        step = TrainWithClip(nn.WithLossCell(net, nn.MSELoss()),
                             nn.SGD(net.trainable_params(), 0.5), sens=2.0)
        for _ in range(5):
            loss = float(step(Tensor(X), Tensor(Y)).asnumpy())
            want, grads = numpy_grads(params, X, Y)
            assert loss == pytest.approx(want, rel=1e-10)
            grads = {k: 2.0 * g for k, g in grads.items()}                   # sens
            norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads.values()))
            assert norm > 0.05                                   # the clip acts
            for k in params:
                params[k] = params[k] - 0.5 * grads[k] * 0.05 / max(norm, 0.05)
        for n, p in net.parameters_and_names():
            np.testing.assert_allclose(p.asnumpy(), params[n], rtol=1e-9, atol=1e-12)
        if mode == ms.GRAPH_MODE:
            assert step._compile_cache.traces == 1
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


RNG = np.random.default_rng(3)


@pytest.mark.parametrize("mode", [ms.PYNATIVE_MODE, ms.GRAPH_MODE], ids=["pynative", "graph"])
def test_clipping_follows_numpy(mode):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal(5) * 3
    total = np.sqrt((a ** 2).sum() + (b ** 2).sum())

    class Clip(nn.Cell):
        def construct(self, x, y):
            g = ops.clip_by_global_norm((x, y), 2.0)
            n = ops.clip_by_norm([x, y], 1.5)
            i = ops.clip_by_norm(y, 1.0, norm_type=float("inf"))
            p = ops.clip_by_norm((x, y), 3.0, norm_type=3)
            v = ops.clip_by_value((x, y), -0.5, 0.25)
            return g + tuple(n) + (i,) + p + v + (ops.clip_by_global_norm([x], 100.0)[0],)

    ms.set_context(mode=mode)
    try:
        out = [t.asnumpy() for t in Clip()(Tensor(a), Tensor(b))]
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    scale = 2.0 / max(total, 2.0)
    coef = min(1.0, 1.5 / (total + 1e-6))
    inf_coef = min(1.0, 1.0 / (np.abs(b).max() + 1e-6))
    p3 = ((np.abs(a) ** 3).sum() + (np.abs(b) ** 3).sum()) ** (1 / 3)
    p_coef = min(1.0, 3.0 / (p3 + 1e-6))
    want = [a * scale, b * scale, a * coef, b * coef, b * inf_coef, a * p_coef, b * p_coef,
            np.clip(a, -0.5, 0.25), np.clip(b, -0.5, 0.25), a]
    for g, w in zip(out, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_value_functions_and_their_primitive_spellings():
    x = Tensor(np.ones((2, 3), np.float16))
    np.testing.assert_array_equal(ops.fill(ms.int32, (2, 2), 7).asnumpy(), np.full((2, 2), 7))
    assert P.Fill()(ms.float64, [3], Tensor(np.array(2.5))).dtype == ms.float64
    assert ops.ones(3).dtype == ms.float32 and ops.zeros((2, 0), ms.int8).shape == (2, 0)
    assert P.Ones()((1, 2), ms.bool_).asnumpy().all()
    assert ops.shape(x) == P.Shape()(x) == (2, 3) and ops.dtype(x) == P.DType()(x) == ms.float16
    assert ops.rank(x) == P.Rank()(x) == 2 and ops.size(x) == ops.numel(x) == P.Size()(x) == 6
    assert F.depend(x, 5) is x and P.Depend()(x, None) is x
    for call, error, message in [
        (lambda: ops.fill("float32", (2,), 1), TypeError, r"For 'fill', the 'dtype' should be an "
         r"msops dtype"),
        (lambda: ops.ones((2, -1)), TypeError, r"For 'ones', the 'shape' should be an int, a "
         r"tuple/list of ints >= 0"),
        (lambda: ops.shape(np.ones(2)), TypeError, r"For 'shape', the 'input' should be a Tensor"),
        (lambda: ops.clip_by_global_norm([x], 0.0), ValueError, r"For 'clip_by_global_norm', "
         r"the 'clip_norm' should be a number > 0, but got 0.0"),
        (lambda: ops.clip_by_norm([Tensor(np.ones(2, np.int32))], 1.0), TypeError,
         r"For 'clip_by_norm', every Tensor should have a float dtype"),
        (lambda: ops.clip_by_value(x), ValueError, r"at least one of 'clip_value_min'"),
        (lambda: ops.clip_by_norm(x, 1.0, norm_type=None), ValueError,
         r"For 'clip_by_norm', the 'norm_type' should be a number > 0 or inf, but got None"),
        (lambda: ops.clip_by_norm(Tensor(np.array([np.inf])), 1.0, error_if_nonfinite=True),
         ValueError, r"For 'clip_by_norm', the total norm of order 2.0 is not finite"),
    ]:
        with pytest.raises(error, match=message):
            call()
