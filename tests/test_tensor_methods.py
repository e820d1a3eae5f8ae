"""MindSpore's Tensor methods (msops/ops/tensor_methods.py): each against numpy written
here, eagerly and inside a compiled GRAPH_MODE Cell (same numbers), the varargs and tuple
forms, gradients through a few against finite differences, argument errors naming the
method, and an attention block written with methods only."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.common.tensor import register_methods
from msops.graph import GraphError
from numeric import finite_differences
from test_functional_forms import Call

RNG = np.random.default_rng(2024)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
P = np.abs(A) + 0.5
M = A > 0.3
I = np.array([[3, -1, 0], [2, 5, -4]], np.int32)
IDX = np.array([2, 0], np.int32)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def erf(x):
    from math import erf as scalar_erf
    return np.vectorize(scalar_erf)(x.astype(np.float64)).astype(np.float32)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# (name, call on Tensors using methods, inputs, numpy reference)
CASES = [
    ("reshape_varargs", lambda x: x.reshape(6, -1), (A,), A.reshape(6, 4)),
    ("reshape_tuple", lambda x: x.reshape((4, -1)), (A,), A.reshape(4, 6)),
    ("view_varargs", lambda x: x.view(2, -1), (A,), A.reshape(2, 12)),
    ("view_tuple", lambda x: x.view((3, 8)), (A,), A.reshape(3, 8)),
    ("transpose", lambda x: x.transpose(0, 2, 1), (A,), A.transpose(0, 2, 1)),
    ("transpose_tuple", lambda x: x.transpose((2, 0, 1)), (A,), A.transpose(2, 0, 1)),
    ("transpose_none", lambda x: x.transpose(), (A,), A.transpose()),
    ("permute", lambda x: x.permute(1, 0, 2), (A,), A.transpose(1, 0, 2)),
    ("swapaxes", lambda x: x.swapaxes(0, -1), (A,), np.swapaxes(A, 0, -1)),
    ("T", lambda x: x.T, (A,), A.T),
    ("expand_dims", lambda x: x.expand_dims(1), (B,), B[:, None]),
    ("unsqueeze", lambda x: x.unsqueeze(-1), (B,), B[..., None]),
    ("squeeze", lambda x: x.expand_dims(0).squeeze(), (B,), B),
    ("squeeze_axis", lambda x: x.expand_dims(0).squeeze(0), (B,), B),
    ("flatten", lambda x: x.flatten(), (A,), A.reshape(-1)),
    ("flatten_dims", lambda x: x.flatten(start_dim=1), (A,), A.reshape(2, 12)),
    ("mean", lambda x: x.mean(), (A,), A.mean()),
    ("mean_axis", lambda x: x.mean(axis=-1, keep_dims=True), (A,), A.mean(-1, keepdims=True)),
    ("sum", lambda x: x.sum(), (A,), A.sum()),
    ("sum_axis", lambda x: x.sum(1, keepdims=True), (A,), A.sum(1, keepdims=True)),
    ("sum_initial", lambda x: x.sum(0, initial=2.0), (A,), A.sum(0) + 2.0),
    ("sum_dtype", lambda x: x.sum(1, ms.float64), (A,), A.astype(np.float64).sum(1)),
    ("prod", lambda x: x.prod(1), (P,), P.prod(1)),
    ("max", lambda x: x.max(), (A,), A.max()),
    ("max_axis", lambda x: x.max(axis=1, keepdims=True), (A,), A.max(1, keepdims=True)),
    ("max_indices", lambda x: x.max(axis=2, return_indices=True)[1], (A,), A.argmax(2)),
    ("min", lambda x: x.min(0), (A,), A.min(0)),
    ("min_indices", lambda x: x.min(axis=0, return_indices=True)[0], (A,), A.min(0)),
    ("argmax", lambda x: x.argmax(-1), (A,), A.argmax(-1)),
    ("argmin", lambda x: x.argmin(1), (A,), A.argmin(1)),
    ("all", lambda x: x.all(), (I,), np.all(I)),
    ("all_axis", lambda x: x.all(1), (I,), np.all(I, 1)),
    ("any", lambda x: x.any(0, True), (I,), np.any(I, 0, keepdims=True)),
    ("abs", lambda x: x.abs(), (A,), np.abs(A)),
    ("exp", lambda x: x.exp(), (A,), np.exp(A)),
    ("log", lambda x: x.log(), (P,), np.log(P)),
    ("sqrt", lambda x: x.sqrt(), (P,), np.sqrt(P)),
    ("square", lambda x: x.square(), (A,), A * A),
    ("neg", lambda x: x.neg(), (A,), -A),
    ("pow", lambda x: x.pow(3.0), (A,), A ** 3),
    ("sign", lambda x: x.sign(), (A,), np.sign(A)),
    ("erf", lambda x: x.erf(), (A,), erf(A)),
    ("sigmoid", lambda x: x.sigmoid(), (A,), sigmoid(A)),
    ("tanh", lambda x: x.tanh(), (A,), np.tanh(A)),
    ("relu", lambda x: x.relu(), (A,), np.maximum(A, 0)),
    ("softmax", lambda x: x.softmax(-1), (A,), softmax(A, -1)),
    ("matmul", lambda x, y: x.matmul(y.T), (A, B), A @ B.T),
    ("add", lambda x, y: x.add(y), (A, B), A + B),
    ("sub", lambda x, y: x.sub(y), (A, B), A - B),
    ("mul", lambda x, y: x.mul(y), (A, B), A * B),
    ("div", lambda x, y: x.div(y), (A, P[0]), A / P[0]),
    ("equal", lambda x, y: x.equal(y), (I, I[::-1].copy()), I == I[::-1]),
    ("ne", lambda x, y: x.ne(y), (I, I[::-1].copy()), I != I[::-1]),
    ("gt", lambda x, y: x.gt(y), (A, B), A > B),
    ("ge", lambda x, y: x.ge(y), (A, B), A >= B),
    ("lt", lambda x, y: x.lt(y), (A, B), A < B),
    ("le", lambda x, y: x.le(y), (A, B), A <= B),
    ("clip", lambda x: x.clip(-0.5, 0.5), (A,), np.clip(A, -0.5, 0.5)),
    ("round", lambda x: (x * 3).round(), (A,), np.round(A * 3)),
    ("floor", lambda x: x.floor(), (A,), np.floor(A)),
    ("ceil", lambda x: x.ceil(), (A,), np.ceil(A)),
    ("isnan", lambda x: x.isnan(), (np.where(A < 0, np.nan, A),), A < 0),
    ("cumsum", lambda x: x.cumsum(1), (A,), np.cumsum(A, 1)),
    ("cumsum_flat", lambda x: x.cumsum(), (A,), np.cumsum(A)),
    ("sort", lambda x: x.sort()[0], (A,), np.sort(A, -1)),
    ("sort_desc", lambda x: x.sort(0, descending=True)[0], (A,), -np.sort(-A, 0)),
    ("topk", lambda x: x.topk(2)[0], (A,), -np.sort(-A, -1)[..., :2]),
    ("masked_fill", lambda x, m: x.masked_fill(m, -9.0), (A, M), np.where(M, -9.0, A)),
    ("gather", lambda x, i: x.gather(i, 1), (A, IDX), A[:, IDX]),
    ("index_select", lambda x, i: x.index_select(2, i), (A, IDX), A[:, :, IDX]),
    ("split", lambda x: x.split(2, axis=2)[1], (A,), A[:, :, 2:]),
    ("chunk", lambda x: x.chunk(3, 1)[2], (A,), A[:, 2:]),
    ("broadcast_to", lambda x: x.broadcast_to((2, 3, 4)), (B,), np.broadcast_to(B, (2, 3, 4))),
    ("expand_as", lambda x, y: x.expand_as(y), (B, A), np.broadcast_to(B, A.shape)),
    ("narrow", lambda x: x.narrow(2, 1, 2), (A,), A[:, :, 1:3]),
    ("flip", lambda x: x.flip((0, 2)), (A,), A[::-1, :, ::-1]),
    ("tril", lambda x: x.tril(), (B,), np.tril(B)),
    ("triu", lambda x: x.triu(1), (B,), np.triu(B, 1)),
    ("tile", lambda x: x.tile((2, 1)), (B,), np.tile(B, (2, 1))),
    ("repeat", lambda x: x.repeat(2), (B,), np.repeat(B, 2)),
    ("repeat_axis", lambda x: x.repeat(3, axis=1), (B,), np.repeat(B, 3, 1)),
    ("float", lambda x: x.float() / 2, (I,), I.astype(np.float32) / 2),
    ("half", lambda x: x.half(), (A,), A.astype(np.float16)),
    ("double", lambda x: x.double(), (A,), A.astype(np.float64)),
    ("int", lambda x: x.int(), (A * 3,), (A * 3).astype(np.int32)),
    ("long", lambda x: x.long(), (A * 3,), (A * 3).astype(np.int64)),
    ("bool", lambda x: x.bool(), (I,), I.astype(bool)),
    ("to", lambda x: x.to(ms.float64), (A,), A.astype(np.float64)),
    ("norm", lambda x: x.norm(), (A,), np.sqrt(np.sum(A * A))),
    ("norm_dim", lambda x: x.norm(dim=-1, keepdim=True), (A,), np.linalg.norm(A, axis=-1, keepdims=True)),
    ("var", lambda x: x.var(), (A,), np.var(A)),
    ("var_axis", lambda x: x.var(axis=1, ddof=1, keepdims=True), (A,), np.var(A, 1, ddof=1, keepdims=True)),
    ("std", lambda x: x.std((0, 2)), (A,), np.std(A, (0, 2))),
]


def _graph_mode(thunk):
    """thunk() run with GRAPH_MODE set (compiled), PYNATIVE_MODE restored."""
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return thunk()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _compiled(fn, *tensors):
    return _graph_mode(lambda: Call(fn)(*tensors))


@pytest.mark.parametrize("name,fn,inputs,want", CASES, ids=[c[0] for c in CASES])
def test_method_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    tensors = [Tensor(v) for v in inputs]
    want = np.asarray(want)
    for out in (fn(*tensors), _compiled(fn, *tensors)):
        assert out.shape == want.shape
        assert out.asnumpy().dtype.kind == want.dtype.kind
        np.testing.assert_allclose(out.asnumpy().astype(np.float64), want.astype(np.float64),
                                   rtol=1e-5, atol=1e-5)


def test_cast_methods_give_mindspore_dtypes():
    x = Tensor(A)
    assert (x.float().dtype, x.half().dtype, x.double().dtype) == (ms.float32, ms.float16, ms.float64)
    assert (x.int().dtype, x.long().dtype, x.bool().dtype) == (ms.int32, ms.int64, ms.bool_)
    assert x.clip(-1, 1, ms.float64).dtype == ms.float64
    assert x.argmax().dtype == ms.int64                          # MindSpore 2.x's index dtype


def test_value_methods_are_eager_only():
    assert Tensor(I).tolist() == I.tolist()
    np.testing.assert_array_equal(Tensor(A).numpy(), A)
    with pytest.raises(GraphError, match=r"asnumpy\(\) was called"):
        _compiled(lambda x: x.tolist(), Tensor(A))


@pytest.mark.parametrize("fn", [
    lambda x: x.view(3, -1).transpose() * Tensor(np.arange(24.0).reshape(8, 3)),
    lambda x: (x.transpose(1, 0) - x.T.mean(axis=0, keep_dims=True)).square(),
    lambda x: x.mean(axis=-1, keep_dims=True) * x,
    lambda x: x.masked_fill(Tensor(np.array([[True, False, False, True]] * 6)), 2.0) * x,
    lambda x: x.std(axis=1) + x.swapaxes(0, 1).sum(axis=0),
], ids=["view_transpose", "transpose_T_mean", "mean", "masked_fill", "std_swapaxes"])
def test_methods_differentiate_like_finite_differences(fn):
    x64 = RNG.standard_normal((6, 4))
    loss = lambda x: fn(x).sum()
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x64)
    grad = ms.grad(loss)
    np.testing.assert_allclose(grad(Tensor(x64)).asnumpy(), want, rtol=1e-6, atol=1e-8)
    compiled = _graph_mode(lambda: grad(Tensor(x64)))              # on the graph
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn,error,match", [
    (lambda x: x.view(-1, -1), ValueError, r"For 'Tensor\.view', the 'shape' may hold at most one -1"),
    (lambda x: x.reshape(2, 1.5), TypeError, r"For 'Tensor\.reshape', the 'shape' should be ints"),
    (lambda x: x.transpose(0, 1), ValueError, r"For 'Tensor\.transpose', the 'axes' should be a permutation"),
    (lambda x: x.permute(0, 0, 1), ValueError, r"For 'Tensor\.permute', the 'axes' should be a permutation"),
    (lambda x: x.swapaxes(0, 3), ValueError, r"For 'Tensor\.swapaxes', the 'axis1' should be an int in \[-3, 3\)"),
    (lambda x: x.var(axis=0, ddof=2), ValueError, r"For 'var', the 'ddof' should be in \[0, 2\)"),
    (lambda x: x.max(axis=(0, 1), return_indices=True), ValueError, r"For 'Tensor\.max', 'return_indices'"),
], ids=["view_two_minus_one", "reshape_float", "transpose_short", "permute_repeat", "swapaxes_range",
        "var_ddof", "max_indices_tuple"])
def test_bad_arguments_name_the_method(fn, error, match):
    with pytest.raises(error, match=match):
        fn(Tensor(A))
    with pytest.raises(error, match=match):
        _compiled(fn, Tensor(A))


def test_registry_refuses_to_replace_an_attribute():
    with pytest.raises(ValueError, match=r"'shape' already exists"):
        register_methods({"shape": lambda self: None})
    with pytest.raises(ValueError, match=r"'view' already exists"):
        register_methods({"view": lambda self: None})


class Attention(nn.Cell):
    """A MindSpore-style self-attention core written with Tensor methods only."""

    def __init__(self, heads):
        super().__init__()
        self.heads = heads

    def construct(self, q, k, v, mask):
        b, s, d = q.shape
        h = self.heads
        q = q.view(b, s, h, d // h).transpose(0, 2, 1, 3)
        k = k.view(b, s, h, d // h).transpose(0, 2, 3, 1)
        v = v.view(b, s, h, d // h).transpose(0, 2, 1, 3)
        scores = q.matmul(k).mul(1.0 / np.sqrt(d // h)).masked_fill(mask, -1e9)
        out = scores.softmax(-1).matmul(v)
        return out.transpose(0, 2, 1, 3).view(b, s, d)


def test_attention_written_with_methods_matches_numpy_compiled():
    b, s, d, h = 2, 5, 8, 2
    q, k, v = (RNG.standard_normal((b, s, d)).astype(np.float32) for _ in range(3))
    mask = np.triu(np.ones((s, s), bool), 1)
    split = lambda t: t.reshape(b, s, h, d // h).transpose(0, 2, 1, 3)
    scores = split(q) @ split(k).transpose(0, 1, 3, 2) / np.sqrt(d // h)
    want = (softmax(np.where(mask, -1e9, scores), -1) @ split(v)).transpose(0, 2, 1, 3).reshape(b, s, d)
    args = [Tensor(q), Tensor(k), Tensor(v), Tensor(mask)]
    np.testing.assert_allclose(Attention(h)(*args).asnumpy(), want, rtol=1e-5, atol=1e-5)
    got = _graph_mode(lambda: Attention(h)(*args))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_numpy_functions_still_see_the_values():
    """np.sum(t) would otherwise call t.sum(axis=, out=) (MindSpore's signature has no out)."""
    x = Tensor(A)
    for f in (np.sum, np.mean, np.max, np.min, np.prod, np.std, np.var, np.all, np.any,
              np.cumsum, np.transpose, np.squeeze, np.round):
        got = f(x)
        assert isinstance(got, (np.ndarray, np.generic)), f.__name__
        np.testing.assert_array_equal(got, f(A))
    np.testing.assert_array_equal(np.concatenate([x, Tensor(B[None])]), np.concatenate([A, B[None]]))
