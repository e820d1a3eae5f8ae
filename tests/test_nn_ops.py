"""NN primitives: ReLU, Softmax, SoftmaxCrossEntropyWithLogits, OneHot, BatchNorm vs numpy."""
import doctest

import ml_dtypes
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.primitives import nn_ops
from msops.primitives.math_ops import elementwise_spec
from msops.primitives.rules import rule_of

F16, F32, F64 = np.float16, np.float32, np.float64
RNG = np.random.default_rng(1)
FLOATS = [F16, ml_dtypes.bfloat16, F32, F64]


def tol(dtype):
    return {"float16": 2e-3, "bfloat16": 2e-2}.get(np.dtype(dtype).name, 1e-6)


def test_docstring_examples():
    res = doctest.testmod(nn_ops, extraglobs={"Tensor": Tensor, "np": np})
    assert res.attempted >= 3 and res.failed == 0


# -- ReLU -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [F16, ml_dtypes.bfloat16, F32, F64, np.int8, np.int32])
def test_relu(dtype):
    x = RNG.integers(-5, 5, (3, 4)).astype(dtype)
    out = ops.ReLU()(Tensor(x)).asnumpy()
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.astype(F64), np.where(x.astype(F64) > 0, x, 0))
    assert ops.ReLU().infer_shape([3, 4]) == [3, 4]
    assert rule_of("sharding", ops.ReLU) is elementwise_spec
    with pytest.raises(TypeError, match=r"For 'ReLU', the 'x' should be a Tensor with dtype in "
                                        r"\[.*\], but got UInt8"):
        ops.ReLU().infer_dtype(ms.uint8)


# -- Softmax ------------------------------------------------------------------------------
def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis", [-1, 0, (0, 2)])
def test_softmax(dtype, axis):
    x = (RNG.standard_normal((2, 3, 4)) * 4).astype(dtype)
    prim = ops.Softmax(axis)
    out = prim(Tensor(x)).asnumpy()
    assert out.dtype == np.dtype(dtype) and out.shape == x.shape
    np.testing.assert_allclose(out.astype(F64), softmax_ref(x.astype(F64), axis),
                               rtol=tol(dtype), atol=tol(dtype))
    assert prim.attrs["axis"] == axis and rule_of("sharding", prim) is nn_ops.softmax_spec


def test_softmax_is_stable_for_large_logits():
    out = ops.Softmax()(Tensor(np.array([[1000.0, 1000.0], [-1000.0, 0.0]], F32))).asnumpy()
    np.testing.assert_allclose(out, [[0.5, 0.5], [0.0, 1.0]])


def test_softmax_errors():
    with pytest.raises(ValueError, match=r"For 'Softmax', the 'axis' should be in \[-2, 2\), "
                                         r"but got 2"):
        ops.Softmax(2).infer_shape([3, 4])
    with pytest.raises(TypeError, match=r"For 'Softmax', the 'x' should be a Tensor with dtype "
                                        r"in \[Float16, BFloat16, Float32, Float64\], but got "
                                        r"Int32"):
        ops.Softmax().infer_dtype(ms.int32)
    with pytest.raises(TypeError, match=r"For 'Softmax', the type of 'axis' should be one of "
                                        r"\[int, tuple\], but got float"):
        ops.Softmax(1.0)
    with pytest.raises(ValueError, match=r"For 'Softmax', the 'axis' should be an int or a "
                                         r"non-empty tuple of ints, but got \(\)"):
        ops.Softmax(())
    with pytest.raises(ValueError, match=r"For 'Softmax', the rank of 'x' should be >= 1"):
        ops.Softmax().infer_shape([])


