"""The functional forms of msops.ops.math_func / array_func and the activation layers
nn.ReLU6, HSwish, HSigmoid, SiLU, LeakyReLU: values against numpy (eagerly and inside a
compiled Cell), gradients of the composed ones against float64 finite differences, and
their argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from compiled import Call, eager_and_compiled  # noqa: F401  (also imported from here)

RNG = np.random.default_rng(1919)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
I = np.array([[7, -7, 6], [-5, 5, 0]], np.int32)
J = np.array([[2, 2, -4], [3, -3, 1]], np.int32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


# (name, call on Tensors, inputs, numpy reference)
FORMS = [
    ("add", lambda x, y: ops.add(x, y), (A, B), A + B),
    ("equal", lambda x, y: ops.equal(x, y), (I, J), I == J),
    ("where", lambda x, y: ops.where(ops.gt(x, 0.0), x, y), (A, B), np.where(A > 0, A, B)),
    ("sub", lambda x, y: ops.sub(x, y), (A, B), A - B),
    ("subtract", lambda x, y: ops.subtract(x, y, alpha=2), (A, B), A - 2 * B),
    ("mul", lambda x, y: ops.multiply(x, y), (A, V), A * V),
    ("div", lambda x, y: ops.div(x, y), (A, B + 3), A / (B + 3)),
    ("div_int", lambda x, y: ops.true_divide(x, y), (I, J), I / J),
    ("div_floor", lambda x, y: ops.div(x, y, rounding_mode="floor"), (I, J), I // J),
    ("div_trunc", lambda x, y: ops.div(x, y, rounding_mode="trunc"), (I, J),
     np.trunc(I / J)),
    ("div_trunc_float", lambda x, y: ops.div(x, y, rounding_mode="trunc"), (A, B + 0.1),
     np.trunc(A / (B + 0.1))),
    ("neg", lambda x: ops.negative(x), (A,), -A),
    ("abs", lambda x: ops.absolute(x), (A,), np.abs(A)),
    ("sign", lambda x: ops.sign(x), (A,), np.sign(A)),
    ("square", lambda x: ops.square(x), (A,), A * A),
    ("exp", lambda x: ops.exp(x), (A,), np.exp(A)),
    ("log", lambda x: ops.log(x), (np.abs(A) + 0.1,), np.log(np.abs(A) + 0.1)),
    ("rsqrt", lambda x: ops.rsqrt(x), (np.abs(A) + 0.1,), 1 / np.sqrt(np.abs(A) + 0.1)),
    ("reciprocal", lambda x: ops.reciprocal(x), (B + 3,), 1 / (B + 3)),
    ("sin", lambda x: ops.sin(x), (A,), np.sin(A)),
    ("cos", lambda x: ops.cos(x), (A,), np.cos(A)),
    ("relu", lambda x: ops.relu(x), (A,), np.maximum(A, 0)),
    ("relu6", lambda x: ops.relu6(x * 8), (A,), np.clip(A * 8, 0, 6)),
    ("hardswish", lambda x: ops.hardswish(x * 4), (A,),
     A * 4 * np.clip(A * 4 + 3, 0, 6) / 6),
    ("hardsigmoid", lambda x: ops.hardsigmoid(x * 4), (A,), np.clip(A * 4 + 3, 0, 6) / 6),
    ("softplus", lambda x: ops.softplus(x), (A,), np.log1p(np.exp(A))),
    ("softplus_beta", lambda x: ops.softplus(x * 10, beta=2, threshold=5), (A,),
     np.where(A * 20 > 5, A * 10, np.log1p(np.exp(A * 20)) / 2)),
    ("silu", lambda x: ops.silu(x), (A,), A * sigmoid(A)),
    ("leaky_relu", lambda x: ops.leaky_relu(x, 0.1), (A,), np.where(A > 0, A, 0.1 * A)),
    ("softmax", lambda x: ops.softmax(x, 1), (A,), np.exp(A) / np.exp(A).sum(1, keepdims=True)),
    ("clamp", lambda x: ops.clamp(x, -0.5, 0.5), (A,), np.clip(A, -0.5, 0.5)),
    ("clip_max", lambda x: ops.clip(x, None, 0.2), (A,), np.minimum(A, 0.2)),
    ("addn", lambda x, y: ops.addn([x, y, y]), (B, B), 3 * B),
    ("sum", lambda x: ops.sum(x), (A,), A.sum()),
    ("sum_dim", lambda x: ops.sum(x, (0, 2), True), (A,), A.sum((0, 2), keepdims=True)),
    ("mean", lambda x: ops.mean(x, 1), (A,), A.mean(1)),
    ("prod", lambda x: ops.prod(x, -1, True), (A,), A.prod(-1, keepdims=True)),
    ("amax", lambda x: ops.amax(x, [0, 1]), (A,), A.max((0, 1))),
    ("amin", lambda x: ops.amin(x, keepdims=True), (A,), A.min(keepdims=True)),
    ("reshape", lambda x: ops.reshape(x, (4, -1)), (A,), A.reshape(4, -1)),
    ("transpose", lambda x: ops.transpose(x, (2, 0, 1)), (A,), A.transpose(2, 0, 1)),
    ("permute", lambda x: ops.permute(x, (1, 0, 2)), (A,), A.transpose(1, 0, 2)),
    ("concat", lambda x, y: ops.concat((x, y), -1), (B, B), np.concatenate([B, B], -1)),
    ("cat", lambda x, y: ops.cat([x, y]), (B, B), np.concatenate([B, B])),
    ("stack", lambda x, y: ops.stack([x, y], -1), (B, B), np.stack([B, B], -1)),
    ("unsqueeze", lambda x: ops.unsqueeze(x, 1), (B,), B[:, None]),
    ("flatten", lambda x: ops.flatten(x), (A,), A.reshape(2, -1)),
    ("flatten_dims", lambda x: ops.flatten(x, start_dim=0, end_dim=1), (A,), A.reshape(6, 4)),
    ("cast", lambda x: ops.cast(x, ms.float16), (A,), A.astype(np.float16)),
    ("argmax", lambda x: ops.argmax(x), (A,), A.argmax()),
    ("argmax_dim", lambda x: ops.argmax(x, 1, True), (A,), A.argmax(1)[:, None]),
    ("argmin", lambda x: ops.argmin(x, -1), (A,), A.argmin(-1)),
    ("argmin_all", lambda x: ops.argmin(x, None, True), (A,), A.argmin().reshape(1, 1, 1)),
    ("one_hot", lambda x: ops.one_hot(x, 4), (np.array([3, 0, 1], np.int32),), np.eye(4)[[3, 0, 1]]),
    ("matmul", lambda x, y: ops.matmul(x, y), (A, B.T), A @ B.T),
    ("matmul_vec_mat", lambda x, y: ops.matmul(x, y), (V, B.T), V @ B.T),
    ("matmul_mat_vec", lambda x, y: ops.matmul(x, y), (A, V), A @ V),
    ("matmul_vec_vec", lambda x, y: ops.matmul(x, y), (V, V), V @ V),
    ("mm", lambda x, y: ops.mm(x, y), (B, B.T), B @ B.T),
    ("bmm", lambda x, y: ops.bmm(x, y), (A, A.transpose(0, 2, 1)), A @ A.transpose(0, 2, 1)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_functional_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    tensors = [Tensor(v) for v in inputs]
    out = fn(*tensors)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)
    assert out.shape == np.shape(want)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = Call(fn)(*tensors)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_result_dtypes_follow_mindspore():
    assert ops.argmax(Tensor(A)).dtype == ms.int64
    assert ops.argmin(Tensor(A)).dtype == ms.int32
    assert ops.one_hot(Tensor(np.array([1], np.int32)), 2).dtype == ms.int64
    assert ops.one_hot(Tensor(np.array([1], np.int32)), 2, 1.0, 0.0).dtype == ms.float32
    assert ops.div(Tensor(I), Tensor(J)).dtype == ms.float32
    assert ops.sum(Tensor(I), dtype=ms.float64).dtype == ms.float64


X64 = np.array([[-2.3, -0.4, 0.7], [1.9, 4.2, -5.1]])


@pytest.mark.parametrize("fn", [
    lambda x: ops.silu(x), lambda x: ops.leaky_relu(x, 0.3), lambda x: ops.softplus(x, 2.0, 3.0),
    lambda x: ops.matmul(x, Tensor(X64.T.copy())),
    lambda x: nn.LeakyReLU(1.5)(x), lambda x: nn.SiLU()(x), lambda x: ops.clamp(x, -1.0, 1.0),
], ids=["silu", "leaky_relu", "softplus_beta", "matmul", "LeakyReLU_gt1", "SiLU", "clamp"])
def test_composed_forms_differentiate_like_finite_differences(fn):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x), ()))(Tensor(X64))
    np.testing.assert_allclose(grad.asnumpy(), finite_differences(lambda a: fn(Tensor(a)).asnumpy(), X64), rtol=1e-6, atol=1e-8)


LAYERS = [
    (nn.ReLU6, lambda x: np.clip(x, 0, 6)),
    (nn.HSwish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (nn.HSigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    (nn.SiLU, lambda x: x * sigmoid(x)),
    (nn.LeakyReLU, lambda x: np.where(x > 0, x, 0.2 * x)),
]


@pytest.mark.parametrize("cls,ref", LAYERS, ids=[c.__name__ for c, _ in LAYERS])
def test_activation_layers_match_numpy_and_are_named_activations(cls, ref):
    x = 5 * A
    np.testing.assert_allclose(cls()(Tensor(x)).asnumpy(), ref(x), rtol=1e-5, atol=1e-6)
    name = {"LeakyReLU": "leakyrelu"}.get(cls.__name__, cls.__name__.lower())
    assert isinstance(nn.get_activation(name), cls)
    dense = nn.Dense(4, 2, activation=name)
    assert isinstance(dense.activation, cls)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.div(Tensor(A), Tensor(A), rounding_mode="round"), ValueError,
     r"For 'div', the 'rounding_mode' should be None, 'floor' or 'trunc', but got 'round'"),
    (lambda: ops.clamp(Tensor(A)), ValueError, r"For 'clamp', at least one of 'min' and 'max'"),
    (lambda: ops.amax(Tensor(A), initial=1.0), ValueError, r"For 'amax', the 'initial' and"),
    (lambda: ops.flatten(Tensor(A), "F"), ValueError, r"For 'flatten', the 'order' should be"),
    (lambda: ops.flatten(Tensor(A), start_dim=2, end_dim=1), ValueError,
     r"For 'flatten', the 'start_dim' should be <= 'end_dim': 1, but got 2"),
    (lambda: ops.stack([Tensor(B)], 3), ValueError,
     r"For 'Stack', the 'axis' should be in \[-3, 3\), but got 3"),
    (lambda: ops.stack([]), ValueError, r"For 'stack', the 'tensors' should hold at least one"),
    (lambda: ops.matmul(Tensor(A), Tensor(np.float32(1))), ValueError,
     r"For 'matmul', both inputs should have rank >= 1"),
    (lambda: nn.get_activation("swish2"), ValueError, r"the 'activation' should be one of"),
])
def test_argument_errors_name_the_function_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()
