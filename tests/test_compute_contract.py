"""The kernel contract of every compute primitive (every family of msops.primitives).

For one call of each op: the kernel's outputs have exactly the inferred shapes and
dtypes and are C-contiguous; no input is modified; infer_shape returns new lists
(never an input list, never mutating one). (Their rules: tests/test_rules.py.)
"""
import copy

import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import COMPUTE_FAMILIES
from msops.primitives.primitive import _abstract, _dtype_of, _shape_of

F16, F32 = np.float16, np.float32
RNG = np.random.default_rng(2)


def r(*shape, dtype=F32):
    return RNG.standard_normal(shape).astype(dtype)


# (primitive, call arguments); a tuple argument is a tuple-of-tensors input
CASES = [
    (ops.MatMul(transpose_b=True), (r(2, 3), r(4, 3))),
    (ops.BatchMatMul(transpose_a=True), (r(2, 3, 2, dtype=F16), r(1, 3, 5, dtype=F16))),
    (ops.Add(), (r(2, 3), r(3))),
    (ops.Sub(), (r(4, 1), r(1, 5))),
    (ops.Mul(), (r(2, 3, dtype=F16), r(2, 1, dtype=F16))),
    (ops.RealDiv(), (r(3), np.full(3, 2.0, F32))),
    (ops.Neg(), (r(2, 2),)),
    (ops.Square(), (np.arange(6, dtype=np.int32).reshape(2, 3),)),
    (ops.ReduceSum(), (r(2, 3), ())),
    (ops.ReduceSum(keep_dims=True), (r(2, 3, 4, dtype=F16), (0, 2))),
    (ops.ReduceMean(), (r(2, 3, 4), -1)),
    (ops.ReduceMax(keep_dims=True), (r(2, 3, 4, dtype=F16), (1,))),
    (ops.Exp(), (r(2, 3),)),
    (ops.Log(), (np.abs(r(2, 3)) + 0.5,)),
    (ops.Equal(), (np.array([1, 2, 3], np.int32), np.array([[1], [3]], np.int32))),
    (ops.AddN(), ((r(2, 3), r(2, 3), r(2, 3)),)),
    (ops.Cast(), (r(2, 3), ms.float16)),
    (ops.ReLU(), (r(3, 4),)),
    (ops.Softmax(0), (r(3, 4, dtype=F16),)),
    (ops.SoftmaxCrossEntropyWithLogits(), (r(4, 3), np.eye(3, dtype=F32)[[0, 2, 1, 0]])),
    (ops.OneHot(0), (np.array([1, 0, 3], np.int32), 4, np.array(1, F32), np.array(0, F32))),
    (ops.BatchNorm(is_training=True), (r(4, 3, 2, 2, dtype=F16),) + tuple(r(3) for _ in range(4))),
    (ops.BatchNorm(), (r(5, 3),) + tuple(np.abs(r(3)) for _ in range(4))),
    (ops.Dropout(0.7), (r(3, 5, dtype=F16),)),
    (ops.Identity(), (r(2, 3),)),
    (ops.StopGradient(), (r(2, 3),)),
    (ops.Reshard(*((ms.parallel.Layout((2, 2), ("dp", "mp"))("dp", "None"),),) * 2),
     (r(2, 3),)),
    (ops.Reshape(), (r(2, 3, 4), (4, -1))),
    (ops.Flatten(), (r(2, 3, 4),)),
    (ops.Transpose(), (r(2, 3, 4), (2, 0, 1))),
    (ops.Concat(1), ((r(2, 3), r(2, 1)),)),
    (ops.Split(1, 3), (r(2, 6),)),
    (ops.StridedSlice(begin_mask=1, shrink_axis_mask=4), (r(4, 5, 6), (3, 4, 2), (1, 0, 3),
                                                           (1, -2, 1))),
    # the transformer op set
    (ops.Gather(), (r(5, 3, dtype=F16), np.array([[4, 0], [9, 1]], np.int32), 0)),
    (ops.GatherD(), (r(3, 4), 1, np.array([[0, 3], [1, 1]], np.int64))),
    (ops.GatherNd(), (r(3, 4, 2), np.array([[0, 1], [2, 3]], np.int32))),
    (ops.LayerNorm(1, 1), (r(2, 3, 4, dtype=F16), r(3, 4, dtype=F16), r(3, 4, dtype=F16))),
    (ops.GeLU(), (r(2, 3, dtype=F16),)),
    (ops.FastGeLU(), (r(2, 3),)),
    (ops.Sigmoid(), (r(2, 3),)),
    (ops.Tanh(), (r(2, 3, dtype=F16),)),
    (ops.Erf(), (r(2, 3),)),
    (ops.LogSoftmax(0), (r(3, 4),)),
    (ops.Sqrt(), (np.abs(r(2, 3)),)),
    (ops.Pow(), (np.arange(6, dtype=np.int32).reshape(2, 3), np.array([2, 0, 1], np.int32))),
    (ops.Maximum(), (r(2, 3), r(3))),
    (ops.Minimum(), (r(2, 1), r(1, 3))),
    (ops.FloorDiv(), (np.array([7, -7], np.int32), np.array([2, 2], np.int32))),
    (ops.Greater(), (r(2, 3), r(3))),
    (ops.GreaterEqual(), (r(2, 3), r(2, 3))),
    (ops.Less(), (r(2, 3), r(3))),
    (ops.LessEqual(), (r(3), r(2, 3))),
    (ops.NotEqual(), (np.array([True, False]), np.array([True, True]))),
    (ops.Select(), (r(2, 3) > 0, r(2, 3), r(3))),
    (ops.ZerosLike(), (r(2, 3),)),
    (ops.OnesLike(), (np.zeros((2, 3), np.int64),)),
    (ops.BiasAdd(), (r(2, 3, 4), r(3))),
    (ops.TensorAdd(), (r(2, 3), r(3))),
    (ops.ReduceMin(keep_dims=True), (r(2, 3, 4, dtype=F16), (0, 2))),
    (ops.ReduceProd(), (r(2, 3), 1)),
    (ops.Argmax(), (r(2, 3),)),
    (ops.ArgMax(0, ms.int64), (r(2, 3),)),
    (ops.Tile(), (r(2, 3), (2, 1, 2))),
    (ops.ExpandDims(), (r(2, 3), 0)),
    (ops.Squeeze(), (r(2, 1, 3, 1),)),
    (ops.Conv2D(4, 3, pad_mode="same", stride=2, group=2), (r(2, 4, 5, 5), r(4, 2, 3, 3))),
    (ops.Conv2D(2, (2, 3), pad_mode="pad", pad=(1, 0, 2, 1)), (r(1, 3, 4, 4, dtype=F16),
                                                               r(2, 3, 2, 3, dtype=F16))),
    (ops.MaxPool(3, 2, "same"), (r(2, 3, 5, 4),)),
    (ops.AvgPool(2, 1), (r(1, 2, 3, 3, dtype=F16),)),
    (ops.Conv3D(2, 2, pad_mode="same", group=2), (r(1, 2, 3, 4, 3), r(2, 1, 2, 2, 2))),
    (ops.Conv3DTranspose(2, 4, 2, stride=2), (r(1, 2, 2, 2, 3, dtype=F16),
                                              r(2, 4, 2, 2, 2, dtype=F16))),
    (ops.MaxPool3D(2, 2, "same"), (r(1, 2, 3, 4, 5),)),
    (ops.AvgPool3D(2, 1, ceil_mode=True, divisor_override=3), (r(1, 2, 3, 3, 3, dtype=F16),)),
    (ops.MaxPoolWithArgmaxV2(2, 1, dilation=2), (r(2, 1, 4, 5),)),
    (ops.MaxPool3DWithArgmax(2, 2, 1, ceil_mode=True), (r(1, 2, 3, 4, 3),)),
    (ops.MaxUnpool2D(2, 2, output_shape=(3, 3)), (r(1, 2, 1, 2), np.array(
        [[[[0, 8]], [[4, 4]]]], np.int64))),
    (ops.MaxUnpool3D(2), (r(1, 1, 1, 1, 2), np.array([[[[[1, 15]]]]], np.int32))),
    (ops.PReLU(), (r(2, 3, 4), r(3))),
    # unary_ops and the index reductions
    (ops.Abs(), (np.array([-3, 0, 2], np.int32),)),
    (ops.Sign(), (r(2, 3, dtype=F16),)),
    (ops.Rsqrt(), (np.abs(r(2, 3)) + 0.1,)),
    (ops.Reciprocal(), (r(2, 3, dtype=F16),)),
    (ops.Sin(), (r(2, 3),)),
    (ops.Cos(), (r(2, 3, dtype=F16),)),
    (ops.ReLU6(), (4 * r(2, 3),)),
    (ops.HSigmoid(), (4 * r(2, 3, dtype=F16),)),
    (ops.HSwish(), (4 * r(2, 3),)),
    (ops.Softplus(), (r(2, 3),)),
    (ops.Argmin(1, ms.int64), (r(2, 3),)),
    (ops.ArgMaxWithValue(), (r(2, 3, dtype=F16),)),
    (ops.ArgMinWithValue(-1, True), (np.array([[3, 1, 2], [0, 5, 0]], np.int32),)),
    # stack_ops, scan_ops, sort_ops and BroadcastTo
    (ops.BroadcastTo((2, -1, 3)), (r(4, 1, dtype=F16),)),
    (ops.Stack(-1), ((r(2, 3), r(2, 3), r(2, 3)),)),
    (ops.Unstack(1), (np.arange(6, dtype=np.int64).reshape(2, 3),)),
    (ops.Pack(), ((r(3), r(3)),)),
    (ops.Unpack(-1, 2), (r(3, 2, dtype=F16),)),
    (ops.CumSum(exclusive=True, reverse=True), (r(2, 3, dtype=F16), 1)),
    (ops.TopK(), (r(2, 5), 3)),
    (ops.Sort(0, descending=True), (np.array([[3, 1], [3, 7], [0, 1]], np.int32),)),
    (ops.SearchSorted(ms.int32, right=True), (np.array([[1.0, 2.0, 2.0], [0.0, 5.0, 9.0]], F32),
                                              r(2, 4))),
    # piecewise_ops, transcendental_ops, arith_ops, activation_ext_ops
    (ops.Floor(), (r(2, 3, dtype=F16),)),
    (ops.Ceil(), (r(2, 3),)),
    (ops.Round(), (np.array([[-3, 0, 2]], np.int32),)),
    (ops.Round(), (r(2, 3, dtype=F16), -1)),
    (ops.ScatterNd(), (np.array([[1], [0], [1]], np.int32), r(3, 2), (3, 2))),
    (ops.TensorScatterUpdate(), (r(3, 2, dtype=F16), np.array([[2, 1]], np.int64),
                                 r(1, dtype=F16))),
    (ops.LogicalAnd(), (r(2, 3) > 0, r(3) > 0)),
    (ops.LogicalOr(), (r(2, 1) > 0, r(1, 3) > 0)),
    (ops.LogicalNot(), (r(2, 3) > 0,)),
    (ops.BitwiseAnd(), (np.array([[12, -3, 7]], np.int32), np.array([10, 6, -1], np.int32))),
    (ops.BitwiseOr(), (np.array([[1], [2]], np.uint8), np.array([[4, 8]], np.uint8))),
    (ops.BitwiseXor(), (r(2, 3) > 0, r(3) > 0)),
    (ops.Invert(), (np.array([0, 5, -6], np.int16),)),
    (ops.UniqueWithPad(), (np.array([4, -1, 4, 7, -1], np.int64), -9)),
    (ops.PopulationCount(), (np.array([[0, 5, -6]], np.int64),)),
    (ops.IsNan(), (np.array([np.nan, 1, np.inf], F16),)),
    (ops.IsInf(), (np.array([[np.nan, -np.inf, 2]], F32),)),
    (ops.IsFinite(), (np.array([1, 2], np.int64),)),
    (ops.Log1p(), (np.abs(r(2, 3, dtype=F16)),)),
    (ops.Expm1(), (r(2, 3),)),
    (ops.Tan(), (r(2, 3),)),
    (ops.Atan(), (r(2, 3, dtype=F16),)),
    (ops.Atan2(), (r(2, 3), r(3))),
    (ops.Sinh(), (r(2, 3),)),
    (ops.Cosh(), (r(2, 3, dtype=F16),)),
    (ops.Asin(), (r(2, 3) / 4,)),
    (ops.ACos(), (r(2, 3, dtype=F16) / 4,)),
    (ops.Erfc(), (r(2, 3),)),
    (ops.Mod(), (np.array([[-7, 7]], np.int32), np.array([2, -3], np.int32))),
    (ops.FloorMod(), (r(2, 3, dtype=F16), np.full(3, 0.7, F16))),
    (ops.SquaredDifference(), (r(2, 3), r(3))),
    (ops.DivNoNan(), (r(2, 3), np.array([0.0, 2.0, -1.0], F32))),
    (ops.Elu(0.5), (r(2, 3, dtype=F16),)),
    (ops.SeLU(), (r(2, 3),)),
    (ops.Softsign(), (r(2, 3),)),
    (ops.Mish(), (r(2, 3, dtype=F16),)),
    (ops.SoftShrink(0.3), (r(2, 3),)),
    (ops.HShrink(), (r(2, 3),)),
    # stats and extra math (mathops)
    (ops.ReduceAll(), (r(2, 3) > 0, 1)),
    (ops.ReduceAny(keep_dims=True), (r(2, 3, 4) > 0, (0, 2))),
    (ops.CumProd(exclusive=True, reverse=True), (r(2, 3, dtype=F16), 1)),
    (ops.Trunc(), (r(2, 3, dtype=F16),)),
    (ops.Asinh(), (r(2, 3),)),
    (ops.Acosh(), (np.abs(r(2, 3, dtype=F16)) + 1,)),
    (ops.Atanh(), (r(2, 3) / 4,)),
    (ops.Hypot(), (r(2, 3), r(3))),
    (ops.TensorScatterAdd(), (r(3, 2, dtype=F16), np.array([[2], [2]], np.int64), r(2, 2, dtype=F16))),
    (ops.TensorScatterSub(), (r(3, 2), np.array([[0, 1]], np.int32), r(1))),
    (ops.TensorScatterMul(), (np.arange(6, dtype=np.int32).reshape(3, 2),
                              np.array([[1]], np.int32), np.array([[3, -2]], np.int32))),
    (ops.TensorScatterDiv(), (r(3, 2), np.array([[1], [0]], np.int32), r(2, 2) + 3)),
    (ops.TensorScatterMax(), (r(3, 2), np.array([[2], [2]], np.int32), r(2, 2))),
    (ops.TensorScatterMin(), (r(4,), np.array([[3]], np.int64), r(1))),
    # random_ops
    (ops.UniformReal(seed=1), ((2, 3),)),
    (ops.StandardNormal(2, 3), ((3, 1, 2),)),
    (ops.UniformInt(), ((4, 2), np.array(-2, np.int32), np.array(5, np.int32))),
    # triangle_ops
    (ops.Tril(1), (r(2, 3, 4, dtype=F16),)),
    (ops.Triu(-1), (np.arange(12, dtype=np.int64).reshape(3, 4) % 2 == 0,)),
    # linalg_ops
    (ops.MatrixInverse(), (r(2, 3, 3) + 3 * np.eye(3, dtype=F32),)),
    (ops.MatrixDeterminant(), (r(2, 3, 3, dtype=F16),)),
    (ops.LogMatrixDeterminant(), (r(4, 4),)),
    (ops.Cholesky(upper=True), (np.eye(3, dtype=F16) * 2 + 0.5,)),
    (ops.MatrixSolve(adjoint=True), (r(2, 3, 3) + 3 * np.eye(3, dtype=F32), r(2, 3, 4))),
    (ops.MatrixTriangularSolve(lower=False), (r(3, 3) + 3 * np.eye(3, dtype=F32), r(3, 2))),
    (ops.Qr(), (r(2, 4, 3),)),
    (ops.Qr(full_matrices=True), (r(4, 3, dtype=F16),)),
    (ops.Svd(), (r(2, 3, 4),)),
    (ops.Svd(full_matrices=True, compute_uv=False), (r(4, 3),)),
    (ops.MatrixExp(), (r(2, 3, 3, dtype=F16),)),
    (ops.Eig(compute_v=True), (r(2, 3, 3),)),
    (ops.Eig(), ((r(3, 3) + 1j * r(3, 3)).astype(np.complex64),)),
    # fft_ops
    (ops.FFTN(s=(5,), dim=(1,)), (r(2, 3, 4),)),
    (ops.IFFTN(norm="ortho"), (r(2, 3) + 1j * r(2, 3),)),
    (ops.RFFTN(dim=(0, 2)), (r(4, 2, 5, dtype=F16),)),
    (ops.IRFFTN(s=(6,)), ((r(3, 4) + 1j * r(3, 4)).astype(np.complex64),)),
    (ops.HFFT(n=5, dim=0), (r(3, 2) + 1j * r(3, 2),)),
    (ops.IHFFT(), (np.arange(6, dtype=np.int32),)),
    (ops.HFFTN(dim=(0, 1)), (r(2, 3) + 1j * r(2, 3),)),
    (ops.IHFFTN(s=(3, 4)), (r(2, 2, 5),)),
    (ops.Real(), ((r(2, 3) + 1j * r(2, 3)).astype(np.complex64),)),
    (ops.Imag(), (r(2, 3),)),
    (ops.Conj(), ((r(2, 3) + 1j * r(2, 3)).astype(np.complex64),)),
    # ctc_ops
    (ops.CTCLossV2(blank=1), (r(5, 2, 4), np.array([[2, 3], [0, 0]], np.int64),
                              np.array([5, 3], np.int64), np.array([2, 1], np.int64))),
    (ops.RmsNorm(), (r(2, 3, 4, dtype=F16), r(3, 4, dtype=F16))),
    # FlashAttentionScore's first input names its present optional inputs (its call adds it)
    (ops.FlashAttentionScore(2, input_layout="BNSD", sparse_mode=3),
     ((), r(1, 2, 3, 4, dtype=F16), r(1, 1, 5, 4, dtype=F16), r(1, 1, 5, 4, dtype=F16))),
    (ops.Lgamma(), (r(2, 3, dtype=F16),)),
    (ops.Digamma(), (r(2, 3),)),
    (ops.Polygamma(), (np.array(1, np.int64), np.abs(r(2, 3)) + 0.5)),
    (ops.Zeta(), (np.abs(r(2, 3)) + 1.5, np.abs(r(3)) + 0.5)),
    (ops.Erfinv(), (np.tanh(r(2, 3)),)),
    (ops.BesselI0(), (r(2, 3),)),
    (ops.BesselI0e(), (r(2, 3, dtype=F16),)),
    (ops.BesselI1(), (r(2, 3),)),
    (ops.BesselI1e(), (r(2, 3),)),
    (ops.BesselJ0(), (r(2, 3),)),
    (ops.BesselJ1(), (r(2, 3, dtype=F16),)),
    (ops.BesselY0(), (np.abs(r(2, 3)),)),
    (ops.BesselY1(), (np.abs(r(2, 3)),)),
    (ops.BesselK0(), (np.abs(r(2, 3)),)),
    (ops.BesselK0e(), (np.abs(r(2, 3)),)),
    (ops.BesselK1(), (np.abs(r(2, 3)),)),
    (ops.BesselK1e(), (np.abs(r(2, 3)),)),
    (ops.Gcd(), (np.array([[12, 9], [0, 7]], np.int32), np.array([8, 6], np.int32))),
    (ops.Lcm(), (np.array([4, 6], np.int64), np.array([[6], [10]], np.int64))),
    (ops.NextAfter(), (r(2, 3), r(3))),
    (ops.SignBit(), (np.array([-0.0, 1.0, -2.0], F32),)),
    (ops.Mvlgamma(2), (np.abs(r(2, 3)) + 1.0,)),
    (ops.TruncateDiv(), (np.array([[-7, 7], [9, -9]], np.int32), np.array([2, -4], np.int32))),
    (ops.TruncateMod(), (r(2, 3), np.full(3, 0.7, F32))),
    (ops.LogicalXor(), (np.array([True, False]), np.array([[True], [False]]))),
    (ops.Inv(), (r(2, 3, dtype=F16),)),
    (ops.ApproximateEqual(0.1), (r(2, 3), r(3))),
    (ops.Addcdiv(), (r(2, 3), r(3), np.full((2, 1), 2.0, F32), np.array([0.5], F32))),
    (ops.Addcmul(), (np.arange(6, dtype=np.int32).reshape(2, 3), np.array([1, 2, 3], np.int32),
                     np.array([[2], [3]], np.int32), np.array([2], np.int32))),
    (ops.AccumulateNV2(), ((r(2, 3), r(2, 3)),)),
    (ops.LeftShift(), (np.array([[1, -3], [5, 7]], np.int32), np.array([3, 33], np.int32))),
    (ops.RightShift(), (np.array([-64, 64], np.int64), np.array([2, 70], np.int64))),
    (ops.Eps(), (r(2, 3, dtype=F16),)),
    (ops.Igamma(), (np.abs(r(2, 3)) + 0.1, np.abs(r(3)))),
    (ops.Igammac(), (np.abs(r(2, 3)) + 0.1, np.abs(r(2, 3)))),
    (ops.CumulativeLogsumexp(reverse=True), (r(2, 3, dtype=F16), 1)),
    (ops.Cummax(0), (np.arange(6, dtype=np.int32).reshape(2, 3),)),
    (ops.Cummin(-1), (r(2, 3),)),
    # lu_ops (1-based LAPACK pivots)
    (ops.LuUnpack(), (r(2, 4, 3), np.array([[2, 4, 3], [1, 3, 3]], np.int32))),
    (ops.LuUnpack(unpack_data=False), (r(3, 2, dtype=F16), np.array([3, 2], np.int64))),
    (ops.LuSolve(), (r(2, 3, 2), r(2, 3, 3) + 3 * np.eye(3, dtype=F32),
                     np.array([[3, 2, 3], [1, 2, 3]], np.int32))),
    # householder_ops
    (ops.Geqrf(), (r(2, 4, 3),)),
    (ops.Orgqr(), (r(4, 3), r(2))),
    (ops.Ormqr(left=False, transpose=True), ((r(2, 3, 2) + 1j * r(2, 3, 2)).astype(np.complex64),
                                             (r(2, 2) + 1j * r(2, 2)).astype(np.complex64),
                                             (r(2, 4, 3) + 1j * r(2, 4, 3)).astype(np.complex64))),
    # complex_ops
    (ops.Complex(), (r(2, 3), r(3))),
    (ops.ComplexAbs(), ((r(2, 3) + 1j * r(2, 3)).astype(np.complex64),)),
]