# -- SoftmaxCrossEntropyWithLogits -------------------------------------------------------------
def test_sce_matches_mindspore_doc_example():
    logits = Tensor(np.array([[2, 4, 1, 4, 5], [2, 1, 2, 4, 3]], F32))
    labels = Tensor(np.array([[0, 0, 0, 0, 1], [0, 0, 0, 1, 0]], F32))
    loss, dlogits = ops.SoftmaxCrossEntropyWithLogits()(logits, labels)
    np.testing.assert_allclose(loss.asnumpy(), [0.5899297, 0.52374405], rtol=1e-6)
    np.testing.assert_allclose(dlogits.asnumpy(),
                               [[0.02760027, 0.20393994, 0.01015357, 0.20393994, -0.44563377],
                                [0.08015892, 0.02948882, 0.08015892, -0.4077012, 0.21789455]],
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sce_vs_numpy(dtype):
    n, c = 6, 5
    logits = (RNG.standard_normal((n, c)) * 3).astype(dtype)
    labels = np.eye(c)[RNG.integers(0, c, n)].astype(dtype)
    loss, dlogits = ops.SoftmaxCrossEntropyWithLogits()(Tensor(logits), Tensor(labels))
    p = softmax_ref(logits.astype(F64), 1)
    ref_loss = -np.log(p[np.arange(n), labels.argmax(1)])
    assert loss.shape == (n,) and dlogits.shape == (n, c)
    assert loss.dtype == dlogits.dtype == ms.common.dtype.from_numpy(np.dtype(dtype))
    np.testing.assert_allclose(loss.asnumpy().astype(F64), ref_loss, rtol=tol(dtype),
                               atol=tol(dtype))
    np.testing.assert_allclose(dlogits.asnumpy().astype(F64), p - labels.astype(F64),
                               rtol=tol(dtype), atol=tol(dtype))


def test_sce_infer_and_errors():
    sce = ops.SoftmaxCrossEntropyWithLogits()
    assert sce.infer_shape([8, 10], [8, 10]) == ([8], [8, 10])
    assert sce.infer_dtype(ms.float16, ms.float16) == (ms.float16, ms.float16)
    assert rule_of("sharding", sce) is nn_ops.softmax_cross_entropy_spec
    with pytest.raises(ValueError, match=r"For 'SoftmaxCrossEntropyWithLogits', the 'labels "
                                         r"shape' should be == 'logits shape': \[8, 10\], but "
                                         r"got \[8, 9\]"):
        sce.infer_shape([8, 10], [8, 9])
    with pytest.raises(ValueError, match=r"the rank of 'logits' should be 2, but got shape "
                                         r"\[2, 8, 10\] of rank 3"):
        sce.infer_shape([2, 8, 10], [2, 8, 10])
    with pytest.raises(TypeError, match=r"the 'labels' should have the same dtype as 'logits': "
                                        r"Float32, but got Float16"):
        sce.infer_dtype(ms.float32, ms.float16)
    with pytest.raises(TypeError, match=r"the 'logits' should be a Tensor with dtype in"):
        sce(Tensor(np.ones((2, 3), np.int32)), Tensor(np.ones((2, 3), np.int32)))


# -- OneHot ------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_onehot_vs_numpy(axis):
    depth = 4
    idx = np.array([[0, 3, 1], [2, 5, -1]], np.int32)     # 5 and -1 are out of range
    out = ops.OneHot(axis)(Tensor(idx), depth, Tensor(np.array(7, np.int64)),
                           Tensor(np.array(-2, np.int64))).asnumpy()
    eye = np.vstack([np.eye(depth), np.zeros((1, depth))])     # the last row: all off
    ref = np.where(eye[np.where((idx >= 0) & (idx < depth), idx, depth)] == 1, 7, -2)
    ref = np.moveaxis(ref, -1, axis if axis != -1 else 2)
    assert out.dtype == np.int64 and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


def test_onehot_scalars_and_infer():
    out = ops.OneHot()(Tensor(np.array([1, 0], np.int64)), 2, 1.0, 0.0)
    assert out.dtype == ms.float32
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1], [1, 0]])
    oh = ops.OneHot(axis=1)
    assert oh.infer_shape([2, 3], 5, [], []) == [2, 5, 3]
    assert oh.infer_dtype(ms.int32, 5, ms.float16, ms.float16) == ms.float16
    assert rule_of("sharding", oh) is nn_ops.onehot_spec and oh.attrs == {"axis": 1}


def test_onehot_errors():
    oh = ops.OneHot()
    with pytest.raises(ValueError, match=r"For 'OneHot', the 'depth' should be a non-negative "
                                         r"int, but got -1"):
        oh.infer_shape([3], -1, [], [])
    with pytest.raises(ValueError, match=r"For 'OneHot', the 'axis' should be in \[-1, 1\], "
                                         r"but got 2"):
        ops.OneHot(2).infer_shape([3], 4, [], [])
    with pytest.raises(ValueError, match=r"For 'OneHot', the rank of 'on_value' should be 0, "
                                         r"but got shape \[1\]"):
        oh.infer_shape([3], 4, [1], [])
    with pytest.raises(TypeError, match=r"For 'OneHot', the 'indices' should be a Tensor with "
                                        r"dtype in \[Int8, .*\], but got Float32"):
        oh.infer_dtype(ms.float32, 4, ms.float32, ms.float32)
    with pytest.raises(TypeError, match=r"For 'OneHot', the 'off_value' should have the same "
                                        r"dtype as 'on_value': Float32, but got Int32"):
        oh(Tensor(np.array([1], np.int32)), 3, Tensor(np.array(1.0, F32)),
           Tensor(np.array(0, np.int32)))


