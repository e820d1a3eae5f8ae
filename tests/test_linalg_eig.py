"""Eig / eig / eigvals (complex eigenvalues and unit-length eigenvectors of general square
matrices) and cond against numpy.linalg, eager and compiled; the eigendecomposition's
gradient against central differences in the real and imaginary parts; sharding and errors.
(Eig's row in the primitive gradient table: tests/test_grad_ops.py.)"""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import complex_ops, householder_ops, linalg_ops, lu_ops
from msops.parallel.strategy import shard
from msops.primitives.sharding import spec_of
from numeric import central_differences
from test_linalg_ops import run  # noqa: F401  (the eager / jit fixture)

RNG = np.random.default_rng(44)
A = RNG.standard_normal((2, 3, 4, 4))                 # real: complex-conjugate pairs appear
C = RNG.standard_normal((3, 3, 3)) + 1j * RNG.standard_normal((3, 3, 3))


def _matched(got, want):
    """got's eigenvalues in the order of want's (each the nearest, one to one)."""
    order = [int(np.argmin(np.abs(got - w))) for w in want]
    assert sorted(order) == list(range(len(want)))
    return got[order]


@pytest.mark.parametrize("x,dtype,out", [(A, np.float64, np.complex128),
                                         (A.astype(np.float32), np.float32, np.complex64),
                                         (C, np.complex128, np.complex128),
                                         (C.astype(np.complex64), np.complex64, np.complex64)],
                         ids=["float64", "float32", "complex128", "complex64"])
def test_eig_equals_numpy(x, dtype, out, run):
    """The eigenvalues are numpy's (as a set per matrix); the vectors have unit length and
    satisfy x v = v diag(w); the dtypes are MindSpore's."""
    w, v = run(ops.eig, Tensor(x))
    assert w.asnumpy().dtype == out and v.asnumpy().dtype == out
    assert w.shape == x.shape[:-1] and v.shape == x.shape
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    want = np.linalg.eigvals(x.astype(np.complex128))
    wn, vn = w.asnumpy(), v.asnumpy()
    for i in np.ndindex(x.shape[:-2]):
        np.testing.assert_allclose(_matched(wn[i], want[i]), want[i], atol=tol * 10)
    np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1, atol=tol)
    np.testing.assert_allclose(x @ vn, vn * wn[..., None, :], atol=tol * 10)
    values = run(ops.eigvals, Tensor(x)).asnumpy()
    assert values.dtype == out
    np.testing.assert_allclose(values, wn, atol=tol)


def test_eig_primitive_without_vectors_gives_an_empty_tensor():
    w, v = ops.Eig()(Tensor(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)))
    np.testing.assert_array_equal(w.asnumpy(), np.array([1, 2], np.complex64))
    assert v.shape == (0,) and v.asnumpy().dtype == np.complex64


def _loss_np(x, ww, wv):
    """The gauge-invariant loss of numpy's eig: sum(Re w, Im w, |v|^2 weighted)."""
    w, v = np.linalg.eig(x)
    return (ww[0] * w.real).sum() + (ww[1] * w.imag).sum() + (wv * np.abs(v) ** 2).sum()


@pytest.mark.parametrize("x", [A[0], C], ids=["real", "complex"])
@pytest.mark.parametrize("vectors", [True, False], ids=["eig", "eigvals"])
def test_eig_gradient_equals_central_differences(x, vectors, run):
    """The adjoint of the eigendecomposition (distinct eigenvalues; |v|^2 does not depend
    on the vectors' phases): eigenvalues and eigenvectors, or eigenvalues alone."""
    ww = RNG.standard_normal((2,) + x.shape[:-1])
    wv = RNG.standard_normal(x.shape) if vectors else np.zeros(x.shape)

    def loss(t):
        if vectors:
            w, v = ops.eig(t)
        else:
            w, v = ops.eigvals(t), None
        total = (ops.real(w) * Tensor(ww[0])).sum() + (ops.imag(w) * Tensor(ww[1])).sum()
        if v is not None:
            total = total + (ops.square(ops.abs(v)) * Tensor(wv)).sum()
        return total
    got = run(ms.grad(loss), Tensor(x)).asnumpy()
    want = central_differences(lambda u: _loss_np(u, ww, wv), x)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf],
                         ids=str)
