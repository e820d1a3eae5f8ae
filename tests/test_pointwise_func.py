"""The element-wise math of msops.ops.pointwise_func (lerp, logaddexp, trunc, frac, hypot,
xlogy, xdivy, sinc, nan_to_num, deg2rad, log2, exp2, float_power, copysign, heaviside,
logit, fmax, fmin, asinh, ...): values against numpy written here (special points: zeros,
infinities, NaN, -0.0), eagerly and inside a compiled Cell; gradients against float64 finite
differences, and no NaN in a gradient at the points a composite guards; argument errors."""
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(31)
A = (RNG.standard_normal((3, 4)) * 2).astype(np.float32)
B = (RNG.standard_normal((3, 4)) * 2).astype(np.float32)
ROW = RNG.standard_normal(4).astype(np.float32)
P = RNG.uniform(0.05, 0.95, (3, 4)).astype(np.float32)
I = np.array([[0, 3, -1, 8], [2, 0, 1, 5]], np.int32)
SPECIAL = np.array([-2.5, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan, 3.0], np.float32)
SIGNS = np.array([1.0, -0.0, 0.0, -2.0, 3.0, -1.0, 1.0, np.nan], np.float32)
F32 = np.finfo(np.float32)


def np_logaddexp(x, y):
    return np.logaddexp(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)


def np_sinc(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0, 1.0, np.sin(np.pi * x) / (np.pi * x)).astype(np.float32)


def np_xlogy(x, y):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0, 0.0, x * np.log(y)).astype(np.float32)


