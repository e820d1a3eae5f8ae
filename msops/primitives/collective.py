"""What every communication primitive shares: its group, reduce ops, shape rules, lowering.

Every collective resolves its group at construction (`rank`, `rank_size`, `group` attrs),
infers shapes and dtypes without communicating, and names ranks (`root_rank`,
`dest_rank`, …) within its group.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.validator import Rel
from msops.communication import get_group
from msops.primitives import desync
from msops.primitives.desync import eager_kernel
from msops.primitives.mpi import buffer_kernel, mpi_detail, mpi_op
from msops.primitives.primitive import PrimitiveWithInfer
from msops.primitives.rules import declare_without

__all__ = ["ReduceOp", "Collective", "check_reduce_dtype", "target_dtypes", "gather_shape",
           "scatter_shape", "tensor_dtype", "lower_call", "counts_value", "packed_displs",
           "no_backward"]

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


def check_reduce_dtype(op: str, x_dtype: mstype.Type, prim_name: str) -> mstype.Type:
    """TypeError unless reduction `op` is defined on `x_dtype` (e.g. no max on complex)."""
    validator.check_tensor_dtype_valid("x", x_dtype, target_dtypes, prim_name)
    if op not in _OPS_BY_KIND[x_dtype.kind]:
        raise TypeError(f"For '{prim_name}', the reduce op '{op}' should be one of "
                        f"{list(_OPS_BY_KIND[x_dtype.kind])} for a Tensor of {x_dtype}, "
                        f"but got '{op}'.")
    return x_dtype


class Collective(PrimitiveWithInfer):
    """Shared set-up of the collectives: resolve `group`, record `rank` and `rank_size`."""

    is_communication = True
    #: Send/Receive: a pair of ranks, not the group, takes part (the watchdog still times it)
    point_to_point = False
    #: whether every rank's inputs have the same shapes (False: AllToAllV's counts decide)
    same_shapes = True
    #: whether every rank passes the same constant inputs (AllGatherV's split sizes): the
    #: eager check then compares their values too (AllToAllV's counts differ by design)
    consts_agree = False

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
        """A group rank argument (root_rank, dest_rank, …): an int in [0, rank_size)."""
        validator.check_int(arg, value, self.name)
        validator.check_int_range(value, 0, self.rank_size, Rel.INC_LEFT, arg, self.name)
        return value

    def _my_rank(self) -> int:
        """This process's rank in the group (the group's ValueError for a non-member)."""
        if self._group.rank is None:
            self._group.comm(self.name)              # raises the group's "not a member"
        return self._group.rank

    def _comm(self):
        """The group's communicator (the group's error when simulated or not a member)."""
        comm = self._group._comm
        return comm if comm is not None else self._group.comm(self.name)

    def eager(self, kernel: Callable, in_abstracts: Any, out_abstract: Any) -> Callable:
        """Eager calls are checked across ranks and timed by the watchdog (desync.py)."""
        return eager_kernel(self, kernel, in_abstracts, self.point_to_point, self.same_shapes,
                            out_abstract)

    def _lowered(self, values: list) -> Callable:
        try:
            return super()._lowered(values)
        except (TypeError, ValueError) as err:
            self._refused(err, values)
            raise

    def _refused(self, err: Exception, values: list) -> None:
        """This rank's own arguments failed (`err`) before the call began, while the other
        ranks may be waiting in it: take part in what they wait in, so that every rank
        raises (desync.refuse: the check's error, this rank's side showing `err`)."""
        desync.refuse(self, err)

    def comm_bytes(self, in_bytes: int) -> int:
        """Bytes one rank sends in this collective for an input of `in_bytes` (ring and
        pairwise algorithms): the planner's cost, shown in dumps. Default: the input once."""
        return in_bytes

    def mpi_failed(self, err: Exception) -> RuntimeError:
        """An MPI error as a RuntimeError naming the op and group (never raw MPI)."""
        return RuntimeError(f"For '{self.name}', MPI failed in group '{self.group}' "
                            f"({self.rank_size} ranks): {mpi_detail(err)}. Do the "
                            f"inputs have the same shape and dtype on every rank?")


