"""The element-wise arithmetic of msops.ops.arith_ext_func (addcdiv, addcmul, divide,
floor_divide, truncate_div, truncate_mod, positive, sgn, signbit, isneginf, isposinf, isreal,
is_complex, logical_xor, ldexp, eq, tensor_gt, tensor_lt, inv, approximate_equal, gcd, lcm,
nextafter, accumulate_n, angle, polar, view_as_real): values against numpy written here,
eagerly and inside a compiled Cell; gradients against finite differences; argument errors."""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import arith_ext_ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(23)
A = (RNG.standard_normal((3, 4)) * 3).astype(np.float32)
B = (RNG.standard_normal((3, 4)) * 3).astype(np.float32)
ROW = (RNG.uniform(0.5, 2.0, 4) * np.sign(RNG.standard_normal(4))).astype(np.float32)
I = RNG.integers(-30, 30, (3, 4)).astype(np.int32)
J = np.where(I == 0, 7, RNG.integers(-12, 12, (3, 4))).astype(np.int32)
J[J == 0] = 5
SPECIAL = np.array([-2.5, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan, -np.nan], np.float32)
C = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype(np.complex64)
C[0, 0] = 0

FORMS = [
    ("addcdiv", lambda x, a, b: ops.addcdiv(x, a, b, 0.5), (A, B, ROW), A + 0.5 * B / ROW),
    ("addcdiv_tensor_value", lambda x, a, b, v: ops.addcdiv(x, a, b, v),
     (A, B, ROW, np.array([2.0], np.float32)), A + 2.0 * B / ROW),
    ("addcmul", lambda x, a, b: ops.addcmul(x, a, b), (A, B, ROW), A + B * ROW),
    ("addcmul_int", lambda x, a, b: ops.addcmul(x, a, b, 3), (I, J, I), I + 3 * J * I),
    ("divide", lambda x, y: ops.divide(x, y), (A, ROW), A / ROW),
    ("divide_floor", lambda x, y: ops.divide(x, y, rounding_mode="floor"), (I, J),
     np.floor_divide(I, J)),
    ("floor_divide", lambda x, y: ops.floor_divide(x, y), (A, ROW), np.floor_divide(A, ROW)),
    ("truncate_div_float", lambda x, y: ops.truncate_div(x, y), (A, ROW), np.trunc(A / ROW)),
    ("truncate_div_int", lambda x, y: ops.truncate_div(x, y), (I, J),
     (np.trunc(I / J)).astype(np.int32)),
    ("truncate_mod", lambda x, y: ops.truncate_mod(x, y), (I, J), np.fmod(I, J)),
    ("truncate_mod_float", lambda x, y: ops.truncate_mod(x, y), (A, ROW), np.fmod(A, ROW)),
    ("positive", lambda x: ops.positive(x), (A,), A),
    ("sgn_real", lambda x: ops.sgn(x), (SPECIAL[:6],), np.sign(SPECIAL[:6])),
    ("sgn_complex", lambda x: ops.sgn(x), (C,),
     np.where(C == 0, 0, C / np.where(C == 0, 1, np.abs(C))).astype(np.complex64)),
    ("signbit", lambda x: ops.signbit(x), (SPECIAL,), np.signbit(SPECIAL)),
    ("signbit_int", lambda x: ops.signbit(x), (I,), np.signbit(I)),
    ("isneginf", lambda x: ops.isneginf(x), (SPECIAL,), np.isneginf(SPECIAL)),
    ("isposinf", lambda x: ops.isposinf(x), (SPECIAL,), np.isposinf(SPECIAL)),
    ("isposinf_int", lambda x: ops.isposinf(x), (I,), np.zeros(I.shape, bool)),
    ("isreal", lambda x: ops.isreal(x), (C * np.array([1, 1j, 1], np.complex64)
                                        * (C.real > 0),), np.isreal(
        C * np.array([1, 1j, 1], np.complex64) * (C.real > 0))),
    ("isreal_real", lambda x: ops.isreal(x), (A,), np.ones(A.shape, bool)),
    ("logical_xor", lambda x, y: ops.logical_xor(x, y), (A > 0, B > 0),
     np.logical_xor(A > 0, B > 0)),
    ("logical_xor_int", lambda x, y: ops.logical_xor(x, y), (I, J * (I > 0)),
     np.logical_xor(I, J * (I > 0))),
    ("ldexp", lambda x, e: ops.ldexp(x, e), (A, (I % 7).astype(np.int32)),
     np.ldexp(A, I % 7)),
    ("eq", lambda x, y: ops.eq(x, y), (I, J * 0 + I * (J > 0)), I == I * (J > 0)),
    ("tensor_gt", lambda x, y: ops.tensor_gt(x, y), (A, B), A > B),
    ("tensor_lt", lambda x, y: ops.tensor_lt(x, y), (A, ROW), A < ROW),
    ("inv", lambda x: ops.inv(x), (ROW,), 1 / ROW),
    ("approximate_equal", lambda x, y: ops.approximate_equal(x, y, 0.5), (A, B),
     np.abs(A - B) < 0.5),
    ("gcd", lambda x, y: ops.gcd(x, y), (I, J), np.gcd(I, J)),
    ("lcm", lambda x, y: ops.lcm(x, y), (I, J), np.lcm(I, J)),
    ("nextafter", lambda x, y: ops.nextafter(x, y), (A, B), np.nextafter(A, B)),
    ("accumulate_n", lambda x, y: ops.accumulate_n([x, y, x]), (A, B), A + B + A),
    ("angle", lambda x: ops.angle(x), (C,), np.angle(C)),
    ("angle_real", lambda x: ops.angle(x), (A,), np.angle(A)),
    ("polar", lambda r, t: ops.polar(r, t), (np.abs(A), B),
     (np.abs(A) * np.exp(1j * B)).astype(np.complex64)),
    ("view_as_real", lambda x: ops.view_as_real(x), (C,),
     np.stack([C.real, C.imag], -1)),
    ("bitwise_left_shift", lambda x, y: ops.bitwise_left_shift(x, y), (I, np.abs(J) % 9),
     np.left_shift(I, np.abs(J) % 9)),
    ("bitwise_right_shift", lambda x, y: ops.bitwise_right_shift(x, y), (I * 1000, np.abs(J)),
     np.right_shift(I * 1000, np.abs(J))),
    ("bitwise_shift_int", lambda x: ops.bitwise_left_shift(x, 2), (I,), I * 4),
    ("eps", lambda x: ops.eps(x), (A,), np.full(A.shape, np.finfo(np.float32).eps, np.float32)),
    ("eps_half", lambda x: ops.eps(x), (A.astype(np.float16),),
     np.full(A.shape, np.finfo(np.float16).eps, np.float16)),
]


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    want = np.asarray(want)
    for out in eager_and_compiled(fn, *[Tensor(np.asarray(v)) for v in inputs]):
        assert out.shape == want.shape
        assert out.dtype == ms.dtype.pytype_to_dtype(want.dtype), (out.dtype, want.dtype)
        np.testing.assert_allclose(out.asnumpy(), want, rtol=2e-6, atol=1e-6)


