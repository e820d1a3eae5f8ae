"""Communication primitives: MindSpore's collectives, moving data with mpi4py buffer calls.

Every op resolves its group at construction (`rank`, `rank_size`, `group` attrs),
infers shapes and dtypes without communicating, and runs one MPI buffer call on
contiguous numpy arrays with an output allocated to the inferred size. Data moves
as an MPI type of the element's width, so every numeric dtype (bool, complex,
bfloat16 …) moves unchanged; reductions run in `Type.reduce_np_dtype` (float16 and
bfloat16 accumulate in float32 and are rounded once).
"""
from __future__ import annotations


import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.validator import Rel
from msops.communication import GlobalComm, get_group
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register

__all__ = ["ReduceOp", "AllGather", "AllReduce"]

#: dtypes every data-moving collective accepts (all but string)
target_dtypes = mstype.all_types


class ReduceOp:
    """Reduction operators of the reducing collectives."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"
    LAND = "land"
    LOR = "lor"
    LXOR = "lxor"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_ALL_OPS = (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD, ReduceOp.LAND,
            ReduceOp.LOR, ReduceOp.LXOR, ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)
_OPS_BY_KIND = {
    "int": _ALL_OPS, "uint": _ALL_OPS,
    "float": (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD),
    "complex": (ReduceOp.SUM, ReduceOp.PROD),
    "bool": (ReduceOp.LAND, ReduceOp.LOR, ReduceOp.LXOR),
}


def _mpi_op(op: str):
    from mpi4py import MPI
    return getattr(MPI, op.upper())


def check_reduce_dtype(op: str, x_dtype: mstype.Type, prim_name: str) -> mstype.Type:
    """TypeError unless reduction `op` is defined on `x_dtype` (e.g. no max on complex)."""
    validator.check_tensor_dtype_valid("x", x_dtype, target_dtypes, prim_name)
    if op not in _OPS_BY_KIND[x_dtype.kind]:
        raise TypeError(f"For '{prim_name}', the reduce op '{op}' should be one of "
                        f"{list(_OPS_BY_KIND[x_dtype.kind])} for a Tensor of {x_dtype}, "
                        f"but got '{op}'.")
    return x_dtype


class _Collective(PrimitiveWithInfer):
    """Shared set-up of the collectives: resolve `group`, record `rank` and `rank_size`."""

    is_communication = True

    def _init_group(self, group: str) -> None:
        validator.check_value_type("group", group, str, self.name)
        g = get_group(group, self.name)
        self._group = g
        self.add_prim_attr("group", g.name)
        self.add_prim_attr("rank_size", g.size)
        if g.rank is not None:
            self.add_prim_attr("rank", g.rank)
            validator.check("rank", g.rank, "rank_size", g.size, Rel.LT, self.name)

    def _init_reduce_op(self, op: str) -> None:
        validator.check_value_type("op", op, str, self.name)
        validator.check_string("op", op, _ALL_OPS, self.name)

    def _check_rank(self, arg: str, value: int) -> int:
        validator.check_int(arg, value, self.name)
        validator.check_int_range(value, 0, self.rank_size, Rel.INC_LEFT, arg, self.name)
        return value

    def _comm(self):
        return self._group.comm(self.name)

    def _mpi_failed(self, err: Exception) -> RuntimeError:
        """An MPI error as a RuntimeError naming the op and group (never raw MPI)."""
        text = err.Get_error_string() if hasattr(err, "Get_error_string") else str(err)
        return RuntimeError(f"For '{self.name}', MPI failed in group '{self.group}' "
                            f"({self.rank_size} ranks): {text.splitlines()[0]}. Do the "
                            f"inputs have the same shape and dtype on every rank?")


def _gather_shape(prim: _Collective, x_shape: list) -> list:
    """(x1, ...) -> (rank_size*x1, ...); -1 (dynamic) stays -1; 0-d is an error."""
    if len(x_shape) == 0:
        raise ValueError(f"For '{prim.name}', the 'x shape' should have rank >= 1, "
                         f"but got a 0-d shape {x_shape}.")
    out = list(x_shape)
    if out[0] >= 0:
        out[0] = out[0] * prim.rank_size
    return out


def _allgather(prim: _Collective, x: np.ndarray) -> np.ndarray:
    out = np.empty((x.shape[0] * prim.rank_size,) + x.shape[1:], x.dtype)
    t = mstype.mpi_move_type(x.dtype)
    try:
        prim._comm().Allgather([x, t], [out, t])
    except Exception as err:
        _reraise(prim, err)
    return out


def _reraise(prim: _Collective, err: Exception) -> None:
    from mpi4py import MPI
    if isinstance(err, MPI.Exception):
        raise prim._mpi_failed(err) from None
    raise err


class AllGather(_Collective):
    """Gather tensors from every rank of `group`, concatenated along dim 0 in group-rank order.

    Inputs: x of shape (x1, x2, ..., xR), the same on every rank.
    Outputs: shape (N*x1, x2, ..., xR) for a group of N ranks.

    >>> ag = AllGather()                        # 2 ranks
    >>> ag(Tensor(np.ones([2, 8], np.float32))).shape
    (4, 8)
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self.add_prim_attr("fusion", 0)
        self.add_prim_attr("mean_flag", False)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        return _gather_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return validator.check_tensor_dtype_valid("x", x_dtype, target_dtypes, self.name)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return _allgather(self, x)


def _reduce_in(x: np.ndarray) -> np.ndarray:
    """x in the dtype it is reduced in (float16/bfloat16 -> float32)."""
    red = mstype.from_numpy(x.dtype).reduce_np_dtype
    return x if red == x.dtype else x.astype(red)


class AllReduce(_Collective):
    """Reduce x with `op` over every rank of `group`; every rank gets the result.

    Inputs: x of any shape, the same on every rank. Outputs: same shape and dtype.
    """

    @prim_attr_register
    def __init__(self, op: str = ReduceOp.SUM, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self.add_prim_attr("fusion", 0)
        self.add_prim_attr("index", 0)
        self.add_prim_attr("no_eliminate", True)
        self._mpi_op = None

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        src = _reduce_in(x)
        out = np.empty_like(src)
        t = mstype.mpi_reduce_type(src.dtype)
        if self._mpi_op is None:
            self._mpi_op = _mpi_op(self.op)
        try:
            self._comm().Allreduce([src, t], [out, t], self._mpi_op)
        except Exception as err:
            _reraise(self, err)
        return out if out.dtype == x.dtype else out.astype(x.dtype)