# -- BatchNorm ------------------------------------------------------------------------------
def bn_reference(x, scale, bias, mean, var, training, eps, momentum, channel_axis):
    """float64 BatchNorm on x moved to (rows, C)."""
    rows = np.moveaxis(x.astype(F64), channel_axis, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    if training:
        use_mean = flat.sum(0) / flat.shape[0]
        use_var = ((flat - use_mean) ** 2).sum(0) / flat.shape[0]
        new_mean = mean * (1 - momentum) + use_mean * momentum
        new_var = var * (1 - momentum) + use_var * momentum
    else:
        use_mean, use_var, new_mean, new_var = mean, var, mean, var
    y = (rows - use_mean) / np.sqrt(use_var + eps) * scale + bias
    return np.moveaxis(y, -1, channel_axis), new_mean, new_var, use_mean, use_var


BN_CASES = [((8, 3), "NCHW", 1), ((4, 3, 2, 5), "NCHW", 1), ((4, 2, 5, 3), "NHWC", 3)]


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape,fmt,c_axis", BN_CASES)
@pytest.mark.parametrize("x_dtype,p_dtype", [(F32, F32), (F64, F64), (F16, F32), (F16, F16)])
def test_batchnorm_vs_numpy(training, shape, fmt, c_axis, x_dtype, p_dtype):
    c = shape[c_axis]
    x = (RNG.standard_normal(shape) * 2 + 1).astype(x_dtype)
    scale, bias = RNG.uniform(0.5, 2, c).astype(p_dtype), RNG.standard_normal(c).astype(p_dtype)
    mean, var = RNG.standard_normal(c).astype(p_dtype), RNG.uniform(0.5, 2, c).astype(p_dtype)
    inputs = [x, scale, bias, mean, var]
    saved = [a.copy() for a in inputs]
    bn = ops.BatchNorm(is_training=training, epsilon=1e-3, momentum=0.2, data_format=fmt)
    outs = bn(*(Tensor(a) for a in inputs))
    refs = bn_reference(x, scale.astype(F64), bias.astype(F64), mean.astype(F64),
                        var.astype(F64), training, 1e-3, 0.2, c_axis)
    assert len(outs) == 5 and outs[0].shape == shape and outs[0].dtype.np_dtype == x_dtype
    for out, ref in zip(outs, refs):
        assert out.shape == ref.shape
        rt = max(tol(x_dtype), tol(p_dtype)) * 2
        np.testing.assert_allclose(out.asnumpy().astype(F64), ref, rtol=rt, atol=rt)
    for o in outs[1:]:
        assert o.shape == (c,) and o.dtype.np_dtype == p_dtype
    for a, s in zip(inputs, saved):          # moving statistics are not updated in place
        np.testing.assert_array_equal(a, s)


def test_batchnorm_float16_uses_float32_statistics():
    # values near 300 with a small spread: float16 sums of squares would overflow/cancel
    x = (300 + RNG.standard_normal((256, 2))).astype(F16)
    ones, zeros = np.ones(2, F16), np.zeros(2, F16)
    inputs = [Tensor(a) for a in (x, ones, zeros, zeros, ones)]
    y, _, _, bmean, bvar = ops.BatchNorm(is_training=True)(*inputs)
    xf = x.astype(F64)
    np.testing.assert_allclose(bmean.asnumpy(), xf.mean(0), rtol=1e-3)
    np.testing.assert_allclose(bvar.asnumpy(), xf.var(0), rtol=2e-3)
    np.testing.assert_allclose(y.asnumpy().astype(F64), (xf - xf.mean(0)) / np.sqrt(xf.var(0)),
                               atol=2e-2)


def test_batchnorm_attrs_infer_and_errors():
    bn = ops.BatchNorm()
    assert bn.attrs == {"is_training": False, "epsilon": 1e-5, "momentum": 0.1,
                        "data_format": "NCHW"}
    assert rule_of("sharding", bn) is nn_ops.batchnorm_spec
    assert bn.infer_shape([4, 3, 2, 2], [3], [3], [3], [3]) == ([4, 3, 2, 2], [3], [3], [3], [3])
    assert bn.infer_dtype(ms.float16, *[ms.float32] * 4) == (ms.float16,) + (ms.float32,) * 4
    with pytest.raises(ValueError, match=r"For 'BatchNorm', the rank of 'x' should be 2 or 4, "
                                         r"but got shape \[4, 3, 2\] of rank 3"):
        bn.infer_shape([4, 3, 2], [3], [3], [3], [3])
    with pytest.raises(ValueError, match=r"For 'BatchNorm', the 'variance shape' should be == "
                                         r"\[C\] for the 3 channels of x shape \[4, 3\]: \[3\], "
                                         r"but got \[4\]"):
        bn.infer_shape([4, 3], [3], [3], [3], [4])
    with pytest.raises(TypeError, match=r"For 'BatchNorm', the 'mean' should have the same dtype "
                                        r"as 'scale': Float32, but got Float16"):
        bn.infer_dtype(ms.float32, ms.float32, ms.float32, ms.float16, ms.float32)
    with pytest.raises(TypeError, match=r"For 'BatchNorm', the 'x' should be a Tensor with dtype"):
        bn.infer_dtype(ms.int32, *[ms.float32] * 4)
    with pytest.raises(ValueError, match=r"the 'epsilon' should be in \(0, 1\], but got 2.0"):
        ops.BatchNorm(epsilon=2.0)
    with pytest.raises(ValueError, match=r"the 'momentum' should be in \[0, 1\], but got 1.5"):
        ops.BatchNorm(momentum=1.5)
    with pytest.raises(ValueError, match=r"the 'data_format' should be one of \['NCHW', "
                                         r"'NHWC'\], but got 'NCDHW'"):
        ops.BatchNorm(data_format="NCDHW")
    with pytest.raises(TypeError, match=r"the type of 'is_training' should be bool"):
        ops.BatchNorm(is_training=1)
