"""The special functions (special_ops / ops.special_func): lgamma, digamma, polygamma, zeta,
erfinv, the Bessel functions I0, I0e, I1, I1e, J0, J1, Y0, Y1, K0, K0e, K1, K1e, the regularized incomplete gamma
functions igamma / igammac and mvlgamma against scipy.special (a test
dependency only) over wide ranges in float64, in float32 eagerly and inside a compiled Cell;
poles and out-of-domain points as scipy's; gradients against float64 finite differences;
argument errors."""
import doctest

import numpy as np
import pytest
import scipy.special as sp

import msops as ms
from msops import Tensor, ops
from msops.primitives import arith_ops, special_ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(17)
# away from the poles' closest neighbourhoods, where the argument's own rounding dominates
WIDE = np.concatenate([RNG.uniform(-30, 30, 400), RNG.uniform(0, 3, 200),
                       10 ** RNG.uniform(-8, 6, 200), -RNG.uniform(0.01, 0.99, 50) - 4,
                       [0.5, 1.0, 2.0, 3.0, 171.5, -0.5, -2.5, 1e-300]])
UNIT = np.concatenate([RNG.uniform(-1, 1, 400), 1 - 10 ** RNG.uniform(-15, -1, 100),
                       -1 + 10 ** RNG.uniform(-15, -1, 100), 10 ** RNG.uniform(-300, -1, 50)])
BESSEL = np.concatenate([RNG.uniform(-40, 40, 400), RNG.uniform(-700, 700, 100),
                         [0.0, 1e-10, 29.99, 30.0, 30.01, -30.01]])
# the oscillating and decaying kinds: both sides of every switch (2, 25), tiny and huge x
WAVES = np.concatenate([RNG.uniform(-40, 40, 400), RNG.uniform(-3000, 3000, 100),
                        10 ** RNG.uniform(-12, 1, 100), [0.0, 2.0, 24.99, 25.0, 25.01, 750.0]])


