"""The linalg primitives and functions (inverse, det, slogdet, logdet, cholesky, matrix_solve,
MatrixTriangularSolve, qr, svd, pinv, matrix_power) against numpy.linalg, eager and compiled;
gradients of the composed functions against finite differences; the errors for bad shapes,
dtypes and singular matrices. (Each primitive's own backward: tests/test_grad_ops.py.)"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.parallel.strategy import shard
from msops.primitives.sharding import spec_of
from numeric import finite_differences

RNG = np.random.default_rng(31)
A = RNG.standard_normal((2, 3, 4, 4)) + 3 * np.eye(4)       # a (2, 3) batch, well conditioned
B = RNG.standard_normal((2, 3, 4, 2))
TALL = RNG.standard_normal((3, 5, 3))
SPD = A @ A.swapaxes(-1, -2) + np.eye(4)
RHS52, V3 = RNG.standard_normal((5, 2)), RNG.standard_normal(3)


def expm_symmetric(s):
    """exp of symmetric matrices from their eigendecomposition."""
    w, q = np.linalg.eigh(s)
    return (q * np.exp(w)[..., None, :]) @ q.swapaxes(-1, -2)


def expm_taylor(x, terms=40):
    """The series sum x^k / k! (small norms: converged to double precision)."""
    total, term = np.broadcast_to(np.eye(x.shape[-1]), x.shape).copy(), np.eye(x.shape[-1])
    for k in range(1, terms):
        term = term @ x / k
        total = total + term
    return total


def expm_nilpotent(x):
    """A strictly triangular x: the series ends at x^(n-1)."""
    return expm_taylor(x, x.shape[-1] + 1)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield (lambda fn, *a: fn(*a)) if request.param == "eager" else \
        (lambda fn, *a: ms.jit(fn)(*a))
    ms.set_context(mode=ms.PYNATIVE_MODE)


def np_of(out):
    return tuple(t.asnumpy() for t in out) if isinstance(out, tuple) else out.asnumpy()


@pytest.mark.parametrize("name,fn,args,want", [
    ("inverse", ops.inverse, (A,), np.linalg.inv(A)),
    ("MatrixInverse_adjoint", ops.MatrixInverse(True), (A,), np.linalg.inv(A).swapaxes(-1, -2)),
    ("det", ops.det, (A,), np.linalg.det(A)),
    ("matrix_determinant", ops.matrix_determinant, (A,), np.linalg.det(A)),
    ("slogdet", ops.slogdet, (A - 3 * np.eye(4),), np.linalg.slogdet(A - 3 * np.eye(4))),
    ("log_matrix_determinant", ops.log_matrix_determinant, (A,), np.linalg.slogdet(A)),
    ("cholesky", ops.cholesky, (SPD,), np.linalg.cholesky(SPD)),
    ("cholesky_upper", lambda x: ops.cholesky(x, upper=True), (SPD,),
     np.linalg.cholesky(SPD).swapaxes(-1, -2)),
    ("matrix_solve", ops.matrix_solve, (A, B), np.linalg.solve(A, B)),
    ("cholesky_solve", ops.cholesky_solve, (B, np.linalg.cholesky(SPD)), np.linalg.solve(SPD, B)),
    ("cholesky_solve_upper", lambda b, u: ops.cholesky_solve(b, u, upper=True),
     (B, np.linalg.cholesky(SPD).swapaxes(-1, -2)), np.linalg.solve(SPD, B)),
    ("cholesky_inverse", ops.cholesky_inverse, (np.linalg.cholesky(SPD),), np.linalg.inv(SPD)),
    ("cholesky_inverse_upper", lambda u: ops.cholesky_inverse(u, True),
     (np.linalg.cholesky(SPD).swapaxes(-1, -2),), np.linalg.inv(SPD)),
    ("matrix_solve_adjoint", lambda a, b: ops.matrix_solve(a, b, adjoint=True), (A, B),
     np.linalg.solve(A.swapaxes(-1, -2), B)),
    ("triangular_lower", ops.MatrixTriangularSolve(), (A, B), np.linalg.solve(np.tril(A), B)),
    ("triangular_upper_adjoint", ops.MatrixTriangularSolve(False, True), (A, B),
     np.linalg.solve(np.triu(A).swapaxes(-1, -2), B)),
    ("qr", ops.qr, (TALL,), np.linalg.qr(TALL)),
    ("qr_complete", lambda x: ops.qr(x, mode="complete"), (TALL,),
     np.linalg.qr(TALL, mode="complete")),
    ("svd_values", lambda x: ops.svd(x, compute_uv=False), (TALL,),
     np.linalg.svd(TALL, compute_uv=False)),
    ("pinv", ops.pinv, (TALL,), np.linalg.pinv(TALL)),
    ("lstsq", ops.lstsq, (TALL[0], RHS52), np.linalg.lstsq(TALL[0], RHS52, rcond=None)[0]),
    ("lstsq_min_norm", ops.lstsq, (TALL[0].T, V3), np.linalg.lstsq(TALL[0].T, V3, rcond=None)[0]),
    ("pinv_rank_deficient", ops.pinv, (np.outer([1.0, 2, 3], [1.0, -1]),),
     np.linalg.pinv(np.outer([1.0, 2, 3], [1.0, -1]))),
    ("matrix_power_3", lambda x: ops.matrix_power(x, 3), (A,), np.linalg.matrix_power(A, 3)),
    ("matrix_power_-2", lambda x: ops.matrix_power(x, -2), (A,),
     np.linalg.matrix_power(A, -2)),
    ("matrix_exp_symmetric", ops.matrix_exp, (SPD / 10,), expm_symmetric(SPD / 10)),
    ("matrix_exp_nilpotent", ops.matrix_exp, (np.triu(A, 1),), expm_nilpotent(np.triu(A, 1))),
    ("matrix_exp_taylor", ops.matrix_exp, (A / 20,), expm_taylor(A / 20)),
    ("matrix_power_0", lambda x: ops.matrix_power(x, 0), (A,), np.broadcast_to(np.eye(4),
                                                                              A.shape)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_values_equal_numpy(name, fn, args, want, run):
    got = np_of(run(fn, *[Tensor(a) for a in args]))
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert g.shape == np.shape(w) and g.dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_factors_rebuild_the_input(full_matrices, run):
    s, u, v = np_of(run(lambda x: ops.svd(x, full_matrices), Tensor(TALL)))
    k = s.shape[-1]
    np.testing.assert_allclose(s, np.linalg.svd(TALL, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ v[..., :k].swapaxes(-1, -2),
                               TALL, atol=1e-12)
    for q in (u, v):                      # orthonormal columns
        np.testing.assert_allclose(q.swapaxes(-1, -2) @ q, np.broadcast_to(
            np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-12)
    assert u.shape == (3, 5, 5 if full_matrices else 3) and v.shape == (3, 3, 3)


def test_svd_primitive_without_uv_gives_zeros():
    s, u, v = ops.Svd(compute_uv=False)(Tensor(TALL))
    np.testing.assert_allclose(s.asnumpy(), np.linalg.svd(TALL, compute_uv=False))
    assert u.shape == (3, 5, 3) and v.shape == (3, 3, 3)
    assert not u.asnumpy().any() and not v.asnumpy().any()


def test_singular_matrices_follow_mindspore():
    """det 0, slogdet (0, -inf), logdet -inf (NaN for a negative det); inverse, solve and
    Cholesky raise ValueErrors naming the op and the matrix's batch index."""
    sing = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    assert ops.det(Tensor(sing)).asnumpy().tolist() == [1.0, 0.0]
    sign, log_abs = np_of(ops.slogdet(Tensor(sing)))
    assert sign.tolist() == [1.0, 0.0] and log_abs[1] == -np.inf
    neg = np.array([[[0.0, 1.0], [1.0, 0.0]], [[2.0, 0.0], [0.0, 0.0]]])
    got = ops.logdet(Tensor(neg)).asnumpy()
    assert np.isnan(got[0]) and got[1] == -np.inf
    with pytest.raises(ValueError, match=r"For 'MatrixInverse', the 'x' should be invertible, "
                                         r"but got a matrix that is not at batch index \(1,\)"):
        ops.inverse(Tensor(sing))
    with pytest.raises(ValueError, match=r"For 'MatrixSolve', the 'matrix' should be "
                                         r"invertible.*\(1,\)"):
        ops.matrix_solve(Tensor(sing), Tensor(np.ones((2, 2, 1))))
    with pytest.raises(ValueError, match=r"For 'MatrixTriangularSolve', the 'matrix' should "
                                         r"be invertible"):
        ops.MatrixTriangularSolve()(Tensor(np.array([[1.0, 5.0], [3.0, 0.0]])),
                                   Tensor(np.ones((2, 1))))
    with pytest.raises(ValueError, match=r"For 'Cholesky', the 'input_x' should be symmetric "
                                         r"positive definite"):
        ops.cholesky(Tensor(-np.eye(3)))


