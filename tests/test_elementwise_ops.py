"""piecewise_ops (Floor, Ceil, Round, logical ops, IsNan/IsInf/IsFinite), transcendental_ops
(Log1p, Expm1, Tan, Atan, Atan2, Sinh, Cosh, Asin, ACos, Erfc), arith_ops (Mod, FloorMod,
SquaredDifference, DivNoNan) and activation_ext_ops (Elu, SeLU, Softsign, Mish, SoftShrink,
HShrink), with their functional forms (msops.ops.elementwise_func) and nn layers: kernels
against numpy references written here, eagerly and compiled, in float32, float16 and
bfloat16, on NaN / inf and integer inputs; inference and errors. (Backward rules:
tests/test_grad_ops.py; kernel contract: tests/test_compute_contract.py; sharding: the
strategy fuzzer, tests/ranks/test_fuzz_strategies.py.)"""
import doctest
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.common import dtype as mstype
from msops.primitives import activation_ext_ops, arith_ops, piecewise_ops, transcendental_ops
from numeric import finite_differences
from test_functional_forms import Call
from test_functional_forms import \
    test_functional_form_matches_numpy_eager_and_compiled as check_form

RNG = np.random.default_rng(4242)
X = (3 * RNG.standard_normal((3, 5))).astype(np.float32)
UNIT = np.tanh(X) * 0.95                                     # inside (-1, 1)
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-7, 30.0,
                    -30.0], np.float32)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def np_erfc(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def np_softplus(x):
    return np.logaddexp(0, x)


def np_softsign(x):
    return np.where(np.isinf(x), np.sign(x), x / (1 + np.abs(x)))


# (primitive, numpy reference in float64 -- NaN and inf in, what MindSpore gives out)
UNARY = [
    (ops.Floor(), np.floor), (ops.Ceil(), np.ceil), (ops.Round(), np.round),
    (ops.Log1p(), np.log1p), (ops.Expm1(), np.expm1), (ops.Tan(), np.tan),
    (ops.Atan(), np.arctan), (ops.Sinh(), np.sinh), (ops.Cosh(), np.cosh),
    (ops.Asin(), np.arcsin), (ops.ACos(), np.arccos), (ops.Erfc(), np_erfc),
    (ops.Elu(), np_elu), (ops.Elu(0.3), lambda x: np_elu(x, 0.3)),
    (ops.SeLU(), lambda x: SELU_SCALE * np_elu(x, SELU_ALPHA)),
    (ops.Softsign(), np_softsign),
    (ops.Mish(), lambda x: x * np.tanh(np_softplus(x))),
    (ops.SoftShrink(), lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5,
                                                                     x * 0))),   # NaN stays
    (ops.HShrink(1.0), lambda x: np.where(np.abs(x) <= 1.0, 0, x)),
]
IDS = [f"{p.name}{getattr(p, 'alpha', '')}" for p, _ in UNARY]


def reference(fn, *xs):
    with np.errstate(all="ignore"):
        return fn(*(x.astype(np.float64) for x in xs))


@pytest.mark.parametrize("module", [piecewise_ops, transcendental_ops, arith_ops,
                                    activation_ext_ops], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np, "mstype": mstype})
    assert res.failed == 0 and res.attempted > 0


@pytest.mark.parametrize("prim,ref", UNARY, ids=IDS)
def test_unary_matches_numpy_eager_compiled_and_half(prim, ref):
    x = UNIT if prim.name in ("Asin", "ACos") else X
    want = reference(ref, x)
    np.testing.assert_allclose(prim(Tensor(x)).asnumpy(), want, rtol=2e-6, atol=1e-6)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = Call(lambda t: prim(t))(Tensor(x))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=2e-6, atol=1e-6)
    for half, tol in ((np.float16, 2e-3), (ms.dtype_to_nptype(ms.bfloat16), 1e-2)):
        out = prim(Tensor(x.astype(half)))
        assert out.asnumpy().dtype == half
        # computed in float32 from the rounded input, rounded once: within half an ulp
        np.testing.assert_allclose(out.asnumpy().astype(np.float64),
                                   reference(ref, x.astype(half)).astype(half).astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("prim,ref", UNARY, ids=IDS)
def test_unary_on_nan_inf_and_signed_zero(prim, ref):
    np.testing.assert_allclose(prim(Tensor(SPECIAL)).asnumpy(), reference(ref, SPECIAL),
                               rtol=2e-6, atol=1e-30)     # NaN where numpy has NaN


def test_round_halves_to_even_and_keeps_integers():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.6], np.float32)
    np.testing.assert_array_equal(ops.Round()(Tensor(x)).asnumpy(), [0, 2, 2, -0, -2, 3])
    i = np.array([-3, 7], np.int64)
    out = ops.Round()(Tensor(i))
    assert out.dtype == ms.int64
    np.testing.assert_array_equal(out.asnumpy(), i)
    np.testing.assert_allclose(ops.round(Tensor(np.array([0.81, 2.35, -4.57], np.float32)),
                                         decimals=1).asnumpy(), [0.8, 2.4, -4.6], rtol=1e-6)
    np.testing.assert_allclose(ops.round(Tensor(np.array([1234.0], np.float32)),
                                         decimals=-2).asnumpy(), [1200.0])


