"""Every compute primitive's backward rule against central finite differences in float64.

Each case calls one op on float64 inputs (random shapes, broadcasting where the op
broadcasts); the loss is sum_k sum(out_k * r_k) over the differentiated outputs with
fixed random r_k, so every element of every gradient is checked. The analytic gradient
comes from `ms.grad`, eagerly (on the tape) and compiled (on the graph), which agree;
the reference perturbs each input element by +-eps and runs the forward eagerly.
"""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import COMPUTE_FAMILIES
from msops.primitives.rules import reason_without

RNG = np.random.default_rng(15)
F64 = np.float64


def r(*shape):
    return RNG.standard_normal(shape)


def pos(*shape):
    return np.abs(r(*shape)) + 0.5


def away_from_zero(*shape):
    return np.sign(r(*shape)) * (np.abs(r(*shape)) + 0.3)


def dim():
    """A random dim in [2, 4]: shapes change with the seed, broadcasting stays explicit."""
    return int(RNG.integers(2, 5))


B, M, K, N = dim(), dim(), dim(), dim()


class Case:
    """One op call: `call(*tensors)` with the differentiated float inputs `args`; `outputs`:
    which outputs enter the loss; `expect_zero`: inputs whose gradient must be zeros."""

    def __init__(self, name, call, args, outputs=(0,), expect_zero=(), rtol=1e-6, eps=1e-6):
        self.name, self.call, self.args = name, call, [np.asarray(a, F64) for a in args]
        self.outputs, self.expect_zero, self.rtol, self.eps = outputs, expect_zero, rtol, eps


def onehot(on, off):
    return ops.OneHot(-1)(Tensor(np.array([2, 0, 3, 1, 0], np.int32)), 4, on, off)


def batchnorm(training, fmt="NCHW"):
    return lambda x, s, b, m, v: ops.BatchNorm(training, 1e-3, 0.1, fmt)(x, s, b, m, v)


def svd_squared(svd, x):
    s, u, v = svd(x)
    return s, u * u, v * v


def eig_parts(out):
    """Re w, Im w and |v|^2 of Eig's outputs (real outputs for the loss)."""
    w, v = out
    return ops.Real()(w), ops.Imag()(w), ops.Square()(ops.Abs()(v))


def dropout(x):
    """Dropout with the same mask at every call: the seed and draw counter restart."""
    ms.set_seed(4)
    return ops.Dropout(0.6)(x)


ATTN_MASK = np.array([[0, 1, 0, 0], [0, 0, 0, 1], [1, 0, 0, 0]], bool)

