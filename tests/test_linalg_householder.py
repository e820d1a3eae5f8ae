"""Geqrf / geqrf, Orgqr / orgqr and Ormqr / ormqr (QR in LAPACK's Householder form) against
numpy.linalg.qr(mode='raw') and scipy's LAPACK geqrf / orgqr / ormqr, real and complex,
eager and compiled; Orgqr's and Ormqr's gradients against central differences of LAPACK's,
Geqrf's refusal to differentiate, sharding and errors."""
import numpy as np
import pytest
from scipy.linalg import lapack

import msops as ms
from msops import Tensor, ops
from msops.parallel.strategy import shard
from msops.primitives.sharding import spec_of
from numeric import central_differences
from test_linalg_ops import run  # noqa: F401  (the eager / jit fixture)

RNG = np.random.default_rng(61)


def rand(shape, complex_):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def lapack_of(complex_, name):
    return getattr(lapack, ("z" if complex_ else "d") + name)


SHAPES = [(2, 5, 3), (3, 5), (2, 4, 4)]


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_geqrf_equals_numpy_raw_qr(shape, complex_, run):
    a = rand(shape, complex_)
    y, tau = run(ops.geqrf, Tensor(a))
    h, want_tau = np.linalg.qr(a, mode="raw")
    np.testing.assert_allclose(y.asnumpy(), np.swapaxes(h, -1, -2), atol=1e-12)
    np.testing.assert_allclose(tau.asnumpy(), want_tau, atol=1e-12)
    f32 = ops.geqrf(Tensor(a.astype(np.complex64 if complex_ else np.float32)))
    assert f32[0].asnumpy().dtype == (np.complex64 if complex_ else np.float32)
    np.testing.assert_allclose(f32[0].asnumpy(), np.swapaxes(h, -1, -2), atol=1e-4)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape,k", [((2, 5, 3), 3), ((4, 4), 2)], ids=str)