def assert_close(got, want, rtol):
    """Equal NaN and infinity patterns, finite values within rtol (relative to max(|want|, 1)
    where want crosses zero)."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    scale = np.maximum(np.abs(want[fin]), 1.0)
    assert np.max(np.abs(got[fin] - want[fin]) / scale, initial=0) < rtol


@pytest.mark.parametrize("fn,ref,x", [
    (ops.lgamma, sp.gammaln, WIDE[WIDE < 1e300]),
    (ops.digamma, sp.psi, WIDE),
    (ops.erfinv, sp.erfinv, UNIT),
    (ops.i0, sp.i0, BESSEL),
    (ops.bessel_i0e, sp.i0e, BESSEL),
    (ops.bessel_i1, sp.i1, BESSEL),
    (ops.bessel_i1e, sp.i1e, BESSEL),
], ids=["lgamma", "digamma", "erfinv", "i0", "i0e", "i1", "i1e"])
def test_float64_values_match_scipy_to_double_precision(fn, ref, x):
    got = fn(Tensor(x)).asnumpy()
    assert got.dtype == np.float64
    assert_close(got, ref(x), 1e-13)


def test_relative_precision_where_values_are_small():
    """Relative, not absolute, agreement: lgamma far right, erfinv near 0, i1e, zeta tails."""
    x = 10 ** RNG.uniform(-300, -1, 50)
    np.testing.assert_allclose(ops.erfinv(Tensor(x)).asnumpy(), sp.erfinv(x), rtol=1e-14)
    np.testing.assert_allclose(ops.bessel_i1(Tensor(x)).asnumpy(), sp.i1(x), rtol=1e-14)
    s, q = RNG.uniform(1.5, 40, 200), RNG.uniform(0.1, 50, 200)
    np.testing.assert_allclose(ops.zeta(Tensor(s), Tensor(q)).asnumpy(), sp.zeta(s, q),
                               rtol=1e-13)


def test_incomplete_gamma_matches_scipy():
    a = 10 ** RNG.uniform(-3, 3, 1500)
    x = 10 ** RNG.uniform(-4, 3.3, 1500)
    p = ops.igamma(Tensor(a), Tensor(x)).asnumpy()
    q = ops.igammac(Tensor(a), Tensor(x)).asnumpy()
    np.testing.assert_allclose(p, sp.gammainc(a, x), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(q, sp.gammaincc(a, x), rtol=1e-11, atol=1e-13)
    edges_a = np.array([0.0, 0.0, -1.0, 1.0, 1.0, 1.0, np.inf, 2.0])
    edges_x = np.array([0.0, 1.0, 1.0, 0.0, -1.0, np.inf, 1.0, np.nan])
    np.testing.assert_array_equal(ops.igamma(Tensor(edges_a), Tensor(edges_x)).asnumpy(),
                                  sp.gammainc(edges_a, edges_x))
    np.testing.assert_array_equal(ops.igammac(Tensor(edges_a), Tensor(edges_x)).asnumpy(),
                                  sp.gammaincc(edges_a, edges_x))


def test_igamma_gradient_in_a_matches_scipy_differences():
    a, x = 10 ** RNG.uniform(-1, 1.5, 60), 10 ** RNG.uniform(-2, 2, 60)
    ga, gx = ms.grad(lambda s, t: ops.ReduceSum()(ops.igamma(s, t), ()), (0, 1))(
        Tensor(a), Tensor(x))
    h = 1e-6
    np.testing.assert_allclose(ga.asnumpy(), (sp.gammainc(a + h, x) - sp.gammainc(a - h, x))
                               / (2 * h), atol=1e-8)
    np.testing.assert_allclose(gx.asnumpy(), np.exp((a - 1) * np.log(x) - x - sp.gammaln(a)),
                               rtol=1e-12)
    gc = ms.grad(lambda s: ops.ReduceSum()(ops.igammac(s, Tensor(x)), ()))(Tensor(a))
    np.testing.assert_allclose(gc.asnumpy(), -ga.asnumpy(), rtol=1e-12)


def test_mvlgamma_matches_scipy():
    x = RNG.uniform(2.6, 30.0, 50)
    for p in (1, 2, 5):
        want = np.array([sp.multigammaln(v, p) for v in x])
        np.testing.assert_allclose(ops.mvlgamma(Tensor(x), p).asnumpy(), want, rtol=1e-13)


@pytest.mark.parametrize("fn,ref,x", [
    (ops.bessel_j0, sp.j0, WAVES), (ops.bessel_j1, sp.j1, WAVES),
    (ops.bessel_y0, sp.y0, WAVES), (ops.bessel_y1, sp.y1, WAVES),
    (ops.bessel_k0, sp.k0, WAVES), (ops.bessel_k0e, sp.k0e, WAVES),
    (ops.bessel_k1, sp.k1, WAVES), (ops.bessel_k1e, sp.k1e, WAVES),
], ids=["j0", "j1", "y0", "y1", "k0", "k0e", "k1", "k1e"])
def test_bessel_j_y_k_match_scipy(fn, ref, x):
    """Relative precision, or absolute near the zeros of the oscillating J and Y (where
    scipy's own value is good to an absolute ~1e-16 only)."""
    got, want = fn(Tensor(x)).asnumpy(), ref(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    err = np.abs(got[fin] - want[fin])
    assert np.all((err <= 1e-13 * np.abs(want[fin])) | (err <= 5e-14))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 12])
def test_polygamma_matches_scipy(n):
    x = np.concatenate([RNG.uniform(-6, 20, 300), 10 ** RNG.uniform(-5, 4, 100),
                        [0.0, -1.0, -2.0, 1.0, 0.5]])
    got = ops.polygamma(n, Tensor(x)).asnumpy()
    want = sp.polygamma(n, x)
    fin = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), fin)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-300)
    tensor_n = ops.polygamma(Tensor(np.array(n, np.int32)), Tensor(x)).asnumpy()
    np.testing.assert_array_equal(tensor_n, got)


