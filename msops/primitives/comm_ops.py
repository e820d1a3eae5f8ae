"""Communication primitives: MindSpore's collectives, moving data with mpi4py buffer calls.

Every op resolves its group at construction (`rank`, `rank_size`, `group` attrs),
infers shapes and dtypes without communicating, and runs one MPI buffer call on
contiguous numpy arrays with an output allocated to the inferred size. Data moves
as an MPI type of the element's width, so every numeric dtype (bool, complex,
bfloat16 …) moves unchanged; reductions run in `Type.reduce_np_dtype` (float16 and
bfloat16 accumulate in float32 and are rounded once). Ranks named by an op
(`root_rank`, `dest_rank`, …) are ranks within its group.

Rank-dependent inference: `Reduce` and `CollectiveGather` give the result only to the
destination rank; every other rank's output (and inferred shape) is `[1]` (zeros).
AllToAllV is the one op that checks its arguments across ranks (its count matrix).

The common collectives `lower` to a kernel per signature (eager calls and compiled
graphs alike): MPI type, bound method and output shape are chosen once, so a call is
one buffer call (`buffer_call`) into an output that is handed out again once the caller
has dropped it (`outputs`).
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.validator import Rel
from msops.communication import GlobalComm, get_group
from msops.primitives.primitive import CACHE_LIMIT as _CACHE_LIMIT  # noqa: F401 (tests)
from msops.primitives.buffer_call import buffer_call
from msops.primitives.gather_check import gather_check
from msops.primitives.outputs import length_maker, output_maker
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register, remember
from msops.primitives.rules import declare_without

__all__ = ["ReduceOp", "AllGather", "_MiniStepAllGather", "_MicroStepAllGather", "AllReduce",
           "ReduceScatter", "Broadcast", "AlltoAll", "AllToAllV", "AlltoAllV", "Reduce",
           "CollectiveGather", "CollectiveScatter", "Barrier", "Send", "Receive",
           "check_reduce_dtype"]

#: dtypes every data-moving collective accepts (all but string)
target_dtypes = mstype.all_types
#: the largest tag MPI guarantees (MPI_TAG_UB >= 32767)
_MAX_TAG = 32767


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


# -- kernel helpers: one MPI call, its buffers, its errors ----------------------------------

def _buf(a: np.ndarray | None) -> list | None:
    """An mpi4py buffer spec that moves `a` unchanged (None stays None: 'not significant')."""
    return None if a is None else [a, mstype.mpi_move_type(a.dtype)]


def _bufs(send: np.ndarray, recv: np.ndarray) -> tuple[list, list]:
    """Buffer specs of a send and a receive array of one dtype (one type lookup)."""
    t = mstype.mpi_move_type(send.dtype)
    return [send, t], [recv, t]


def _call(prim: "_Collective", method: Callable, *args: Any) -> Any:
    """`method(*args)`, with an MPI error raised as the op's RuntimeError (never raw MPI)."""
    try:
        return method(*args)
    except Exception as err:
        _reraise(prim, err)


def _reraise(prim: "_Collective", err: Exception) -> None:
    from mpi4py import MPI
    if isinstance(err, MPI.Exception):
        raise prim._mpi_failed(err) from None
    raise err


_REDUCE_NP: dict[np.dtype, np.dtype] = {}


def _reduce_in(x: np.ndarray) -> np.ndarray:
    """x in the dtype it is reduced in (float16/bfloat16 -> float32)."""
    red = _REDUCE_NP.get(x.dtype)
    if red is None:
        red = _REDUCE_NP[x.dtype] = mstype.from_numpy(x.dtype).reduce_np_dtype
    return x if red == x.dtype else x.astype(red)


_MPI_OPS: dict[str, Any] = {}


def _mpi_op(op: str) -> Any:
    """The MPI.Op of a ReduceOp name (looked up once)."""
    mpi_op = _MPI_OPS.get(op)
    if mpi_op is None:
        from mpi4py import MPI
        mpi_op = _MPI_OPS[op] = getattr(MPI, op.upper())
    return mpi_op


def _reduced(prim: "_Collective", method: Callable, x: np.ndarray, out_shape: Sequence[int] | None,
             *extra: Any) -> np.ndarray | None:
    """Run reduction `method(send, recv, op, *extra)` on x in its reduce dtype.

    The output (shape `out_shape`, None where this rank receives nothing) is rounded
    back to x's dtype once.
    """
    src = _reduce_in(x)
    t = mstype.mpi_reduce_type(src.dtype)
    out = None if out_shape is None else np.empty(out_shape, src.dtype)
    _call(prim, method, [src, t], None if out is None else [out, t], _mpi_op(prim._op), *extra)
    return out if out is None or out.dtype == x.dtype else out.astype(x.dtype)


def _placeholder(dtype: np.dtype) -> np.ndarray:
    """What a non-destination rank of Reduce/CollectiveGather returns: zeros of shape [1]."""
    return np.zeros(1, dtype)


