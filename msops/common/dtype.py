"""msops data types: MindSpore names mapped to numpy (bfloat16 via ml_dtypes) and MPI.

A `Type` is a small immutable value. Data movement needs only the element size,
so every numeric type moves as an MPI type of its own width; reductions need
arithmetic, so each type also names the numpy type it is reduced in (float16 and
bfloat16 accumulate in float32 and round once at the end).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import ml_dtypes
import numpy as np

__all__ = [
    "Type", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "string", "int_type", "uint_type", "float_type", "complex_type", "number_type",
    "all_types", "dtype_to_nptype", "pytype_to_dtype", "get_py_obj_dtype", "from_numpy",
    "mpi_move_type", "mpi_reduce_type",
]


@dataclass(frozen=True, eq=False)
class Type:
    """A MindSpore dtype: `name` as printed (`Float32`), its numpy dtype and family."""

    name: str
    np_dtype: np.dtype | None
    kind: str                      # "bool", "int", "uint", "float", "complex", "string"
    reduce_np_dtype: np.dtype | None = field(default=None, repr=False)

    @property
    def itemsize(self) -> int:
        return self.np_dtype.itemsize

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Type) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):          # pickles by name, so a Type is a singleton
        return (_by_name, (self.name,))


def _t(name: str, np_type, kind: str, reduce_in=None) -> Type:
    np_dt = np.dtype(np_type) if np_type is not None else None
    red = np.dtype(reduce_in) if reduce_in is not None else np_dt
    return Type(name, np_dt, kind, red)


bool_ = _t("Bool", np.bool_, "bool")
int8 = _t("Int8", np.int8, "int")
int16 = _t("Int16", np.int16, "int")
int32 = _t("Int32", np.int32, "int")
int64 = _t("Int64", np.int64, "int")
uint8 = _t("UInt8", np.uint8, "uint")
uint16 = _t("UInt16", np.uint16, "uint")
uint32 = _t("UInt32", np.uint32, "uint")
uint64 = _t("UInt64", np.uint64, "uint")
float16 = _t("Float16", np.float16, "float", np.float32)
bfloat16 = _t("BFloat16", ml_dtypes.bfloat16, "float", np.float32)
float32 = _t("Float32", np.float32, "float")
float64 = _t("Float64", np.float64, "float")
complex64 = _t("Complex64", np.complex64, "complex")
complex128 = _t("Complex128", np.complex128, "complex")
string = _t("String", None, "string")

int_type = (int8, int16, int32, int64)
uint_type = (uint8, uint16, uint32, uint64)
float_type = (float16, bfloat16, float32, float64)
complex_type = (complex64, complex128)
number_type = int_type + uint_type + float_type + complex_type
all_types = (bool_,) + number_type

_BY_NAME = {t.name: t for t in all_types + (string,)}
_BY_NP = {t.np_dtype: t for t in all_types}


def _by_name(name: str) -> Type:
    return _BY_NAME[name]


def from_numpy(np_dtype) -> Type:
    """The msops Type of a numpy dtype (TypeError for dtypes msops does not carry)."""
    dt = np.dtype(np_dtype)
    if dt.kind in "US":
        return string
    try:
        return _BY_NP[dt]
    except KeyError:
        raise TypeError(f"msops has no dtype for numpy dtype '{dt}'.") from None


def dtype_to_nptype(dtype: Type) -> np.dtype:
    """The numpy dtype that stores `dtype`."""
    if not isinstance(dtype, Type) or dtype.np_dtype is None:
        raise TypeError(f"The dtype must be a numeric msops Type, but got {dtype!r}.")
    return dtype.np_dtype


def pytype_to_dtype(obj) -> Type:
    """msops Type for a Python type, numpy dtype or Type (MindSpore's conversion)."""
    if isinstance(obj, Type):
        return obj
    if obj is bool:
        return bool_
    if obj is int:
        return int64
    if obj is float:
        return float32
    if obj is complex:
        return complex64
    if obj is str:
        return string
    return from_numpy(obj)


def get_py_obj_dtype(obj) -> Type:
    """The Type a Python scalar or array-like would have as a Tensor."""
    if hasattr(obj, "dtype") and isinstance(obj.dtype, Type):
        return obj.dtype
    return from_numpy(np.asarray(obj).dtype)


_MPI_MOVE: dict = {}
_MPI_REDUCE: dict = {}


def _numeric(np_dtype) -> Type:
    """The msops Type of `np_dtype`; TypeError for strings, which MPI does not carry."""
    t = from_numpy(np_dtype)
    if t.np_dtype is None:
        raise TypeError(f"msops does not move or reduce numpy dtype '{np.dtype(np_dtype)}' "
                        f"({t}) over MPI.")
    return t


def mpi_move_type(np_dtype: np.dtype):
    """The MPI datatype that moves elements of `np_dtype` (any type of the same width)."""
    t = _MPI_MOVE.get(np_dtype)
    if t is None:
        from mpi4py import MPI
        by_width = {1: MPI.UINT8_T, 2: MPI.UINT16_T, 4: MPI.UINT32_T, 8: MPI.UINT64_T,
                    16: MPI.C_DOUBLE_COMPLEX}
        t = _MPI_MOVE[np_dtype] = by_width[_numeric(np_dtype).itemsize]
    return t


def mpi_reduce_type(np_dtype: np.dtype):
    """The MPI datatype that reduces elements of `np_dtype`: that of its `reduce_np_dtype`
    (float16/bfloat16 -> MPI.FLOAT, so convert the buffer to float32 first)."""
    t = _MPI_REDUCE.get(np_dtype)
    if t is None:
        from mpi4py import MPI
        table = {np.dtype(np.bool_): MPI.C_BOOL, np.dtype(np.int8): MPI.INT8_T,
                 np.dtype(np.int16): MPI.INT16_T, np.dtype(np.int32): MPI.INT32_T,
                 np.dtype(np.int64): MPI.INT64_T, np.dtype(np.uint8): MPI.UINT8_T,
                 np.dtype(np.uint16): MPI.UINT16_T, np.dtype(np.uint32): MPI.UINT32_T,
                 np.dtype(np.uint64): MPI.UINT64_T, np.dtype(np.float32): MPI.FLOAT,
                 np.dtype(np.float64): MPI.DOUBLE, np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX,
                 np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX}
        t = _MPI_REDUCE[np_dtype] = table[_numeric(np_dtype).reduce_np_dtype]
    return t


# -- implicit promotion (Tensor operators) -----------------------------------------------------
_RANK = {"bool": 0, "uint": 1, "int": 1, "float": 2, "complex": 3}
_SCALAR_DEFAULT = {0: bool_, 1: int64, 2: float32, 3: complex64}


def _scalar_rank(value: Any) -> int | None:
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, (int, np.integer)):
        return 1
    if isinstance(value, (float, np.floating)):
        return 2
    if isinstance(value, (complex, np.complexfloating)):
        return 3
    return None


def _wider(a: Type, b: Type) -> Type:
    """The dtype holding both of one family: the wider; signed and unsigned ints of one
    width the next signed one; float16 and bfloat16 float32."""
    if a == b:
        return a
    if _RANK[a.kind] == 1:
        return from_numpy(np.result_type(a.np_dtype, b.np_dtype))
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a.itemsize >= b.itemsize else b


def promote_types(tensor_dtypes: Sequence[Type], scalars: Sequence[Any] = ()) -> Type:
    """The dtype a Tensor operator computes in (MindSpore's implicit promotion, PyTorch's
    rule): among the Tensors, the highest family (bool < int < float < complex) and within
    it the widest; a Python scalar of a higher family than every Tensor gives that family's
    default dtype (int64, float32, complex64), else it takes the Tensors' dtype."""
    best = tensor_dtypes[0]
    for d in tensor_dtypes[1:]:
        if _RANK[d.kind] != _RANK[best.kind]:
            best = d if _RANK[d.kind] > _RANK[best.kind] else best
        else:
            best = _wider(best, d)
    ranks = [r for r in map(_scalar_rank, scalars) if r is not None]
    if ranks and max(ranks) > _RANK[best.kind]:
        return _SCALAR_DEFAULT[max(ranks)]
    return best