@pytest.mark.parametrize("prim", [ops.IsNan(), ops.IsInf(), ops.IsFinite()], ids=lambda p: p.name)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.bool_,
                                   "bfloat16"])
def test_predicates_match_numpy_for_every_dtype(prim, dtype):
    ref = {"IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite}[prim.name]
    if dtype == "bfloat16":
        x = SPECIAL.astype(ms.dtype_to_nptype(ms.bfloat16))
    elif np.dtype(dtype).kind == "f":
        x = SPECIAL.astype(dtype)
    else:
        x = np.array([0, 1, -3, 5]).astype(dtype)
    out = prim(Tensor(x))
    assert out.dtype == ms.bool_
    np.testing.assert_array_equal(out.asnumpy(), ref(x.astype(np.float64)))


def test_logical_ops_broadcast_eager_and_compiled():
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    for prim, ref in ((ops.LogicalAnd(), np.logical_and), (ops.LogicalOr(), np.logical_or)):
        np.testing.assert_array_equal(prim(Tensor(a), Tensor(b)).asnumpy(), ref(a, b))
    np.testing.assert_array_equal(ops.logical_not(Tensor(b)).asnumpy(), ~b)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        got = Call(lambda x, y: ops.logical_or(ops.logical_and(x, y), ops.logical_not(y)))(
            Tensor(a), Tensor(b))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_array_equal(got.asnumpy(), (a & b) | ~b)


# -- binary ops ------------------------------------------------------------------------------
Y = (2 * RNG.standard_normal(5)).astype(np.float32)
BINARY = [
    (ops.Mod(), np.fmod), (ops.FloorMod(), np.mod),
    (ops.SquaredDifference(), lambda x, y: (x - y) ** 2),
    (ops.DivNoNan(), lambda x, y: np.where(y == 0, 0, x / np.where(y == 0, 1, y))),
    (ops.Atan2(), np.arctan2),
]


@pytest.mark.parametrize("prim,ref", BINARY, ids=[p.name for p, _ in BINARY])
def test_binary_matches_numpy_eager_compiled_and_half(prim, ref):
    want = reference(ref, X, Y)
    np.testing.assert_allclose(prim(Tensor(X), Tensor(Y)).asnumpy(), want, rtol=2e-6,
                               atol=2e-6)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = Call(lambda a, b: prim(a, b))(Tensor(X), Tensor(Y))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=2e-6, atol=2e-6)
    xh, yh = X.astype(np.float16), Y.astype(np.float16)
    half = prim(Tensor(xh), Tensor(yh))
    assert half.dtype == ms.float16
    np.testing.assert_allclose(half.asnumpy(), reference(ref, xh, yh).astype(np.float16),
                               rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("prim,ref", BINARY, ids=[p.name for p, _ in BINARY])
def test_binary_on_nan_inf_and_zero_divisors(prim, ref):
    x = SPECIAL[:, None]
    y = np.array([0.0, -0.0, np.inf, np.nan, 2.0, -3.0], np.float32)
    np.testing.assert_allclose(prim(Tensor(x), Tensor(y)).asnumpy(), reference(ref, x, y),
                               rtol=2e-6, atol=1e-30)


def test_remainders_of_integers_follow_c_and_python():
    x = np.array([7, -7, 7, -7, 0, 5], np.int32)
    y = np.array([3, 3, -3, -3, 4, 5], np.int32)
    mod, floor_mod = ops.Mod()(Tensor(x), Tensor(y)), ops.FloorMod()(Tensor(x), Tensor(y))
    assert mod.dtype == floor_mod.dtype == ms.int32
    np.testing.assert_array_equal(mod.asnumpy(), [int(math.fmod(a, b)) for a, b in zip(x, y)])
    np.testing.assert_array_equal(floor_mod.asnumpy(), [int(a) % int(b) for a, b in zip(x, y)])
    np.testing.assert_array_equal(ops.remainder(Tensor(x), Tensor(y)).asnumpy(),
                                  floor_mod.asnumpy())
    np.testing.assert_array_equal(ops.fmod(Tensor(x), Tensor(y)).asnumpy(), mod.asnumpy())
    sq = ops.SquaredDifference()(Tensor(x), Tensor(y))
    assert sq.dtype == ms.int32
    np.testing.assert_array_equal(sq.asnumpy(), (x - y) ** 2)


@pytest.mark.parametrize("prim", [ops.Mod(), ops.FloorMod()], ids=lambda p: p.name)
def test_integer_remainder_by_zero_is_refused_by_name(prim):
    with pytest.raises(ValueError, match=rf"For '{prim.name}', the 'y' of integers should "
                                         r"not contain 0.*but got 1 zero"):
        prim(Tensor(np.array([1, 2], np.int32)), Tensor(np.array([0, 3], np.int32)))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match=rf"For '{prim.name}'"):
            Call(lambda a, b: prim(a, b))(Tensor(np.array([1], np.int64)),
                                          Tensor(np.array([0], np.int64)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_div_no_nan_gradient_is_zero_where_the_divisor_is():
    x = Tensor(np.array([1.5, -2.0, 3.0]))
    y = Tensor(np.array([0.0, 4.0, 0.0]))
    dx, dy = ms.grad(lambda a, b: ops.ReduceSum()(ops.DivNoNan()(a, b), ()), (0, 1))(x, y)
    np.testing.assert_array_equal(dx.asnumpy(), [0.0, 0.25, 0.0])
    np.testing.assert_array_equal(dy.asnumpy(), [0.0, 2.0 / 16, 0.0])


# -- errors ----------------------------------------------------------------------------------
F = Tensor(X)
I32 = Tensor(np.array([1, 2], np.int32))
BOOL = Tensor(np.array([True, False]))


@pytest.mark.parametrize("make,err,match", [
    (lambda: ops.LogicalAnd()(F, F), TypeError, r"For 'LogicalAnd', .*'x'.*Float32"),
    (lambda: ops.LogicalOr()(BOOL, I32), TypeError, r"For 'LogicalOr', .*'y'.*Int32"),
    (lambda: ops.LogicalNot()(I32), TypeError, r"For 'LogicalNot', .*'x'.*Int32"),
    (lambda: ops.logical_and(BOOL, I32), TypeError, r"For 'LogicalAnd', .*'y'.*Int32"),
    (lambda: ops.Floor()(I32), TypeError, r"For 'Floor', .*'x'.*Int32"),
    (lambda: ops.Ceil()(BOOL), TypeError, r"For 'Ceil', .*'x'.*Bool"),
    (lambda: ops.Round()(BOOL), TypeError, r"For 'Round', .*'input'.*Bool"),
    (lambda: ops.Log1p()(I32), TypeError, r"For 'Log1p', .*'x'.*Int32"),
    (lambda: ops.Erfc()(Tensor(np.ones(2, np.complex64))), TypeError, r"For 'Erfc', .*'x'"),
    (lambda: ops.Atan2()(F, Tensor(X.astype(np.float64))), TypeError,
     r"For 'Atan2', the 'y' should have the same dtype as 'x'"),
    (lambda: ops.Atan2()(I32, I32), TypeError, r"For 'Atan2', .*'x'.*Int32"),
    (lambda: ops.Mod()(Tensor(np.ones((2, 3), np.float32)), Tensor(np.ones(2, np.float32))),
     ValueError, r"For 'Mod', the 'x shape' and 'y shape' should be broadcastable"),
    (lambda: ops.FloorMod()(BOOL, BOOL), TypeError, r"For 'FloorMod', .*'x'.*Bool"),
    (lambda: ops.DivNoNan()(I32, I32), TypeError, r"For 'DivNoNan', .*'x1'.*Int32"),
    (lambda: ops.DivNoNan()(F, Tensor(np.ones(2, np.float32))), ValueError,
     r"For 'DivNoNan', the 'x1 shape' and 'x2 shape' should be broadcastable"),
    (lambda: ops.SquaredDifference()(BOOL, BOOL), TypeError, r"For 'SquaredDifference'"),
    (lambda: ops.IsNan()(Tensor(np.ones(2, np.complex64))), TypeError, r"For 'IsNan', .*'x'"),
    (lambda: ops.Elu(1), TypeError, r"For 'Elu', the type of 'alpha' should be float, but got"),
    (lambda: ops.Elu(float("inf")), ValueError, r"For 'Elu', the 'alpha' should be a finite"),
    (lambda: ops.Elu()(I32), TypeError, r"For 'Elu', .*'x'.*Int32"),
    (lambda: ops.Mish()(I32), TypeError, r"For 'Mish', .*'x'.*Int32"),
    (lambda: ops.SoftShrink(-0.5), ValueError, r"For 'SoftShrink', the 'lambd' should be >= 0"),
    (lambda: ops.HShrink("0.5"), TypeError, r"For 'HShrink', the type of 'lambd' should be float"),
    (lambda: ops.round(I32, decimals=2), ValueError,
     r"For 'Round', the 'decimals' should be 0 for an input of dtype Int32, but got 2"),
    (lambda: ops.round(F, decimals=1.5), TypeError,
     r"For 'Round', the type of 'decimals' should be int"),
    (lambda: ops.logsigmoid(I32), TypeError, r"For 'logsigmoid', .*'x'.*Int32"),
    (lambda: ops.hardtanh(F, 2.0, 1.0), ValueError,
     r"For 'hardtanh', the 'min_val' should be <= 'max_val' 1.0, but got 2.0"),
    (lambda: nn.Hardtanh(1.0, -1.0), ValueError, r"For 'Hardtanh', the 'min_val' should be"),
    (lambda: nn.Hardtanh(max_val=float("nan")), ValueError,
     r"For 'Hardtanh', the 'max_val' should be a number, but got nan"),
    (lambda: nn.ELU(alpha="1"), TypeError,
     r"For 'Elu', the type of 'alpha' should be float, but got"),
])
def test_errors_name_the_op_and_argument(make, err, match):
    with pytest.raises(err, match=match):
        make()


# -- functional forms and layers -------------------------------------------------------------
FORMS = [
    ("floor", ops.floor, (X,), np.floor), ("ceil", ops.ceil, (X,), np.ceil),
    ("round", ops.round, (X,), np.round),
    ("round_decimals", lambda x: ops.round(x, decimals=2), (X,), lambda x: np.round(x, 2)),
    ("log1p", ops.log1p, (np.abs(X),), np.log1p),
    ("expm1", ops.expm1, (X,), np.expm1), ("tan", ops.tan, (X,), np.tan),
    ("atan", ops.atan, (X,), np.arctan), ("arctan", ops.arctan, (X,), np.arctan),
    ("atan2", ops.atan2, (X, Y), np.arctan2), ("arctan2", ops.arctan2, (X, Y), np.arctan2),
    ("sinh", ops.sinh, (X,), np.sinh), ("cosh", ops.cosh, (X,), np.cosh),
    ("asin", ops.asin, (UNIT,), np.arcsin), ("arcsin", ops.arcsin, (UNIT,), np.arcsin),
    ("acos", ops.acos, (UNIT,), np.arccos), ("arccos", ops.arccos, (UNIT,), np.arccos),
    ("erfc", ops.erfc, (X,), np_erfc),
    ("remainder", ops.remainder, (X, Y), np.mod), ("fmod", ops.fmod, (X, Y), np.fmod),
    ("floor_mod", ops.floor_mod, (X, Y), np.mod),
    ("isnan", ops.isnan, (SPECIAL,), np.isnan), ("isinf", ops.isinf, (SPECIAL,), np.isinf),
    ("isfinite", ops.isfinite, (SPECIAL,), np.isfinite),
    ("elu", lambda x: ops.elu(x, 1.0), (X,), np_elu),
    ("selu", ops.selu, (X,), lambda x: SELU_SCALE * np_elu(x, SELU_ALPHA)),
    ("softsign", ops.softsign, (X,), np_softsign),
    ("mish", ops.mish, (X,), lambda x: x * np.tanh(np_softplus(x))),
    ("logsigmoid", ops.logsigmoid, (30 * X,), lambda x: -np_softplus(-x)),
    ("hardtanh", lambda x: ops.hardtanh(x, -0.5, 2.0), (X,), lambda x: np.clip(x, -0.5, 2.0)),
    ("tanhshrink", ops.tanhshrink, (X,), lambda x: x - np.tanh(x)),
    ("softshrink", lambda x: ops.softshrink(x, 1.0), (X,),
     lambda x: np.sign(x) * np.maximum(np.abs(x) - 1.0, 0)),
    ("hardshrink", lambda x: ops.hardshrink(x, 1.0), (X,), lambda x: np.where(
        np.abs(x) > 1.0, x, 0)),
]


@pytest.mark.parametrize("name,fn,inputs,ref", FORMS, ids=[f[0] for f in FORMS])
def test_functional_form_matches_numpy_eager_and_compiled(name, fn, inputs, ref):
    check_form(name, fn, inputs, reference(ref, *inputs))


def test_functional_forms_are_in_functional():
    for name in (f[0] for f in FORMS if f[0] != "round_decimals"):
        assert getattr(ms.ops.functional, name) is getattr(ops, name)


X64 = np.array([[-2.3, -0.4, 0.7], [1.9, 4.2, -5.1]])


@pytest.mark.parametrize("fn", [ops.logsigmoid, ops.tanhshrink,
                                lambda x: ops.hardtanh(x, -2.0, 3.0),
                                lambda x: ops.round(x, decimals=1) * x],
                         ids=["logsigmoid", "tanhshrink", "hardtanh", "round_decimals"])
def test_composed_forms_differentiate_like_finite_differences(fn):
    grad = ms.grad(lambda x: ops.ReduceSum()(fn(x), ()))(Tensor(X64))
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy(), X64)
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-6, atol=1e-8)