def _lower_call(prim: "_Collective", method: str, x: Any, out: Any,
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
        t, extra = mstype.mpi_reduce_type(dtype), (_mpi_op(op),)
    return buffer_call(prim, getattr(comm, method), (t,), (t,), extra, out.shape, dtype, _reraise)


# -- shape helpers ----------------------------------------------------------------------------

def _check_rank_ge1(prim: "_Collective", x_shape: list) -> None:
    if len(x_shape) == 0:
        raise ValueError(f"For '{prim.name}', the 'x shape' should have rank >= 1, "
                         f"but got a 0-d shape {x_shape}.")


def _gather_shape(prim: "_Collective", x_shape: list) -> list:
    """(x1, ...) -> (rank_size*x1, ...); -1 (dynamic) stays -1; 0-d is an error."""
    _check_rank_ge1(prim, x_shape)
    out = list(x_shape)
    if out[0] >= 0:
        out[0] = out[0] * prim.rank_size
    return out


def _scatter_shape(prim: "_Collective", x_shape: list) -> list:
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


def _tensor_dtype(prim: "_Collective", x_dtype: mstype.Type, arg: str = "x") -> mstype.Type:
    return validator.check_tensor_dtype_valid(arg, x_dtype, target_dtypes, prim.name)


class _Collective(PrimitiveWithInfer):
    """Shared set-up of the collectives: resolve `group`, record `rank` and `rank_size`.

    Kernels read plain private copies of what they need (`_n`, `_op`, `_root` …): an
    attr read as `prim.<name>` goes through `__getattr__`, about a microsecond a call.
    """

    is_communication = True

    def _init_group(self, group: str) -> None:
        validator.check_value_type("group", group, str, self.name)
        g = get_group(group, self.name)
        self._group = g
        self._n = g.size
        self.add_prim_attr("group", g.name)
        self.add_prim_attr("rank_size", g.size)
        if g.rank is not None:
            self.add_prim_attr("rank", g.rank)
            validator.check("rank", g.rank, "rank_size", g.size, Rel.LT, self.name)

    def _init_reduce_op(self, op: str) -> None:
        validator.check_value_type("op", op, str, self.name)
        validator.check_string("op", op, _ALL_OPS, self.name)
        self._op = op

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

    def comm_bytes(self, in_bytes: int) -> int:
        """Bytes one rank sends in this collective for an input of `in_bytes` (ring and
        pairwise algorithms): the planner's cost, shown in dumps. Default: the input once."""
        return in_bytes

    def _mpi_failed(self, err: Exception) -> RuntimeError:
        """An MPI error as a RuntimeError naming the op and group (never raw MPI)."""
        text = err.Get_error_string() if hasattr(err, "Get_error_string") else str(err)
        return RuntimeError(f"For '{self.name}', MPI failed in group '{self.group}' "
                            f"({self.rank_size} ranks): {text.splitlines()[0]}. Do the "
                            f"inputs have the same shape and dtype on every rank?")


declare_without("sharding", _Collective,
                reason="explicit communication ops cannot be used inside a parallel graph "
                       "(parallel_mode is set); the framework inserts the collectives that "
                       "layouts need")


# -- gather family ------------------------------------------------------------------------------

def _allgather(prim: _Collective, x: np.ndarray) -> np.ndarray:
    out = np.empty((x.shape[0] * prim._n,) + x.shape[1:], x.dtype)
    _call(prim, prim._comm().Allgather, *_bufs(x, out))
    return out


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
        return _tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return _allgather(self, x)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return _lower_call(self, "Allgather", in_abstracts[0], out_abstract)


class _AccumulationAllGather(_Collective):
    """AllGather of x with a gradient-accumulation buffer z beside it (optimizer sharding).

    Inputs: (x, z). Forward gathers x exactly as AllGather; z only matters to the backward
    rule (accumulate, reduce, keep this rank's slice). Attr `fusion` is 1.
    """

    def _init_accumulation(self, group: str, mean_flag: bool | None) -> None:
        self._init_group(group)
        if mean_flag is not None:
            validator.check_bool("mean_flag", mean_flag, self.name)
        self.add_prim_attr("fusion", 1)

    def infer_shape(self, x_shape: list, z_shape: list) -> list:
        return _gather_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, z_dtype: mstype.Type) -> mstype.Type:
        _tensor_dtype(self, x_dtype)
        _tensor_dtype(self, z_dtype, "z")
        return x_dtype

    def kernel(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        return _allgather(self, x)


class _MiniStepAllGather(_AccumulationAllGather):
    """AllGather for optimizer sharding with gradient accumulation over mini-steps.

    Inputs: (x, z), z the accumulation buffer. Outputs: AllGather(x), (N*x1, x2, ...).
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP,
                 grad_accumulation_step: int | None = None,
                 mean_flag: bool | None = None) -> None:
        if grad_accumulation_step is not None:
            validator.check_positive_int(grad_accumulation_step, "grad_accumulation_step",
                                         self.name)
        self._init_accumulation(group, mean_flag)


class _MicroStepAllGather(_AccumulationAllGather):
    """AllGather for optimizer sharding with micro-batches (pipeline parallel).

    Inputs: (x, z), z the accumulation buffer. Outputs: AllGather(x), (N*x1, x2, ...).
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP,
                 mean_flag: bool | None = None) -> None:
        self._init_accumulation(group, mean_flag)