CASES = [
    Case("MatMul", lambda a, b: ops.MatMul()(a, b), [r(M, K), r(K, N)]),
    Case("MatMul_ta", lambda a, b: ops.MatMul(transpose_a=True)(a, b), [r(K, M), r(K, N)]),
    Case("MatMul_tb", lambda a, b: ops.MatMul(transpose_b=True)(a, b), [r(M, K), r(N, K)]),
    Case("MatMul_ta_tb", lambda a, b: ops.MatMul(True, True)(a, b), [r(K, M), r(N, K)]),
    Case("BatchMatMul", lambda a, b: ops.BatchMatMul()(a, b), [r(B, M, K), r(1, K, N)]),
    Case("BatchMatMul_tb", lambda a, b: ops.BatchMatMul(transpose_b=True)(a, b),
         [r(2, B, M, K), r(B, N, K)]),
    Case("Add", lambda x, y: ops.Add()(x, y), [r(M, N), r(N)]),
    Case("Sub", lambda x, y: ops.Sub()(x, y), [r(M, 1), r(1, N)]),
    Case("Mul", lambda x, y: ops.Mul()(x, y), [r(B, M, N), r(M, 1)]),
    Case("RealDiv", lambda x, y: ops.RealDiv()(x, y), [r(M, N), away_from_zero(1, N)]),
    Case("Neg", lambda x: ops.Neg()(x), [r(M, N)]),
    Case("Square", lambda x: ops.Square()(x), [r(M, N)]),
    Case("Exp", lambda x: ops.Exp()(x), [r(M, N)]),
    Case("Log", lambda x: ops.Log()(x), [pos(M, N)]),
    # a comparison is piecewise constant (x, y: zeros, not differences across the jump)
    Case("Equal", lambda x, y, z: ops.Mul()(ops.Cast()(ops.Equal()(x, y), ms.float64), z),
         [np.array([1.0, 2.0, 3.0]), np.array([1.0, 5.0, 3.0]), r(3)], expect_zero=(0, 1)),
    Case("ReduceSum", lambda x: ops.ReduceSum()(x, 1), [r(M, N, K)]),
    Case("ReduceSum_keep", lambda x: ops.ReduceSum(True)(x, (0, 2)), [r(M, N, K)]),
    Case("ReduceMean", lambda x: ops.ReduceMean()(x, ()), [r(M, N)]),
    Case("ReduceMean_keep", lambda x: ops.ReduceMean(True)(x, -1), [r(M, N)]),
    Case("ReduceMax", lambda x: ops.ReduceMax()(x, 0), [r(M, N)]),
    Case("ReduceMax_keep", lambda x: ops.ReduceMax(True)(x, (1,)), [r(B, M, N)]),
    Case("AddN", lambda a, b, c: ops.AddN()((a, b, c)), [r(M, N), r(M, N), r(M, N)]),
    Case("Cast", lambda x: ops.Cast()(ops.Cast()(x, ms.float32), ms.float64), [r(M, N)],
         rtol=1e-3, eps=1e-2),
    Case("ReLU", lambda x: ops.ReLU()(x), [away_from_zero(M, N)]),
    Case("Softmax", lambda x: ops.Softmax()(x), [r(M, N)]),
    Case("Softmax_axes", lambda x: ops.Softmax((0, 2))(x), [r(M, N, K)]),
    Case("SoftmaxCrossEntropyWithLogits",
         lambda x, y: ops.SoftmaxCrossEntropyWithLogits()(x, y), [r(M, N), pos(M, N)]),
    Case("OneHot", onehot, [np.array(1.5), np.array(-0.5)]),
    Case("BatchNorm_train", batchnorm(True), [r(B + 2, M), pos(M), r(M), r(M), pos(M)],
         expect_zero=(3, 4)),
    Case("BatchNorm_train_NCHW", batchnorm(True), [r(2, M, 2, 3), pos(M), r(M), r(M), pos(M)],
         expect_zero=(3, 4)),
    Case("BatchNorm_NHWC", batchnorm(False, "NHWC"), [r(2, 2, 3, M), pos(M), r(M), r(M), pos(M)]),
    Case("Dropout", dropout, [r(M, N)]),
    Case("Identity", lambda x: ops.Identity()(x), [r(M, N)]),
    Case("Reshard", lambda x: ops.reshard(x, ms.parallel.Layout((2, 1), ("dp", "mp"))(
        "dp", "mp")), [r(M, N)]),
    Case("StopGradient", lambda x: ops.Add()(ops.StopGradient()(x), x), [r(M, N)]),
    Case("Reshape", lambda x: ops.Reshape()(x, (-1,)), [r(M, N)]),
    Case("Flatten", lambda x: ops.Flatten()(x), [r(M, N, K)]),
    Case("Transpose", lambda x: ops.Transpose()(x, (2, 0, 1)), [r(M, N, K)]),
    Case("Concat", lambda a, b: ops.Concat(1)((a, b)), [r(M, N), r(M, 2)]),
    Case("Split", lambda x: ops.Split(1, 2)(x), [r(M, 2 * N)], outputs=(0, 1)),
    Case("StridedSlice", lambda x: ops.StridedSlice(begin_mask=1, shrink_axis_mask=4)(
        x, (3, 4, 2), (1, 0, 3), (1, -2, 1)), [r(4, 5, 6)]),
    Case("StridedSlice_new_axis", lambda x: ops.StridedSlice(new_axis_mask=1)(
        x, (0, 1), (1, 3), (1, 1)), [r(M, N)]),
    # the transformer op set: a repeated index accumulates, an out-of-range one gets nothing
    Case("Gather", lambda p: ops.Gather()(p, Tensor(np.array([[2, 0], [2, 5]], np.int32)), 0),
         [r(4, N)]),
    Case("Gather_axis1", lambda p: ops.Gather()(p, Tensor(np.array([4, 1, 1], np.int64)), 1),
         [r(M, 5, K)]),
    Case("GatherD", lambda x: ops.GatherD()(x, 1, Tensor(np.array(
        [[0, 0, 3], [1, 2, 1], [3, 3, 0]], np.int32))), [r(3, 4)]),
    Case("GatherNd", lambda x: ops.GatherNd()(x, Tensor(np.array(
        [[0, 1], [2, 3], [0, 1]], np.int32))), [r(3, 4, 2)]),
    Case("ScatterNd", lambda u: ops.ScatterNd()(Tensor(np.array(
        [[0, 1], [2, 3], [0, 1]], np.int32)), u, (3, 4, 2)), [r(3, 2)]),
    Case("TensorScatterUpdate", lambda x, u: ops.TensorScatterUpdate()(x, Tensor(np.array(
        [[0, 1], [2, 3]], np.int32)), u), [r(3, 4, 2), r(2, 2)]),
    Case("LayerNorm", lambda x, w, b: ops.LayerNorm(-1, -1)(x, w, b),
         [r(B, M, N), r(N), r(N)]),
    Case("LayerNorm_params_axis", lambda x, w, b: ops.LayerNorm(1, 1, 1e-5)(x, w, b),
         [r(B, M, N), r(M, N), r(M, N)]),
    Case("LayerNorm_all", lambda x, w, b: ops.LayerNorm(0, 0)(x, w, b),
         [r(M, N), r(M, N), r(M, N)]),
    Case("LayerNorm_statistics", lambda x, w, b: ops.LayerNorm(1, -1)(x, w, b),
         [r(B, M, N), r(N), r(N)], outputs=(0, 1, 2)),
    Case("GeLU", lambda x: ops.GeLU()(x), [r(M, N)]),
    Case("FastGeLU", lambda x: ops.FastGeLU()(x), [r(M, N)]),
    Case("Sigmoid", lambda x: ops.Sigmoid()(x), [r(M, N)]),
    Case("Tanh", lambda x: ops.Tanh()(x), [r(M, N)]),
    Case("Erf", lambda x: ops.Erf()(x), [r(M, N)]),
    Case("LogSoftmax", lambda x: ops.LogSoftmax(0)(x), [r(M, N)]),
    Case("Sqrt", lambda x: ops.Sqrt()(x), [pos(M, N)]),
    Case("Pow", lambda x, y: ops.Pow()(x, y), [pos(M, N), r(N)]),
    Case("Maximum", lambda x, y: ops.Maximum()(x, y), [r(M, N), r(N)]),
    Case("Minimum", lambda x, y: ops.Minimum()(x, y), [r(M, 1), r(M, N)]),
    Case("TensorAdd", lambda x, y: ops.TensorAdd()(x, y), [r(M, N), r(N)]),
    Case("BiasAdd", lambda x, b: ops.BiasAdd()(x, b), [r(B, M, 2), r(M)]),
    Case("BiasAdd_NHWC", lambda x, b: ops.BiasAdd("NHWC")(x, b), [r(B, 2, M), r(M)]),
    Case("Select", lambda x, y, c=Tensor(r(M, N) > 0): ops.Select()(c, x, y), [r(M, N), r(N)]),
    Case("ReduceMin", lambda x: ops.ReduceMin()(x, 0), [r(M, N)]),
    Case("ReduceMin_keep", lambda x: ops.ReduceMin(True)(x, (0, 2)), [r(B, M, N)]),
    Case("ReduceProd", lambda x: ops.ReduceProd()(x, 1), [np.array([[1.5, 0.0, -2.0],
                                                                    [0.7, 1.2, 0.9]])]),
    Case("ReduceProd_keep", lambda x: ops.ReduceProd(True)(x, (0, 2)), [away_from_zero(2, M, 3)]),
    Case("Tile", lambda x: ops.Tile()(x, (2, 1, 3)), [r(M, N)]),
    Case("ExpandDims", lambda x: ops.ExpandDims()(x, 1), [r(M, N)]),
    Case("Squeeze", lambda x: ops.Squeeze(1)(x), [r(M, 1, N)]),
    # convolution and pooling (tests/test_conv_ops.py checks more attribute sets)
    Case("Conv2D", lambda x, w: ops.Conv2D(3, 3, pad_mode="same", stride=2)(x, w),
         [r(2, 2, 5, 5), r(3, 2, 3, 3)]),
    Case("Conv2D_group", lambda x, w: ops.Conv2D(4, 2, pad_mode="pad", pad=1, group=2)(x, w),
         [r(1, 4, 4, 4), r(4, 2, 2, 2)]),
    Case("MaxPool", lambda x: ops.MaxPool(2, 2)(x), [r(2, 3, 4, 4)]),
    Case("RmsNorm", lambda x, w: ops.RmsNorm(1e-3)(x, w), [r(B, M, N), r(N)], outputs=(0, 1)),
    Case("RmsNorm_all", lambda x, w: ops.RmsNorm()(x, w), [r(M, N), r(M, N)], outputs=(0, 1)),
    Case("FlashAttentionScore", lambda q, k, v, s: ops.FlashAttentionScore(
        2, 1.0, 0.5, 2, 1, 0, "BSH", 0)(q, k, v, s, None, None, Tensor(ATTN_MASK)),
         [r(2, 3, 8), r(2, 4, 4), r(2, 4, 4), r(1, 2, 3, 4)], outputs=(3,)),
    Case("AvgPool", lambda x: ops.AvgPool(3, 1, "same")(x), [r(1, 2, 4, 5)]),
    Case("Conv3D", lambda x, w: ops.Conv3D(2, 2, pad_mode="same", stride=(2, 1, 2))(x, w),
         [r(1, 2, 3, 3, 4), r(2, 2, 2, 2, 2)]),
    Case("Conv3DTranspose", lambda x, w: ops.Conv3DTranspose(2, 2, 2, stride=2, pad_mode="pad",
                                                             pad=1, output_padding=1)(x, w),
         [r(1, 2, 2, 3, 2), r(2, 2, 2, 2, 2)]),
    Case("MaxPool3D", lambda x: ops.MaxPool3D(2, 1, "pad", 1, True)(x), [r(1, 2, 3, 3, 4)]),
    Case("AvgPool3D", lambda x: ops.AvgPool3D(3, 2, "pad", 1, True, False)(x),
         [r(1, 2, 4, 3, 5)]),
    Case("MaxPoolWithArgmaxV2", lambda x: ops.MaxPoolWithArgmaxV2(3, 2, 1, 2)(x)[0],
         [r(1, 2, 5, 6)]),
    Case("MaxPool3DWithArgmax", lambda x: ops.MaxPool3DWithArgmax(2, 1, 0)(x)[0],
         [r(1, 2, 3, 3, 3)]),
    Case("MaxUnpool2D", lambda x: ops.MaxUnpool2D(2)(x, Tensor(np.array(
        [[[[0, 3], [9, 14]]]], np.int64))), [r(1, 1, 2, 2)]),
    Case("MaxUnpool3D", lambda x: ops.MaxUnpool3D(2, 2)(x, Tensor(np.array(
        [[[[[7]]], [[[0]]]]], np.int64))), [r(1, 2, 1, 1, 1)]),
    Case("PReLU", lambda x, w: ops.PReLU()(x, w), [away_from_zero(2, 3, 4), r(3)]),
    # unary_ops (inputs kept off the kinks, where finite differences straddle two pieces)
    Case("Abs", lambda x: ops.Abs()(x), [away_from_zero(M, N)]),
    Case("Rsqrt", lambda x: ops.Rsqrt()(x), [pos(M, N)]),
    Case("Reciprocal", lambda x: ops.Reciprocal()(x), [away_from_zero(M, N)]),
    Case("Sin", lambda x: ops.Sin()(x), [r(M, N)]),
    Case("Cos", lambda x: ops.Cos()(x), [r(M, N)]),
    Case("ReLU6", lambda x: ops.ReLU6()(x), [np.array([[-1.3, 0.4, 2.5], [5.2, 6.7, 9.0]])]),
    Case("HSigmoid", lambda x: ops.HSigmoid()(x), [np.array([[-4.1, -2.5, 0.3], [2.9, 3.2, 7.0]])]),
    Case("HSwish", lambda x: ops.HSwish()(x), [np.array([[-4.1, -2.5, 0.3], [2.9, 3.2, 7.0]])]),
    Case("Softplus", lambda x: ops.Softplus()(x), [3 * r(M, N)]),
    Case("ArgMaxWithValue", lambda x: ops.ArgMaxWithValue(1)(x), [r(M, N)], outputs=(1,)),
    Case("ArgMinWithValue", lambda x: ops.ArgMinWithValue(0, True)(x), [r(B, M, N)],
         outputs=(1,)),
    Case("BroadcastTo", lambda x: ops.BroadcastTo((B, -1, 3))(x), [r(M, 1)]),
    Case("Stack", lambda a, b: ops.Stack(-1)((a, b)), [r(M, N), r(M, N)]),
    Case("Unstack", lambda x: ops.Unstack(1)(x), [r(M, 3)], outputs=(0, 2)),
    Case("Pack", lambda a, b: ops.Pack(0)((a, b)), [r(M), r(M)]),
    Case("Unpack", lambda x: ops.Unpack()(x), [r(2, N)], outputs=(1,)),
    Case("CumSum", lambda x: ops.CumSum()(x, 1), [r(M, N)]),
    Case("CumSum_exclusive_reverse", lambda x: ops.CumSum(True, True)(x, -2), [r(M, N)]),
    Case("TopK", lambda x: ops.TopK()(x, 2), [r(M, N)]),
    Case("Sort", lambda x: ops.Sort(0, True)(x), [r(M, N)]),
    # transcendental_ops, arith_ops, activation_ext_ops (off the kinks and the remainders'
    # jumps)
    Case("Log1p", lambda x: ops.Log1p()(x), [pos(M, N) - 0.4]),
    Case("Expm1", lambda x: ops.Expm1()(x), [r(M, N)]),
    Case("Tan", lambda x: ops.Tan()(x), [r(M, N) / 2]),
    Case("Atan", lambda x: ops.Atan()(x), [2 * r(M, N)]),
    Case("Atan2", lambda x, y: ops.Atan2()(x, y), [r(M, N), away_from_zero(N)]),
    Case("Sinh", lambda x: ops.Sinh()(x), [r(M, N)]),
    Case("Cosh", lambda x: ops.Cosh()(x), [r(M, N)]),
    Case("Asin", lambda x: ops.Asin()(x), [np.tanh(r(M, N)) * 0.9]),
    Case("ACos", lambda x: ops.ACos()(x), [np.tanh(r(M, N)) * 0.9]),
    Case("Erfc", lambda x: ops.Erfc()(x), [r(M, N)]),
    Case("Mod", lambda x, y: ops.Mod()(x, y), [np.array([[-2.3, 1.7, 4.4], [5.1, -0.6, 2.2]]),
                                              np.array([1.5, -0.8, 1.0])]),
    Case("FloorMod", lambda x, y: ops.FloorMod()(x, y), [np.array([[-2.3, 1.7, 4.4],
                                                                   [5.1, -0.6, 2.2]]),
                                                         np.array([[1.5], [-0.7]])]),
    Case("SquaredDifference", lambda x, y: ops.SquaredDifference()(x, y), [r(M, N), r(N)]),
    Case("DivNoNan", lambda x, y: ops.DivNoNan()(x, y), [r(M, N), away_from_zero(N)]),
    Case("Elu", lambda x: ops.Elu()(x), [away_from_zero(M, N)]),
    Case("Elu_alpha", lambda x: ops.Elu(0.4)(x), [away_from_zero(M, N)]),
    Case("SeLU", lambda x: ops.SeLU()(x), [away_from_zero(M, N)]),
    Case("Softsign", lambda x: ops.Softsign()(x), [away_from_zero(M, N)]),
    Case("Mish", lambda x: ops.Mish()(x), [2 * r(M, N)]),
    Case("CumProd", lambda x: ops.CumProd()(x, 1), [np.array([[1.5, 0.0, -2.0, 0.7],
                                                              [0.0, 0.0, 1.2, 0.9]])]),
    Case("CumProd_exclusive_reverse", lambda x: ops.CumProd(True, True)(x, 0), [r(M, N)]),
    Case("Asinh", lambda x: ops.Asinh()(x), [2 * r(M, N)]),
    Case("Acosh", lambda x: ops.Acosh()(x), [pos(M, N) + 1]),
    Case("Atanh", lambda x: ops.Atanh()(x), [np.tanh(r(M, N)) * 0.9]),
    Case("Hypot", lambda x, y: ops.Hypot()(x, y), [r(M, N), away_from_zero(N)]),
    # a slice addressed twice (row 2), and a zero update for Mul
    Case("TensorScatterAdd", lambda x, u: ops.TensorScatterAdd()(x, Tensor(np.array(
        [[2], [0], [2]], np.int32)), u), [r(3, N), r(3, N)]),
    Case("TensorScatterSub", lambda x, u: ops.TensorScatterSub()(x, Tensor(np.array(
        [[2, 1], [0, 0], [2, 1]], np.int32)), u), [r(3, N), r(3)]),
    Case("TensorScatterMul", lambda x, u: ops.TensorScatterMul()(x, Tensor(np.array(
        [[2], [0], [2]], np.int32)), u), [r(3, 2), np.array([[1.5, 0.0], [0.7, -1.2],
                                                            [2.0, 0.4]])]),
    Case("TensorScatterDiv", lambda x, u: ops.TensorScatterDiv()(x, Tensor(np.array(
        [[2], [0], [2]], np.int32)), u), [r(3, N), pos(3, N)]),
    Case("TensorScatterMax", lambda x, u: ops.TensorScatterMax()(x, Tensor(np.array(
        [[2], [0], [2]], np.int32)), u), [r(3, N), r(3, N)]),
    Case("TensorScatterMin", lambda x, u: ops.TensorScatterMin()(x, Tensor(np.array(
        [[2], [0], [2]], np.int32)), u), [r(3, N), r(3, N)]),
    Case("SoftShrink", lambda x: ops.SoftShrink()(x), [np.array([[-1.3, -0.3, 0.1],
                                                                 [0.45, 0.7, 2.0]])]),
    Case("HShrink", lambda x: ops.HShrink(0.6)(x), [np.array([[-1.3, -0.3, 0.1],
                                                              [0.45, 0.7, 2.0]])]),
    # triangle_ops
    Case("Tril", lambda x: ops.Tril()(x), [r(B, M, N)]),
    Case("Tril_diagonal", lambda x: ops.Tril(-1)(x), [r(M, N)]),
    Case("Triu", lambda x: ops.Triu(1)(x), [r(B, M, N)]),
    # linalg_ops (well-conditioned matrices; Cholesky of b b^T + I, which is SPD)
    Case("MatrixInverse", lambda x: ops.MatrixInverse()(x), [r(B, M, M) + 3 * np.eye(M)]),
    Case("MatrixInverse_adjoint", lambda x: ops.MatrixInverse(True)(x), [r(M, M) + 3 * np.eye(M)]),
    Case("MatrixDeterminant", lambda x: ops.MatrixDeterminant()(x), [r(B, M, M) + 2 * np.eye(M)]),
    Case("LogMatrixDeterminant", lambda x: ops.LogMatrixDeterminant()(x),
         [r(B, M, M) + 2 * np.eye(M)], outputs=(1,)),
    Case("Cholesky", lambda b: ops.Cholesky()(ops.BatchMatMul(transpose_b=True)(b, b)
                                              + Tensor(np.eye(M))), [r(B, M, M)]),
    Case("Cholesky_upper", lambda b: ops.Cholesky(True)(ops.MatMul(transpose_b=True)(b, b)
                                                        + Tensor(np.eye(M))), [r(M, M)]),
    Case("MatrixSolve", lambda a, b: ops.MatrixSolve()(a, b), [r(B, M, M) + 3 * np.eye(M),
                                                             r(B, M, N)]),
    Case("MatrixSolve_adjoint", lambda a, b: ops.MatrixSolve(True)(a, b),
         [r(M, M) + 3 * np.eye(M), r(M, N)]),
    Case("MatrixTriangularSolve", lambda a, b: ops.MatrixTriangularSolve()(a, b),
         [r(B, M, M) + 3 * np.eye(M), r(B, M, N)]),
    Case("MatrixTriangularSolve_upper_adjoint",
         lambda a, b: ops.MatrixTriangularSolve(False, True)(a, b),
         [r(M, M) + 3 * np.eye(M), r(M, N)]),
    Case("Qr", lambda x: ops.Qr()(x), [r(B, M + 2, M)], outputs=(0, 1)),
    Case("Qr_square_full", lambda x: ops.Qr(True)(x), [r(M, M)], outputs=(0, 1)),
    Case("Qr_wide", lambda x: ops.Qr()(x), [r(B, M, M + 2)], outputs=(0, 1)),
    # the singular vectors enter squared: the loss does not depend on their signs
    Case("Svd", lambda x: svd_squared(ops.Svd(), x), [r(B, M + 1, M)], outputs=(0, 1, 2)),
    Case("Svd_wide", lambda x: svd_squared(ops.Svd(), x), [r(M, M + 2)], outputs=(0, 1, 2)),
    Case("Svd_values", lambda x: ops.Svd(compute_uv=False)(x), [r(M + 1, M)]),
    Case("MatrixExp", lambda x: ops.MatrixExp()(x), [r(B, M, M)]),
    Case("MatrixExp_large", lambda x: ops.MatrixExp()(x), [4 * r(M, M)]),
]
# piecewise-constant ops: multiplied by z so the loss depends on them; x and y get zeros
for _name, _call in [("FloorDiv", lambda x, y: ops.FloorDiv()(x, y)),
                     ("Greater", lambda x, y: ops.Greater()(x, y)),
                     ("GreaterEqual", lambda x, y: ops.GreaterEqual()(x, y)),
                     ("Less", lambda x, y: ops.Less()(x, y)),
                     ("LessEqual", lambda x, y: ops.LessEqual()(x, y)),
                     ("NotEqual", lambda x, y: ops.NotEqual()(x, y)),
                     ("ZerosLike", lambda x, y: ops.ZerosLike()(x)),
                     ("OnesLike", lambda x, y: ops.OnesLike()(x)),
                     ("Argmax", lambda x, y: ops.Argmax(0)(x)),
                     ("Argmin", lambda x, y: ops.Argmin(0)(x)),
                     ("Sign", lambda x, y: ops.Sign()(x)),
                     ("SearchSorted", lambda x, y: ops.SearchSorted()(
                         ops.Sort()(y)[0], x)),
                     ("ArgMax", lambda x, y: ops.ArgMax(-1, ms.int64)(x)),
                     ("Floor", lambda x, y: ops.Floor()(x)),
                     ("Ceil", lambda x, y: ops.Ceil()(x)),
                     ("Round", lambda x, y: ops.Round()(x)),
                     ("IsNan", lambda x, y: ops.IsNan()(x)),
                     ("IsInf", lambda x, y: ops.IsInf()(x)),
                     ("IsFinite", lambda x, y: ops.IsFinite()(x)),
                     ("LogicalAnd", lambda x, y: ops.LogicalAnd()(ops.Greater()(x, 0.0),
                                                                  ops.Greater()(y, 0.0))),
                     ("LogicalOr", lambda x, y: ops.LogicalOr()(ops.Greater()(x, 0.0),
                                                                ops.Greater()(y, 0.0))),
                     ("LogicalNot", lambda x, y: ops.LogicalNot()(ops.Greater()(x, y))),
                     ("BitwiseAnd", lambda x, y: ops.BitwiseAnd()(ops.Cast()(x, ms.int32),
                                                                  ops.Cast()(y, ms.int32))),
                     ("BitwiseOr", lambda x, y: ops.BitwiseOr()(ops.Cast()(x, ms.int32),
                                                                ops.Cast()(y, ms.int32))),
                     ("BitwiseXor", lambda x, y: ops.BitwiseXor()(ops.Cast()(x, ms.int32),
                                                                  ops.Cast()(y, ms.int32))),
                     ("Invert", lambda x, y: ops.Invert()(ops.Cast()(x, ms.int32))),
                     ("PopulationCount", lambda x, y: ops.PopulationCount()(
                         ops.Cast()(x, ms.int32))),
                     ("UniqueWithPad", lambda x, y: ops.Reshape()(ops.UniqueWithPad()(
                         ops.Reshape()(ops.Cast()(x, ms.int32), (-1,)), 0)[1], (3, 3))),
                     ("Trunc", lambda x, y: ops.Trunc()(x)),
                     ("ReduceAll", lambda x, y: ops.ReduceAll(True)(ops.Greater()(x, y), 0)),
                     ("ReduceAny", lambda x, y: ops.ReduceAny(True)(ops.Greater()(x, y), 1)),
                     ("SignBit", lambda x, y: ops.SignBit()(x)),
                     ("TruncateDiv", lambda x, y: ops.TruncateDiv()(x, y)),
                     ("LogicalXor", lambda x, y: ops.LogicalXor()(ops.Greater()(x, 0.0),
                                                                  ops.Greater()(y, 0.0))),
                     ("ApproximateEqual", lambda x, y: ops.ApproximateEqual(0.5)(x, y)),
                     ("LeftShift", lambda x, y: ops.LeftShift()(ops.Cast()(x, ms.int32),
                                                                ops.Cast()(ops.Abs()(y), ms.int32))),
                     ("RightShift", lambda x, y: ops.RightShift()(
                         ops.Cast()(x, ms.int32), ops.Cast()(ops.Abs()(y), ms.int32))),
                     ("Gcd", lambda x, y: ops.Gcd()(ops.Cast()(x, ms.int32),
                                                    ops.Cast()(y, ms.int32))),
                     ("Lcm", lambda x, y: ops.Lcm()(ops.Cast()(x, ms.int32),
                                                    ops.Cast()(y, ms.int32)))]:
    CASES.append(Case(_name, lambda x, y, z, c=_call: ops.Mul()(
        ops.Cast()(c(x, y), ms.float64), z), [r(3, 3) * 3, away_from_zero(3, 3), r(3, 3)[:1]
                                                if _name.startswith("Arg") else r(3, 3)],
        expect_zero=(0, 1)))