def test_poles_and_domains_follow_scipy():
    x = np.array([0.0, -0.0, -1.0, -3.0, np.inf, np.nan])
    np.testing.assert_array_equal(ops.lgamma(Tensor(x)).asnumpy()[:5], [np.inf] * 5)
    np.testing.assert_array_equal(ops.digamma(Tensor(x)).asnumpy(), sp.psi(x))
    y = np.array([1.0, -1.0, 1.5, -2.0, 0.0, np.nan])
    np.testing.assert_array_equal(ops.erfinv(Tensor(y)).asnumpy(), sp.erfinv(y))
    s = np.array([2.0, 1.0, 0.5, 2.0, 2.5, 3.0])
    q = np.array([0.0, 1.0, 1.0, -1.5, -1.5, -2.0])
    np.testing.assert_allclose(ops.zeta(Tensor(s), Tensor(q)).asnumpy(), sp.zeta(s, q),
                               rtol=1e-13)


F32 = RNG.uniform(0.2, 6.0, (3, 4)).astype(np.float32)
U32 = RNG.uniform(-0.95, 0.95, (3, 4)).astype(np.float32)

FORMS = [
    ("lgamma", lambda x: ops.lgamma(x), (F32,), sp.gammaln(F32)),
    ("lgamma_int", lambda x: ops.lgamma(x), (np.array([1, 2, 5], np.int32),),
     sp.gammaln([1.0, 2.0, 5.0])),
    ("digamma", lambda x: ops.digamma(x), (F32,), sp.psi(F32)),
    ("polygamma", lambda x: ops.polygamma(2, x), (F32,), sp.polygamma(2, F32)),
    ("zeta", lambda x, q: ops.zeta(x, q), (F32 + 1, F32), sp.zeta(F32 + 1, F32)),
    ("zeta_number", lambda q: ops.zeta(3.0, q), (F32,), sp.zeta(3.0, F32)),
    ("igamma", lambda a, x: ops.igamma(a, x), (F32, F32[0]), sp.gammainc(F32, F32[0])),
    ("igammac", lambda a, x: ops.igammac(a, x), (F32, F32 * 2), sp.gammaincc(F32, F32 * 2)),
    ("mvlgamma", lambda x: ops.mvlgamma(x, 2), (F32 + 0.5,),
     np.vectorize(lambda v: sp.multigammaln(v, 2))(F32.astype(np.float64) + 0.5)),
    ("erfinv", lambda x: ops.erfinv(x), (U32,), sp.erfinv(U32)),
    ("i0", lambda x: ops.bessel_i0(x) + ops.bessel_i1e(x), (U32 * 5,),
     sp.i0(U32 * 5) + sp.i1e(U32 * 5)),
    ("primitives", lambda x: ops.Lgamma()(x) + ops.BesselI0e()(x) + ops.BesselI1()(x),
     (F32,), sp.gammaln(F32) + sp.i0e(F32) + sp.i1(F32)),
    ("bessel_jyk", lambda x: ops.bessel_j1(x) + ops.bessel_y0(x) + ops.bessel_k1e(x),
     (F32,), sp.j1(F32) + sp.y0(F32) + sp.k1e(F32)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_float32_forms_match_scipy_eager_and_compiled(name, fn, inputs, want):
    for out in eager_and_compiled(fn, *[Tensor(v) for v in inputs]):
        assert out.dtype == ms.float32 and out.shape == np.shape(want)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=3e-6, atol=1e-6)


def test_float16_is_computed_in_float32_and_rounded_once():
    x = np.array([0.3, 1.5, 4.0, 9.0], np.float16)
    out = ops.lgamma(Tensor(x))
    assert out.dtype == ms.float16
    np.testing.assert_array_equal(out.asnumpy(), sp.gammaln(x.astype(np.float64))
                                  .astype(np.float16))


X = RNG.uniform(0.3, 4.0, (2, 3))
Z = RNG.uniform(-3.0, 3.0, (2, 3))


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.lgamma(x), X),
    (lambda x: ops.lgamma(x), -X + 0.05),
    (lambda x: ops.digamma(x), X),
    (lambda x: ops.polygamma(1, x), X),
    (lambda x: ops.polygamma(3, x), X),
    (lambda x: ops.zeta(Tensor(X + 1.5), x), X),
    (lambda x: ops.erfinv(x), np.tanh(Z)),
    (lambda x: ops.igamma(x, Tensor(X[0] * 2)), X),
    (lambda x: ops.igamma(Tensor(X + 0.5), x), X),
    (lambda x: ops.igammac(x, Tensor(X * 3)), X),
    (lambda x: ops.mvlgamma(x, 3), X + 1.0),
    (lambda x: ops.bessel_j0(x) + ops.bessel_j1(x), Z * 3),
    (lambda x: ops.bessel_y0(x) + ops.bessel_y1(x), X * 2),
    (lambda x: ops.bessel_k0(x) + ops.bessel_k1(x), X),
    (lambda x: ops.bessel_k0e(x) + ops.bessel_k1e(x), X),
    (lambda x: ops.i0(x), Z),
    (lambda x: ops.bessel_i0e(x), Z),
    (lambda x: ops.bessel_i1(x), Z),
    (lambda x: ops.bessel_i1e(x), Z),
], ids=["lgamma", "lgamma_negative", "digamma", "polygamma1", "polygamma3", "zeta_q",
        "erfinv", "igamma_a", "igamma_x", "igammac_a", "mvlgamma", "j", "y", "k", "ke", "i0",
        "i0e", "i1", "i1e"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_bessel_i1_gradients_at_zero_are_the_limit():
    zero = Tensor(np.array([0.0, 0.0]))
    for fn in (ops.bessel_i1, ops.bessel_i1e):
        g = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(zero)
        np.testing.assert_allclose(g.asnumpy(), [0.5, 0.5])


def test_zeta_differentiates_in_q_only():
    gx, gq = ms.grad(lambda x, q: ops.ReduceSum()(ops.zeta(x, q), ()), (0, 1))(
        Tensor(np.array([2.0, 3.0])), Tensor(np.array([1.0, 2.0])))
    np.testing.assert_array_equal(gx.asnumpy(), [0.0, 0.0])
    np.testing.assert_allclose(gq.asnumpy(), [-2 * sp.zeta(3.0, 1.0), -3 * sp.zeta(4.0, 2.0)])


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.polygamma(-1, Tensor(F32)), ValueError,
     r"For 'polygamma', the 'n' should be >= 0, but got -1"),
    (lambda: ops.polygamma(1.5, Tensor(F32)), TypeError,
     r"For 'polygamma', the 'n' should be an int or an int Tensor"),
    (lambda: ops.Polygamma()(Tensor(np.array(-2, np.int64)), Tensor(F32)), ValueError,
     r"For 'Polygamma', the 'a' should be >= 0, but got -2"),
    (lambda: ops.Polygamma()(Tensor(np.array(1.0, np.float32)), Tensor(F32)), TypeError,
     r"For 'Polygamma', the 'a' should be a Tensor with dtype in"),
    (lambda: ops.Lgamma()(Tensor(np.array([1, 2], np.int32))), TypeError,
     r"For 'Lgamma', the 'x' should be a Tensor with dtype in"),
    (lambda: ops.Zeta()(Tensor(F32), Tensor(F32.astype(np.float64))), TypeError,
     r"For 'Zeta'"),
    (lambda: ops.zeta(2.0, 3.0), TypeError,
     r"For 'zeta', at least one of 'input' and 'other' should be a Tensor"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


@pytest.mark.parametrize("module", [special_ops, arith_ops],
                         ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_docstring_examples(module):
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 1 and res.failed == 0