FORMS = [
    ("lerp", lambda x, y: ops.lerp(x, y, 0.3), (A, B), A + 0.3 * (B - A)),
    ("lerp_tensor_weight", lambda x, y, w: ops.lerp(x, y, w), (A, B, P), A + P * (B - A)),
    ("logaddexp", lambda x, y: ops.logaddexp(x, y), (A, ROW), np_logaddexp(A, ROW)),
    ("logaddexp_large", lambda x, y: ops.logaddexp(x * 500.0, y * 500.0), (A, B),
     np_logaddexp(A * 500.0, B * 500.0)),
    ("logaddexp_infinite", lambda x, y: ops.logaddexp(x, y),
     (np.array([-np.inf, np.inf, -np.inf, 2.0], np.float32),
      np.array([-np.inf, np.inf, 1.0, -np.inf], np.float32)),
     np.array([-np.inf, np.inf, 1.0, 2.0], np.float32)),
    ("logaddexp2", lambda x, y: ops.logaddexp2(x, y), (A, B),
     np.logaddexp2(A.astype(np.float64), B).astype(np.float32)),
    ("trunc", lambda x: ops.trunc(x), (SPECIAL,), np.trunc(SPECIAL)),
    ("trunc_int", lambda x: ops.trunc(x), (I,), I),
    ("frac", lambda x: ops.frac(x), (A,), A - np.trunc(A)),
    ("hypot", lambda x, y: ops.hypot(x, y), (A, ROW), np.hypot(A, ROW)),
    ("hypot_huge", lambda x, y: ops.hypot(x, y), (np.array([3e30, 3e-30], np.float32),
                                                  np.array([4e30, 4e-30], np.float32)),
     np.array([5e30, 5e-30], np.float32)),
    ("xlogy", lambda x, y: ops.xlogy(x, y), (np.array([0.0, 0.0, 2.0, -1.5], np.float32),
                                             np.array([0.0, -1.0, 3.0, 0.5], np.float32)),
     np.array([0.0, 0.0, 2 * np.log(3.0), -1.5 * np.log(0.5)], np.float32)),
    ("xlogy_broadcast", lambda x, y: ops.xlogy(x, y), (A, np.abs(ROW)),
     np_xlogy(A, np.abs(ROW))),
    ("xdivy", lambda x, y: ops.xdivy(x, y), (np.array([0.0, 0.0, 2.0, -1.5], np.float32),
                                             np.array([0.0, 2.0, -4.0, 0.5], np.float32)),
     np.array([0.0, 0.0, -0.5, -3.0], np.float32)),
    ("sinc", lambda x: ops.sinc(x), (SPECIAL,), np_sinc(SPECIAL)),
    ("sinc_int", lambda x: ops.sinc(x), (I,), np_sinc(I)),
    ("nan_to_num", lambda x: ops.nan_to_num(x), (SPECIAL,),
     np.where(np.isnan(SPECIAL), 0, np.where(SPECIAL == np.inf, F32.max, np.where(
         SPECIAL == -np.inf, F32.min, SPECIAL))).astype(np.float32)),
    ("nan_to_num_values", lambda x: ops.nan_to_num(x, 1.0, 100.0, -7.0), (SPECIAL,),
     np.where(np.isnan(SPECIAL), 1, np.where(SPECIAL == np.inf, 100, np.where(
         SPECIAL == -np.inf, -7, SPECIAL))).astype(np.float32)),
    ("deg2rad", lambda x: ops.deg2rad(x), (A * 90,), (A * 90 * np.pi / 180).astype(np.float32)),
    ("rad2deg", lambda x: ops.rad2deg(x), (A,), (A * 180 / np.pi).astype(np.float32)),
    ("log2", lambda x: ops.log2(x), (np.abs(A) + 0.1,), np.log2(np.abs(A) + 0.1)),
    ("log2_int", lambda x: ops.log2(x), (np.array([1, 2, 8, 1024], np.int32),),
     np.array([0, 1, 3, 10], np.float32)),
    ("log10", lambda x: ops.log10(x), (np.abs(A) + 0.1,), np.log10(np.abs(A) + 0.1)),
    ("exp2", lambda x: ops.exp2(x), (A,), np.exp2(A)),
    ("float_power", lambda x, y: ops.float_power(x, y), (np.abs(A), ROW),
     np.abs(A).astype(np.float64) ** ROW.astype(np.float64)),
    ("float_power_scalar", lambda x: ops.float_power(x, 2), (I,), I.astype(np.float64) ** 2),
    ("copysign", lambda x, y: ops.copysign(x, y), (SPECIAL, SIGNS),
     np.copysign(SPECIAL, np.where(np.isnan(SIGNS), 1.0, SIGNS)).astype(np.float32)),
    ("heaviside", lambda x, v: ops.heaviside(x, v), (np.array([-1.5, 0.0, 2.0, 0.0], np.float32),
                                                     np.array([0.5, 0.25, 0.5, 0.75], np.float32)),
     np.array([0.0, 0.25, 1.0, 0.75], np.float32)),
    ("logit", lambda x: ops.logit(x), (P,), np.log(P / (1 - P))),
    ("logit_eps", lambda x: ops.logit(x, 0.2), (P,),
     np.log(np.clip(P, 0.2, 0.8) / (1 - np.clip(P, 0.2, 0.8)))),
    ("fmax", lambda x, y: ops.fmax(x, y), (SPECIAL, SIGNS), np.fmax(SPECIAL, SIGNS)),
    ("fmin", lambda x, y: ops.fmin(x, y), (SPECIAL, SIGNS), np.fmin(SPECIAL, SIGNS)),
    ("asinh", lambda x: ops.arcsinh(x), (A,), np.arcsinh(A)),
    ("acosh", lambda x: ops.acosh(x), (np.abs(A) + 1,), np.arccosh(np.abs(A) + 1)),
    ("atanh", lambda x: ops.arctanh(x), (np.tanh(A),), np.arctanh(np.tanh(A))),
    ("tensor_methods", lambda x, y: x.lerp(y, 0.5) + x.hypot(y) + x.trunc() + x.xlogy(y.abs())
     + x.fmax(y), (A, B), (A + 0.5 * (B - A)) + np.hypot(A, B) + np.trunc(A)
     + np_xlogy(A, np.abs(B)) + np.fmax(A, B)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    for out in eager_and_compiled(fn, *[Tensor(v) for v in inputs]):
        assert out.shape == np.shape(want) and out.dtype == ms.dtype.pytype_to_dtype(want.dtype)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-6, atol=1e-6)
        # -0.0 and 0.0 differ only in sign: check it where the reference cares
        np.testing.assert_array_equal(np.signbit(out.asnumpy()[want == 0]),
                                      np.signbit(want[want == 0]))


X = RNG.standard_normal((3, 4)) * 1.5
Y = RNG.standard_normal((3, 4)) * 1.5
Q = RNG.uniform(0.1, 0.9, (3, 4))


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.lerp(x, Tensor(Y), Tensor(Q)), X),
    (lambda x: ops.lerp(Tensor(Y), Tensor(Q), x), X),
    (lambda x: ops.logaddexp(x, Tensor(Y)), X),
    (lambda x: ops.logaddexp(Tensor(Y) * 200.0, x * 200.0), X),
    (lambda x: ops.logaddexp2(x, Tensor(Y[0])), X),
    (lambda x: ops.frac(x), X),
    (lambda x: ops.hypot(x, Tensor(Y)), X),
    (lambda x: ops.hypot(Tensor(X), x), Y),
    (lambda x: ops.xlogy(x, Tensor(Q)), X),
    (lambda x: ops.xlogy(Tensor(X), x), Q),
    (lambda x: ops.xdivy(Tensor(X), x), Q + 0.5),
    (lambda x: ops.sinc(x), X),
    (lambda x: ops.nan_to_num(x), X),
    (lambda x: ops.deg2rad(x) + ops.rad2deg(x), X),
    (lambda x: ops.log2(x) + ops.log10(x), Q),
    (lambda x: ops.exp2(x), X),
    (lambda x: ops.float_power(x, 3), X),
    (lambda x: ops.copysign(x, Tensor(Y)), X),
    (lambda x: ops.logit(x), Q),
    (lambda x: ops.fmax(x, Tensor(Y)) + ops.fmin(x, Tensor(Y)), X),
    (lambda x: ops.asinh(x) + ops.atanh(x * 0.3), X),
    (lambda x: ops.acosh(x), Q + 1.2),
], ids=["lerp", "lerp_weight", "logaddexp", "logaddexp_large", "logaddexp2", "frac", "hypot",
        "hypot_other", "xlogy", "xlogy_other", "xdivy", "sinc", "nan_to_num", "deg_rad",
        "log2_log10", "exp2", "float_power", "copysign", "logit", "fmax_fmin", "asinh_atanh",
        "acosh"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


def test_guarded_points_have_finite_gradients():
    """xlogy / xdivy at x == 0 (y == 0 too): both gradients 0 there (MindSpore's
    convention), the usual derivatives elsewhere; sinc at 0: the limit 0;
    nan_to_num at non-finite points: 0. Never NaN."""
    zero, y0 = Tensor(np.array([0.0, 0.0, 1.0])), Tensor(np.array([0.0, 2.0, 4.0]))
    gx, gy = ms.grad(lambda x, y: ops.ReduceSum()(ops.xlogy(x, y), ()), (0, 1))(zero, y0)
    np.testing.assert_allclose(gx.asnumpy(), [0.0, 0.0, math.log(4.0)])
    np.testing.assert_allclose(gy.asnumpy(), [0.0, 0.0, 0.25])
    gx, gy = ms.grad(lambda x, y: ops.ReduceSum()(ops.xdivy(x, y), ()), (0, 1))(zero, y0)
    np.testing.assert_allclose(gx.asnumpy(), [0.0, 0.0, 0.25])
    np.testing.assert_allclose(gy.asnumpy(), [0.0, 0.0, -1.0 / 16])
    g = ms.grad(lambda x: ops.ReduceSum()(ops.sinc(x), ()))(Tensor(np.array([0.0, 0.5])))
    np.testing.assert_allclose(g.asnumpy(), [0.0, -4 / math.pi], atol=1e-12)
    g = ms.grad(lambda x: ops.ReduceSum()(ops.nan_to_num(x), ()))(
        Tensor(np.array([np.nan, np.inf, -np.inf, 2.0])))
    np.testing.assert_array_equal(g.asnumpy(), [0.0, 0.0, 0.0, 1.0])


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.lerp(Tensor(I), Tensor(I), 0.5), TypeError,
     r"For 'lerp', the 'input' should be a Tensor with dtype in"),
    (lambda: ops.deg2rad(Tensor(I)), TypeError, r"For 'deg2rad', the 'x' should be a Tensor"),
    (lambda: ops.nan_to_num(Tensor(A), nan="zero"), TypeError,
     r"For 'nan_to_num', the type of 'nan' should be"),
    (lambda: ops.heaviside(Tensor(A), Tensor(I)), TypeError,
     r"For 'heaviside', the 'values' should be a Tensor of input's dtype"),
    (lambda: ops.logit(Tensor(P), 1), TypeError, r"For 'logit', the type of 'eps' should be"),
    (lambda: ops.float_power(2, 3), TypeError,
     r"For 'float_power', at least one of 'input' and 'exponent' should be a Tensor"),
    (lambda: ops.Hypot()(Tensor(A), Tensor(A.astype(np.float16))), TypeError, r"For 'Hypot'"),
    (lambda: ops.Asinh()(Tensor(I)), TypeError, r"For 'Asinh', the 'x' should be a Tensor"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