def seeded(draw):
    """A random op's draw times z: the same draw at every call (the counter restarts);
    the gradient of z is the draw, and none flows into the draw."""
    def call(z):
        ms.set_seed(6)
        return ops.Mul()(ops.Cast()(draw(), ms.float64), z)
    return call


CASES += [Case("UniformReal", seeded(lambda: ops.UniformReal(seed=2)((3, 4))), [r(3, 4)]),
          Case("StandardNormal", seeded(lambda: ops.StandardNormal(1, 1)((3, 4))), [r(3, 4)]),
          Case("UniformInt", seeded(lambda: ops.UniformInt()((3, 4), Tensor(np.int32(-4)),
                                                             Tensor(np.int32(4)))), [r(3, 4)])]



def _parts(y):
    """The real and imaginary parts of a transform's output: a real loss of both."""
    return ops.Real()(y), ops.Imag()(y)


CASES += [Case("FFTN", lambda x: _parts(ops.FFTN(s=(5, 3))(x)), [r(B, 4, 4)], outputs=(0, 1)),
          Case("IFFTN", lambda x: _parts(ops.IFFTN(dim=(0,), norm="ortho")(x)), [r(3, B)],
               outputs=(0, 1)),
          Case("RFFTN", lambda x: _parts(ops.RFFTN(dim=(0, 2))(x)), [r(4, B, 5)],
               outputs=(0, 1)),
          Case("IRFFTN", lambda x: ops.IRFFTN(s=(6,))(x), [r(B, 3)]),
          Case("HFFT", lambda x: ops.HFFT(5, 0, "forward")(x), [r(4, B)]),
          Case("IHFFT", lambda x: _parts(ops.IHFFT(6)(x)), [r(B, 4)], outputs=(0, 1)),
          Case("HFFTN", lambda x: ops.HFFTN(s=(3, 4))(x), [r(B, 2, 3)]),
          Case("IHFFTN", lambda x: _parts(ops.IHFFTN(dim=(0, 1), norm="ortho")(x)), [r(3, 5)],
               outputs=(0, 1)),
          Case("Real", lambda x: ops.Real()(ops.FFTN()(x)), [r(B, 3)]),
          Case("Imag", lambda x: ops.Imag()(ops.FFTN()(x)), [r(B, 3)]),
          Case("Conj", lambda x: _parts(ops.Conj()(ops.FFTN()(x))), [r(B, 3)], outputs=(0, 1))]