declare_without("sharding", Collective,
                reason="explicit communication ops cannot be used inside a parallel graph "
                       "(parallel_mode is set); the framework inserts the collectives that "
                       "layouts need")


def counts_value(prim: Collective, arg: str, value: Any) -> tuple[int, ...]:
    """A counts/displs/split-sizes input as rank_size non-negative ints (list, tuple or 1-D
    int Tensor)."""
    if hasattr(value, "asnumpy"):
        value = value.asnumpy()
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            raise TypeError(f"For '{prim.name}', the '{arg}' should be a 1-D int Tensor, "
                            f"list or tuple, but got an array of shape {list(value.shape)} "
                            f"and dtype {value.dtype}.")
        value = value.tolist()
    validator.check_value_type(arg, value, (list, tuple), prim.name)
    for v in value:
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"For '{prim.name}', every element of '{arg}' should be an int, "
                            f"but got {type(v).__name__} in {list(value)}.")
    if len(value) != prim.rank_size:
        raise ValueError(f"For '{prim.name}', the length of '{arg}' should be == rank_size: "
                         f"{prim.rank_size}, but got {len(value)} ({list(value)}).")
    if any(v < 0 for v in value):
        raise ValueError(f"For '{prim.name}', every element of '{arg}' should be >= 0, "
                         f"but got {list(value)}.")
    return tuple(int(v) for v in value)


def packed_displs(counts: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Displacements that lay the blocks of `counts` end to end in rank order."""
    return tuple(itertools.accumulate(counts[:-1], initial=0))


def no_backward(prim: Collective, why: str) -> NotImplementedError:
    """The error of a backward rule that cannot handle this configuration of its op."""
    return NotImplementedError(f"For '{prim.name}', there is no backward rule {why}.")


# -- shape rules ----------------------------------------------------------------------------

def _check_rank_ge1(prim: Collective, x_shape: list) -> None:
    if len(x_shape) == 0:
        raise ValueError(f"For '{prim.name}', the 'x shape' should have rank >= 1, "
                         f"but got a 0-d shape {x_shape}.")


def gather_shape(prim: Collective, x_shape: list) -> list:
    """(x1, ...) -> (rank_size*x1, ...); -1 (dynamic) stays -1; 0-d is an error."""
    _check_rank_ge1(prim, x_shape)
    out = list(x_shape)
    if out[0] >= 0:
        out[0] = out[0] * prim.rank_size
    return out


def scatter_shape(prim: Collective, x_shape: list) -> list:
    """(x1, ...) -> (x1/rank_size, ...): x1 must divide by rank_size; -1 stays -1."""
    _check_rank_ge1(prim, x_shape)
    out = list(x_shape)
    if out[0] >= 0:
        if out[0] % prim.rank_size:
            raise ValueError(f"For '{prim.name}', the 'x shape[0]' should be divisible by "
                             f"rank_size: {prim.rank_size}, but got {out[0]} (x shape "
                             f"{list(x_shape)}).")
        out[0] //= prim.rank_size
    return out


def tensor_dtype(prim: Collective, x_dtype: mstype.Type, arg: str = "x") -> mstype.Type:
    return validator.check_tensor_dtype_valid(arg, x_dtype, target_dtypes, prim.name)


# -- lowering -------------------------------------------------------------------------------

def lower_call(prim: Collective, method: str, x: Any, out: Any,
               op: str | None = None) -> Callable:
    """One signature's kernel: one buffer call `comm.<method>([x, t], [out, t])` into an
    output of the inferred shape (`op` given: a reduction in x's own dtype).

    prim.kernel where that does more: no communicator (a simulated world, a non-member:
    the call raises the group's error), a dynamic dim, or float16/bfloat16 reductions.
    """
    comm = prim._group._comm
    dtype = getattr(x.dtype, "np_dtype", None)
    if comm is None or dtype is None or any(d < 0 for d in out.shape) or \
            (op is not None and x.dtype.reduce_np_dtype != dtype):
        return prim.kernel
    if op is None:
        t, extra = mstype.mpi_move_type(dtype), ()
    else:
        t, extra = mstype.mpi_reduce_type(dtype), (mpi_op(op),)
    return buffer_kernel(prim, getattr(comm, method), t, extra, out.shape, dtype)
