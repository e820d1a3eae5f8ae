"""Math primitives: inference rules and numpy kernels against plain numpy."""
import doctest

import ml_dtypes
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import math_ops
from msops.primitives.rules import rule_of

F16, F32, F64 = np.float16, np.float32, np.float64
RNG = np.random.default_rng(0)


def rand(shape, dtype=F32):
    """Random values exactly representable in every dtype used here (small ints / 8ths)."""
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(1, 6, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind == "c":
        return (RNG.integers(-8, 8, shape) / 8 + 1j * RNG.integers(-8, 8, shape) / 8).astype(dtype)
    return (RNG.integers(-16, 16, size=shape) / 8).astype(dtype)


def tol(dtype):
    return {"float16": 2e-3, "bfloat16": 1e-2}.get(np.dtype(dtype).name, 1e-6)


def test_docstring_examples():
    res = doctest.testmod(math_ops, extraglobs={"Tensor": Tensor, "np": np,
                                                "mstype": ms.common.dtype})
    assert res.attempted >= 5 and res.failed == 0


# -- MatMul / BatchMatMul -----------------------------------------------------------------
@pytest.mark.parametrize("ta,tb,a,b,out", [
    (False, False, [2, 3], [3, 4], [2, 4]),
    (True, False, [3, 2], [3, 4], [2, 4]),
    (False, True, [2, 3], [4, 3], [2, 4]),
    (True, True, [3, 2], [4, 3], [2, 4]),
])
def test_matmul_infer(ta, tb, a, b, out):
    prim = ops.MatMul(transpose_a=ta, transpose_b=tb)
    assert prim.infer_shape(a, b) == out
    assert prim.infer_dtype(ms.float16, ms.float16) == ms.float16
    assert prim.attrs == {"transpose_a": ta, "transpose_b": tb} and prim.transpose_a is ta
    assert rule_of("sharding", prim) is math_ops.matmul_spec


def test_matmul_infer_errors():
    mm = ops.MatMul()
    with pytest.raises(ValueError, match=r"For 'MatMul', the contraction dim of 'x2' should be "
                                         r"== the contraction dim of 'x1': 3, but got 4"):
        mm.infer_shape([2, 3], [4, 5])
    with pytest.raises(ValueError, match=r"For 'MatMul', the rank of 'x1' should be 2, but got "
                                         r"shape \[2, 2, 3\] of rank 3"):
        mm.infer_shape([2, 2, 3], [3, 4])
    with pytest.raises(TypeError, match=r"For 'MatMul', the 'x2' should have the same dtype as "
                                        r"'x1': Float32, but got Float16"):
        mm.infer_dtype(ms.float32, ms.float16)
    with pytest.raises(TypeError, match=r"For 'MatMul', the 'x1' should be a Tensor with dtype"):
        mm.infer_dtype(ms.bool_, ms.bool_)
    with pytest.raises(TypeError, match=r"For 'MatMul', the type of 'transpose_a' should be "
                                        r"bool, but got int"):
        ops.MatMul(transpose_a=1)
    with pytest.raises(ValueError, match="contraction dim"):     # eager calls infer first
        mm(Tensor(np.ones((2, 3), F32)), Tensor(np.ones((2, 3), F32)))


@pytest.mark.parametrize("dtype", [F16, ml_dtypes.bfloat16, F32, F64, np.int32, np.complex64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_kernel(dtype, ta, tb):
    a, b = rand((4, 5), dtype), rand((5, 3), dtype)
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    out = ops.MatMul(ta, tb)(Tensor(a_in), Tensor(b_in)).asnumpy()
    ref = (a.astype(F64) @ b.astype(F64)) if np.dtype(dtype).kind != "c" else a @ b
    assert out.dtype == np.dtype(dtype) and out.shape == (4, 3)
    np.testing.assert_allclose(out.astype(ref.dtype), ref, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("a,b,ta,tb,out", [
    ([5, 2, 3], [5, 3, 4], False, False, [5, 2, 4]),
    ([5, 1, 2, 3], [4, 3, 6], False, False, [5, 4, 2, 6]),
    ([1, 3, 2], [7, 4, 3], True, True, [7, 2, 4]),
])
def test_batch_matmul_infer(a, b, ta, tb, out):
    assert ops.BatchMatMul(ta, tb).infer_shape(a, b) == out


def test_batch_matmul_infer_errors():
    bmm = ops.BatchMatMul()
    with pytest.raises(ValueError, match=r"For 'BatchMatMul', the rank of 'x2' should be >= 3, "
                                         r"but got shape \[3, 4\] of rank 2"):
        bmm.infer_shape([5, 2, 3], [3, 4])
    with pytest.raises(ValueError, match=r"For 'BatchMatMul', the 'x1 batch shape' and 'x2 "
                                         r"batch shape' should be broadcastable, but got \[5\] "
                                         r"and \[4\]"):
        bmm.infer_shape([5, 2, 3], [4, 3, 2])
    with pytest.raises(ValueError, match=r"contraction dim of 'x2' should be == the contraction "
                                         r"dim of 'x1': 3, but got 2"):
        bmm.infer_shape([5, 2, 3], [5, 2, 3])


@pytest.mark.parametrize("dtype", [F16, F32, F64, np.int64])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_batch_matmul_kernel(dtype, ta, tb):
    a, b = rand((3, 1, 4, 5), dtype), rand((2, 5, 6), dtype)
    a_in = np.swapaxes(a, -1, -2).copy() if ta else a
    b_in = np.swapaxes(b, -1, -2).copy() if tb else b
    out = ops.BatchMatMul(ta, tb)(Tensor(a_in), Tensor(b_in)).asnumpy()
    ref = np.matmul(a.astype(F64), b.astype(F64))
    assert out.shape == (3, 2, 4, 6) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.astype(F64), ref, rtol=tol(dtype), atol=tol(dtype))


# -- binary element-wise --------------------------------------------------------------------
BINARY = [(ops.Add, np.add), (ops.Sub, np.subtract), (ops.Mul, np.multiply),
          (ops.RealDiv, np.true_divide)]


@pytest.mark.parametrize("x,y,out", [
    ([2, 3], [2, 3], [2, 3]), ([2, 3], [3], [2, 3]), ([4, 1, 3], [5, 1], [4, 5, 3]),
    ([], [2, 2], [2, 2]), ([1], [], [1]), ([0, 3], [1, 3], [0, 3]),
])
@pytest.mark.parametrize("prim_cls", [p for p, _ in BINARY])
def test_binary_infer_broadcast(prim_cls, x, y, out):
    prim = prim_cls()
    assert prim.infer_shape(x, y) == out and prim.infer_shape(y, x) == out
    assert rule_of("sharding", prim) is math_ops.elementwise_spec and prim.name == prim_cls.__name__


def test_binary_infer_errors():
    with pytest.raises(ValueError, match=r"For 'Add', the 'x shape' and 'y shape' should be "
                                         r"broadcastable, but got \[2, 3\] and \[4\] "
                                         r"\(dim -1: 3 vs 4\)"):
        ops.Add().infer_shape([2, 3], [4])
    with pytest.raises(TypeError, match=r"For 'Mul', the 'y' should have the same dtype as 'x': "
                                        r"Float32, but got Int32"):
        ops.Mul().infer_dtype(ms.float32, ms.int32)
    with pytest.raises(TypeError, match=r"For 'RealDiv', the 'x' should be a Tensor with dtype "
                                        r"in \[Float16, BFloat16, Float32, Float64, Complex64, "
                                        r"Complex128\], but got Int32"):
        ops.RealDiv().infer_dtype(ms.int32, ms.int32)
    with pytest.raises(TypeError, match=r"For 'Sub', the 'x' should be a Tensor with dtype"):
        ops.Sub().infer_dtype(ms.bool_, ms.bool_)
    with pytest.raises(ValueError, match="broadcastable"):
        ops.Sub()(Tensor(np.ones((2, 3), F32)), Tensor(np.ones((3, 2), F32)))


@pytest.mark.parametrize("dtype", [F16, ml_dtypes.bfloat16, F32, F64, np.int8, np.int32,
                                   np.uint16, np.int64, np.complex128])
@pytest.mark.parametrize("prim_cls,np_op", BINARY)
def test_binary_kernel(prim_cls, np_op, dtype):
    if prim_cls is ops.RealDiv and np.dtype(dtype).kind in "iu":
        pytest.raises(TypeError, prim_cls(), Tensor(rand(3, dtype)), Tensor(rand(3, dtype)))
        return
    x, y = rand((4, 1, 3), dtype), rand((5, 1), dtype)
    out = prim_cls()(Tensor(x), Tensor(y)).asnumpy()
    ref = np_op(x.astype(F64) if dtype != np.complex128 else x,
                y.astype(F64) if dtype != np.complex128 else y)
    assert out.shape == (4, 5, 3) and out.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind in "iu":
        ref = ref.astype(dtype)      # the integer result wraps in its own dtype
    np.testing.assert_allclose(out.astype(ref.dtype), ref, rtol=tol(dtype), atol=tol(dtype))


def test_bool_add_mul_are_or_and():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(ops.Add()(Tensor(a), Tensor(b)).asnumpy(), a | b)
    np.testing.assert_array_equal(ops.Mul()(Tensor(a), Tensor(b)).asnumpy(), a & b)


@pytest.mark.parametrize("dtype", [F16, F32, np.int32, np.uint8])
def test_scalar_takes_tensor_dtype_on_either_side(dtype):
    x = rand((2, 3), dtype)
    t = Tensor(x)
    for out, ref in ((t + 2, x.astype(F64) + 2), (2 * t, 2 * x.astype(F64)),
                     (7 - t, 7 - x.astype(F64)), (t - 1, x.astype(F64) - 1)):
        assert out.dtype == ms.common.dtype.from_numpy(x.dtype)
        np.testing.assert_allclose(out.asnumpy().astype(F64), ref.astype(dtype).astype(F64),
                                   rtol=tol(dtype))


def test_tensor_operators():
    x, y, w = rand((4, 3)), rand((4, 3)), rand((3, 2))
    tx, ty = Tensor(x), Tensor(y)
    np.testing.assert_allclose((tx + ty).asnumpy(), x + y)
    np.testing.assert_allclose((tx - ty).asnumpy(), x - y)
    np.testing.assert_allclose((tx * ty).asnumpy(), x * y)
    np.testing.assert_allclose((tx / (ty * ty + 1)).asnumpy(), x / (y * y + 1), rtol=1e-6)
    np.testing.assert_allclose((1 / (ty * ty + 1)).asnumpy(), 1 / (y * y + 1), rtol=1e-6)
    np.testing.assert_allclose((tx @ Tensor(w)).asnumpy(), x @ w, rtol=1e-6)
    np.testing.assert_array_equal((-tx).asnumpy(), -x)
    b, c = rand((2, 4, 3)), rand((2, 3, 5))
    np.testing.assert_allclose((Tensor(b) @ Tensor(c)).asnumpy(), b @ c, rtol=1e-6)
    assert isinstance(tx + ty, Tensor) and (tx + ty).dtype == ms.float32


# -- unary --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F16, F32, F64, np.int8, np.int64, np.complex64])
def test_square_and_neg(dtype):
    x = rand((3, 4), dtype)
    sq = ops.Square()(Tensor(x)).asnumpy()
    neg = ops.Neg()(Tensor(x)).asnumpy()
    assert sq.dtype == neg.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(sq, (x * x).astype(dtype))
    np.testing.assert_array_equal(neg, -x)
    assert ops.Square().infer_shape([3, 4]) == [3, 4]
    assert rule_of("sharding", ops.Square) is math_ops.elementwise_spec


def test_unary_dtype_errors():
    with pytest.raises(TypeError, match=r"For 'Neg', the 'x' should be a Tensor with dtype in "
                                        r"\[Int8, .*\], but got UInt8"):
        ops.Neg().infer_dtype(ms.uint8)
    with pytest.raises(TypeError, match=r"For 'Square', the 'x' should be a Tensor with dtype"):
        ops.Square()(Tensor(np.array([True])))


# -- reductions ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,keep,out", [
    (1, False, [2, 4]), (-1, False, [2, 3]), ((0, 2), False, [3]), ((), False, []),
    ([2, 0], True, [1, 3, 1]), ((), True, [1, 1, 1]), ((-3, 1, 2), False, []),
])
@pytest.mark.parametrize("prim_cls", [ops.ReduceSum, ops.ReduceMean])
def test_reduce_infer(prim_cls, axis, keep, out):
    prim = prim_cls(keep_dims=keep)
    assert prim.infer_shape([2, 3, 4], axis) == out
    assert prim.attrs == {"keep_dims": keep} and rule_of("sharding", prim) is math_ops.reduce_spec


def test_reduce_infer_errors():
    with pytest.raises(ValueError, match=r"For 'ReduceSum', the 'axis' should be in \[-3, 3\), "
                                         r"but got 3"):
        ops.ReduceSum().infer_shape([2, 3, 4], (0, 3))
    with pytest.raises(ValueError, match=r"For 'ReduceMean', the 'axis' should not repeat an "
                                         r"axis, but got \(1, -2\) for a rank-3 input"):
        ops.ReduceMean().infer_shape([2, 3, 4], (1, -2))
    with pytest.raises(TypeError, match=r"For 'ReduceSum', the type of 'axis' should be one of "
                                        r"\[int, tuple, list\], but got float"):
        ops.ReduceSum().infer_shape([2, 3], 1.0)
    with pytest.raises(TypeError, match=r"For 'ReduceMean', the 'x' should be a Tensor with "
                                        r"dtype in \[Float16, .*\], but got Int32"):
        ops.ReduceMean().infer_dtype(ms.int32)
    with pytest.raises(TypeError, match=r"the type of 'keep_dims' should be bool"):
        ops.ReduceSum(keep_dims=0)


@pytest.mark.parametrize("dtype", [F16, ml_dtypes.bfloat16, F32, F64, np.int32, np.uint8])
@pytest.mark.parametrize("axis", [0, (1, 2), (), -1])
@pytest.mark.parametrize("keep", [False, True])
def test_reduce_sum_kernel(dtype, axis, keep):
    x = rand((2, 3, 4), dtype)
    out = ops.ReduceSum(keep)(Tensor(x), axis).asnumpy()
    np_axis = None if axis == () else axis
    ref = np.sum(x.astype(F64), axis=np_axis, keepdims=keep)
    assert out.dtype == np.dtype(dtype) and out.shape == np.shape(ref)
    np.testing.assert_allclose(out.astype(F64), ref, rtol=tol(dtype))


@pytest.mark.parametrize("dtype", [F16, F32, F64, np.complex64])
@pytest.mark.parametrize("axis", [1, (0, 2), ()])
def test_reduce_mean_kernel(dtype, axis):
    x = rand((2, 3, 4), dtype)
    out = ops.ReduceMean(True)(Tensor(x), axis).asnumpy()
    ref = np.mean(x.astype(F64) if dtype != np.complex64 else x,
                  axis=None if axis == () else axis, keepdims=True)
    assert out.dtype == np.dtype(dtype) and out.shape == ref.shape
    np.testing.assert_allclose(out, ref.astype(dtype), rtol=tol(dtype), atol=tol(dtype))


def test_reduce_defaults_to_all_axes_and_float16_accumulates_in_float32():
    x = np.full(20000, 0.1, F16)
    total = ops.ReduceSum()(Tensor(x))
    assert total.shape == () and total.dtype == ms.float16
    # float16 accumulation would stall near 256; a float32 accumulator rounds once
    assert total.asnumpy() == F16(np.sum(x.astype(F32)))
    assert ops.ReduceMean()(Tensor(x)).asnumpy() == F16(np.mean(x.astype(F32)))
    s = ops.ReduceSum()(Tensor(np.array(3.5, F32)), ())
    assert s.shape == () and s.asnumpy() == 3.5


# -- AddN, Cast ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F16, F32, F64, np.int16, np.bool_])
def test_addn_kernel(dtype):
    xs = [rand((2, 3), dtype) for _ in range(3)]
    out = ops.AddN()(tuple(Tensor(x) for x in xs)).asnumpy()
    ref = (xs[0] | xs[1] | xs[2]) if dtype == np.bool_ else sum(x.astype(F64) for x in xs)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.astype(F64), np.asarray(ref, F64), rtol=tol(dtype))
    single = ops.AddN()([Tensor(xs[0])]).asnumpy()
    np.testing.assert_array_equal(single, xs[0])
    assert single is not xs[0]