# ctc_ops: the loss per sample of padded targets (one too long to fit stays at no gradient:
# zero_infinity); log_alpha carries none
_CTC_ARGS = [Tensor(np.array(a, np.int32)) for a in
             ([[1, 2, 2], [3, 0, 0], [1, 1, 3]], [5, 4, 3], [3, 1, 3])]
CASES += [Case("CTCLossV2", lambda x: ops.CTCLossV2(zero_infinity=True)(x, *_CTC_ARGS),
               [r(5, 3, 4)])]

# the special functions (special_ops) and NextAfter
CASES += [Case("Lgamma", lambda x: ops.Lgamma()(x), [pos(M, N)]),
          Case("Digamma", lambda x: ops.Digamma()(x), [pos(M, N)]),
          Case("Polygamma", lambda x: ops.Polygamma()(Tensor(np.array(2, np.int64)), x),
               [pos(M, N)]),
          Case("Zeta", lambda x, q: ops.Zeta()(x, q), [pos(M, N) + 1.5, pos(N)],
               expect_zero=(0,)),
          Case("Erfinv", lambda x: ops.Erfinv()(x), [np.tanh(r(M, N))]),
          Case("BesselI0", lambda x: ops.BesselI0()(x), [r(M, N)]),
          Case("BesselI0e", lambda x: ops.BesselI0e()(x), [r(M, N)]),
          Case("BesselI1", lambda x: ops.BesselI1()(x), [r(M, N)]),
          Case("BesselI1e", lambda x: ops.BesselI1e()(x), [r(M, N)]),
          Case("BesselJ0", lambda x: ops.BesselJ0()(x), [r(M, N) * 4]),
          Case("BesselJ1", lambda x: ops.BesselJ1()(x), [r(M, N) * 4]),
          Case("BesselY0", lambda x: ops.BesselY0()(x), [pos(M, N) * 3]),
          Case("BesselY1", lambda x: ops.BesselY1()(x), [pos(M, N) * 3]),
          Case("BesselK0", lambda x: ops.BesselK0()(x), [pos(M, N)]),
          Case("BesselK0e", lambda x: ops.BesselK0e()(x), [pos(M, N)]),
          Case("BesselK1", lambda x: ops.BesselK1()(x), [pos(M, N)]),
          Case("BesselK1e", lambda x: ops.BesselK1e()(x), [pos(M, N)]),
          Case("NextAfter", lambda x, y: ops.NextAfter()(x, y), [r(M, N), r(N)],
               expect_zero=(1,)),
          Case("Mvlgamma", lambda x: ops.Mvlgamma(3)(x), [pos(M, N) + 1.0]),
          Case("Addcdiv", lambda d, a, b, v: ops.Addcdiv()(d, a, b, v),
               [r(M, N), r(N), away_from_zero(M, 1), r(1)]),
          Case("Addcmul", lambda d, a, b, v: ops.Addcmul()(d, a, b, v),
               [r(M, 1), r(M, N), r(N), r(M, N)]),
          Case("Inv", lambda x: ops.Inv()(x), [away_from_zero(M, N)]),
          Case("TruncateMod", lambda x, y: ops.TruncateMod()(x, y),
               [np.array([[-2.3, 1.7, 4.4]]), np.array([0.9, -1.3, 1.3])]),
          Case("AccumulateNV2", lambda x, y: ops.AccumulateNV2()((x, y, x)), [r(M, N), r(M, N)]),
          Case("Eps", lambda x, z: ops.Mul()(ops.Eps()(x), z), [r(M, N), r(M, N)],
               expect_zero=(0,)),
          Case("Igamma", lambda a, x: ops.Igamma()(a, x), [pos(M, N), pos(N) * 2]),
          Case("Igammac", lambda a, x: ops.Igammac()(a, x), [pos(M, N) + 1, pos(M, 1) * 3]),
          Case("CumulativeLogsumexp", lambda x: ops.CumulativeLogsumexp()(x, 1), [r(M, N)]),
          Case("CumulativeLogsumexp_exclusive_reverse",
               lambda x: ops.CumulativeLogsumexp(True, True)(x, 0)[:-1], [r(M, N)]),
          Case("Cummax", lambda x: ops.Cummax(1)(x)[0], [r(M, N)]),
          Case("Cummin", lambda x: ops.Cummin(0)(x)[0], [r(M, N)])]