def test_cond_equals_numpy(p, run):
    x = A + 2 * np.eye(4)
    got = run(lambda t: ops.cond(t, p), Tensor(x)).asnumpy()
    np.testing.assert_allclose(got, np.linalg.cond(x, p), rtol=1e-10)
    if p in (None, 2, -2):                        # the SVD's ratio takes any m, n
        tall = RNG.standard_normal((2, 5, 3))
        np.testing.assert_allclose(ops.cond(Tensor(tall), p).asnumpy(),
                                   np.linalg.cond(tall, p), rtol=1e-10)


def test_cond_mindspore_example():
    x = Tensor(np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], np.float32))
    np.testing.assert_allclose(ops.cond(x).asnumpy(), 1.4142135, rtol=1e-6)
    np.testing.assert_allclose(ops.cond(x, "fro").asnumpy(), 3.1622777, rtol=1e-6)


def test_cond_gradient_equals_central_differences(run):
    x = A[0, 0] + 2 * np.eye(4)
    for p in (None, "fro", 1):
        got = run(ms.grad(lambda t: ops.cond(t, p)), Tensor(x)).asnumpy()
        want = central_differences(lambda u: np.linalg.cond(u, p), x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("call,match,error", [
    (lambda: ops.eig(Tensor(np.ones((2, 3)))), r"For 'Eig', the 'x' should be a square "
                                               r"matrix \(\.\.\., n, n\), but got shape \[2, 3\]",
     ValueError),
    (lambda: ops.eigvals(Tensor(np.eye(2, dtype=np.float16))), r"For 'Eig', the 'x'",
     TypeError),
    (lambda: ops.eig(Tensor(np.array([[[1.0, 0], [0, 1]], [[np.nan, 0], [0, 1]]]))),
     r"For 'Eig', the 'x' should be finite, but got a matrix that is not at batch index "
     r"\(1,\)", ValueError),
    (lambda: ops.Eig(compute_v=1), r"For 'Eig', the type of 'compute_v' should be bool",
     TypeError),
    (lambda: ops.eig(np.eye(2)), r"For 'eig', the 'A' should be a Tensor", TypeError),
    (lambda: ops.cond(Tensor(np.ones(3))), r"For 'cond', the 'A' should be a matrix",
     ValueError),
    (lambda: ops.cond(Tensor(np.eye(3)), 3), r"For 'cond', the 'p' should be one of None, "
                                             r"'fro', 'nuc', inf, -inf, 1, -1, 2, -2, but "
                                             r"got 3", ValueError),
    (lambda: ops.cond(Tensor(np.ones((2, 3))), "fro"), r"For 'cond', the 'A' should be a "
                                                       r"square matrix", ValueError),
])
def test_errors_name_the_op_and_argument(call, match, error):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("prim,outs", [(ops.Eig(True), [(4, 6), (4, 6, 6)]),
                                       (ops.Eig(), [(4, 6), (0,)])], ids=["vectors", "values"])
def test_only_batch_dims_split(prim, outs):
    ins = [(4, 6, 6)]
    spec = spec_of(prim, ins, outs, {})
    with pytest.raises(ValueError, match=r"For 'Eig', input 0 dim 2 cannot be split \(a "
                                         r"factorisation reads the whole matrix\)"):
        shard(prim.name, spec, ((1, 1, 2),), ins, 2)
    assert shard(prim.name, spec, ((2, 1, 1),), ins, 2).device_matrix == (2,)


@pytest.mark.parametrize("module", [linalg_ops, lu_ops, householder_ops, complex_ops],
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_docstring_examples(module):
    """The examples of the linalg, LU, Householder and complex primitives' docstrings."""
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np})
    assert res.failed == 0 and res.attempted > 0
