"""einsum (einsum_func) and norm / vector_norm / matrix_norm (norm_func): values against
np.einsum and np.linalg.norm over several shapes, dtypes and axes, eagerly and compiled;
gradients against float64 finite differences; errors naming the function."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_creation_mask_pad import eager_and_compiled

RNG = np.random.default_rng(77)


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


A, B, C, D = arr(2, 3, 4), arr(2, 4, 5), arr(4), arr(5, 3)
Q, K = arr(2, 3, 4, 6), arr(2, 3, 5, 6)
W = arr(4, 6)
I1, I2 = RNG.integers(-5, 5, (3, 4)).astype(np.int32), RNG.integers(-5, 5, (4, 2)).astype(np.int32)

EINSUMS = [
    ("bij,bjk->bik", (A, B)), ("bij,bjk", (A, B)), ("ijk->kji", (A,)), ("ijk->j", (A,)),
    ("ijk", (A,)), ("ijk->", (A,)), ("ijk,k->ij", (A, C)), ("bij,bjk->", (A, B)),
    ("bij,bjk->kb", (A, B)), ("i,j->ij", (C, C)), ("i,i->", (C, C)), ("i,i", (C, C)),
    ("bhqd,bhkd->bhqk", (Q, K)), ("bsh,hd->bsd", (A, W)), ("ij,jk->ik", (I1, I2)),
    ("ij,kl->ijkl", (A[0], D)), ("bij,bjk,kl->bil", (A, B, D)), ("b i j , b j k -> b i k", (A, B)),
    ("...jk,...kl->...jl", (A, B)), ("...k,k", (A, C)), ("bi...,bj...->...ij", (A, A)),
    ("ij,ij->ij", (D, D)), ("ijk,ikj->i", (A, A.transpose(0, 2, 1).copy())),
]


@pytest.mark.parametrize("eq,ops_", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_matches_numpy_eager_and_compiled(eq, ops_):
    want = np.einsum(eq.replace(" ", ""), *ops_)
    for out in eager_and_compiled(lambda *xs: ops.einsum(eq, *xs), ops_):
        assert out.shape == want.shape
        assert out.dtype == ms.dtype.from_numpy(ops_[0].dtype)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_einsum_float16_and_empty():
    h = A.astype(np.float16), B.astype(np.float16)
    out = ops.einsum("bij,bjk->bik", *[Tensor(x) for x in h])
    assert out.dtype == ms.float16
    np.testing.assert_allclose(out.asnumpy(), np.einsum("bij,bjk->bik", *h), rtol=1e-2,
                               atol=1e-2)
    e = np.zeros((2, 0, 4), np.float32)
    out = ops.einsum("bij,bjk->bik", Tensor(e), Tensor(B))
    assert out.shape == (2, 0, 5)
    z = ops.einsum("bij,bjk->bik", Tensor(A[:, :, :0].copy()), Tensor(B[:, :0].copy()))
    np.testing.assert_array_equal(z.asnumpy(), np.zeros((2, 3, 5)))


X3 = RNG.standard_normal((2, 3, 4))
Y3 = RNG.standard_normal((2, 4, 5))
M64 = RNG.standard_normal((4, 6))


@pytest.mark.parametrize("eq,other", [
    ("bij,bjk->bik", Y3), ("bij,jk->bik", M64[:, :5]), ("bij,bkj->ik", X3),
    ("bij,bjk->kb", Y3), ("ijk->kj", None), ("bij,bij->", X3),
])
def test_einsum_gradients_match_finite_differences(eq, other):
    def f(x):
        return ops.einsum(eq, x, Tensor(other)) if other is not None else ops.einsum(eq, x)

    def weighted(x):
        out = f(x)
        return out * Tensor(np.resize(np.linspace(-1, 2, 37), out.shape))

    grad = ms.grad(lambda x: ops.ReduceSum()(weighted(x), ()))(Tensor(X3))
    want = finite_differences(lambda a: weighted(Tensor(a)).asnumpy(), X3)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


INF = np.inf
NORMS = [
    # (call, numpy reference)
    (lambda x: ops.norm(x), lambda a: np.linalg.norm(a.ravel())),
    (lambda x: ops.norm(x, keepdim=True), lambda a: np.linalg.norm(a.ravel()).reshape(1, 1, 1)),
    (lambda x: ops.norm(x, None, -1), lambda a: np.linalg.norm(a, None, -1)),
    (lambda x: ops.norm(x, 1, 0, True), lambda a: np.linalg.norm(a, 1, 0, True)),
    (lambda x: ops.norm(x, INF, 1), lambda a: np.linalg.norm(a, INF, 1)),
    (lambda x: ops.norm(x, -INF, -2), lambda a: np.linalg.norm(a, -INF, -2)),
    (lambda x: ops.norm(x, 0, 2), lambda a: np.linalg.norm(a, 0, 2)),
    (lambda x: ops.norm(x, 3, (1,)), lambda a: np.linalg.norm(a, 3, 1)),
    (lambda x: ops.norm(x, 0.5, -1), lambda a: np.linalg.norm(a, 0.5, -1)),
    (lambda x: ops.norm(x, -1.5, 0), lambda a: np.linalg.norm(a, -1.5, 0)),
    (lambda x: ops.norm(x, "fro", (0, 2)), lambda a: np.linalg.norm(a, "fro", (0, 2))),
    (lambda x: ops.norm(x, None, (-1, -2), True),
     lambda a: np.linalg.norm(a, None, (-1, -2), True)),
    (lambda x: ops.norm(x, 1, (1, 2)), lambda a: np.linalg.norm(a, 1, (1, 2))),
    (lambda x: ops.norm(x, -1, (2, 1)), lambda a: np.linalg.norm(a, -1, (2, 1))),
    (lambda x: ops.norm(x, INF, (0, 1), True), lambda a: np.linalg.norm(a, INF, (0, 1), True)),
    (lambda x: ops.norm(x, -INF, (1, 2)), lambda a: np.linalg.norm(a, -INF, (1, 2))),
    (lambda x: ops.norm(ops.reshape(ops.narrow(x, 0, 0, 1), (3, 4)), 1),
     lambda a: np.linalg.norm(a[0], 1)),
    (lambda x: ops.norm(ops.reshape(ops.narrow(x, 1, 2, 1), (-1,)), 4),
     lambda a: np.linalg.norm(a[:, 2].ravel(), 4)),
    (lambda x: ops.vector_norm(x), lambda a: np.linalg.norm(a.ravel())),
    (lambda x: ops.vector_norm(x, INF, (0, 2), True),
     lambda a: np.abs(a).max((0, 2), keepdims=True)),
    (lambda x: ops.vector_norm(x, 1, -1), lambda a: np.abs(a).sum(-1)),
    (lambda x: ops.matrix_norm(x), lambda a: np.linalg.norm(a, "fro", (-2, -1))),
    (lambda x: ops.matrix_norm(x, -INF, (0, 2), True),
     lambda a: np.linalg.norm(a, -INF, (0, 2), True)),
    # the singular-value norms (Svd)
    (lambda x: ops.norm(x, "nuc", (0, 1)), lambda a: np.linalg.norm(a, "nuc", (0, 1))),
    (lambda x: ops.norm(x, 2, (2, 1), True), lambda a: np.linalg.norm(a, 2, (2, 1), True)),
    (lambda x: ops.matrix_norm(x, -2), lambda a: np.linalg.norm(a, -2, (-2, -1))),
]


@pytest.mark.parametrize("i", range(len(NORMS)))
@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
def test_norm_matches_numpy_eager_and_compiled(i, dtype, tol):
    fn, ref = NORMS[i]
    a = A.astype(dtype)
    want = ref(a)
    for out in eager_and_compiled(fn, (a,)):
        assert out.shape == np.shape(want)
        assert out.dtype == ms.dtype.from_numpy(np.dtype(dtype))
        np.testing.assert_allclose(out.asnumpy(), want, rtol=tol, atol=tol)


def test_norm_dtype_casts_first():
    out = ops.norm(Tensor(I1), 1, 1, dtype=ms.float32)
    assert out.dtype == ms.float32
    np.testing.assert_allclose(out.asnumpy(), np.abs(I1).sum(1))
    half = ops.norm(Tensor(A), dtype=ms.float16)
    assert half.dtype == ms.float16
    np.testing.assert_allclose(half.asnumpy(), np.linalg.norm(A.ravel()), rtol=1e-3)


@pytest.mark.parametrize("fn", [
    lambda x: ops.norm(x), lambda x: ops.norm(x, 1, -1), lambda x: ops.norm(x, 3.5, 0),
    lambda x: ops.norm(x, INF, 1), lambda x: ops.norm(x, -INF, 1),
    lambda x: ops.norm(x, "fro", (0, 1)), lambda x: ops.norm(x, 1, (0, 1)),
    lambda x: ops.norm(x, -INF, (0, 1), True), lambda x: ops.vector_norm(x, 0.7, (0,)),
    lambda x: ops.norm(x, "nuc", (0, 1)), lambda x: ops.matrix_norm(x, 2),
], ids=["2", "1", "p", "inf", "-inf", "fro", "mat1", "mat-inf", "vector_norm_p", "nuc",
        "mat2"])
def test_norm_gradients_match_finite_differences(fn):
    x = RNG.standard_normal((3, 4)) + 0.1      # away from 0 (|x| is not smooth there)
    x = x + np.arange(12).reshape(3, 4) * 1e-3    # ties of max / min broken
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.einsum("ij,jk", Tensor(D)), ValueError,
     r"For 'einsum', the equation 'ij,jk' names 2 operands, but got 1"),
    (lambda: ops.einsum("ii->i", Tensor(D[:3])), NotImplementedError,
     r"For 'einsum', an index repeated within one operand \(a diagonal, operand 0 'ii' of "
     r"'ii->i'\)"),
    (lambda: ops.einsum("ij->ik", Tensor(D)), ValueError, r"For 'einsum', the output 'ik'"),
    (lambda: ops.einsum("ijk", Tensor(D)), ValueError,
     r"For 'einsum', operand 0 'ijk' of 'ijk' names 3 dims, but it has rank 2"),
    (lambda: ops.einsum("ij,jk", Tensor(D), Tensor(D)), ValueError,
     r"For 'einsum', index 'j' should have one size in every operand"),
    (lambda: ops.einsum("i1", Tensor(D)), ValueError, r"For 'einsum', the equation 'i1' should"),
    (lambda: ops.einsum("...ij->ij", Tensor(A)), ValueError,
     r"For 'einsum', the output 'ij' of '...ij->ij' should hold '...'"),
    (lambda: ops.einsum("ij,jk", Tensor(I1), Tensor(W)), TypeError,
     r"For 'einsum', the operands should have one dtype"),
    (lambda: ops.norm(Tensor(A), "fro", 1), TypeError,
     r"For 'norm', the 'ord' of a vector norm should be"),
    (lambda: ops.norm(Tensor(A), 3, (0, 1)), ValueError,
     r"For 'norm', the 'ord' of a matrix norm should be one of"),
    (lambda: ops.norm(Tensor(A), 1), ValueError,
     r"For 'norm', the 'A' should be 1-D or 2-D when 'dim' is None and 'ord' is given"),
    (lambda: ops.norm(Tensor(A), None, 3), ValueError, r"For 'norm', the 'dim' should be in"),
    (lambda: ops.norm(Tensor(A), None, (1, -2)), ValueError,
     r"For 'norm', the 'dim' should not repeat a dim"),
    (lambda: ops.norm(Tensor(A), None, (0, 1, 2)), ValueError,
     r"For 'norm', the 'dim' should be an int or a tuple of 1 or 2 ints"),
    (lambda: ops.norm(Tensor(I1)), TypeError, r"For 'norm', the 'A' should be a float Tensor"),
    (lambda: ops.matrix_norm(Tensor(C)), ValueError, r"For 'matrix_norm', the 'A' should have"),
    (lambda: ops.vector_norm(Tensor(A), "fro"), TypeError, r"For 'vector_norm', the 'ord'"),
])
def test_errors_name_the_function(make, err, match):
    with pytest.raises(err, match=match):
        make()