class CollectiveGather(_Collective):
    """Gather x from every rank to `dest_rank`, concatenated along dim 0 in group-rank order.

    Inputs: x of shape (x1, ...), the same on every rank. Outputs: (N*x1, ...) on
    `dest_rank`; every other rank gets zeros of shape [1] (so inference is rank-dependent).
    """

    @prim_attr_register
    def __init__(self, dest_rank: int, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._root = self._check_rank("dest_rank", dest_rank)
        if self._group.rank is not None:
            self.add_prim_attr("rank_id", self._group.rank)

    def infer_shape(self, x_shape: list) -> list:
        shape = _gather_shape(self, x_shape)
        return shape if self._my_rank() == self.dest_rank else [1]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _tensor_dtype(self, x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        comm = self._comm()
        mine = self._group.rank == self._root
        out = np.empty((x.shape[0] * self._n,) + x.shape[1:], x.dtype) if mine else None
        _call(self, comm.Gather, _buf(x), _buf(out), self._root)
        return out if mine else _placeholder(x.dtype)


class CollectiveScatter(_Collective):
    """Scatter `src_rank`'s x evenly along dim 0: group rank i gets the i-th of N slices.

    Inputs: x of shape (x1, ...) on every rank (only `src_rank`'s values are read; the
    others give the shape). x1 must divide by N. Outputs: (x1/N, ...).
    """

    @prim_attr_register
    def __init__(self, src_rank: int = 0, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._root = self._check_rank("src_rank", src_rank)
        if self._group.rank is not None:
            self.add_prim_attr("rank_id", self._group.rank)

    def infer_shape(self, x_shape: list) -> list:
        return _scatter_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _tensor_dtype(self, x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        comm = self._comm()
        out = np.empty((x.shape[0] // self._n,) + x.shape[1:], x.dtype)
        src = x if self._group.rank == self._root else None
        _call(self, comm.Scatter, _buf(src), _buf(out), self._root)
        return out


# -- reductions -----------------------------------------------------------------------------

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

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def comm_bytes(self, in_bytes: int) -> int:
        return 2 * (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return _reduced(self, self._comm().Allreduce, x, x.shape)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return _lower_call(self, "Allreduce", in_abstracts[0], out_abstract, self._op)


class ReduceScatter(_Collective):
    """Reduce x with `op` over the group and scatter the result along dim 0.

    Inputs: x of shape (x1, ...), x1 divisible by N. Outputs: (x1/N, ...); group rank i
    holds rows [i*x1/N, (i+1)*x1/N) of the reduction.
    """

    @prim_attr_register
    def __init__(self, op: str = ReduceOp.SUM, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self.add_prim_attr("fusion", 0)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        return _scatter_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray) -> np.ndarray:
        out_shape = (x.shape[0] // self._n,) + x.shape[1:]
        return _reduced(self, self._comm().Reduce_scatter_block, x, out_shape)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return _lower_call(self, "Reduce_scatter_block", in_abstracts[0], out_abstract,
                           self._op)


class Reduce(_Collective):
    """Reduce x with `op` over the group to `dest_rank`.

    Inputs: x of any shape, the same on every rank. Outputs: the reduction (x's shape) on
    `dest_rank`; every other rank gets zeros of shape [1] (so inference is rank-dependent).
    """

    @prim_attr_register
    def __init__(self, dest_rank: int, op: str = ReduceOp.SUM,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self._root = self._check_rank("dest_rank", dest_rank)

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape) if self._my_rank() == self.dest_rank else [1]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        comm = self._comm()
        mine = self._group.rank == self._root
        out = _reduced(self, comm.Reduce, x, x.shape if mine else None, self._root)
        return out if mine else _placeholder(x.dtype)


# -- broadcast, all-to-all --------------------------------------------------------------------

class Broadcast(_Collective):
    """Broadcast a tuple of tensors from `root_rank` to every rank of the group.

    Inputs: a tuple of tensors (each rank passes tensors of the same shapes and dtypes;
    only the root's values are read). Outputs: a tuple of the root's tensors (on the root,
    its inputs themselves: no copy; a Parameter's data comes back as a plain Tensor).
    """

    @prim_attr_register
    def __init__(self, root_rank: int, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._root = self._check_rank("root_rank", root_rank)
        self.add_prim_attr("no_eliminate", True)

    def _not_a_tuple(self, got: str) -> TypeError:
        return TypeError(f"For '{self.name}', the 'input_x' should be a non-empty tuple of "
                         f"Tensors, but got {got}.")

    def infer_shape(self, x_shapes: Sequence[list]) -> tuple:
        if not isinstance(x_shapes, (list, tuple)) or not x_shapes:
            raise self._not_a_tuple(repr(x_shapes))
        if not all(isinstance(s, (list, tuple)) for s in x_shapes):
            raise self._not_a_tuple(f"one Tensor of shape {list(x_shapes)}")
        return tuple(list(s) for s in x_shapes)

    def infer_dtype(self, x_dtypes: Sequence[mstype.Type]) -> tuple:
        if not isinstance(x_dtypes, (list, tuple)) or not x_dtypes:
            raise self._not_a_tuple(f"one Tensor of dtype {x_dtypes!r}"
                                    if isinstance(x_dtypes, mstype.Type) else repr(x_dtypes))
        return tuple(_tensor_dtype(self, d) for d in x_dtypes)

    def kernel(self, xs: Sequence[np.ndarray]) -> tuple:
        comm = self._comm()
        if self._group.rank == self._root:        # the root's buffers are only read
            outs = tuple(xs)
        else:
            outs = tuple(np.empty_like(x) for x in xs)
        for out in outs:
            _call(self, comm.Bcast, _buf(out), self._root)
        return outs

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """One signature: the MPI types (and, off the root, output makers) chosen once."""
        xs, comm = in_abstracts[0], self._group._comm
        if comm is None or not isinstance(xs.dtype, tuple) or \
                any(d < 0 for shape in xs.shape for d in shape):
            return self.kernel
        dtypes = [d.np_dtype for d in xs.dtype]
        types = [mstype.mpi_move_type(d) for d in dtypes]
        bcast, root = comm.Bcast, self._root
        is_root = self._group.rank == root
        if len(types) == 1:                  # the common case: the root sends, the others receive
            send, recv = ((types[0],), None) if is_root else (None, (types[0],))
            return buffer_call(self, bcast, send, recv, (root,), xs.shape[0], dtypes[0],
                               _reraise, tupled=True)
        news = None if is_root else [output_maker(tuple(s), d) for s, d in zip(xs.shape, dtypes)]

        def kernel(xs: Sequence[np.ndarray]) -> tuple:
            outs = tuple(xs) if news is None else tuple([new() for new in news])
            for out, t in zip(outs, types):
                _call(self, bcast, [out, t], root)
            return outs
        return kernel


def _check_dim(prim: _Collective, arg: str, dim: int, ndim: int) -> int:
    """A dim of an ndim-d input: in [-ndim, ndim) (IndexError otherwise), made non-negative."""
    validator.check_int_range(dim, -ndim, ndim, Rel.INC_LEFT, arg, prim.name, IndexError)
    return dim % ndim


class AlltoAll(_Collective):
    """Split x into `split_count` (= N) blocks along `split_dim`, send block j to group rank
    j, and concatenate the blocks received along `concat_dim` in group-rank order.

    Inputs: x of shape S, S[split_dim] divisible by N. Outputs: S with
    `S[concat_dim] *= N` then `S[split_dim] //= N` (-1 dims stay -1).
    """

    @prim_attr_register
    def __init__(self, split_count: int, split_dim: int, concat_dim: int,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        validator.check_int("split_count", split_count, self.name)
        validator.check_int("split_dim", split_dim, self.name)
        validator.check_int("concat_dim", concat_dim, self.name)
        self._init_group(group)
        validator.check("split_count", split_count, "rank_size", self.rank_size, Rel.EQ,
                        self.name)
        self.add_prim_attr("no_eliminate", True)
        self._layouts: dict[tuple, tuple] = {}

    def infer_shape(self, x_shape: list) -> list:
        s = _check_dim(self, "split_dim", self.split_dim, len(x_shape))
        c = _check_dim(self, "concat_dim", self.concat_dim, len(x_shape))
        n, out = self.split_count, list(x_shape)
        if out[s] >= 0 and out[s] % n:
            raise ValueError(f"For '{self.name}', the 'x shape[{self.split_dim}]' should be "
                             f"divisible by split_count: {n}, but got {out[s]} (x shape "
                             f"{list(x_shape)}).")
        if out[c] >= 0:
            out[c] *= n
        if out[s] >= 0:
            out[s] //= n
        return out

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _tensor_dtype(self, x_dtype)

    def _layout(self, shape: tuple) -> tuple:
        """(send view shape, split dim, recv shape, concat dim, out shape) for one x shape."""
        layout = self._layouts.get(shape)
        if layout is None:
            n, nd = self.split_count, len(shape)
            s, c = self.split_dim % nd, self.concat_dim % nd
            blocks = shape[:s] + (n, shape[s] // n) + shape[s + 1:]
            chunk = shape[:s] + (shape[s] // n,) + shape[s + 1:]
            out = list(chunk)
            out[c] *= n
            layout = remember(self._layouts, shape, (blocks, s, (n,) + chunk, c, tuple(out)))
        return layout

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray) -> np.ndarray:
        blocks, s, recv_shape, c, out_shape = self._layout(x.shape)
        # send buffer: block j (for rank j) contiguous at position j
        send = x if s == 0 else np.ascontiguousarray(np.moveaxis(x.reshape(blocks), s, 0))
        recv = np.empty(recv_shape, x.dtype)
        _call(self, self._comm().Alltoall, *_bufs(send, recv))
        if c == 0:
            return recv.reshape(out_shape)
        return np.ascontiguousarray(np.moveaxis(recv, 0, c)).reshape(out_shape)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """Splitting and concatenating along dim 0 is one Alltoall into the output itself."""
        nd = len(in_abstracts[0].shape)
        if nd == 0 or self.split_dim % nd or self.concat_dim % nd:
            return self.kernel
        return _lower_call(self, "Alltoall", in_abstracts[0], out_abstract)


# -- AllToAllV ------------------------------------------------------------------------------

_FORMS = {4: ("send_counts", "send_displs", "recv_counts", "recv_displs"),
          2: ("send_numel_list", "recv_numel_list"),
          1: ("send_counts",)}


def _counts_value(prim: _Collective, arg: str, value: Any) -> tuple[int, ...]:
    """A counts/displs input as rank_size non-negative ints (list, tuple or int Tensor)."""
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


def _packed_displs(counts: Sequence[int]) -> tuple[int, ...]:
    """Displacements that lay the blocks end to end in rank order."""
    return tuple(itertools.accumulate(counts[:-1], initial=0))


class _Exchange:
    """The receive side of an AllToAllV call in elements: MPI (counts, displs) and length."""

    __slots__ = ("spec", "size")

    def __init__(self, counts: Sequence[int], displs: Sequence[int], block: int) -> None:
        self.spec = ([c * block for c in counts], [d * block for d in displs])
        self.size = sum(counts) * block


class _A2avPlan:
    """Everything about one AllToAllV call that does not change between calls.

    `send`: MPI (counts, displs) in elements; `recv`: an _Exchange, None in the derived
    form (filled per receive pattern into `derived`); `header`: this rank's row of the
    cross-rank check, [status, send counts, recv counts] in blocks (int64); `runs`: the
    call specialised to each input dtype (AllToAllV._runner).
    """

    __slots__ = ("send", "recv", "header", "derived", "runs")

    def __init__(self, sc: tuple, sd: tuple, rc: tuple | None, rd: tuple | None,
                 block: int) -> None:
        self.send = ([c * block for c in sc], [d * block for d in sd])
        self.recv = None if rc is None else _Exchange(rc, rd, block)
        self.header = np.array((0,) + sc + (rc or (0,) * len(sc)), np.int64)
        self.derived: dict[bytes, _Exchange] = {}     # by the int64 bytes of the counts
        self.runs: dict[np.dtype, Callable] = {}


class AllToAllV(_Collective):
    """MPI Alltoallv over the flattened input, with counts checked across ranks.

    Three call forms, by the number of inputs (counts and displacements in units of
    `block_size` elements; lists, tuples or 1-D int Tensors of rank_size entries):

    * `a2av(x, send_counts, send_displs, recv_counts, recv_displs)`: MPI's form. Rank i
      sends x.flat[send_displs[j]:][:send_counts[j]] (in blocks) to group rank j and puts
      what j sends it at recv_displs[j] of the output.
    * `a2av(x, send_numel_list, recv_numel_list)`: MindSpore's form, blocks packed in
      rank order on both sides.
    * `a2av(x, send_counts)`: the receive side derived (packed) from the other ranks'
      send counts.

    Output: 1-D, dtype of x, length sum(recv_counts) * block_size (the derived form
    infers -1: the length is known only after the counts are exchanged). Receive blocks
    must tile the output exactly.

    With `check_counts=True` (default) every call first all-gathers each rank's
    [status, send counts, recv counts] (one small int64 Allgather) so that every rank
    raises the same ValueError when the count matrix is inconsistent, naming each
    (src, dst) pair; a rank whose own counts are invalid raises its detailed error and
    the others name it. The derived form needs this exchange anyway; `check_counts=False`
    skips it in the explicit forms (for plans known to be consistent, e.g. compiled).

    Seed 002 on 2 ranks: rank 0 x=[[0,1,2,3],[4,5,6,7]], counts (2,4)/(0,2)/(2,2)/(0,2);
    rank 1 x=[[0,1,2],[3,4,6]], counts (2,1)/(0,2)/(4,1)/(0,4) -> rank 0 [0,1,0,1],
    rank 1 [2,3,4,5,2].
    """

    const_inputs = (1, 2, 3, 4)

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP, block_size: int = 1,
                 check_counts: bool = True) -> None:
        self._init_group(group)
        validator.check_positive_int(block_size, "block_size", self.name)
        validator.check_bool("check_counts", check_counts, self.name)
        self.add_prim_attr("no_eliminate", True)
        self._block, self._check = block_size, check_counts
        self._plans: dict[tuple, _A2avPlan] = {}
        self._matrix: np.ndarray | None = None      # the header matrix buffer
        self._pairs: dict[bool, tuple] = {}         # see _count_check

    # -- local validation and the per-signature plan ------------------------------------------
    def _plan(self, numel: int | None, counts: Sequence[Any]) -> _A2avPlan:
        """The validated plan of one call (cached by input size and counts)."""
        try:
            key = (numel,) + tuple(map(tuple, counts))
            plan = self._plans.get(key)
        except TypeError:           # a Tensor or other unhashable counts value
            key, plan = None, None
        if plan is None:
            plan = self._make_plan(numel, counts)
            if key is not None:
                remember(self._plans, key, plan)
        return plan

    def _make_plan(self, numel: int | None, counts: Sequence[Any]) -> _A2avPlan:
        if len(counts) not in _FORMS:
            raise TypeError(f"For '{self.name}', the number of inputs should be 2 (x, "
                            f"send_counts), 3 (x, send_numel_list, recv_numel_list) or 5 (x, "
                            f"send_counts, send_displs, recv_counts, recv_displs), but got "
                            f"{len(counts) + 1}.")
        names = _FORMS[len(counts)]
        values = [_counts_value(self, a, v) for a, v in zip(names, counts)]
        if len(values) == 4:
            sc, sd, rc, rd = values
        else:
            sc, sd = values[0], _packed_displs(values[0])
            rc = rd = None                                  # derived after the exchange
            if len(values) == 2:
                rc, rd = values[1], _packed_displs(values[1])
        if numel is not None:
            self._check_send_extents(names, numel, sc, sd)
        if rc is not None:
            self._check_recv_tiling(names, rc, rd)
        return _A2avPlan(sc, sd, rc, rd, self._block)

    def _check_send_extents(self, names: tuple, numel: int, sc: tuple, sd: tuple) -> None:
        b = self._block
        for j, (c, d) in enumerate(zip(sc, sd)):
            if c and (d + c) * b > numel:
                displs = f"{names[1]}[{j}] + " if len(names) == 4 else "packed displacement + "
                raise ValueError(
                    f"For '{self.name}', the block sent to rank {j} should lie inside the "
                    f"input of {numel} elements, but got {displs}{names[0]}[{j}] = {d} + {c} "
                    f"blocks of {b} = {(d + c) * b} elements.")

    def _check_recv_tiling(self, names: tuple, rc: tuple, rd: tuple) -> None:
        total, end, prev = sum(rc), 0, None
        for d, c, j in sorted((d, c, j) for j, (c, d) in enumerate(zip(rc, rd)) if c):
            if d + c > total:
                raise ValueError(
                    f"For '{self.name}', the block received from rank {j} should lie inside "
                    f"the output of sum({names[-2]}) = {total} blocks, but got {names[-1]}[{j}]"
                    f" + {names[-2]}[{j}] = {d} + {c} = {d + c}.")
            if d < end:
                raise ValueError(
                    f"For '{self.name}', the blocks received should not overlap, but got the "
                    f"blocks from ranks {prev} and {j} overlapping at {d} ({names[-1]} "
                    f"{list(rd)}, {names[-2]} {list(rc)}).")
            end, prev = d + c, j

    def infer_shape(self, x_shape: list, *counts: Any) -> list:
        numel = int(np.prod(x_shape)) if all(d >= 0 for d in x_shape) else None
        plan = self._plan(numel, counts)
        return [-1] if plan.recv is None else [plan.recv.size]

    def infer_dtype(self, x_dtype: mstype.Type, *counts: Any) -> mstype.Type:
        return _tensor_dtype(self, x_dtype)

    # -- the cross-rank check -----------------------------------------------------------------
    def _exchanges(self, n_counts: int) -> bool:
        return self._check or n_counts == 1

    def _header_matrix(self) -> np.ndarray:
        """The buffer every rank's header row is gathered into (int64, rank_size x
        (1 + 2*rank_size)): one for every call, read before the call returns."""
        if self._matrix is None:
            self._matrix = np.empty((self._n, 1 + 2 * self._n), np.int64)
        return self._matrix

    def _send_invalid_header(self) -> None:
        """Take part in the count exchange the other ranks wait in, marked invalid."""
        header = np.zeros(1 + 2 * self._n, np.int64)
        _call(self, self._comm().Allgather, *_bufs(header, self._header_matrix()))

    def _count_check(self, gather: Callable, args: tuple, explicit: bool) -> Callable[[], None]:
        """The check run ahead of every call (see `gather_check`): `gather(*args)` fills the
        header matrix; it passes if every rank's status equals this rank's own (its row)
        and, `explicit`, each count sent equals the count its receiver expects; otherwise
        every rank raises the same ValueError."""
        matrix, pairs = self._header_matrix(), self._pairs.get(explicit)
        if pairs is None:                           # (O(rank_size^2): made once per form)
            n, w = self._n, 1 + 2 * self._n
            left, right = [np.arange(n) * w], [np.full(n, self._group.rank * w)]
            if explicit:
                i, j = np.divmod(np.arange(n * n), n)
                left.append(i * w + 1 + j)          # sent[i, j]
                right.append(j * w + 1 + n + i)     # what rank j expects from rank i
            pairs = self._pairs[explicit] = (np.concatenate(left), np.concatenate(right))

        def mismatch() -> None:
            raise ValueError(self._count_matrix_error(matrix))
        return gather_check(gather, args, matrix, *pairs, mismatch)

    def _count_matrix_error(self, matrix: np.ndarray) -> str:
        """What is wrong with the count matrix: the same message on every rank."""
        n, status = self._n, matrix[:, 0]
        bad = np.flatnonzero(status == 0).tolist()
        if bad:
            return (f"For '{self.name}', the counts of every rank should be valid, but got "
                    f"invalid counts on group rank(s) {bad} (see the error raised there).")
        if (status != status[0]).any():
            seen = [("derived" if s < 0 else "explicit", abs(int(s))) for s in status]
            return (f"For '{self.name}', every rank should use the same call form and block "
                    f"bytes (block_size * itemsize), but got (form, block bytes) by group "
                    f"rank: {seen}.")
        sent, expected = matrix[:, 1:1 + n], matrix[:, 1 + n:].T    # expected[i, j]: j from i
        pairs = np.argwhere(sent != expected).tolist()
        shown = [f"rank {i} sends {sent[i, j]} to rank {j} but rank {j} expects "
                 f"{expected[i, j]}" for i, j in pairs[:8]]
        more = f" (and {len(pairs) - 8} more pairs)" if len(pairs) > 8 else ""
        return (f"For '{self.name}', every rank's recv_counts[i] should equal rank i's "
                f"send_counts to it, but got: " + "; ".join(shown) + more + ".")

    def _check_eager(self, values: list) -> Callable:
        try:
            return super()._check_eager(values)
        except (TypeError, ValueError):
            # the other ranks wait in the count exchange: take part, marked invalid, then raise
            if self._exchanges(len(values) - 1) and self._group.rank is not None \
                    and not self._group.simulated:
                self._send_invalid_header()
            raise

    # -- the kernel ---------------------------------------------------------------------------
    def kernel(self, x: np.ndarray, *counts: Any) -> np.ndarray:
        exchange = self._exchanges(len(counts))
        try:
            plan = self._plan(x.size, counts)
        except (TypeError, ValueError):
            if exchange:
                self._send_invalid_header()
            raise
        run = plan.runs.get(x.dtype)
        if run is None:
            run = plan.runs[x.dtype] = self._runner(plan, x.dtype, exchange)
        return run(x)

    def _runner(self, plan: _A2avPlan, dtype: np.dtype, exchange: bool) -> Callable:
        """The call of one plan on inputs of `dtype`: count exchange and check (if any), then
        one Alltoallv, with MPI types, buffers and bound methods chosen here, once."""
        comm = self._comm()                 # the group's error when there is no communicator
        t, send, alltoallv = mstype.mpi_move_type(dtype), plan.send, comm.Alltoallv
        if not exchange:
            return self._alltoallv_kernel(alltoallv, t, dtype, send, plan.recv)
        derived = plan.recv is None
        status = self._block * dtype.itemsize * (-1 if derived else 1)
        header, matrix = plan.header.copy(), self._header_matrix()
        header[0] = status
        t64 = mstype.mpi_move_type(header.dtype)
        exchange = self._count_check(comm.Allgather, ([header, t64], [matrix, t64]),
                                     not derived)
        if not derived:
            return self._alltoallv_kernel(alltoallv, t, dtype, send, plan.recv, exchange)
        sent_here = matrix[:, 1 + self._group.rank]     # what each rank sends this one
        new_output = length_maker(dtype)

        def run(x: np.ndarray, *_: Any) -> np.ndarray:
            try:                            # (_reraise passes the check's ValueError on)
                exchange()
                recv = self._derived(plan, sent_here.tobytes())
                out = new_output(recv.size)
                alltoallv([x, send, t], [out, recv.spec, t])
            except Exception as err:
                _reraise(self, err)
            return out
        return run

    def _alltoallv_kernel(self, alltoallv: Callable, t: Any, dtype: np.dtype, send: tuple,
                          recv: _Exchange, before: Callable | None = None) -> Callable:
        """One Alltoallv of fixed counts into a reused output (see `buffer_call`), after
        `before` (the count exchange and check) when given."""
        return buffer_call(self, alltoallv, (send, t), (recv.spec, t), (), (recv.size,), dtype,
                           _reraise, before=before)

    def _derived(self, plan: _A2avPlan, counts: bytes) -> _Exchange:
        """The receive side for the counts (int64 bytes) the ranks send this one."""
        recv = plan.derived.get(counts)
        if recv is None:
            rc = tuple(np.frombuffer(counts, np.int64).tolist())
            recv = remember(plan.derived, counts, _Exchange(rc, _packed_displs(rc), self._block))
        return recv

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """With constant counts the plan is made once, here, and (x's dtype and a
        communicator known) the whole call: `_runner`. Every form still exchanges and
        checks its counts on every call unless check_counts=False."""
        x, consts = in_abstracts[0], in_abstracts[1:]
        exchange = self._exchanges(len(consts))
        if any(d < 0 for d in x.shape) or \
                any(getattr(c, "kind", None) != "const" for c in consts) or \
                (exchange and self._group._comm is None):
            return self.kernel
        plan = self._plan(int(np.prod(x.shape)), [c.value for c in consts])
        dtype = getattr(getattr(x, "dtype", None), "np_dtype", None)
        if self._group._comm is None or dtype is None:   # (the call raises the group's error)
            return lambda x, *_: self._runner(plan, x.dtype, exchange)(x)
        return self._runner(plan, dtype, exchange)


AlltoAllV = AllToAllV


# -- synchronisation and point-to-point -----------------------------------------------------

class Barrier(_Collective):
    """Block until every rank of the group has reached it.

    No inputs. Output: a float32 tensor of shape [1] (zeros), as MindSpore's.
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self.add_prim_attr("side_effect_mem", True)

    def infer_shape(self) -> list:
        return [1]

    def infer_dtype(self) -> mstype.Type:
        return mstype.float32

    def kernel(self) -> np.ndarray:
        _call(self, self._comm().Barrier)
        return np.zeros(1, np.float32)


def _check_tag(prim: _Collective, sr_tag: int) -> int:
    return validator.check_int_range(sr_tag, 0, _MAX_TAG, Rel.INC_BOTH, "sr_tag", prim.name)


def _check_peer(prim: _Collective, arg: str, peer: int) -> None:
    if prim._my_rank() == peer:
        raise ValueError(f"For '{prim.name}', the '{arg}' should be another rank than this "
                         f"one, but got {peer} (this process is rank {peer} of group "
                         f"'{prim.group}').")


class Send(_Collective):
    """Send x to group rank `dest_rank`, matched by a Receive there with the same `sr_tag`.

    Inputs: x. Output: x itself (unchanged), so later ops can depend on the send.
    """

    @prim_attr_register
    def __init__(self, sr_tag: int, dest_rank: int,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._tag = _check_tag(self, sr_tag)
        self._init_group(group)
        self._peer = self._check_rank("dest_rank", dest_rank)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        _check_peer(self, "dest_rank", self.dest_rank)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return _tensor_dtype(self, x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        _call(self, self._comm().Send, _buf(x), self._peer, self._tag)
        return x


class Receive(_Collective):
    """Receive a tensor of `shape` and `dtype` from group rank `src_rank` (tag `sr_tag`).

    No inputs (an optional input is accepted and ignored, to order the receive after it).
    Output: the tensor sent. A message of another size is a ValueError.
    """

    @prim_attr_register
    def __init__(self, sr_tag: int, src_rank: int, shape: Sequence[int], dtype: mstype.Type,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._tag = _check_tag(self, sr_tag)
        self._init_group(group)
        self._peer = self._check_rank("src_rank", src_rank)
        validator.check_value_type("shape", shape, (list, tuple), self.name)
        for i, d in enumerate(shape):
            validator.check_non_negative_int(d, f"shape[{i}]", self.name)
        validator.check_value_type("dtype", dtype, mstype.Type, self.name)
        validator.check_type_name("dtype", dtype, target_dtypes, self.name)
        self.add_prim_attr("no_eliminate", True)
        self._out = (tuple(shape), dtype.np_dtype)

    def infer_shape(self, *_: Any) -> list:
        _check_peer(self, "src_rank", self.src_rank)
        return list(self.shape)

    def infer_dtype(self, *_: Any) -> mstype.Type:
        return self.dtype

    def kernel(self, *_: Any) -> np.ndarray:
        comm = self._comm()
        from mpi4py import MPI
        out = np.empty(*self._out)
        t = mstype.mpi_move_type(out.dtype)
        status = MPI.Status()
        _call(self, comm.Recv, [out, t], self._peer, self._tag, status)
        if status.Get_count(t) != out.size:
            raise ValueError(f"For '{self.name}', the message from rank {self.src_rank} should "
                             f"hold {out.nbytes} bytes (shape {list(self.shape)}, {self.dtype}), "
                             f"but got {status.Get_count(MPI.BYTE)} bytes.")
        return out