#: the inputs of the cases below come from their own generator, so the cases above keep
#: the inputs and the weights (drawn from RNG as the tests run, in order) they were tuned with
LATER = np.random.default_rng(16)


def r_later(*shape):
    return LATER.standard_normal(shape)


# linalg_ops' Eig: the eigenvectors enter as |v|^2 (the loss does not depend on their phases)
CASES += [Case("Eig", lambda x: eig_parts(ops.Eig(True)(x)), [r_later(B, M, M)],
               outputs=(0, 1, 2)),
          Case("Eig_values", lambda x: eig_parts(ops.Eig()(x))[:2], [r_later(M, M)],
               outputs=(0, 1))]
# lu_ops: every entry of the packed LU_data is a variable; the pivots are constants
PIVOTS = Tensor(np.array([M] * M, np.int32))
CASES += [Case("LuUnpack", lambda lu: ops.LuUnpack()(lu, PIVOTS)[1:], [r_later(M, M)],
               outputs=(0, 1)),
          Case("LuUnpack_wide",
               lambda lu: ops.LuUnpack()(lu, Tensor(np.ones((B, M), np.int32)))[1:],
               [r_later(B, M, M + 2)], outputs=(0, 1)),
          Case("LuSolve", lambda x, lu: ops.LuSolve()(x, lu, PIVOTS),
               [r_later(B, M, N), r_later(M, M) + 3 * np.eye(M)])]
