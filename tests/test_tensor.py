"""Tensor and Parameter as API.md describes them: construction, defaults, shape, dtype, storage."""
import ml_dtypes
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor


def test_from_numpy_array_keeps_dtype_and_values():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    t = Tensor(a)
    assert t.shape == (2, 3) and isinstance(t.shape, tuple)
    assert t.dtype == ms.int16
    assert t.ndim == 2 and t.size == 6 and t.nbytes == 12 and len(t) == 2
    np.testing.assert_array_equal(t.asnumpy(), a)
    assert Tensor(np.ones(3, np.float64)).dtype == ms.float64   # numpy arrays keep float64


@pytest.mark.parametrize("data,dtype,expected,np_dtype", [
    ([1.5, 2.5], None, ms.float32, np.float32),           # Python floats -> float32
    ([[1, 2], [3, 4]], None, ms.int64, np.int64),         # Python ints -> int64
    ([True, False], None, ms.bool_, np.bool_),
    (3.0, None, ms.float32, np.float32),
    (7, None, ms.int64, np.int64),
    ([1j, 2], None, ms.complex128, np.complex128),
    ([1, 2], ms.float16, ms.float16, np.float16),
    ([1.25, 2], ms.bfloat16, ms.bfloat16, ml_dtypes.bfloat16),
    (np.arange(4), ms.uint8, ms.uint8, np.uint8),
    ([0, 1], ms.bool_, ms.bool_, np.bool_),
    (np.int8(3), None, ms.int8, np.int8),                 # numpy scalars keep their dtype
    (np.float64(0.1), None, ms.float64, np.float64),
    (np.uint16(9), None, ms.uint16, np.uint16),
])
def test_from_python_values_and_dtype(data, dtype, expected, np_dtype):
    t = Tensor(data, dtype)
    ref = np.asarray(data).astype(np_dtype)
    assert t.dtype == expected
    assert t.asnumpy().dtype == np.dtype(np_dtype)
    assert t.shape == ref.shape
    np.testing.assert_array_equal(t.asnumpy(), ref)


def test_scalar_tensor_is_zero_dimensional():
    assert Tensor(1.0).shape == ()
    assert Tensor(np.float64(2.0)).shape == ()
    assert Tensor(np.asarray(3, np.int8)).shape == ()
    assert Tensor(5, ms.int32).item() == 5


def test_shape_and_dtype_make_zeros():
    t = Tensor(shape=(2, 3), dtype=ms.float16)
    assert t.dtype == ms.float16
    np.testing.assert_array_equal(t.asnumpy(), np.zeros((2, 3), np.float16))
    with pytest.raises(ValueError, match="needs 'input_data', or both 'shape' and 'dtype'"):
        Tensor(shape=(2,))


def test_storage_is_c_contiguous_and_native():
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = Tensor(strided)
    assert t.asnumpy().flags.c_contiguous
    np.testing.assert_array_equal(t.asnumpy(), strided)
    big_endian = np.array([1.5, -2.0], dtype=">f4")
    t = Tensor(big_endian)
    assert t.dtype == ms.float32 and t.asnumpy().dtype.isnative
    np.testing.assert_array_equal(t.asnumpy(), [1.5, -2.0])


def test_ints_beyond_int64_are_not_wrapped():
    t = Tensor([2 ** 63])
    assert t.dtype == ms.uint64
    assert int(t.asnumpy()[0]) == 2 ** 63


def test_wrap_shares_storage_and_copy_does_not():
    a = np.arange(4, dtype=np.float32)
    w = Tensor._wrap(a)
    assert w.asnumpy() is a
    c = w.copy()
    c.asnumpy()[0] = 9
    assert a[0] == 0 and c.asnumpy()[0] == 9
    assert Tensor._wrap(np.asarray(2.0, np.float32)).shape == ()


def test_astype_and_tensor_of_tensor():
    t = Tensor([1.7, -2.2])
    i = t.astype(ms.int32)
    assert i.dtype == ms.int32
    np.testing.assert_array_equal(i.asnumpy(), np.array([1.7, -2.2], np.float32).astype(np.int32))
    again = Tensor(t, ms.float64)
    assert again.dtype == ms.float64
    np.testing.assert_allclose(again.asnumpy(), np.array([1.7, -2.2], np.float32))
    np.testing.assert_array_equal(np.asarray(t), t.asnumpy())


def test_repr_and_str():
    t = Tensor(np.zeros((1, 2), np.float32))
    assert repr(t).startswith("Tensor(shape=[1, 2], dtype=Float32, value=")
    assert str(t) == str(np.zeros((1, 2), np.float32))


def test_unsupported_input_is_type_error():
    with pytest.raises(TypeError, match="^For 'Tensor', the 'input_data' should be numbers or bools .* dtype object"):
        Tensor([object()])


def test_parameter_name_requires_grad_and_value():
    w = Parameter(Tensor(np.ones((2, 3), np.float32)), name="w")
    assert isinstance(w, Tensor)
    assert w.name == "w" and w.requires_grad is True
    assert w.shape == (2, 3) and w.dtype == ms.float32
    np.testing.assert_array_equal(w.asnumpy(), np.ones((2, 3), np.float32))
    frozen = Parameter(Tensor([1, 2]), name="b", requires_grad=False)
    assert frozen.requires_grad is False and frozen.dtype == ms.int64
    assert repr(w) == "Parameter(name=w, shape=[2, 3], dtype=Float32, requires_grad=True)"


def test_parameter_set_data_keeps_dtype():
    w = Parameter(Tensor(np.zeros(3, np.float16)), name="w")
    assert w.set_data(np.array([1.0, 2.0, 3.0])) is w
    assert w.dtype == ms.float16
    np.testing.assert_array_equal(w.asnumpy(), np.array([1, 2, 3], np.float16))
    w.set_data(Tensor([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(w.asnumpy(), np.array([4, 5, 6], np.float16))


def test_tensor_function_and_init_argument():
    """MindSpore 2.x's `ms.tensor(...)` and `Tensor(init=..., shape=..., dtype=...)`."""
    t = ms.tensor([[1, 2], [3, 4]], ms.float32)
    np.testing.assert_array_equal(t.asnumpy(), np.array([[1, 2], [3, 4]], np.float32))
    assert t.dtype == ms.float32
    ones = ms.Tensor(shape=(2, 3), dtype=ms.float16, init="ones")
    np.testing.assert_array_equal(ones.asnumpy(), np.ones((2, 3), np.float16))
    from msops.common.initializer import Constant
    filled = ms.tensor(shape=(3,), dtype=ms.int32, init=Constant(7), const_arg=True,
                       device="CPU")
    np.testing.assert_array_equal(filled.asnumpy(), np.full(3, 7, np.int32))
    with pytest.raises(ValueError, match="For 'Tensor', 'init' needs 'shape'"):
        ms.Tensor(np.ones(2), init="ones")
    with pytest.raises(TypeError, match="'device' should be a str or None, but got int"):
        ms.Tensor([1.0], device=0)


def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ms.from_numpy(a)
    a[0, 0] = 9.0
    assert t.asnumpy()[0, 0] == 9.0 and t.shape == (2, 3) and t.dtype == ms.float32
    with pytest.raises(TypeError, match="should be C-contiguous"):
        ms.from_numpy(a.T)
    with pytest.raises(TypeError, match="'array' dtype >f4 cannot be shared"):
        ms.from_numpy(np.ones(2, ">f4"))
    with pytest.raises(TypeError, match="should be a numpy.ndarray, but got list"):
        ms.from_numpy([1.0])
