"""The math cells of msops.nn (LGamma, DiGamma, IGamma, LBeta, MatDet, MatInverse, MatMul,
Moments, Range, ReduceLogSumExp): values against numpy / scipy written here, eagerly and in
GRAPH_MODE; LBeta to double precision where lgamma's terms would cancel; gradients against
finite differences; argument errors."""
import numpy as np
import pytest
import scipy.special as sp

import msops as ms
from msops import Tensor, nn, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(53)
P = RNG.uniform(0.2, 5.0, (3, 4)).astype(np.float32)
Q = RNG.uniform(0.2, 5.0, (3, 4)).astype(np.float32)
M = (RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)).astype(np.float32)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
B = RNG.standard_normal((2, 2, 3)).astype(np.float32)


def lbeta_ref(x, y):
    return sp.betaln(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)


CELLS = [
    ("LGamma", nn.LGamma(), (P,), sp.gammaln(P)),
    ("DiGamma", nn.DiGamma(), (P,), sp.psi(P)),
    ("IGamma", nn.IGamma(), (P, Q), sp.gammainc(P, Q)),
    ("LBeta", nn.LBeta(), (P, Q), lbeta_ref(P, Q)),
    ("LBeta_broadcast", nn.LBeta(), (P, Q[0]), lbeta_ref(P, Q[0])),
    ("MatDet", nn.MatDet(), (M,), np.linalg.det(M)),
    ("MatInverse", nn.MatInverse(), (M,), np.linalg.inv(M)),
    ("MatMul", nn.MatMul(), (A, A[0].T), A @ A[0].T),
    ("MatMul_transposed", nn.MatMul(True, True), (A, B),
     np.swapaxes(A, -1, -2) @ np.swapaxes(B, -1, -2)),
    ("MatMul_vector", nn.MatMul(), (A[0, 0, :3], A[0]), A[0, 0, :3] @ A[0]),
    ("Moments", nn.Moments(), (A,), (A.mean(), A.var())),
    ("Moments_axis", nn.Moments((0, 2), True), (A,),
     (A.mean((0, 2), keepdims=True), A.var((0, 2), keepdims=True))),
    ("Moments_half", nn.Moments(1), (A.astype(np.float16),),
     (A.astype(np.float32).mean(1).astype(np.float16),
      A.astype(np.float32).var(1).astype(np.float16))),
    ("ReduceLogSumExp", nn.ReduceLogSumExp(1), (A * 100,),
     sp.logsumexp(A.astype(np.float64) * 100, 1).astype(np.float32)),
    ("ReduceLogSumExp_keep", nn.ReduceLogSumExp((0, 2), True), (A,),
     sp.logsumexp(A, (0, 2), keepdims=True)),
]


@pytest.mark.parametrize("name,cell,inputs,want", CELLS, ids=[c[0] for c in CELLS])
def test_cell_matches_reference_eager_and_graph(name, cell, inputs, want):
    wants = want if isinstance(want, tuple) else (want,)
    for out in eager_and_compiled(cell, *[Tensor(v) for v in inputs]):
        outs = out if isinstance(out, tuple) else (out,)
        for o, w in zip(outs, wants):
            w = np.asarray(w)
            assert o.shape == w.shape and o.dtype == ms.dtype.pytype_to_dtype(w.dtype)
            rtol = 2e-3 if w.dtype == np.float16 else 2e-5
            np.testing.assert_allclose(o.asnumpy(), w, rtol=rtol, atol=rtol)


def test_lbeta_keeps_double_precision_for_large_arguments():
    x = 10 ** RNG.uniform(-3, 12, 400)
    y = 10 ** RNG.uniform(-3, 12, 400)
    got = nn.LBeta()(Tensor(x), Tensor(y)).asnumpy()
    naive = sp.gammaln(x) + sp.gammaln(y) - sp.gammaln(x + y)
    # scipy's betaln is itself accurate only to ~1e-9 relative for one huge argument
    np.testing.assert_allclose(got, sp.betaln(x, y), rtol=1e-8, atol=1e-9)
    huge = (np.maximum(x, y) > 1e9) & (np.minimum(x, y) < 1)
    assert np.all(np.abs(got - sp.betaln(x, y))[huge] < np.abs(naive - sp.betaln(x, y))[huge]
                  + 1e-9)


def test_range_values_and_dtypes():
    np.testing.assert_array_equal(nn.Range(1, 8, 2)().asnumpy(), [1, 3, 5, 7])
    assert nn.Range(1, 8, 2)().dtype == ms.int32
    np.testing.assert_array_equal(nn.Range(5)().asnumpy(), np.arange(5))
    out = nn.Range(1.0, -1.0, -0.5)()
    assert out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), [1.0, 0.5, 0.0, -0.5])


X = RNG.uniform(0.5, 4.0, (2, 3))
Y = RNG.uniform(0.5, 4.0, (2, 3))


@pytest.mark.parametrize("fn,x", [
    (lambda x: nn.LGamma()(x), X),
    (lambda x: nn.DiGamma()(x), X),
    (lambda x: nn.IGamma()(x, Tensor(Y)), X),
    (lambda x: nn.LBeta()(x, Tensor(Y)), X),
    (lambda x: nn.LBeta()(Tensor(Y * 1e3), x * 20), X),
    (lambda x: nn.MatDet()(x + Tensor(3 * np.eye(3))), RNG.standard_normal((3, 3))),
    (lambda x: nn.MatMul(False, True)(x, Tensor(Y)), X),
    (lambda x: nn.Moments(1)(x)[1] + nn.Moments()(x)[0], X),
    (lambda x: nn.ReduceLogSumExp(0)(x), X),
], ids=["lgamma", "digamma", "igamma", "lbeta", "lbeta_large", "matdet", "matmul",
        "moments", "logsumexp"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call,err,match", [
    (lambda: nn.Range(1, 1), ValueError, r"For 'Range', the 'limit' should not equal"),
    (lambda: nn.Range(1, 5, 0), ValueError, r"For 'Range', the 'delta' should not be 0"),
    (lambda: nn.Range(1, 5, -1), ValueError, r"For 'Range', the 'delta' should step"),
    (lambda: nn.Range("1"), TypeError, r"For 'Range', the 'start' should be an int or a float"),
    (lambda: nn.MatMul(1), TypeError, r"For 'MatMul', the type of 'transpose_x1'"),
    (lambda: nn.Moments(keep_dims=1), TypeError, r"For 'Moments', the type of 'keep_dims'"),
    (lambda: nn.ReduceLogSumExp("a"), TypeError, r"For 'ReduceLogSumExp', the type of 'axis'"),
    (lambda: nn.LBeta()(P, Tensor(Q)), TypeError, r"For 'LBeta', the 'x' should be a Tensor"),
])
def test_argument_errors_name_the_cell_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