# householder_ops (Geqrf has no gradient: tests/test_linalg_householder.py)
CASES += [Case("Orgqr", lambda x, t: ops.Orgqr()(x, t),
               [r_later(B, M + 2, M), r_later(B, M - 1)]),
          Case("Ormqr", lambda x, t, c: ops.Ormqr()(x, t, c),
               [r_later(M + 1, M), r_later(M), r_later(M + 1, N)]),
          Case("Ormqr_right_transpose", lambda x, t, c: ops.Ormqr(False, True)(x, t, c),
               [r_later(B, M, M), r_later(B, M - 1), r_later(B, N, M)])]
# complex_ops: built from real inputs, measured by real outputs
CASES += [Case("Complex", lambda x, y: _parts(ops.Exp()(ops.Complex()(x, y))),
               [r_later(B, 3), r_later(3)], outputs=(0, 1)),
          Case("ComplexAbs", lambda x: ops.ComplexAbs()(ops.FFTN()(x)), [r_later(B, 3)])]


def _loss_fn(case, weights):
    reduce_sum, mul = ops.ReduceSum(), ops.Mul()

    def loss(*xs):
        out = case.call(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        total = None
        for k in case.outputs:
            term = reduce_sum(mul(outs[k], Tensor(weights[k].astype(
                ms.dtype_to_nptype(outs[k].dtype)))), ())
            total = term if total is None else total + term
        return total
    return loss


def _weights(case):
    out = case.call(*[Tensor(a) for a in case.args])
    outs = out if isinstance(out, tuple) else (out,)
    return {k: r(*outs[k].shape) for k in case.outputs}


def finite_differences(loss, args, eps=1e-6):
    grads = []
    for i, a in enumerate(args):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            values = []
            for step in (eps, -eps):
                moved = [b.copy() for b in args]
                moved[i][idx] += step
                values.append(float(loss(*[Tensor(b) for b in moved]).asnumpy()))
            g[idx] = (values[0] - values[1]) / (2 * eps)
        grads.append(g)
    return grads


@pytest.fixture(autouse=True)
def pynative():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backward_matches_finite_differences(case):
    loss = _loss_fn(case, _weights(case))
    tensors = [Tensor(a) for a in case.args]
    f = ms.grad(loss, tuple(range(len(tensors))))
    eager = f(*tensors)                                         # on the tape
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = f(*tensors)                                      # on the graph
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for a, b in zip(eager, compiled):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-12, atol=1e-15)
    want = finite_differences(loss, case.args, case.eps)
    for i, (g, w) in enumerate(zip(eager, want)):
        assert g.shape == case.args[i].shape and g.dtype == ms.float64
        if i in case.expect_zero:
            np.testing.assert_array_equal(g.asnumpy(), 0)
        elif case.name == "StopGradient":            # only the un-stopped path counts
            np.testing.assert_allclose(g.asnumpy(), w / 2, rtol=1e-6, atol=1e-8)
        else:
            np.testing.assert_allclose(g.asnumpy(), w, rtol=case.rtol, atol=case.rtol * 1e-2)