def both_modes(make, x):
    eager = make()(Tensor(x)).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = make()(Tensor(x)).asnumpy()
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled, eager, rtol=1e-6, atol=1e-7)
    return eager


# (layer, numpy reference, get_activation's name or None)
LAYERS = [
    (lambda: nn.ELU(), np_elu, "elu"),
    (lambda: nn.ELU(alpha=0.5), lambda x: np_elu(x, 0.5), None),
    (lambda: nn.SeLU(), lambda x: SELU_SCALE * np_elu(x, SELU_ALPHA), None),
    (lambda: nn.Softsign(), np_softsign, "softsign"),
    (lambda: nn.Mish(), lambda x: x * np.tanh(np_softplus(x)), "mish"),
    (lambda: nn.LogSigmoid(), lambda x: -np_softplus(-x), "logsigmoid"),
    (lambda: nn.Hardtanh(), lambda x: np.clip(x, -1, 1), "hardtanh"),
    (lambda: nn.Hardtanh(min_val=-2, max_val=0.5), lambda x: np.clip(x, -2, 0.5), None),
    (lambda: nn.Tanhshrink(), lambda x: x - np.tanh(x), "tanhshrink"),
    (lambda: nn.SoftShrink(), lambda x: np.sign(x) * np.maximum(np.abs(x) - 0.5, 0),
     "softshrink"),
    (lambda: nn.HShrink(lambd=1.0), lambda x: np.where(np.abs(x) > 1.0, x, 0), None),
    (lambda: nn.HShrink(), lambda x: np.where(np.abs(x) > 0.5, x, 0), "hshrink"),
]


@pytest.mark.parametrize("make,ref,name", LAYERS, ids=[f"layer{i}" for i in range(len(LAYERS))])
def test_layers_match_numpy_eager_and_compiled(make, ref, name):
    x = np.concatenate([X.ravel(), [60.0, -60.0]]).astype(np.float32)
    np.testing.assert_allclose(both_modes(make, x), reference(ref, x), rtol=2e-6, atol=2e-6)
    if name is not None:
        layer = nn.get_activation(name)
        assert type(layer) is type(make())
        assert isinstance(nn.Dense(4, 2, activation=name).activation, type(layer))


def test_layer_reprs_show_their_arguments():
    assert "alpha=0.5" in repr(nn.ELU(0.5))
    assert "min_val=-2.0, max_val=3.0" in repr(nn.Hardtanh(-2.0, 3.0))
    assert "lambd=0.7" in repr(nn.SoftShrink(0.7))