def test_truncate_div_is_exact_for_large_int64():
    x = np.array([2 ** 62 + 3, -(2 ** 62) - 3, 7, -7], np.int64)
    y = np.array([2, 2, -3, 3], np.int64)
    want = np.array([int(a / b) if abs(a) < 2 ** 52 else -(-a // b) if a < 0 else a // b
                     for a, b in zip(x.tolist(), y.tolist())], np.int64)
    np.testing.assert_array_equal(ops.truncate_div(Tensor(x), Tensor(y)).asnumpy(), want)
    with pytest.raises(ValueError, match=r"For 'TruncateDiv', the 'y' of an integer division"):
        ops.truncate_div(Tensor(x), Tensor(np.array([1, 0, 1, 1], np.int64)))


def test_shifts_past_the_width_saturate_and_negative_shifts_are_refused():
    x = np.array([5, -5, 1, -1], np.int32)
    y = np.array([32, 40, 31, 100], np.int32)
    np.testing.assert_array_equal(ops.bitwise_left_shift(Tensor(x), Tensor(y)).asnumpy(),
                                  [0, 0, np.int32(-2 ** 31), 0])
    np.testing.assert_array_equal(ops.bitwise_right_shift(Tensor(x), Tensor(y)).asnumpy(),
                                  [0, -1, 0, -1])
    with pytest.raises(ValueError, match=r"For 'LeftShift', the 'y' should be >= 0, but got -1"):
        ops.bitwise_left_shift(Tensor(x), Tensor(-y // y))


def test_is_complex_is_a_python_bool():
    assert ops.is_complex(Tensor(C)) is True and ops.is_complex(Tensor(A)) is False


def test_nextafter_steps_one_ulp():
    x = np.array([1.0, 0.0, -2.0], np.float64)
    out = ops.nextafter(Tensor(x), Tensor(np.array([2.0, -1.0, 0.0]))).asnumpy()
    np.testing.assert_array_equal(out, [1.0 + 2.0 ** -52, -5e-324, -2.0 + 2.0 ** -52])


X = RNG.standard_normal((3, 4)) * 1.5
Y = RNG.uniform(0.5, 2.0, (3, 4))
W = RNG.standard_normal((3, 4))


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.addcdiv(x, Tensor(W), Tensor(Y), 0.7), X),
    (lambda x: ops.addcdiv(Tensor(X), x, Tensor(Y)), W),
    (lambda x: ops.addcdiv(Tensor(X), Tensor(W), x, 2.0), Y),
    (lambda x: ops.addcmul(Tensor(X), x, Tensor(Y), -1.5), W),
    (lambda x: ops.ldexp(x, Tensor(np.array([1, 2, 3, -1], np.int32))), X),
    (lambda x: ops.inv(x), Y),
    (lambda x: ops.nextafter(x, Tensor(W)), X),
    (lambda x: ops.angle(ops.polar(Tensor(Y), x)), X * 0.5),
    (lambda x: ops.Real()(ops.polar(x, Tensor(W))) + ops.Imag()(ops.polar(x, Tensor(W))), Y),
], ids=["addcdiv_input", "addcdiv_t1", "addcdiv_t2", "addcmul", "ldexp", "inv", "nextafter",
        "angle_polar", "polar_abs"])