def test_every_compute_primitive_has_a_case():
    """Each one has a case, but those declared without a backward rule (their refusal is
    tested with them: Geqrf in tests/test_linalg_householder.py)."""
    names = {name for family in COMPUTE_FAMILIES for name in family.__all__
             if reason_without("bprop", getattr(family, name)) is None}
    assert names == {c.name.split("_")[0] for c in CASES}


@pytest.mark.parametrize("case", [c for c in CASES if c.name in
                                  ("MatMul", "Mul", "Softmax", "ReduceMean", "BatchNorm_train")],
                         ids=lambda c: c.name)
def test_float16_gradient_follows_float64(case):
    """In float16 (BatchNorm: float16 x, float32 statistics) the gradient has the input's
    dtype and matches the float64 one to half precision."""
    weights = _weights(case)
    want = ms.grad(_loss_fn(case, weights), 0)(*[Tensor(a) for a in case.args]).asnumpy()
    half = [Tensor(a.astype(np.float16 if i == 0 or case.name != "BatchNorm_train"
                            else np.float32)) for i, a in enumerate(case.args)]
    got = ms.grad(_loss_fn(case, weights), 0)(*half)
    assert got.dtype == ms.float16
    np.testing.assert_allclose(got.asnumpy().astype(F64), want, rtol=0.05, atol=0.05)



@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("op,shape,axis", [
    (ops.ReduceProd, (0,), 0), (ops.ReduceProd, (0, 1), -1), (ops.ReduceProd, (2, 0), 1),
    (ops.ReduceProd, (0, 3), ()), (ops.ReduceMean, (0, 1), -1), (ops.ReduceMean, (2, 0), 0),
    (ops.ReduceMean, (0, 3), 1)], ids=lambda v: getattr(v, "__name__", str(v)))
def test_what_the_gradient_fuzzer_found(op, shape, axis, keep_dims):
    """Reductions of empty tensors: ReduceProd's backward reshaped 0 elements with a -1;
    ReduceMean's divided by x's size over the output's (0 // 0 -> 0) instead of by the
    reduced dims' size. The gradient of nothing is an empty array of x's shape, eager and
    compiled."""
    op = op(keep_dims)
    x = Tensor(np.ones(shape))
    f = ms.grad(lambda x: ops.ReduceSum()(op(x, axis), ()))
    eager = f(x)
    ms.set_context(mode=ms.GRAPH_MODE)
    compiled = f(x)
    for g in (eager, compiled):
        assert g.shape == shape and g.dtype == ms.float64
        assert g.asnumpy().size == 0
