"""Communication primitives: MindSpore's collectives, each one mpi4py buffer call.

Rank-dependent inference: `Reduce` and `CollectiveGather` give the result only to the
destination rank; every other rank's output (and inferred shape) is `[1]` (zeros).
AllToAllV, with its cross-rank count check, lives in `alltoallv.py`, AllGatherV and
ReduceScatterV (uneven pieces) in `uneven_ops.py`; the group, shape
rules and lowering every collective shares in `collective.py`; MPI plumbing in `mpi.py`.

Ops whose output is one new array (`writes_output`) take `out=None`: graph mode hands
them a planned buffer, an eager call a fresh one. `lower` picks the MPI type, bound
method and output shape once per signature, so a call is one buffer call.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.validator import Rel
from msops.communication import GlobalComm
from msops.primitives.alltoallv import AllToAllV, AlltoAllV
from msops.primitives.uneven_ops import AllGatherV, ReduceScatterV
from msops.primitives.comm_fusion import (CommFusion, pack_block_major, pack_flat,
                                          unpack_flat, unpack_rank_major)
from msops.primitives.collective import (Collective, ReduceOp, check_reduce_dtype,
                                         gather_shape, lower_call, no_backward, scatter_shape,
                                         target_dtypes, tensor_dtype)
from msops.primitives.mpi import (alloc_line, buf, bufs, call, call_lines, mpi_detail, reduced,
                                  reraise)
from msops.primitives.math_ops import Add, Cast, Equal, Mul, RealDiv, scalar, zeros
from msops.primitives.primitive import prim_attr_register, remember
from msops.primitives.rules import bprop, declare_without, fusion_rule

__all__ = ["ReduceOp", "AllGather", "_MiniStepAllGather", "_MicroStepAllGather", "AllReduce",
           "ReduceScatter", "Broadcast", "AlltoAll", "AllToAllV", "AlltoAllV", "AllGatherV",
           "ReduceScatterV", "Reduce",
           "CollectiveGather", "CollectiveScatter", "Barrier", "Send", "Receive",
           "check_reduce_dtype"]

#: the largest tag MPI guarantees (MPI_TAG_UB >= 32767)
_MAX_TAG = 32767


# -- gather family ------------------------------------------------------------------------------

def _allgather(prim: Collective, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        out = np.empty((x.shape[0] * prim.rank_size,) + x.shape[1:], x.dtype)
    call(prim, prim._comm().Allgather, *bufs(x, out))
    return out


class AllGather(Collective):
    """Gather tensors from every rank of `group`, concatenated along dim 0 in group-rank order.

    Inputs: x of shape (x1, x2, ..., xR), the same on every rank.
    Outputs: shape (N*x1, x2, ..., xR) for a group of N ranks.

    >>> ag = AllGather()                        # 2 ranks
    >>> ag(Tensor(np.ones([2, 8], np.float32))).shape
    (4, 8)
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self.add_prim_attr("fusion", 0)
        self.add_prim_attr("mean_flag", False)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        return gather_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return _allgather(self, x, out)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return lower_call(self, "Allgather", in_abstracts[0], out_abstract)