def test_gradients_match_finite_differences(fn, x):
    grad = ms.grad(lambda t: ops.ReduceSum()(fn(t), ()))(Tensor(x))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), x)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.addcdiv(A, Tensor(B), Tensor(B)), TypeError,
     r"For 'addcdiv', the 'input' should be a Tensor"),
    (lambda: ops.addcmul(Tensor(A), Tensor(B), Tensor(B), "2"), TypeError,
     r"For 'addcmul', the 'value' should be a number or a Tensor"),
    (lambda: ops.positive(Tensor(A > 0)), TypeError, r"For 'positive', the 'input'"),
    (lambda: ops.approximate_equal(Tensor(A), Tensor(A.astype(np.float64))), TypeError,
     r"For 'approximate_equal', the 'x' and 'y' should have one dtype"),
    (lambda: ops.gcd(Tensor(A), Tensor(B)), TypeError, r"For 'Gcd', the 'x1'"),
    (lambda: ops.nextafter(Tensor(I), Tensor(J)), TypeError, r"For 'NextAfter', the 'x1'"),
    (lambda: ops.polar(Tensor(A), Tensor(B.astype(np.float64))), TypeError,
     r"For 'polar', the 'abs' and 'angle' should have one dtype"),
    (lambda: ops.view_as_real(Tensor(A)), TypeError, r"For 'view_as_real', the 'input'"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_docstring_examples():
    res = doctest.testmod(arith_ext_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 1 and res.failed == 0
