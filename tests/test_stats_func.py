"""The statistics and reductions of msops.ops.stats_func (var, std, var_mean, std_mean,
logsumexp, all, any, count_nonzero, cumprod, nansum, nanmean) and their Tensor methods:
values against numpy written here, eagerly and inside a compiled Cell; gradients against
float64 finite differences (cumprod through zeros, logsumexp at large values); argument
errors naming the function and the argument."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from numeric import finite_differences
from test_functional_forms import eager_and_compiled

RNG = np.random.default_rng(77)
A = RNG.standard_normal((3, 4, 5)).astype(np.float32)
I = np.array([[0, 3, -1, 0], [2, 0, 0, 5]], np.int32)
BOOLS = RNG.standard_normal((3, 4)) > 0.3
WITH_NAN = A.copy()
WITH_NAN[0, 1, 2] = WITH_NAN[2, 0, 0] = WITH_NAN[1, 3, 4] = np.nan
WITH_NAN[1, :, 0] = np.nan                              # a column of NaN only


def np_var(x, axis, ddof, keepdims):
    mean = x.astype(np.float64).mean(axis, keepdims=True)
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    return (((x - mean) ** 2).sum(axis, keepdims=keepdims) / (n - ddof)).astype(np.float32)


def np_logsumexp(x, axis, keepdims=False):
    x64 = x.astype(np.float64)
    m = x64.max(axis, keepdims=True)
    return (np.log(np.exp(x64 - m).sum(axis, keepdims=keepdims)) + (
        m if keepdims else np.squeeze(m, axis))).astype(x.dtype)


def np_nanmean(x, axis, keepdims=False):
    """The mean of the numbers (NaN where there are none)."""
    numbers = ~np.isnan(x)
    with np.errstate(invalid="ignore"):
        return (np.where(numbers, x, 0).sum(axis, keepdims=keepdims) /
                numbers.sum(axis, keepdims=keepdims)).astype(x.dtype)


FORMS = [
    ("var", lambda x: ops.var(x), (A,), np_var(A, None, 0, False)),
    ("var_axis_ddof", lambda x: ops.var(x, 1, 2, True), (A,), np_var(A, 1, 2, True)),
    ("var_bool_ddof", lambda x: ops.var(x, (0, 2), True), (A,), np_var(A, (0, 2), 1, False)),
    ("var_int", lambda x: ops.var(x, [1]), (I,), np_var(I, 1, 0, False)),
    ("std", lambda x: ops.std(x, -1, 1), (A,), np.sqrt(np_var(A, -1, 1, False))),
    ("var_mean", lambda x: ops.var_mean(x, 0, 1, True), (A,),
     (np_var(A, 0, 1, True), A.mean(0, keepdims=True))),
    ("std_mean", lambda x: ops.std_mean(x, (1, 2)), (A,),
     (np.sqrt(np_var(A, (1, 2), 0, False)), A.mean((1, 2)))),
    ("logsumexp", lambda x: ops.logsumexp(x, 1), (A,), np_logsumexp(A, 1)),
    ("logsumexp_all_keep", lambda x: ops.logsumexp(x, (), True), (A,),
     np_logsumexp(A, (0, 1, 2), True)),
    ("logsumexp_large", lambda x: ops.logsumexp(x * 100.0 + 500.0, (0, 2)), (A,),
     np_logsumexp(A * 100.0 + 500.0, (0, 2))),
    ("logsumexp_infinite", lambda x: ops.logsumexp(x, 1),
     (np.array([[-np.inf, -np.inf], [np.inf, 1.0], [0.0, -np.inf]], np.float32),),
     np.array([-np.inf, np.inf, 0.0], np.float32)),
    ("all", lambda x: ops.all(x, 1), (BOOLS,), BOOLS.all(1)),
    ("all_none_keep", lambda x: ops.all(x, keep_dims=True), (BOOLS,),
     BOOLS.all(keepdims=True)),
    ("all_int", lambda x: ops.all(x, (0,)), (I,), (I != 0).all(0)),
    ("any", lambda x: ops.any(x, 0, True), (BOOLS,), BOOLS.any(0, keepdims=True)),
    ("any_float", lambda x: ops.any(x, -1), (np.array([[0.0, 0.0], [0.0, -2.0]], np.float32),),
     np.array([False, True])),
    ("count_nonzero", lambda x: ops.count_nonzero(x), (I,), np.int32(4)),
    ("count_nonzero_axis", lambda x: ops.count_nonzero(x, [0], True, ms.float32), (I,),
     (I != 0).sum(0, keepdims=True).astype(np.float32)),
    ("cumprod", lambda x: ops.cumprod(x, 1), (A,), np.cumprod(A, 1)),
    ("cumprod_int_dtype", lambda x: ops.cumprod(x, -1, ms.float64), (I,),
     np.cumprod(I, -1).astype(np.float64)),
    ("nansum", lambda x: ops.nansum(x, 2), (WITH_NAN,), np.nansum(WITH_NAN, 2)),
    ("nansum_all_dtype", lambda x: ops.nansum(x, dtype=ms.float64), (WITH_NAN,),
     np.float64(np.nansum(WITH_NAN))),
    ("nanmean", lambda x: ops.nanmean(x, (0, 2), True), (WITH_NAN,),
     np_nanmean(WITH_NAN, (0, 2), True)),
    ("tensor_var", lambda x: x.var(1, 1, True), (A,), np_var(A, 1, 1, True)),
    ("tensor_std", lambda x: x.std(), (A,), np.sqrt(np_var(A, None, 0, False))),
    ("tensor_all", lambda x: x.all(), (I,), (I != 0).all()),
    ("tensor_any", lambda x: x.any(1, True), (I,), (I != 0).any(1, keepdims=True)),
    ("tensor_logsumexp", lambda x: x.logsumexp(0, True), (A,), np_logsumexp(A, 0, True)),
    ("tensor_cumprod", lambda x: x.cumprod(0), (A,), np.cumprod(A, 0)),
    ("tensor_count_nonzero", lambda x: x.count_nonzero(1), (I,), (I != 0).sum(1).astype(np.int32)),
    ("tensor_nansum", lambda x: x.nansum(0), (WITH_NAN,), np.nansum(WITH_NAN, 0)),
    ("tensor_nanmean", lambda x: x.nanmean(1), (WITH_NAN,), np_nanmean(WITH_NAN, 1)),
]


def _check(out, want):
    outs, wants = (out, want) if isinstance(want, tuple) else ((out,), (want,))
    assert len(outs) == len(wants)
    for o, w in zip(outs, wants):
        assert o.shape == np.shape(w) and o.dtype == ms.dtype.pytype_to_dtype(np.asarray(w).dtype)
        np.testing.assert_allclose(o.asnumpy(), w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,inputs,want", FORMS, ids=[f[0] for f in FORMS])
def test_form_matches_numpy_eager_and_compiled(name, fn, inputs, want):
    for out in eager_and_compiled(fn, *[Tensor(v) for v in inputs]):
        _check(out, want)


X64 = RNG.standard_normal((3, 4))
ZEROS = np.array([[1.5, 0.0, -2.0, 0.7], [0.0, 0.0, 1.3, -0.4], [2.0, -1.1, 0.6, 0.9]])


@pytest.mark.parametrize("fn,x", [
    (lambda x: ops.var(x, 1, 1), X64),
    (lambda x: ops.std(x, (0, 1), 0, True), X64),
    (lambda x: ops.std_mean(x, 0)[0] * 2.0 + ops.std_mean(x, 0)[1], X64),
    (lambda x: ops.logsumexp(x, 1), X64),
    (lambda x: ops.logsumexp(x * 300.0, 0, True), X64),
    (lambda x: ops.cumprod(x, 1), ZEROS),
    (lambda x: ops.cumprod(x, 0), ZEROS),
    (lambda x: ops.CumProd(True, True)(x, 1), ZEROS),
    (lambda x: ops.CumProd(False, True)(x, 0), ZEROS),
], ids=["var", "std", "std_mean", "logsumexp", "logsumexp_large", "cumprod_zeros",
        "cumprod_axis0", "cumprod_exclusive_reverse", "cumprod_reverse"])
def test_gradients_match_finite_differences_eager_and_compiled(fn, x):
    weights = Tensor(RNG.standard_normal(fn(Tensor(x)).shape))
    loss = lambda t: ops.ReduceSum()(fn(t) * weights, ())  # noqa: E731
    want = finite_differences(lambda a: fn(Tensor(a)).asnumpy() * weights.asnumpy(), x)
    eager = ms.grad(loss)(Tensor(x))
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = ms.grad(loss)(Tensor(x))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    for g in (eager, compiled):
        np.testing.assert_allclose(g.asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_nan_reductions_give_no_gradient_to_nans():
    """nansum's gradient is 1 where x is a number, 0 at a NaN; nanmean's 1 / (numbers in the
    row) -- no NaN leaks into the gradient."""
    x = WITH_NAN[0].astype(np.float64)
    numbers = ~np.isnan(x)
    g = ms.grad(lambda t: ops.nansum(t))(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(g, numbers.astype(np.float64))
    g = ms.grad(lambda t: ops.ReduceSum()(ops.nanmean(t, 1), ()))(Tensor(x)).asnumpy()
    np.testing.assert_allclose(g, numbers / numbers.sum(1, keepdims=True))


@pytest.mark.parametrize("call,err,match", [
    (lambda: ops.var(Tensor(A), 1, 4), ValueError,
     r"For 'var', the 'ddof' should be in \[0, 4\) .*but got 4"),
    (lambda: ops.std(Tensor(A), None, 1.5), TypeError,
     r"For 'std', the 'ddof' should be an int or a bool, but got float"),
    (lambda: ops.std_mean(Tensor(A), 3), ValueError, r"For 'std_mean', the 'axis'"),
    (lambda: ops.logsumexp(Tensor(A), 1.0), TypeError,
     r"For 'logsumexp', the type of 'axis' should be"),
    (lambda: ops.all(Tensor(I), (0, 0)), ValueError,
     r"For 'all', the 'axis' should not repeat an axis"),
    (lambda: ops.count_nonzero(Tensor(I), dtype=np.int32), TypeError,
     r"For 'count_nonzero', the 'dtype' should be a msops dtype"),
    (lambda: ops.nanmean(Tensor(I)), TypeError,
     r"For 'nanmean', the 'input' should be a float Tensor, but got Int32"),
    (lambda: ops.cumprod(Tensor(A), 3), ValueError, r"For 'CumProd', the 'axis'"),
    (lambda: ops.ReduceAll()(Tensor(I), ()), TypeError, r"For 'ReduceAll', the 'x'"),
    (lambda: ops.any([True, False]), TypeError, r"For 'any', the 'input' should be a Tensor"),
    (lambda: ops.nansum(np.ones(3)), TypeError, r"For 'nansum', the 'input' should be a Tensor"),
])
def test_argument_errors_name_the_function_and_argument(call, err, match):
    with pytest.raises(err, match=match):
        call()