class _AccumulationAllGather(Collective):
    """AllGather of x with a gradient-accumulation buffer z beside it (optimizer sharding).

    Inputs: (x, z). Forward gathers x exactly as AllGather; z only matters to the backward
    rule (accumulate, reduce, keep this rank's slice). Attr `fusion` is 1.
    """

    writes_output = True

    def _init_accumulation(self, group: str, mean_flag: bool | None) -> None:
        self._init_group(group)
        if mean_flag is not None:
            validator.check_bool("mean_flag", mean_flag, self.name)
        self.add_prim_attr("fusion", 1)

    def infer_shape(self, x_shape: list, z_shape: list) -> list:
        return gather_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, z_dtype: mstype.Type) -> mstype.Type:
        tensor_dtype(self, x_dtype)
        tensor_dtype(self, z_dtype, "z")
        return x_dtype

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes

    def kernel(self, x: np.ndarray, z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return _allgather(self, x, out)


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


def _placeholder(dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    """What a non-destination rank of Reduce/CollectiveGather returns: zeros of shape [1]."""
    if out is None:
        return np.zeros(1, dtype)
    out.fill(0)
    return out


class CollectiveGather(Collective):
    """Gather x from every rank to `dest_rank`, concatenated along dim 0 in group-rank order.

    Inputs: x of shape (x1, ...), the same on every rank. Outputs: (N*x1, ...) on
    `dest_rank`; every other rank gets zeros of shape [1] (so inference is rank-dependent).
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, dest_rank: int, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._check_rank("dest_rank", dest_rank)
        if self._group.rank is not None:
            self.add_prim_attr("rank_id", self._group.rank)

    def infer_shape(self, x_shape: list) -> list:
        shape = gather_shape(self, x_shape)
        return shape if self._my_rank() == self.dest_rank else [1]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return in_bytes

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        comm = self._comm()
        if self._group.rank != self.dest_rank:
            call(self, comm.Gather, buf(x), None, self.dest_rank)
            return _placeholder(x.dtype, out)
        if out is None:
            out = np.empty((x.shape[0] * self.rank_size,) + x.shape[1:], x.dtype)
        call(self, comm.Gather, buf(x), buf(out), self.dest_rank)
        return out


class CollectiveScatter(Collective):
    """Scatter `src_rank`'s x evenly along dim 0: group rank i gets the i-th of N slices.

    Inputs: x of shape (x1, ...) on every rank (only `src_rank`'s values are read; the
    others give the shape). x1 must divide by N. Outputs: (x1/N, ...).
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, src_rank: int = 0, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._check_rank("src_rank", src_rank)
        if self._group.rank is not None:
            self.add_prim_attr("rank_id", self._group.rank)

    def infer_shape(self, x_shape: list) -> list:
        return scatter_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        comm = self._comm()
        if out is None:
            out = np.empty((x.shape[0] // self.rank_size,) + x.shape[1:], x.dtype)
        src = x if self._group.rank == self.src_rank else None
        call(self, comm.Scatter, buf(src), buf(out), self.src_rank)
        return out


# -- reductions -----------------------------------------------------------------------------

class AllReduce(Collective):
    """Reduce x with `op` over every rank of `group`; every rank gets the result.

    Inputs: x of any shape, the same on every rank. Outputs: same shape and dtype.
    """

    writes_output = True

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

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return reduced(self, self._comm().Allreduce, x, x.shape, out)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return lower_call(self, "Allreduce", in_abstracts[0], out_abstract, self.op)


class ReduceScatter(Collective):
    """Reduce x with `op` over the group and scatter the result along dim 0.

    Inputs: x of shape (x1, ...), x1 divisible by N. Outputs: (x1/N, ...); group rank i
    holds rows [i*x1/N, (i+1)*x1/N) of the reduction.
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, op: str = ReduceOp.SUM, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self.add_prim_attr("fusion", 0)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        return scatter_shape(self, x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        out_shape = (x.shape[0] // self.rank_size,) + x.shape[1:]
        return reduced(self, self._comm().Reduce_scatter_block, x, out_shape, out)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return lower_call(self, "Reduce_scatter_block", in_abstracts[0], out_abstract, self.op)


class Reduce(Collective):
    """Reduce x with `op` over the group to `dest_rank`.

    Inputs: x of any shape, the same on every rank. Outputs: the reduction (x's shape) on
    `dest_rank`; every other rank gets zeros of shape [1] (so inference is rank-dependent).
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, dest_rank: int, op: str = ReduceOp.SUM,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self._check_rank("dest_rank", dest_rank)

    def infer_shape(self, x_shape: list) -> list:
        return list(x_shape) if self._my_rank() == self.dest_rank else [1]

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        comm = self._comm()
        if self._group.rank == self.dest_rank:
            return reduced(self, comm.Reduce, x, x.shape, out, self.dest_rank)
        reduced(self, comm.Reduce, x, None, None, self.dest_rank)
        return _placeholder(x.dtype, out)


# -- broadcast, all-to-all --------------------------------------------------------------------

class Broadcast(Collective):
    """Broadcast a tuple of tensors from `root_rank` to every rank of the group.

    Inputs: a tuple of tensors (each rank passes tensors of the same shapes and dtypes;
    only the root's values are read). Outputs: a tuple of the root's tensors (on the root,
    its inputs themselves: no copy; a Parameter's data comes back as a plain Tensor).
    """

    @prim_attr_register
    def __init__(self, root_rank: int, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self._check_rank("root_rank", root_rank)
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
        return tuple(tensor_dtype(self, d) for d in x_dtypes)

    def kernel(self, xs: Sequence[np.ndarray]) -> tuple:
        comm = self._comm()
        if self._group.rank == self.root_rank:        # the root's buffers are only read
            outs = tuple(xs)
        else:
            outs = tuple(np.empty_like(x) for x in xs)
        for out in outs:
            call(self, comm.Bcast, buf(out), self.root_rank)
        return outs

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """One signature: MPI types and output shapes chosen once."""
        xs, comm = in_abstracts[0], self._group._comm
        if comm is None or not isinstance(xs.dtype, tuple) or \
                any(d < 0 for shape in xs.shape for d in shape):
            return self.kernel
        specs = [(tuple(s), d.np_dtype, mstype.mpi_move_type(d.np_dtype))
                 for s, d in zip(xs.shape, xs.dtype)]
        bcast, root = comm.Bcast, self.root_rank
        is_root = self._group.rank == root
        if len(specs) == 1:                  # the common case: one tensor
            shape, dtype, t = specs[0]

            def one(xs: Sequence[np.ndarray]) -> tuple:
                out = xs[0] if is_root else np.empty(shape, dtype)
                try:
                    bcast([out, t], root)
                except Exception as err:
                    reraise(self, err)
                return (out,)

            def inline(src: Any, args: Sequence[str], out: str | None, target: str) -> list:
                """one's call as lines of a generated caller (codegen.inline_lines)."""
                made = f"{args[0]}[0]" if is_root else "made"
                lines = [] if is_root else [alloc_line(src, made, shape, dtype)]
                return lines + call_lines(src, self, bcast, f"[{made}, {src.bind('mpi_type', t)}]",
                                          src.bind("root", root)) + [f"{target} = ({made},)"]
            one.inline = inline
            return one

        def kernel(xs: Sequence[np.ndarray]) -> tuple:
            outs = tuple(xs) if is_root else tuple([np.empty(s, d) for s, d, _ in specs])
            try:
                for out, (_, _, t) in zip(outs, specs):
                    bcast([out, t], root)
            except Exception as err:
                reraise(self, err)
            return outs
        return kernel


def _check_dim(prim: Collective, arg: str, dim: int, ndim: int) -> int:
    """A dim of an ndim-d input: in [-ndim, ndim) (IndexError otherwise), made non-negative."""
    validator.check_int_range(dim, -ndim, ndim, Rel.INC_LEFT, arg, prim.name, IndexError)
    return dim % ndim


class AlltoAll(Collective):
    """Split x into `split_count` (= N) blocks along `split_dim`, send block j to group rank
    j, and concatenate the blocks received along `concat_dim` in group-rank order.

    Inputs: x of shape S, S[split_dim] divisible by N. Outputs: S with
    `S[concat_dim] *= N` then `S[split_dim] //= N` (-1 dims stay -1).
    """

    writes_output = True

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
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def _layout(self, shape: tuple) -> tuple:
        """(send view shape, split dim, received shape, concat dim, out shape as received
        blocks moved to the concat dim, out shape) for one x shape."""
        layout = self._layouts.get(shape)
        if layout is None:
            n, nd = self.split_count, len(shape)
            s, c = self.split_dim % nd, self.concat_dim % nd
            blocks = shape[:s] + (n, shape[s] // n) + shape[s + 1:]
            chunk = shape[:s] + (shape[s] // n,) + shape[s + 1:]
            out = list(chunk)
            out[c] *= n
            moved = chunk[:c] + (n,) + chunk[c:]
            layout = remember(self._layouts, shape,
                              (blocks, s, (n,) + chunk, c, moved, tuple(out)))
        return layout

    def kernel(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        blocks, s, recv_shape, c, moved, out_shape = self._layout(x.shape)
        # send buffer: block j (for rank j) contiguous at position j
        send = x if s == 0 else np.ascontiguousarray(np.moveaxis(x.reshape(blocks), s, 0))
        if out is None:
            out = np.empty(out_shape, x.dtype)
        # concatenating along dim 0 is receiving the blocks in order: straight into out
        recv = out.reshape(recv_shape) if c == 0 else np.empty(recv_shape, x.dtype)
        call(self, self._comm().Alltoall, *bufs(send, recv))
        if c != 0:
            out.reshape(moved)[...] = np.moveaxis(recv, 0, c)
        return out

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """Splitting and concatenating along dim 0 is one Alltoall into the output itself."""
        nd = len(in_abstracts[0].shape)
        if nd == 0 or self.split_dim % nd or self.concat_dim % nd:
            return self.kernel
        return lower_call(self, "Alltoall", in_abstracts[0], out_abstract)


# -- synchronisation and point-to-point -----------------------------------------------------

class Barrier(Collective):
    """Block until every rank of the group has reached it.

    No inputs. Output: a float32 tensor of shape [1] (zeros), as MindSpore's.
    """

    writes_output = True

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self.add_prim_attr("side_effect_mem", True)

    def infer_shape(self) -> list:
        return [1]

    def infer_dtype(self) -> mstype.Type:
        return mstype.float32

    def comm_bytes(self, in_bytes: int) -> int:
        return 0

    def kernel(self, out: np.ndarray | None = None) -> np.ndarray:
        call(self, self._comm().Barrier)
        return _placeholder(np.float32, out)


def _check_tag(prim: Collective, sr_tag: int) -> int:
    return validator.check_int_range(sr_tag, 0, _MAX_TAG, Rel.INC_BOTH, "sr_tag", prim.name)


def _check_peer(prim: Collective, arg: str, peer: int) -> None:
    if prim._my_rank() == peer:
        raise ValueError(f"For '{prim.name}', the '{arg}' should be another rank than this "
                         f"one, but got {peer} (this process is rank {peer} of group "
                         f"'{prim.group}').")


class Send(Collective):
    """Send x to group rank `dest_rank`, matched by a Receive there with the same `sr_tag`.

    Inputs: x. Output: x itself (unchanged), so later ops can depend on the send.
    """

    point_to_point = True

    @prim_attr_register
    def __init__(self, sr_tag: int, dest_rank: int,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        _check_tag(self, sr_tag)
        self._init_group(group)
        self._check_rank("dest_rank", dest_rank)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list) -> list:
        _check_peer(self, "dest_rank", self.dest_rank)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        call(self, self._comm().Send, buf(x), self.dest_rank, self.sr_tag)
        return x

    def start(self, x: np.ndarray) -> Any:
        """Start sending `x` (MPI's Isend): the request `finish` completes; `x` must stay
        alive and unchanged until then."""
        return call(self, self._comm().Isend, buf(x), self.dest_rank, self.sr_tag)

    def finish(self, request: Any) -> None:
        call(self, request.Wait)


class Receive(Collective):
    """Receive a tensor of `shape` and `dtype` from group rank `src_rank` (tag `sr_tag`).

    No inputs (an optional input is accepted and ignored, to order the receive after it).
    Output: the tensor sent. A message of another size is a ValueError.
    """

    point_to_point = True

    writes_output = True

    @prim_attr_register
    def __init__(self, sr_tag: int, src_rank: int, shape: Sequence[int], dtype: mstype.Type,
                 group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        _check_tag(self, sr_tag)
        self._init_group(group)
        self._check_rank("src_rank", src_rank)
        validator.check_value_type("shape", shape, (list, tuple), self.name)
        for i, d in enumerate(shape):
            validator.check_non_negative_int(d, f"shape[{i}]", self.name)
        validator.check_value_type("dtype", dtype, mstype.Type, self.name)
        validator.check_type_name("dtype", dtype, target_dtypes, self.name)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, *_: Any) -> list:
        _check_peer(self, "src_rank", self.src_rank)
        return list(self.shape)

    def infer_dtype(self, *_: Any) -> mstype.Type:
        return self.dtype

    def comm_bytes(self, in_bytes: int) -> int:
        return 0

    def kernel(self, *_: Any, out: np.ndarray | None = None) -> np.ndarray:
        out = np.empty(tuple(self.shape), self.dtype.np_dtype) if out is None else out
        return self._complete(out, self._comm().Recv, [out, mstype.mpi_move_type(out.dtype)],
                              self.src_rank, self.sr_tag)

    def start(self) -> tuple[np.ndarray, Any]:
        """Start the receive (MPI's Irecv) into a fresh array: (array, request); `finish`
        completes it."""
        out = np.empty(tuple(self.shape), self.dtype.np_dtype)
        request = call(self, self._comm().Irecv, [out, mstype.mpi_move_type(out.dtype)],
                       self.src_rank, self.sr_tag)
        return out, request

    def finish(self, out: np.ndarray, request: Any) -> np.ndarray:
        return self._complete(out, request.Wait)

    def _complete(self, out: np.ndarray, method: Callable, *args: Any) -> np.ndarray:
        """`method(*args, status)` receiving into `out`; a message of another size is the
        ValueError naming the op (MPI's truncation error, or a short count)."""
        from mpi4py import MPI
        status = MPI.Status()
        try:
            method(*args, status)
        except MPI.Exception as err:
            if err.Get_error_class() != MPI.ERR_TRUNCATE:
                reraise(self, err)
            raise ValueError(f"For '{self.name}', the message from rank {self.src_rank} should "
                             f"hold {out.nbytes} bytes (shape {list(self.shape)}, {self.dtype}), "
                             f"but got a longer one: {mpi_detail(err)}.") from None
        if status.Get_count(mstype.mpi_move_type(out.dtype)) != out.size:
            raise ValueError(f"For '{self.name}', the message from rank {self.src_rank} should "
                             f"hold {out.nbytes} bytes (shape {list(self.shape)}, {self.dtype}), "
                             f"but got {status.Get_count(MPI.BYTE)} bytes.")
        return out


# -- backward rules ---------------------------------------------------------------------------
# Each collective's backward is its transpose, written as a sibling collective over the same
# group (see math_ops for the builder `g`). The gradient of a loss summed over ranks: what
# rank i's input contributed to every rank's output comes back to rank i.
def _kept_on(g: Any, is_mine: bool, value: Any, x: Any) -> Any:
    """The gradient of x: `value` on the rank it is meant for; zeros of x's shape on the
    others, made from `value` (its [1] placeholder) so the collective stays in their graph."""
    if is_mine:
        return value
    if not x.shape:
        from msops.primitives.array_ops import Reshape      # array_ops imports math_ops
        return g.apply(Mul(), [g.apply(Reshape(), [value, g.add_const(())]),
                               scalar(g, 0, x.dtype)])
    return g.apply(Add(), [zeros(g, x.shape, x.dtype), value])


class _Like:
    """The shape and dtype of one element of a tuple value (what `_kept_on` reads)."""

    def __init__(self, shape: Sequence[int], dtype: mstype.Type) -> None:
        self.shape, self.dtype = tuple(shape), dtype


def _effectful(prim: Collective) -> Collective:
    """A backward Send/Receive: kept by dead-node elimination though nobody reads its value
    (its partner rank waits for it)."""
    return prim.add_prim_attr("side_effect_io", True)


def _fused_as(new: Collective, prim: Collective) -> Collective:
    """A backward collective keeps its forward op's fusion id (MindSpore's bprops do), so
    the gradients of fused gathers fuse too."""
    return new.add_prim_attr("fusion", prim.fusion)


@bprop(AllGather)
def allgather_bprop(prim: AllGather, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """ReduceScatter(sum) of dout: each rank's rows, summed over every rank's gradient
    (x 1/rank_size when mean_flag) — the all-reduce-then-slice of torch's SyncFunction."""
    dx = g.apply(_fused_as(ReduceScatter(ReduceOp.SUM, prim.group), prim), [dout])
    if prim.mean_flag:
        dx = g.apply(Mul(), [dx, scalar(g, 1.0 / prim.rank_size, dx.dtype)])
    return (dx,)


def _scaled_slice(prim: _AccumulationAllGather, grad: Any, g: Any) -> Any:
    """This rank's rows of `grad` summed over the group (ReduceScatter: the reduce-then-slice
    in one collective), × 1/rank_size when mean_flag."""
    dx = g.apply(_fused_as(ReduceScatter(ReduceOp.SUM, prim.group), prim), [grad])
    if prim.mean_flag:
        dx = g.apply(Mul(), [dx, scalar(g, 1.0 / prim.rank_size, dx.dtype)])
    return dx


def _accumulation_buffer(prim: _AccumulationAllGather, z: Any) -> Any:
    """z, checked to be a Parameter (the backward writes the accumulated gradient into it)."""
    if z.kind != "parameter":
        raise TypeError(f"For '{prim.name}', the 'z' should be a Parameter (the gradient "
                        f"accumulation buffer its backward writes), but got a {z.kind} value.")
    return z


@bprop(_MiniStepAllGather)
def ministep_allgather_bprop(prim: _MiniStepAllGather, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """Mini-step accumulation: z += dout (written into the Parameter z in place, by an
    Assign), then this rank's slice of z reduced over the group (× 1/rank_size when
    mean_flag). z gets no gradient. z must be a Parameter of x's gathered shape. A training
    step uses the reduced slice only on the k-th mini-step (on the others it is dead code,
    so only the Assign runs) and clears z after it."""
    from msops.primitives.state_ops import Assign      # state_ops imports math_ops
    z = _accumulation_buffer(prim, inputs[1])
    total = g.apply(Assign(), [z, g.apply(Add(), [z, dout])])
    return _scaled_slice(prim, total, g), None


@bprop(_MicroStepAllGather)
def microstep_allgather_bprop(prim: _MicroStepAllGather, inputs: list, out: Any, dout: Any,
                              g: Any) -> tuple:
    """Micro-step accumulation: dout is the gradient accumulated over the step's
    micro-batches (they all read this one gather and autodiff sums their gradients); it is
    written into the Parameter z (an Assign: z holds the step's accumulated gradient,
    restarted every step, where MindSpore adds each micro-batch into z), and z's
    reduce-scatter over the group (× 1/rank_size when mean_flag) is x's gradient: one
    ReduceScatter a step. z gets no gradient; it must be a Parameter of x's gathered shape."""
    from msops.primitives.state_ops import Assign      # state_ops imports math_ops
    z = _accumulation_buffer(prim, inputs[1])
    return _scaled_slice(prim, g.apply(Assign(), [z, dout]), g), None


@bprop(AllReduce)
def allreduce_bprop(prim: AllReduce, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """sum: AllReduce(sum) of dout. max/min: that, masked where x is the result (every tied
    rank gets it, as MindSpore's). prod: that, times out / x (x must be non-zero)."""
    if prim.op not in (ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PROD):
        raise no_backward(prim, f"for op '{prim.op}' (only sum, max, min and prod)")
    x = inputs[0]
    summed = g.apply(_fused_as(AllReduce(ReduceOp.SUM, prim.group), prim), [dout])
    if prim.op == ReduceOp.SUM:
        return (summed,)
    if prim.op == ReduceOp.PROD:
        return (g.apply(Mul(), [summed, g.apply(RealDiv(), [out, x])]),)
    mask = g.apply(Cast(), [g.apply(Equal(), [x, out]), g.add_const(x.dtype)])
    return (g.apply(Mul(), [summed, mask]),)


@bprop(ReduceScatter)
def reduce_scatter_bprop(prim: ReduceScatter, inputs: list, out: Any, dout: Any,
                         g: Any) -> tuple:
    """sum: AllGather of dout (every rank's rows reach every rank)."""
    if prim.op != ReduceOp.SUM:
        raise no_backward(prim, f"for op '{prim.op}' (only sum)")
    return (g.apply(_fused_as(AllGather(prim.group), prim), [dout]),)


@bprop(AlltoAll)
def alltoall_bprop(prim: AlltoAll, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """AlltoAll with split and concat dims swapped sends every block back."""
    back = AlltoAll(prim.split_count, split_dim=prim.concat_dim, concat_dim=prim.split_dim,
                    group=prim.group)
    return (g.apply(back, [dout]),)


@bprop(Broadcast)
def broadcast_bprop(prim: Broadcast, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """Every rank's gradient summed onto the root (Reduce(sum)); the other ranks' inputs
    were never read, so they get zeros. (MindSpore's rule returns dout unchanged, which is
    the gradient of the root's input only when the loss is computed on the root alone.)"""
    is_root = prim._my_rank() == prim.root_rank
    xs = inputs[0]
    grads = []
    for k, d in enumerate(dout):
        summed = g.apply(Reduce(prim.root_rank, ReduceOp.SUM, prim.group), [d])
        grads.append(_kept_on(g, is_root, summed, _Like(xs.shape[k], xs.dtype[k])))
    return (grads,)


@bprop(Reduce)
def reduce_bprop(prim: Reduce, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """sum: the destination's dout broadcast back to every rank."""
    if prim.op != ReduceOp.SUM:
        raise no_backward(prim, f"for op '{prim.op}' (only sum)")
    x = inputs[0]
    mine = dout if prim._my_rank() == prim.dest_rank else zeros(g, x.shape, x.dtype)
    sent = g.apply(Broadcast(prim.dest_rank, prim.group), [g.make_tuple([mine])])
    return (g.getitem(sent, 0),)


@bprop(CollectiveGather)
def collective_gather_bprop(prim: CollectiveGather, inputs: list, out: Any, dout: Any,
                            g: Any) -> tuple:
    """The destination's dout scattered back: each rank gets its own rows."""
    x = inputs[0]
    full = (x.shape[0] * prim.rank_size,) + tuple(x.shape[1:])
    mine = dout if prim._my_rank() == prim.dest_rank else zeros(g, full, x.dtype)
    return (g.apply(CollectiveScatter(prim.dest_rank, prim.group), [mine]),)


@bprop(CollectiveScatter)
def collective_scatter_bprop(prim: CollectiveScatter, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """Every rank's dout gathered onto the source (the only input read); zeros elsewhere."""
    gathered = g.apply(CollectiveGather(prim.src_rank, prim.group), [dout])
    return (_kept_on(g, prim._my_rank() == prim.src_rank, gathered, inputs[0]),)


@bprop(Barrier)
def barrier_bprop(prim: Barrier, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    return ()


@bprop(Send)
def send_bprop(prim: Send, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The gradient comes back from the destination over the same pair (plus dout: Send's
    output is x itself)."""
    x = inputs[0]
    back = _effectful(Receive(prim.sr_tag, prim.dest_rank, tuple(x.shape), x.dtype, prim.group))
    return (g.apply(Add(), [dout, g.apply(back, [])]),)


@bprop(Receive)
def receive_bprop(prim: Receive, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dout goes back to the source over the same pair; the optional input gets none."""
    g.apply(_effectful(Send(prim.sr_tag, prim.src_rank, prim.group)), [dout])
    return (None,) * len(inputs)


# -- fusion rules -------------------------------------------------------------------------------
# Independent applications with a `fusion` id > 0 and equal keys become one collective on a
# packed buffer (primitives/comm_fusion.py; the pass is graph/fusion.py). The pass runs after
# autodiff, so an op whose attributes matter only to its backward rule (mean_flag, the
# accumulation gathers' z) fuses by what its forward does.
declare_without("fusion", Collective,
                reason="its data are not one block per rank that a packed buffer can carry "
                       "(rooted, pairwise, count-driven or data-less collectives do not fuse)")


def _fusible(x: Any) -> bool:
    return not x.is_tuple and len(x.shape) > 0 and all(d >= 0 for d in x.shape)


def _in_bytes(x: Any) -> int:
    return int(np.prod(x.shape, dtype=np.int64)) * x.dtype.itemsize


@fusion_rule(AllGather, _AccumulationAllGather)
def allgather_fusion(prim: Collective, node: Any) -> CommFusion | None:
    """Gathers over one group and dtype: one AllGather of the flat-packed pieces, each
    piece cut back out of the rank-major result."""
    x = node.inputs[0]
    if not _fusible(x):
        return None
    return CommFusion("allgather", ("AllGather", prim.group, x.dtype), _in_bytes(x),
                      _fused_allgather)


def _fused_allgather(g: Any, nodes: list) -> list:
    first = nodes[0].prim
    packed = pack_flat(g, [n.inputs[0] for n in nodes])
    gathered = g.apply(_fused_as(AllGather(first.group), first), [packed])
    return unpack_rank_major(g, gathered, first.rank_size, [n.shape for n in nodes])


@fusion_rule(ReduceScatter)
def reduce_scatter_fusion(prim: ReduceScatter, node: Any) -> CommFusion | None:
    """Reduce-scatters with one op, group and dtype: one ReduceScatter of the pieces packed
    block-major, this rank's block of each piece cut back out."""
    x = node.inputs[0]
    if not _fusible(x):
        return None
    return CommFusion("reducescatter", ("ReduceScatter", prim.op, prim.group, x.dtype),
                      _in_bytes(x), _fused_reduce_scatter)


def _fused_reduce_scatter(g: Any, nodes: list) -> list:
    first = nodes[0].prim
    packed = pack_block_major(g, [n.inputs[0] for n in nodes], first.rank_size)
    scattered = g.apply(_fused_as(ReduceScatter(first.op, first.group), first), [packed])
    return unpack_flat(g, scattered, [n.shape for n in nodes])


@fusion_rule(AllReduce)
def allreduce_fusion(prim: AllReduce, node: Any) -> CommFusion | None:
    """All-reduces with one op, group and dtype: one AllReduce of the flat-packed pieces."""
    x = node.inputs[0]
    if not _fusible(x):
        return None
    return CommFusion("allreduce", ("AllReduce", prim.op, prim.group, x.dtype), _in_bytes(x),
                      _fused_allreduce)


def _fused_allreduce(g: Any, nodes: list) -> list:
    first = nodes[0].prim
    packed = pack_flat(g, [n.inputs[0] for n in nodes])
    summed = g.apply(_fused_as(AllReduce(first.op, first.group), first), [packed])
    return unpack_flat(g, summed, [n.shape for n in nodes])
