"""msops dtypes: numpy/ml_dtypes mapping, Python defaults, MPI move/reduce types, names."""
import pickle

import ml_dtypes
import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops.common import dtype as mstype

# (msops type, numpy dtype, printed name, family)
TABLE = [
    (ms.bool_, np.bool_, "Bool", "bool"),
    (ms.int8, np.int8, "Int8", "int"),
    (ms.int16, np.int16, "Int16", "int"),
    (ms.int32, np.int32, "Int32", "int"),
    (ms.int64, np.int64, "Int64", "int"),
    (ms.uint8, np.uint8, "UInt8", "uint"),
    (ms.uint16, np.uint16, "UInt16", "uint"),
    (ms.uint32, np.uint32, "UInt32", "uint"),
    (ms.uint64, np.uint64, "UInt64", "uint"),
    (ms.float16, np.float16, "Float16", "float"),
    (ms.bfloat16, ml_dtypes.bfloat16, "BFloat16", "float"),
    (ms.float32, np.float32, "Float32", "float"),
    (ms.float64, np.float64, "Float64", "float"),
    (ms.complex64, np.complex64, "Complex64", "complex"),
    (ms.complex128, np.complex128, "Complex128", "complex"),
]
IDS = [row[2] for row in TABLE]


@pytest.mark.parametrize("t,np_t,name,kind", TABLE, ids=IDS)
def test_type_maps_to_numpy(t, np_t, name, kind):
    assert ms.dtype_to_nptype(t) == np.dtype(np_t)
    assert t.itemsize == np.dtype(np_t).itemsize
    assert t.kind == kind
    assert repr(t) == str(t) == name


@pytest.mark.parametrize("t,np_t,name,kind", TABLE, ids=IDS)
def test_from_numpy_round_trips(t, np_t, name, kind):
    assert mstype.from_numpy(np_t) is t
    assert mstype.from_numpy(np.dtype(np_t)) is t
    assert mstype.from_numpy(ms.dtype_to_nptype(t)) is t
    assert mstype.get_py_obj_dtype(np.zeros(2, np_t)) is t


def test_families_partition_all_types():
    assert set(mstype.all_types) == {row[0] for row in TABLE}
    assert len(mstype.all_types) == 15
    assert mstype.number_type == (mstype.int_type + mstype.uint_type + mstype.float_type
                                  + mstype.complex_type)
    assert ms.bool_ not in mstype.number_type
    assert mstype.float_type == (ms.float16, ms.bfloat16, ms.float32, ms.float64)


def test_string_type():
    assert repr(ms.string) == "String"
    assert ms.string not in mstype.all_types
    assert mstype.from_numpy(np.dtype("U5")) is ms.string
    assert mstype.from_numpy(np.dtype("S3")) is ms.string
    assert ms.pytype_to_dtype(str) is ms.string
    with pytest.raises(TypeError, match="The dtype must be a numeric msops Type, but got String"):
        ms.dtype_to_nptype(ms.string)


def test_unknown_numpy_dtype_is_type_error():
    with pytest.raises(TypeError, match="msops has no dtype for numpy dtype 'object'"):
        mstype.from_numpy(np.dtype(object))
    with pytest.raises(TypeError, match="msops has no dtype for numpy dtype 'datetime64"):
        mstype.from_numpy(np.dtype("datetime64[s]"))
    with pytest.raises(TypeError, match="The dtype must be a numeric msops Type, but got <class 'numpy.float32'>"):
        ms.dtype_to_nptype(np.float32)


def test_python_type_defaults():
    assert ms.pytype_to_dtype(bool) is ms.bool_
    assert ms.pytype_to_dtype(int) is ms.int64
    assert ms.pytype_to_dtype(float) is ms.float32
    assert ms.pytype_to_dtype(np.int16) is ms.int16
    assert ms.pytype_to_dtype(ms.uint8) is ms.uint8
    assert mstype.get_py_obj_dtype(ms.Tensor([1, 2], ms.float16)) is ms.float16
    assert mstype.get_py_obj_dtype(np.float64(1.0)) is ms.float64


def test_types_compare_hash_and_pickle_by_name():
    assert ms.float32 == mstype.Type("Float32", np.dtype(np.float32), "float")
    assert ms.float32 != ms.float64 and ms.float32 != np.float32
    assert {ms.int8: 1}[mstype.from_numpy(np.int8)] == 1
    for t, *_ in TABLE:
        assert pickle.loads(pickle.dumps(t)) is t


def test_reduce_dtype_widens_only_half_floats():
    for t, np_t, *_ in TABLE:
        expected = np.float32 if t in (ms.float16, ms.bfloat16) else np_t
        assert t.reduce_np_dtype == np.dtype(expected), t


@pytest.mark.parametrize("t,np_t,name,kind", TABLE, ids=IDS)
def test_mpi_move_type_has_the_element_width(t, np_t, name, kind):
    mpi_t = mstype.mpi_move_type(np.dtype(np_t))
    assert mpi_t.Get_size() == np.dtype(np_t).itemsize
    assert mstype.mpi_move_type(np_t) == mpi_t           # class or dtype: the same answer


@pytest.mark.parametrize("t,np_t,name,kind", TABLE, ids=IDS)
def test_mpi_reduce_type_has_the_reduce_width(t, np_t, name, kind):
    mpi_t = mstype.mpi_reduce_type(np.dtype(np_t))
    assert mpi_t.Get_size() == t.reduce_np_dtype.itemsize


def test_mpi_reduce_type_is_arithmetic():
    # reductions need the real MPI type, not just the width: sum of floats is not sum of ints
    assert mstype.mpi_reduce_type(np.dtype(np.float32)) == MPI.FLOAT
    assert mstype.mpi_reduce_type(np.dtype(np.float16)) == MPI.FLOAT
    assert mstype.mpi_reduce_type(np.dtype(ml_dtypes.bfloat16)) == MPI.FLOAT
    assert mstype.mpi_reduce_type(np.dtype(np.int32)) == MPI.INT32_T
    assert mstype.mpi_reduce_type(np.dtype(np.uint64)) == MPI.UINT64_T
    assert mstype.mpi_reduce_type(np.dtype(np.complex64)) == MPI.C_FLOAT_COMPLEX
    assert mstype.mpi_reduce_type(np.dtype(np.bool_)) == MPI.C_BOOL


def test_mpi_types_refuse_strings():
    for fn in (mstype.mpi_move_type, mstype.mpi_reduce_type):
        with pytest.raises(TypeError, match=r"does not move or reduce numpy dtype '<U3' \(String\)"):
            fn(np.dtype("U3"))