def test_addn_infer_and_errors():
    addn = ops.AddN()
    assert addn.infer_shape([[2, 3], [2, 3]]) == [2, 3]
    assert addn.infer_dtype([ms.int32, ms.int32]) == ms.int32
    with pytest.raises(ValueError, match=r"For 'AddN', the shape of 'x\[1\]' should be == the "
                                         r"shape of 'x\[0\]': \[2, 3\], but got \[3, 2\]"):
        addn.infer_shape([[2, 3], [3, 2]])
    with pytest.raises(TypeError, match=r"For 'AddN', the 'x\[2\]' should have the same dtype as "
                                        r"'x\[0\]': Float32, but got Float64"):
        addn.infer_dtype([ms.float32, ms.float32, ms.float64])
    with pytest.raises(TypeError, match=r"For 'AddN', the 'x' should be a non-empty tuple or "
                                        r"list of Tensors, but got \[2, 3\]"):
        addn(Tensor(np.ones((2, 3), F32)))


@pytest.mark.parametrize("src", [F16, F32, F64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("dst", [ms.float16, ms.bfloat16, ms.float32, ms.int64, ms.int8, ms.bool_])
def test_cast_kernel(src, dst):
    x = rand((3, 4), src)
    out = ops.Cast()(Tensor(x), dst)
    assert out.dtype == dst and out.shape == (3, 4)
    np.testing.assert_array_equal(out.asnumpy(), x.astype(dst.np_dtype))


def test_cast_complex_keeps_real_part_and_errors():
    x = np.array([1.5 + 2j, -3 - 1j], np.complex64)
    np.testing.assert_array_equal(ops.Cast()(Tensor(x), ms.float32).asnumpy(), [1.5, -3.0])
    cast = ops.Cast()
    assert cast.infer_shape([2, 5], ms.int32) == [2, 5]
    assert cast.infer_dtype(ms.float32, ms.float16) == ms.float16
    with pytest.raises(TypeError, match=r"For 'Cast', the type of 'dtype' should be Type, "
                                        r"but got type"):
        cast.infer_dtype(ms.float32, np.float16)
    with pytest.raises(TypeError, match=r"For 'Cast', the 'dtype' should be one of \[Bool, .*\], "
                                        r"but got String"):
        cast(Tensor(x), ms.string)


class TestExpLogReduceMax:
    def test_exp_log_against_numpy(self):
        x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
        np.testing.assert_allclose(ops.Exp()(Tensor(x)).asnumpy(), np.exp(x), rtol=1e-6)
        np.testing.assert_allclose(ops.Log()(Tensor(np.exp(x))).asnumpy(), x, atol=1e-6)
        np.testing.assert_allclose(ops.Sqrt()(Tensor(np.exp(x))).asnumpy(), np.exp(x / 2), rtol=1e-6)

    def test_exp_rejects_ints(self):
        with pytest.raises(TypeError, match=r"For 'Exp', the 'x' should be a Tensor with dtype"):
            ops.Exp()(Tensor(np.arange(3, dtype=np.int32)))

    @pytest.mark.parametrize("dtype", [np.int32, np.float16, np.float64])
    def test_reduce_max_against_numpy(self, dtype):
        x = (np.arange(24) * 7 % 11).astype(dtype).reshape(2, 3, 4)
        out = ops.ReduceMax()(Tensor(x), (0, 2)).asnumpy()
        np.testing.assert_array_equal(out, x.max(axis=(0, 2)))
        assert out.dtype == x.dtype
        kept = ops.ReduceMax(keep_dims=True)(Tensor(x), -1).asnumpy()
        np.testing.assert_array_equal(kept, x.max(axis=-1, keepdims=True))

    def test_reduce_max_rejects_complex(self):
        with pytest.raises(TypeError, match=r"For 'ReduceMax'"):
            ops.ReduceMax()(Tensor(np.ones(3, np.complex64)), 0)