def test_orgqr_equals_lapack(shape, k, complex_, run):
    """The first N columns of H_1 ... H_K (K <= N): LAPACK's orgqr / ungqr; with K = N
    from geqrf, numpy's reduced Q."""
    a = rand(shape, complex_)
    y, tau = ops.geqrf(Tensor(a))
    tau_k = Tensor(tau.asnumpy()[..., :k])
    got = run(ops.orgqr, y, tau_k).asnumpy()
    gen = lapack.zungqr if complex_ else lapack.dorgqr
    for i in np.ndindex(shape[:-2]):
        want = gen(y.asnumpy()[i], tau_k.asnumpy()[i])[0]
        np.testing.assert_allclose(got[i], want, atol=1e-12)
    if k == shape[-1]:
        np.testing.assert_allclose(got, np.linalg.qr(a)[0], atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("transpose", [False, True], ids=["Q", "QH"])
def test_ormqr_equals_lapack(left, transpose, complex_, run):
    a = rand((2, 5, 3), complex_)
    y, tau = ops.geqrf(Tensor(a))
    other = rand((2, 5, 4) if left else (2, 4, 5), complex_)
    got = run(lambda *t: ops.ormqr(*t, left=left, transpose=transpose), y, tau,
              Tensor(other)).asnumpy()
    trans = ("C" if complex_ else "T") if transpose else "N"
    for i in range(2):
        want = lapack_of(complex_, "unmqr" if complex_ else "ormqr")(
            "L" if left else "R", trans, y.asnumpy()[i], tau.asnumpy()[i], other[i], 640)[0]
        np.testing.assert_allclose(got[i], want, atol=1e-12)
    # and against the explicit Q of numpy's complete QR (the same reflectors)
    q = np.linalg.qr(a, mode="complete")[0]
    q = np.conj(np.swapaxes(q, -1, -2)) if transpose else q
    np.testing.assert_allclose(got, q @ other if left else other @ q, atol=1e-12)


def test_mindspore_examples():
    y, tau = ops.geqrf(Tensor(np.array([[-2.0, -1.0], [1.0, 2.0]], np.float32)))
    np.testing.assert_allclose(ops.orgqr(y, tau).asnumpy(), [[-0.894427, 0.447214],
                                                             [0.447214, 0.894427]], atol=1e-5)
    x = np.array([[-114.6, 10.9, 1.1], [-0.304, 38.07, 69.38], [-0.45, -0.17, 62.0]],
                 np.float32)
    q = ops.orgqr(Tensor(x), Tensor(np.array([1.55, 1.94, 0.0], np.float32))).asnumpy()
    np.testing.assert_allclose(q, [[-0.55, -0.2128925, 0.8137956],
                                   [0.4712, -0.8752807, 0.08240613],
                                   [0.6975, 0.42560163, 0.57772595]], atol=1e-5)


def test_geqrf_is_not_differentiable_by_name():
    """No silent zero: autodiff names Geqrf and why it has no backward rule."""
    with pytest.raises(NotImplementedError, match=r"For 'Geqrf', there is no backward rule: "
                                                  r"msops gives the Householder "
                                                  r"factorisation no gradient"):
        ms.grad(lambda t: ops.geqrf(t)[0].sum())(Tensor(RNG.standard_normal((3, 2))))


def _lapack_ormqr(complex_, left, transpose, y, tau, other):
    """LAPACK's ormqr / unmqr of each matrix of the batch (the reference)."""
    trans = ("C" if complex_ else "T") if transpose else "N"
    fn = lapack_of(complex_, "unmqr" if complex_ else "ormqr")
    return np.stack([fn("L" if left else "R", trans, y[i], tau[i], other[i], 640)[0]
                     for i in range(y.shape[0])])


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("left,transpose", [(True, False), (False, True)],
                         ids=["left-Q", "right-QH"])
def test_ormqr_gradient_equals_central_differences(left, transpose, complex_, run):
    """In x's reflector entries, tau and other (dL/dRe + i dL/dIm), against central
    differences of LAPACK's ormqr; x's entries it does not read get zeros."""
    y, tau = rand((2, 5, 3), complex_), 0.5 * rand((2, 3), complex_)
    other = rand((2, 5, 2) if left else (2, 2, 5), complex_)
    w = rand(other.shape, complex_)

    def loss(a, b, c):
        out = ops.ormqr(a, b, c, left=left, transpose=transpose)
        return (ops.real(out) * Tensor(w.real)).sum() + (ops.imag(out) * Tensor(w.imag)).sum()

    def reference(a, b, c):
        return np.real(np.sum(np.conj(w) * _lapack_ormqr(complex_, left, transpose, a, b, c)))
    got = run(ms.grad(loss, (0, 1, 2)), Tensor(y), Tensor(tau), Tensor(other))
    wants = (central_differences(lambda v: reference(v, tau, other), y),
             central_differences(lambda v: reference(y, v, other), tau),
             central_differences(lambda v: reference(y, tau, v), other))
    for g, want in zip(got, wants):
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(np.triu(got[0].asnumpy()), 0)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_orgqr_gradient_equals_central_differences(complex_, run):
    y, tau = rand((2, 5, 3), complex_), 0.5 * rand((2, 2), complex_)
    w = rand((2, 5, 3), complex_)
    gen = lapack.zungqr if complex_ else lapack.dorgqr

    def loss(a, b):
        out = ops.orgqr(a, b)
        return (ops.real(out) * Tensor(w.real)).sum() + (ops.imag(out) * Tensor(w.imag)).sum()

    def reference(a, b):
        q = np.stack([gen(a[i], b[i])[0] for i in range(2)])
        return np.real(np.sum(np.conj(w) * q))
    gx, gt = run(ms.grad(loss, (0, 1)), Tensor(y), Tensor(tau))
    np.testing.assert_allclose(gx.asnumpy(), central_differences(lambda v: reference(v, tau),
                                                                 y), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gt.asnumpy(), central_differences(lambda v: reference(y, v),
                                                                 tau), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call,match,error", [
    (lambda: ops.geqrf(Tensor(np.ones(3))), r"For 'Geqrf', the rank of 'x' should be >= 2",
     ValueError),
    (lambda: ops.geqrf(Tensor(np.ones((2, 2), np.float16))), r"For 'Geqrf', the 'x'",
     TypeError),
    (lambda: ops.geqrf(Tensor(np.array([[1.0, np.nan], [0.0, 1.0]]))),
     r"For 'Geqrf', the 'x' should be finite", ValueError),
    (lambda: ops.orgqr(Tensor(np.ones((2, 3))), Tensor(np.ones(2))),
     r"For 'Orgqr', the 'x' should have rows >= columns", ValueError),
    (lambda: ops.orgqr(Tensor(np.ones((3, 2))), Tensor(np.ones(3))),
     r"For 'Orgqr', the 'tau' should have shape \[\] \+ \[K\] with K <= 2", ValueError),
    (lambda: ops.orgqr(Tensor(np.ones((3, 2))), Tensor(np.ones(2, np.float32))),
     r"For 'Orgqr', the 'tau' should have the same dtype as 'x'", TypeError),
    (lambda: ops.ormqr(Tensor(np.ones((3, 2))), Tensor(np.ones(2)), Tensor(np.ones((4, 3)))),
     r"For 'Ormqr', the 'x' should have as many rows as 'other' has rows \(4\)", ValueError),
    (lambda: ops.Ormqr(transpose=1), r"For 'Ormqr', the type of 'transpose' should be bool",
     TypeError),
    (lambda: ops.orgqr(np.ones((3, 2)), Tensor(np.ones(2))),
     r"For 'orgqr', the 'input' should be a Tensor", TypeError),
])
def test_errors_name_the_op_and_argument(call, match, error):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("prim,ins,outs", [
    (ops.Geqrf(), [(4, 6, 4)], [(4, 6, 4), (4, 4)]),
    (ops.Orgqr(), [(4, 6, 4), (4, 4)], [(4, 6, 4)]),
    (ops.Ormqr(), [(4, 6, 4), (4, 4), (4, 6, 2)], [(4, 6, 2)])], ids=lambda v: str(v)[:5])
def test_only_batch_dims_split(prim, ins, outs):
    spec = spec_of(prim, ins, outs, {})
    batch = tuple((2,) + (1,) * (len(s) - 1) for s in ins)
    assert shard(prim.name, spec, batch, ins, 2).device_matrix == (2,)
    split = tuple((1, 2) + (1,) * (len(s) - 2) for s in ins)
    with pytest.raises(ValueError, match=r"cannot be split \(a factorisation reads the whole "
                                         r"matrix\)"):
        shard(prim.name, spec, split, ins, 2)


def test_a_functional_form_checks_a_flag_of_another_type_after_an_equal_one():
    """ops.ormqr(..., transpose=True) then transpose=1: the shared primitive of the first
    call is not reused for the second (1 == True), whose TypeError names the argument."""
    y, tau = ops.geqrf(Tensor(RNG.standard_normal((4, 3))))
    other = Tensor(RNG.standard_normal((4, 2)))
    ops.ormqr(y, tau, other, True, True)
    with pytest.raises(TypeError, match="transpose"):
        ops.ormqr(y, tau, other, True, 1)
