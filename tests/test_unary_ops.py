"""unary_ops (Abs, Sign, Rsqrt, Reciprocal, Sin, Cos, ReLU6, HSigmoid, HSwish, Softplus) and
the index reductions Argmin, ArgMaxWithValue, ArgMinWithValue: kernels against numpy,
eagerly and compiled, in float32 and float16; inference and errors. (Backward rules:
tests/test_grad_ops.py; kernel contract: tests/test_compute_contract.py; sharded ==
serial: tests/ranks/test_transformer_ops.py.)"""
import doctest

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.common import dtype as mstype
from msops.primitives import reduce_ops, unary_ops

RNG = np.random.default_rng(191)
X = (4 * RNG.standard_normal((3, 5))).astype(np.float32)
POS = np.abs(X) + 0.1


def np_hsigmoid(x):
    return np.minimum(np.maximum(x + 3, 0), 6) / 6


@pytest.mark.parametrize("module", [unary_ops, reduce_ops], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np, "mstype": mstype})
    assert res.failed == 0 and res.attempted > 0


UNARY = [
    (ops.Abs, X, np.abs(X)),
    (ops.Sign, X, np.sign(X)),
    (ops.Rsqrt, POS, 1 / np.sqrt(POS)),
    (ops.Reciprocal, X, 1 / X),
    (ops.Sin, X, np.sin(X)),
    (ops.Cos, X, np.cos(X)),
    (ops.ReLU6, X, np.minimum(np.maximum(X, 0), 6)),
    (ops.HSigmoid, X, np_hsigmoid(X)),
    (ops.HSwish, X, X * np_hsigmoid(X)),
    (ops.Softplus, X, np.log1p(np.exp(X.astype(np.float64)))),
]


class One(nn.Cell):
    def __init__(self, prim):
        super().__init__()
        self.prim = prim

    def construct(self, x):
        out = self.prim(x)
        return out if not isinstance(out, tuple) else out[1]


@pytest.mark.parametrize("cls,x,want", UNARY, ids=[c.__name__ for c, _, _ in UNARY])
def test_unary_matches_numpy_eager_compiled_and_half(cls, x, want):
    np.testing.assert_allclose(cls()(Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-6)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = One(cls())(Tensor(x))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-5, atol=1e-6)
    half = cls()(Tensor(x.astype(np.float16)))
    assert half.dtype == ms.float16
    np.testing.assert_allclose(half.asnumpy().astype(np.float64), want, rtol=2e-3, atol=2e-3)


def test_abs_and_sign_keep_integer_dtypes():
    xi = np.array([-3, 0, 5], np.int32)
    assert ops.Abs()(Tensor(xi)).dtype == ms.int32
    np.testing.assert_array_equal(ops.Abs()(Tensor(xi)).asnumpy(), [3, 0, 5])
    np.testing.assert_array_equal(ops.Sign()(Tensor(xi)).asnumpy(), [-1, 0, 1])


def test_softplus_is_exact_for_large_inputs_and_rsqrt_of_zero_is_inf():
    big = np.array([-800.0, 0.0, 800.0], np.float32)
    np.testing.assert_allclose(ops.Softplus()(Tensor(big)).asnumpy(), [0.0, np.log(2), 800.0],
                               rtol=1e-6)
    assert np.isinf(ops.Rsqrt()(Tensor(np.zeros(2, np.float32))).asnumpy()).all()


@pytest.mark.parametrize("cls", [ops.ReLU6, ops.HSwish, ops.HSigmoid, ops.Softplus, ops.Rsqrt,
                                 ops.Sin])
def test_float_only_ops_name_the_dtype(cls):
    with pytest.raises(TypeError, match=rf"For '{cls.__name__}', .*'x'.*Int32"):
        cls()(Tensor(np.array([1, 2], np.int32)))


# -- index reductions -----------------------------------------------------------------------
A = np.array([[1.0, 5.0, 3.0, 5.0], [7.0, 0.0, 7.0, -1.0], [2.0, 2.0, 2.0, 2.0]], np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmin_matches_numpy(axis):
    out = ops.Argmin(axis)(Tensor(A))
    assert out.dtype == ms.int32
    np.testing.assert_array_equal(out.asnumpy(), A.argmin(axis))
    assert ops.Argmin(axis, ms.int64)(Tensor(A)).dtype == ms.int64


@pytest.mark.parametrize("cls,find", [(ops.ArgMaxWithValue, np.argmax),
                                      (ops.ArgMinWithValue, np.argmin)])
@pytest.mark.parametrize("axis,keep", [(0, False), (1, True), (-1, False)])
def test_arg_with_value_matches_numpy(cls, find, axis, keep):
    index, value = cls(axis, keep)(Tensor(A))
    want_i = np.expand_dims(find(A, axis), axis)
    want_v = np.take_along_axis(A, want_i, axis)
    if not keep:
        want_i, want_v = want_i.squeeze(axis), want_v.squeeze(axis)
    assert index.dtype == ms.int64 and value.dtype == ms.float32
    np.testing.assert_array_equal(index.asnumpy(), want_i)
    np.testing.assert_array_equal(value.asnumpy(), want_v)
    assert cls(axis, keep).infer_shape(list(A.shape)) == (list(want_i.shape),) * 2


def test_arg_with_value_gradient_goes_to_the_first_extreme_only():
    """Ties (row 2) give the whole gradient to the first one, as MindSpore's rule."""
    grad = ms.grad(lambda x: ops.ReduceSum()(ops.ArgMaxWithValue(1)(x)[1], ()))(Tensor(A))
    np.testing.assert_array_equal(grad.asnumpy(), [[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]])


@pytest.mark.parametrize("make,match", [
    (lambda: ops.ArgMaxWithValue(2)(Tensor(A)), r"For 'ArgMaxWithValue', .*'axis'"),
    (lambda: ops.ArgMinWithValue(0, 1)(Tensor(A)), r"For 'ArgMinWithValue', .*'keep_dims'"),
    (lambda: ops.Argmin(0)(Tensor(np.array(1.0, np.float32))), r"For 'Argmin', the rank of 'x'"),
    (lambda: ops.Argmin(0, ms.float32), r"For 'Argmin', .*'output_type'"),
    (lambda: ops.ArgMaxWithValue()(Tensor(np.array([True]))), r"For 'ArgMaxWithValue', .*'x'"),
])
def test_index_reduction_errors_name_op_and_argument(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