def _as_call_arg(value):
    if isinstance(value, tuple) and value and all(isinstance(v, np.ndarray) for v in value):
        return tuple(Tensor(v) for v in value)
    return Tensor(value) if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize("prim,args", CASES, ids=[p.name for p, _ in CASES])
def test_kernel_output_matches_inference(prim, args):
    saved = copy.deepcopy(args)
    shapes, dtypes = [], []
    for i, a in enumerate(args):
        value = list(a) if isinstance(a, tuple) and i not in prim.const_inputs else a
        shapes.append(_abstract(value, i in prim.const_inputs, _shape_of))
        dtypes.append(_abstract(value, i in prim.const_inputs, _dtype_of))
    shapes_before = copy.deepcopy(shapes)
    out_shape, out_dtype = prim.infer(shapes, dtypes)
    assert shapes == shapes_before                          # infer never mutates its inputs
    outs = prim(*(_as_call_arg(a) for a in args))
    multi = isinstance(out_shape, tuple)
    outs, out_shape, out_dtype = ((outs, out_shape, out_dtype) if multi else
                                  ((outs,), (out_shape,), (out_dtype,)))
    assert len(outs) == len(out_shape) == len(out_dtype)
    for t, shape, dtype in zip(outs, out_shape, out_dtype):
        assert isinstance(shape, list) and all(shape is not s for s in shapes)
        assert list(t.shape) == shape and t.dtype == dtype
        assert t.asnumpy().flags.c_contiguous
    for a, b in zip(args, saved):                           # inputs are never modified
        if isinstance(a, tuple):
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y)
        elif isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)


def test_every_compute_primitive_is_covered():
    names = {name for family in COMPUTE_FAMILIES for name in family.__all__}
    assert names == {p.name for p, _ in CASES}
