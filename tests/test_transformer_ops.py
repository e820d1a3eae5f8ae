"""The transformer op set in one process: kernels against numpy (eager and compiled),
inference (shapes, dtypes) and the errors that name op, argument, expectation and value.
(Backward rules: tests/test_grad_ops.py; sharding rules: tests/ranks/test_transformer_ops.py.)
"""
import doctest
import math

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn, ops
from msops.common import dtype as mstype
from msops.primitives import (activation_ops, elementwise_ops, gather_ops, norm_ops, reduce_ops,
                              shape_ops)

RNG = np.random.default_rng(19)


def r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("module", [elementwise_ops, activation_ops, reduce_ops, shape_ops,
                                    gather_ops, norm_ops], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    res = doctest.testmod(module, extraglobs={"Tensor": Tensor, "np": np, "mstype": mstype})
    assert res.failed == 0 and res.attempted > 0


def np_layer_norm(x, gamma, beta, bna, eps):
    axes = tuple(range(bna, x.ndim))
    mean = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta, mean, var


def np_gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


X, Y = r(3, 4), r(3, 4)
POS = np.abs(X) + 0.1
IDS = np.array([[4, 0], [2, 7], [-1, 4]], np.int32)          # 7 and -1 out of range: zeros
TABLE = r(5, 3)
GATHERED = np.where((IDS >= 0) & (IDS < 5), IDS, 0)
LN_X, LN_G, LN_B = r(2, 3, 4), r(3, 4), r(3, 4)
erf = np.vectorize(math.erf)

# (prim, inputs, numpy reference of the (first) output)
KERNELS = [
    ("Gather", ops.Gather(), (TABLE, IDS, 0),
     TABLE[GATHERED] * ((IDS >= 0) & (IDS < 5))[..., None]),
    ("Gather_axis1", ops.Gather(), (LN_X, np.array([3, 0], np.int64), -1), LN_X[..., [3, 0]]),
    ("GatherD", ops.GatherD(), (X, 0, np.array([[2, 0, 1, 1]], np.int32)),
     np.take_along_axis(X, np.array([[2, 0, 1, 1]]), 0)),
    ("GatherNd", ops.GatherNd(), (LN_X, np.array([[1, 2], [0, 0]], np.int32)),
     LN_X[[1, 0], [2, 0]]),
    ("LayerNorm", ops.LayerNorm(1, 1, 1e-5), (LN_X, LN_G, LN_B),
     np_layer_norm(LN_X, LN_G, LN_B, 1, 1e-5)[0]),
    ("GeLU", ops.GeLU(), (X,), np_gelu(X)),
    ("FastGeLU", ops.FastGeLU(), (X,), X / (1 + np.exp(-1.702 * np.abs(X)))
     * np.exp(0.851 * (X - np.abs(X)))),
    ("Sigmoid", ops.Sigmoid(), (X,), 1 / (1 + np.exp(-X))),
    ("Tanh", ops.Tanh(), (X,), np.tanh(X)),
    ("Erf", ops.Erf(), (X,), erf(X)),
    ("LogSoftmax", ops.LogSoftmax(0), (X,), X - np.log(np.exp(X).sum(0, keepdims=True))),
    ("Sqrt", ops.Sqrt(), (POS,), np.sqrt(POS)),
    ("Pow", ops.Pow(), (POS, Y), POS ** Y),
    ("Maximum", ops.Maximum(), (X, Y[0]), np.maximum(X, Y[0])),
    ("Minimum", ops.Minimum(), (X, Y), np.minimum(X, Y)),
    ("FloorDiv", ops.FloorDiv(), (np.array([7, -7, 6], np.int32), np.array([2, 2, -4], np.int32)),
     np.array([3, -4, -2])),
    ("Greater", ops.Greater(), (X, Y), X > Y),
    ("GreaterEqual", ops.GreaterEqual(), (X, X[:1]), X >= X[:1]),
    ("Less", ops.Less(), (X, Y), X < Y),
    ("LessEqual", ops.LessEqual(), (X, X[:, :1]), X <= X[:, :1]),
    ("NotEqual", ops.NotEqual(), (np.array([1, 2], np.int32), np.array([1, 3], np.int32)),
     np.array([False, True])),
    ("Select", ops.Select(), (X > 0, X, Y[0]), np.where(X > 0, X, Y[0])),
    ("ZerosLike", ops.ZerosLike(), (X,), np.zeros_like(X)),
    ("OnesLike", ops.OnesLike(), (np.zeros(3, np.int64),), np.ones(3)),
    ("BiasAdd", ops.BiasAdd(), (LN_X, LN_X[0, :, 0]), LN_X + LN_X[0, :, 0][:, None]),
    ("BiasAdd_NHWC", ops.BiasAdd("NHWC"), (LN_X, LN_X[0, 0]), LN_X + LN_X[0, 0]),
    ("TensorAdd", ops.TensorAdd(), (X, Y), X + Y),
    ("ReduceMin", ops.ReduceMin(), (LN_X, (0, 2)), LN_X.min((0, 2))),
    ("ReduceProd", ops.ReduceProd(True), (X, 1), X.prod(1, keepdims=True)),
    ("Argmax", ops.Argmax(), (X,), X.argmax(-1)),
    ("ArgMax", ops.ArgMax(0, ms.int64), (X,), X.argmax(0)),
    ("Tile", ops.Tile(), (X, (2, 1, 3)), np.tile(X, (2, 1, 3))),
    ("ExpandDims", ops.ExpandDims(), (X, -3), X[None]),
    ("Squeeze", ops.Squeeze(), (X[:, None, :, None],), X),
]


class One(nn.Cell):
    """A graph of one primitive call (the constants passed through)."""

    def __init__(self, prim, consts):
        super().__init__()
        self.prim, self.consts = prim, consts

    def construct(self, *xs):
        args, it = [], iter(xs)
        for i, c in enumerate(self.consts):
            args.append(c if c is not None else next(it))
        out = self.prim(*args)
        return out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name,prim,inputs,want", KERNELS, ids=[k[0] for k in KERNELS])
def test_kernel_matches_numpy_eager_and_compiled(name, prim, inputs, want):
    args = [Tensor(v) if isinstance(v, np.ndarray) else v for v in inputs]
    out = prim(*args)
    out = out[0] if isinstance(out, tuple) else out
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)
    consts = [None if isinstance(v, np.ndarray) else v for v in inputs]
    tensors = [a for a in args if isinstance(a, Tensor)]
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        compiled = One(type(prim)(**prim.init_attrs), consts)(*tensors)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    np.testing.assert_allclose(compiled.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_layer_norm_statistics_and_half_precision():
    y, mean, var = ops.LayerNorm(-1, -1, 1e-6)(Tensor(LN_X), Tensor(LN_G[0]), Tensor(LN_B[0]))
    want = np_layer_norm(LN_X, LN_G[0], LN_B[0], 2, 1e-6)
    for got, w in zip((y, mean, var), want):
        np.testing.assert_allclose(got.asnumpy(), w, rtol=1e-5, atol=1e-6)
    assert mean.shape == (2, 3, 1) and var.shape == (2, 3, 1)
    half = ops.LayerNorm()(Tensor(LN_X.astype(np.float16)), Tensor(LN_G.astype(np.float16)),
                           Tensor(LN_B.astype(np.float16)))
    assert all(t.dtype == ms.float16 for t in half)
    np.testing.assert_allclose(half[0].asnumpy(), np_layer_norm(LN_X, LN_G, LN_B, 1, 1e-7)[0],
                               rtol=1e-2, atol=1e-2)


def test_inferred_shapes_and_dtypes():
    f32, i32 = ms.float32, ms.int32
    assert ops.Gather().infer([[10, 4, 6], [2, 3], 1], [f32, i32, 1]) == ([10, 2, 3, 6], f32)
    assert ops.Gather().infer([[10], [], 0], [f32, i32, 0]) == ([], f32)
    assert ops.GatherD().infer([[4, 5], 1, [3, 2]], [f32, 1, ms.int64]) == ([3, 2], f32)
    assert ops.GatherNd().infer([[4, 5, 6], [7, 2]], [f32, i32]) == ([7, 6], f32)
    ln = ops.LayerNorm(1, 2).infer([[2, 3, 4], [4], [4]], [f32] * 3)
    assert ln == (([2, 3, 4], [2, 1, 1], [2, 1, 1]), (f32, f32, f32))
    assert ops.Greater().infer([[2, 1], [3]], [f32, f32]) == ([2, 3], ms.bool_)
    assert ops.Select().infer([[2, 1], [3], [1]], [ms.bool_, i32, i32]) == ([2, 3], i32)
    assert ops.ReduceMin(True).infer([[2, 3], 1], [f32, 1]) == ([2, 1], f32)
    assert ops.ReduceProd().infer([[2, 3], ()], [i32, ()]) == ([], i32)
    assert ops.Argmax(1, ms.int64).infer([[2, 3, 4]], [f32]) == ([2, 4], ms.int64)
    assert ops.Tile().infer([[2, 3], (2, 1, 2)], [f32, None]) == ([2, 2, 6], f32)
    assert ops.ExpandDims().infer([[2, 3], 2], [f32, 2]) == ([2, 3, 1], f32)
    assert ops.Squeeze((0, -1)).infer([[1, 3, 1]], [f32]) == ([3], f32)
    assert ops.BiasAdd("NHWC").infer([[2, 3, 4], [4]], [f32, f32]) == ([2, 3, 4], f32)


ERRORS = [
    (lambda: ops.Gather()(Tensor(TABLE), Tensor(IDS.astype(np.float32)), 0), TypeError,
     r"For 'Gather', the 'input_indices' should be a Tensor with dtype in \[Int32, Int64\], "
     r"but got Float32"),
    (lambda: ops.Gather()(Tensor(TABLE), Tensor(IDS), 2), ValueError,
     r"For 'Gather', the 'axis' should be in \[-2, 2\), but got 2"),
    (lambda: ops.Gather(batch_dims=1), ValueError,
     r"For 'Gather', the 'batch_dims' should be 0 .*but got 1"),
    (lambda: ops.GatherD()(Tensor(X), 1, Tensor(np.array([[4]], np.int32))), ValueError,
     r"For 'GatherD', every value of 'index' should be in \[0, 4\) .*but got 4"),
    (lambda: ops.GatherD()(Tensor(X), 0, Tensor(np.zeros((4, 5), np.int32))), ValueError,
     r"For 'GatherD', the 'index shape' should have the rank of 'x' \[3, 4\] and no dim "
     r"larger than x's \(except dim 0\), but got \[4, 5\]"),
    (lambda: ops.GatherNd()(Tensor(X), Tensor(np.zeros((2, 3), np.int32))), ValueError,
     r"For 'GatherNd', the last dim of 'indices' should be in \[1, rank of 'input_x': 2\], "
     r"but got 3"),
    (lambda: ops.GatherNd()(Tensor(X), Tensor(np.array([[0, 9]], np.int32))), ValueError,
     r"For 'GatherNd', every value of 'indices' should be in \[0, 4\) .*but got 9"),
    (lambda: ops.LayerNorm()(Tensor(LN_X), Tensor(LN_G[0]), Tensor(LN_B)), ValueError,
     r"For 'LayerNorm', the 'gamma shape' should be == input_x shape \[2, 3, 4\] from "
     r"begin_params_axis 1: \[3, 4\], but got \[4\]"),
    (lambda: ops.LayerNorm(3)(Tensor(LN_X), Tensor(LN_G), Tensor(LN_B)), ValueError,
     r"For 'LayerNorm', the 'begin_norm_axis' should be in \[-3, 3\), but got 3"),
    (lambda: ops.LayerNorm(epsilon=0.0), ValueError,
     r"For 'LayerNorm', the 'epsilon' should be > 0, but got 0.0"),
    (lambda: ops.GeLU()(Tensor(np.ones(2, np.int32))), TypeError,
     r"For 'GeLU', the 'x' should be a Tensor with dtype in \[Float16, BFloat16, Float32, "
     r"Float64\], but got Int32"),
    (lambda: ops.Pow()(Tensor(np.array([2], np.int32)), Tensor(np.array([-1], np.int32))),
     ValueError, r"For 'Pow', the 'y' of an integer x should be >= 0, but got -1"),
    (lambda: ops.Maximum()(Tensor(X), Tensor(Y.astype(np.float64))), TypeError,
     r"For 'Maximum', the 'y' should have the same dtype as 'x': Float32, but got Float64"),
    (lambda: ops.Select()(Tensor(X), Tensor(X), Tensor(Y)), TypeError,
     r"For 'Select', the 'cond' should be a Tensor with dtype in \[Bool\], but got Float32"),
    (lambda: ops.Select()(Tensor(X > 0), Tensor(X), Tensor(r(2))), ValueError,
     r"For 'Select', the 'x shape' and 'y shape' should be broadcastable"),
    (lambda: ops.BiasAdd()(Tensor(X), Tensor(r(3))), ValueError,
     r"For 'BiasAdd', the 'bias shape' should be == \[C\] for the 4 channels of input_x "
     r"shape \[3, 4\] \(NCHW\): \[4\], but got \[3\]"),
    (lambda: ops.BiasAdd("NDHWC"), ValueError, r"For 'BiasAdd', the 'data_format'"),
    (lambda: ops.Argmax(output_type=ms.float32), TypeError, r"For 'Argmax', the 'output_type'"),
    (lambda: ops.Argmax(2)(Tensor(X)), ValueError,
     r"For 'Argmax', the 'axis' should be in \[-2, 2\), but got 2"),
    (lambda: ops.ReduceMin()(Tensor(X.astype(np.complex64)), 0), TypeError,
     r"For 'ReduceMin', the 'x' should be a Tensor with dtype in"),
    (lambda: ops.Tile()(Tensor(X), (2,)), ValueError,
     r"For 'Tile', the 'multiples' should be positive ints, at least as many as the rank of "
     r"input_x \[3, 4\], but got \(2,\)"),
    (lambda: ops.ExpandDims()(Tensor(X), 3), ValueError,
     r"For 'ExpandDims', the 'axis' should be in \[-3, 3\), but got 3"),
    (lambda: ops.Squeeze(0)(Tensor(X)), ValueError,
     r"For 'Squeeze', the dims named by 'axis' should have size 1, but x shape \[3, 4\] has 3 "
     r"at dim 0"),
]


@pytest.mark.parametrize("make,err,match", ERRORS)
def test_errors_name_op_argument_and_value(make, err, match):
    with pytest.raises(err, match=match):
        make()