def test_float16_computes_in_float32():
    x = (A[0, 0] / 2).astype(np.float16)
    got = ops.inverse(Tensor(x))
    assert got.dtype == ms.float16
    want = np.linalg.inv(x.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got.asnumpy(), want)
    assert ops.det(Tensor(x)).asnumpy() == np.float16(np.linalg.det(x.astype(np.float32)))


@pytest.mark.parametrize("call,match,error", [
    (lambda: ops.inverse(Tensor(np.ones((2, 3)))),
     r"For 'MatrixInverse', the 'x' should be a square matrix \(\.\.\., n, n\), but got shape "
     r"\[2, 3\]\.", ValueError),
    (lambda: ops.det(Tensor(np.ones(3))),
     r"For 'MatrixDeterminant', the 'x' should be a square matrix", ValueError),
    (lambda: ops.inverse(Tensor(np.eye(2, dtype=np.int32))),
     r"For 'MatrixInverse', the 'x'", TypeError),
    (lambda: ops.matrix_solve(Tensor(np.eye(3)), Tensor(np.ones((2, 1)))),
     r"For 'MatrixSolve', the 'rhs' should have shape \[3\] \+ \[k\]", ValueError),
    (lambda: ops.matrix_solve(Tensor(np.eye(2)), Tensor(np.ones((2, 1), np.float32))),
     r"For 'MatrixSolve', the 'rhs' should have the same dtype as 'matrix'", TypeError),
    (lambda: ops.MatrixInverse(adjoint=1), r"For 'MatrixInverse', the type of 'adjoint' should be "
     r"bool", TypeError),
    (lambda: ops.qr(Tensor(np.ones(3))), r"For 'Qr', the rank of 'x' should be >= 2",
     ValueError),
    (lambda: ops.qr(Tensor(np.eye(2)), mode="r"),
     r"For 'qr', the 'mode' should be 'reduced' or 'complete', but got 'r'", ValueError),
    (lambda: ops.matrix_power(Tensor(np.eye(2)), 1.5), r"For 'matrix_power', the 'n' should "
                                                       r"be an int", TypeError),
    (lambda: ops.matrix_power(Tensor(np.ones((2, 3))), 2),
     r"For 'matrix_power', the 'input' should be a square matrix", ValueError),
    (lambda: ops.pinv(Tensor(np.eye(2)), rtol=-1.0), r"For 'pinv', the 'rtol'", ValueError),
    (lambda: ops.lstsq(Tensor(np.eye(3)), Tensor(np.ones(2))),
     r"For 'lstsq', the 'A' should be \(m, k\) or \(m,\)", ValueError),
    (lambda: ops.cholesky(np.eye(2)), r"For 'cholesky', the 'input_x' should be a Tensor",
     TypeError),
])
def test_errors_name_the_op_and_argument(call, match, error):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("name,fn,x", [
    ("logdet", ops.logdet, SPD[0, 0]),
    ("pinv", ops.pinv, TALL[0]),
    ("matrix_power_-2", lambda x: ops.matrix_power(x, -2), A[0, 0]),
    ("matrix_power_5", lambda x: ops.matrix_power(x, 5), A[0, 0] / 3),
    ("svd_values", lambda x: ops.svd(x, compute_uv=False), TALL[1]),
    ("cholesky_inverse", ops.cholesky_inverse, np.linalg.cholesky(SPD[0, 1])),
    ("matrix_exp", ops.matrix_exp, A[1, 2] / 2),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_equal_finite_differences(name, fn, x, run):
    weights = RNG.standard_normal(np.shape(fn(Tensor(x)).asnumpy()))
    loss = lambda t: ops.ReduceSum()(fn(t) * Tensor(weights), ())   # noqa: E731
    got = run(ms.grad(loss), Tensor(x)).asnumpy()
    want = finite_differences(lambda v: fn(Tensor(v)).asnumpy() * weights, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_second_derivative_of_the_inverse():
    """The backward rules are primitives, so they differentiate again: d2/dx2 of
    sum(w * inverse(x)) by differentiating the gradient, against finite differences of it."""
    x, w = A[0, 0], RNG.standard_normal((4, 4))
    v = RNG.standard_normal((4, 4))

    def grad_dot_v(t):
        g = ms.grad(lambda u: ops.ReduceSum()(ops.inverse(u) * Tensor(w), ()))(t)
        return ops.ReduceSum()(g * Tensor(v), ())
    got = ms.grad(grad_dot_v)(Tensor(x)).asnumpy()
    want = finite_differences(lambda u: grad_dot_v(Tensor(u)).asnumpy(), x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("prim,ins,outs,strategy,dim", [
    (ops.MatrixInverse(), [(4, 6, 6)], [(4, 6, 6)], ((1, 2, 1),), 1),
    (ops.LogMatrixDeterminant(), [(4, 6, 6)], [(4,), (4,)], ((1, 1, 2),), 2),
    (ops.MatrixSolve(), [(4, 6, 6), (4, 6, 2)], [(4, 6, 2)], ((1, 1, 2), (1, 1, 1)), 2),
    (ops.Svd(), [(4, 6, 3)], [(4, 3), (4, 6, 3), (4, 3, 3)], ((1, 2, 1),), 1),
])
def test_only_batch_dims_split(prim, ins, outs, strategy, dim):
    """A matrix dim split is refused with the reason; the batch dims (and MatrixSolve's
    right-hand-side columns) split."""
    spec = spec_of(prim, ins, outs, {})
    with pytest.raises(ValueError, match=rf"For '{prim.name}', input \d dim {dim} cannot be "
                                         r"split \(a factorisation reads the whole matrix\)"):
        shard(prim.name, spec, strategy, ins, 2)
    batch = tuple((2,) + (1,) * (len(s) - 1) for s in ins)
    assert shard(prim.name, spec, batch, ins, 2).device_matrix == (2,)
    if isinstance(prim, ops.MatrixSolve):
        assert shard(prim.name, spec, ((1, 1, 1), (1, 1, 2)), ins, 2).device_matrix == (2,)


def test_tensor_methods_call_the_functions():
    a, spd, b = Tensor(A[0, 0]), Tensor(SPD[0, 0]), Tensor(B[0, 0])
    np.testing.assert_allclose(a.inverse().asnumpy(), np.linalg.inv(A[0, 0]))
    np.testing.assert_allclose(a.det().asnumpy(), np.linalg.det(A[0, 0]))
    np.testing.assert_allclose(a.slogdet()[1].asnumpy(), np.linalg.slogdet(A[0, 0])[1])
    np.testing.assert_allclose(spd.logdet().asnumpy(), np.log(np.linalg.det(SPD[0, 0])))
    np.testing.assert_allclose(a.matrix_power(2).asnumpy(), A[0, 0] @ A[0, 0])
    np.testing.assert_allclose((a / 20).matrix_exp().asnumpy(), expm_taylor(A[0, 0] / 20))
    low = spd.cholesky()
    np.testing.assert_allclose(low.asnumpy(), np.linalg.cholesky(SPD[0, 0]))
    np.testing.assert_allclose(b.cholesky_solve(low).asnumpy(), np.linalg.solve(SPD[0, 0],
                                                                                B[0, 0]))
    np.testing.assert_allclose(low.cholesky_inverse().asnumpy(), np.linalg.inv(SPD[0, 0]))
    np.testing.assert_allclose(a.svd(compute_uv=False).asnumpy(),
                               np.linalg.svd(A[0, 0], compute_uv=False))
    np.testing.assert_allclose(a.kron(b).asnumpy(), np.kron(A[0, 0], B[0, 0]))
    np.testing.assert_allclose(a.mv(b[:, 0]).asnumpy(), A[0, 0] @ B[0, 0][:, 0])
    np.testing.assert_allclose(a.addmm(a, a, beta=2).asnumpy(), 2 * A[0, 0] + A[0, 0] @ A[0, 0])


@pytest.mark.filterwarnings("error")
def test_empty_and_non_finite_inputs():
    """Empty batches and 0x0 matrices give empty (or, for det, 1) results; a matrix with a
    NaN or inf entry gives a NaN exponential, the others of the batch are unaffected; an
    empty matrix's pseudo-inverse is the empty transpose; no numpy warning on the way."""
    assert ops.inverse(Tensor(np.ones((0, 3, 3)))).shape == (0, 3, 3)
    assert ops.det(Tensor(np.ones((2, 0, 0)))).asnumpy().tolist() == [1.0, 1.0]
    s, u, v = ops.svd(Tensor(np.ones((0, 2, 3))))
    assert (s.shape, u.shape, v.shape) == ((0, 2), (0, 2, 2), (0, 3, 2))
    assert ops.pinv(Tensor(np.ones((2, 3, 0)))).shape == (2, 0, 3)
    got = ops.matrix_exp(Tensor(np.array([[[np.inf, 0], [0, 1.0]], [[0, 0], [0, 1.0]]])))
    assert np.isnan(got.asnumpy()[0]).all()
    np.testing.assert_allclose(got.asnumpy()[1], np.diag([1.0, np.e]))
    assert np.isinf(ops.matrix_exp(Tensor(np.full((2, 2), 30, np.float16))).asnumpy()).all()


def test_svd_gradient_stays_finite_at_repeated_and_zero_singular_values(run):
    """Only s used: the gradient of sum(s) (the nuclear norm) at the identity, where every
    singular value repeats, is u v^T = I; pinv of a rank-1 matrix (where pinv is not
    continuous, so finite differences do not apply) has a finite gradient: its dropped
    singular value 0 adds nothing."""
    nuclear = ms.grad(lambda x: ops.ReduceSum()(ops.svd(x)[0], ()))
    np.testing.assert_allclose(run(nuclear, Tensor(np.eye(3))).asnumpy(), np.eye(3), atol=1e-12)
    rank1 = np.outer([1.0, 2.0, -1.0], [0.5, -1.0])
    w = RNG.standard_normal((2, 3))
    got = run(ms.grad(lambda x: ops.ReduceSum()(ops.pinv(x) * Tensor(w), ())),
              Tensor(rank1)).asnumpy()
    assert np.isfinite(got).all()


@pytest.mark.parametrize("fn,shape,match", [
    (lambda x: ops.qr(x, mode="complete")[0], (4, 3), r"For 'Qr', the gradient needs a square x"),
    (lambda x: ops.svd(x, full_matrices=True)[1], (3, 4), r"For 'Svd', the gradient needs a "
                                                          r"square x"),
])
def test_complete_factorisations_of_rectangular_x_have_no_gradient(fn, shape, match):
    """Their extra columns are not functions of x: a ValueError naming the op (the reduced
    forms, and square x, differentiate)."""
    with pytest.raises(ValueError, match=match):
        ms.grad(lambda x: ops.ReduceSum()(fn(x), ()))(Tensor(np.ones(shape) + np.eye(*shape)))
