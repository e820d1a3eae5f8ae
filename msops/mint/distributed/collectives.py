"""mint.distributed's collectives (MindSpore 2.5+, torch.distributed's calling convention):
results are written into the caller's Tensors and a call returns None, or a completed
CommHandle when `async_op=True` (msops's collectives finish before they return). `src`
and `dst` are global ranks; `group` is a group name (None: the world).

Each call runs msops's communication primitives through `communication._comm_call`, so
ranks whose calls differ get the same error, the watchdog times every call, and a
simulated world refuses to move data. An output Tensor of the wrong shape or dtype is
reported after the collective has run, so a mistake on one rank never blocks the others.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common.tensor import Tensor
from msops.communication import comm_func
from msops.communication._comm_call import (CommHandle, check_async, check_divisible, check_op,
                                            check_tensor, check_tensors, collective, exchange_lists,
                                            group_rank, handle, irecv_from, isend_to,
                                            member_group, recv_from, reducing, root_checked,
                                            send_to, shape_of, single_exchange, split_rows)
from msops.mint.distributed._inplace import is_inplace, result, write, write_list
from msops.ops.array_func import reshape, stack
from msops.primitives.collective import ReduceOp
from msops.primitives.comm_ops import (AllGather, AllReduce, Barrier, Broadcast,
                                       CollectiveGather, CollectiveScatter, Reduce,
                                       ReduceScatter)

__all__ = ["all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "reduce", "broadcast", "scatter", "gather", "all_to_all",
           "all_to_all_single", "barrier", "send", "recv", "isend", "irecv", "P2POp",
           "batch_isend_irecv"]


def _as_rows(t: Tensor) -> Tensor:
    """t as one row of a dim-0 collective: (1, *t.shape)."""
    return reshape(t, (1,) + tuple(t.shape))


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: str | None = None,
               async_op: bool = False) -> CommHandle | tuple | None:
    """tensor := its reduction with `op` over `group`, on every rank (returning form:
    (the reduction, handle))."""
    api = "all_reduce"
    op, g = reducing(api, "tensor", tensor, op, group, async_op)
    return result(api, "tensor", tensor, collective(AllReduce, g, op=op)(tensor), async_op)


def all_gather(tensor_list: list, tensor: Tensor, group: str | None = None,
               async_op: bool = False) -> CommHandle | None:
    """tensor_list[i] := group rank i's `tensor` (tensor_list holds one Tensor per rank)."""
    api = "all_gather"
    check_tensor(api, "tensor", tensor)
    targets = check_tensors(api, "tensor_list", tensor_list)
    check_async(api, async_op)
    g = member_group(api, group)
    got = collective(AllGather, g)(_as_rows(tensor))
    write_list(api, "tensor_list", targets, split_rows(got, g.size, tuple(tensor.shape)))
    return handle(async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: str | None = None,
                           async_op: bool = False) -> CommHandle | tuple | None:
    """output_tensor := every rank's input concatenated along dim 0, (N*x1, ...), or
    stacked, (N, x1, ...): the output's shape decides (returning form: (the concatenation,
    handle), output_tensor unused)."""
    api = "all_gather_into_tensor"
    inplace = is_inplace(api)
    if inplace:
        check_tensor(api, "output_tensor", output_tensor)
    check_tensor(api, "input_tensor", input_tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    got = collective(AllGather, g)(_as_rows(input_tensor))       # (N, *input shape)
    allowed = ((g.size,) + tuple(input_tensor.shape),
               (g.size * input_tensor.shape[0],) + tuple(input_tensor.shape[1:])
               if input_tensor.shape else (g.size,))
    if not inplace:
        return reshape(got, allowed[1]), handle(async_op)
    if tuple(output_tensor.shape) not in allowed:
        raise ValueError(f"For '{api}', the 'output_tensor' should have shape "
                         f"{list(allowed[1])} or {list(allowed[0])}, but got "
                         f"{list(output_tensor.shape)}.")
    write(api, "output_tensor", output_tensor, got)
    return handle(async_op)


def _reduce_scatter(api: str, output: Tensor, rows: Tensor, op: str, g: Any) -> None:
    """output := this rank's row block of `rows` (N blocks along dim 0) reduced over g."""
    got = collective(ReduceScatter, g, op=op)(rows)
    write(api, "output", output, got)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: str = ReduceOp.SUM,
                          group: str | None = None,
                          async_op: bool = False) -> CommHandle | tuple | None:
    """output := group rank i's block i of `input` (dim 0 split in N) reduced over the
    group. input is (N*x1, ...) or (N, *output shape) (returning form: (the block
    (x1, ...), handle), output unused)."""
    api = "reduce_scatter_tensor"
    if is_inplace(api):
        check_tensor(api, "output", output)
    op, g = reducing(api, "input", input, op, group, async_op)
    check_divisible(api, "input", input, g.size)
    if not is_inplace(api):
        return collective(ReduceScatter, g, op=op)(input), handle(async_op)
    _reduce_scatter(api, output, input, op, g)
    return handle(async_op)


def reduce_scatter(output: Tensor, input_list: list, op: str = ReduceOp.SUM,
                   group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """output := input_list[i] reduced over the group, on group rank i (input_list holds
    one Tensor of output's shape per rank)."""
    api = "reduce_scatter"
    check_tensor(api, "output", output)
    g = member_group(api, group)
    inputs = check_tensors(api, "input_list", input_list, g.size)
    op = check_op(api, op, inputs[0].dtype)
    check_async(api, async_op)
    _reduce_scatter(api, output, stack(inputs), op, g)
    return handle(async_op)


def reduce(tensor: Tensor, dst: int, op: str = ReduceOp.SUM, group: str | None = None,
           async_op: bool = False) -> CommHandle | None:
    """On global rank `dst`, tensor := the reduction over the group; elsewhere unchanged."""
    api = "reduce"
    op, g = reducing(api, "tensor", tensor, op, group, async_op)
    root = group_rank(api, "dst", dst, g)
    got = collective(Reduce, g, dest_rank=root, op=op)(tensor)
    if g.rank == root:
        write(api, "tensor", tensor, got)
    return handle(async_op)


def broadcast(tensor: Tensor, src: int, group: str | None = None,
              async_op: bool = False) -> CommHandle | None:
    """tensor := global rank `src`'s tensor, on every rank of the group."""
    api = "broadcast"
    check_tensor(api, "tensor", tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    root = group_rank(api, "src", src, g)
    got = collective(Broadcast, g, root_rank=root)((tensor,))[0]
    if g.rank != root:
        write(api, "tensor", tensor, got)
    return handle(async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0,
            group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """On group rank i, tensor := scatter_list[i] of global rank `src` (only src passes the
    list: one Tensor of tensor's shape and dtype per rank)."""
    api = "scatter"
    check_tensor(api, "tensor", tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    root = group_rank(api, "src", src, g)
    shape = (g.size,) + tuple(tensor.shape)

    def pieces() -> list:
        out = check_tensors(api, "scatter_list", scatter_list, g.size)
        for i, p in enumerate(out):
            if p.shape != tensor.shape or p.dtype != tensor.dtype:
                raise ValueError(f"For '{api}', the 'scatter_list[{i}]' should have the "
                                 f"'tensor' shape {list(tensor.shape)} and dtype "
                                 f"{tensor.dtype}, but got {list(p.shape)} and {p.dtype}.")
        return out
    listed = root_checked(api, g, root, pieces)     # the source's list, checked everywhere
    # the other ranks' input gives the shape only
    rows = stack(listed) if g.rank == root else Tensor(np.zeros(shape, tensor.dtype.np_dtype))
    got = collective(CollectiveScatter, g, src_rank=root)(rows)
    write(api, "tensor", tensor, got)
    return handle(async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0,
           group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """On global rank `dst`, gather_list[i] := group rank i's tensor (dst passes one Tensor
    per rank; the others' gather_list is not read)."""
    api = "gather"
    check_tensor(api, "tensor", tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    root = group_rank(api, "dst", dst, g)
    targets = root_checked(api, g, root,
                           lambda: check_tensors(api, "gather_list", gather_list, g.size))
    got = collective(CollectiveGather, g, dest_rank=root)(_as_rows(tensor))
    if targets is not None:
        write_list(api, "gather_list", targets, split_rows(got, g.size, tuple(tensor.shape)))
    return handle(async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: str | None = None,
               async_op: bool = False) -> CommHandle | None:
    """input_tensor_list[j] goes to group rank j; output_tensor_list[j] := what rank j sent
    here (shapes may differ per pair; one dtype). Sizes that disagree across ranks raise
    the same ValueError on every rank."""
    api = "all_to_all"
    check_async(api, async_op)
    g = member_group(api, group)
    outs = check_tensors(api, "output_tensor_list", output_tensor_list, g.size)
    ins = check_tensors(api, "input_tensor_list", input_tensor_list, g.size)
    got = exchange_lists(api, g, ins, [tuple(t.shape) for t in outs])
    write_list(api, "output_tensor_list", outs, got)
    return handle(async_op)


def all_to_all_single(output: Tensor | tuple, input: Tensor, output_split_sizes: Any = None,
                      input_split_sizes: Any = None, group: str | None = None,
                      async_op: bool = False) -> CommHandle | tuple | None:
    """Rows of `input` split by input_split_sizes (None: evenly) go to the group's ranks in
    order; output := the rows received, split by output_split_sizes (returning form:
    (those rows, handle); output is then a Tensor or a shape, giving the result's shape)."""
    api = "all_to_all_single"
    if is_inplace(api):
        check_tensor(api, "output", output)
    out_shape = shape_of(api, "output", output)
    check_tensor(api, "input", input)
    check_async(api, async_op)
    g = member_group(api, group)
    got = single_exchange(api, out_shape, input, output_split_sizes, input_split_sizes, g)
    return result(api, "output", output, got, async_op)


def barrier(group: str | None = None, async_op: bool = False,
            device_ids: Any = None) -> CommHandle | None:
    """Block until every rank of the group has called it (device_ids is unused)."""
    api = "barrier"
    check_async(api, async_op)
    collective(Barrier, member_group(api, group))()
    return handle(async_op)


def send(tensor: Tensor, dst: int = 0, group: str | None = None, tag: int = 0) -> None:
    """Send `tensor` to global rank `dst` (matched by a recv there with the same tag)."""
    send_to("send", tensor, dst, group, tag)


def recv(tensor: Tensor, src: int = 0, group: str | None = None, tag: int = 0) -> int:
    """tensor := the Tensor global rank `src` sends (of tensor's shape and dtype); 0."""
    write("recv", "tensor", tensor, recv_from("recv", tensor, src, group, tag))
    return 0


def isend(tensor: Tensor, dst: int = 0, group: str | None = None, tag: int = 0) -> CommHandle:
    """Start sending `tensor` to global rank `dst` (MPI's Isend); the handle's `wait()`
    completes it, so two ranks may isend to each other and then recv."""
    return isend_to("isend", tensor, dst, group, tag)


def irecv(tensor: Tensor, src: int = 0, group: str | None = None, tag: int = 0) -> CommHandle:
    """Start receiving into `tensor` from global rank `src`: `tensor` holds the message once
    the handle's `wait()` has returned."""
    return irecv_from("irecv", tensor, src, group, tag,
                      lambda got: write("irecv", "tensor", tensor, got))[1]


class P2POp(comm_func.P2POp):
    """One isend/irecv of `batch_isend_irecv`: `op` is "isend"/"irecv" or those functions,
    `tensor` the Tensor sent or received into, `peer` a global rank, `tag` 0."""

    def __init__(self, op: Any, tensor: Tensor, peer: int, group: str | None = None,
                 tag: int = 0) -> None:
        check_tensor("P2POp", "tensor", tensor)
        super().__init__(op, tensor, peer, group, tag)


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Run the P2POps (one group) in comm_func's deadlock-free order; every irecv's Tensor
    := what it received. Returns one completed CommHandle per op."""
    api = "batch_isend_irecv"
    if isinstance(p2p_op_list, list):
        for i, p in enumerate(p2p_op_list):
            if not isinstance(p, P2POp):
                raise TypeError(f"For '{api}', the 'p2p_op_list[{i}]' should be a "
                                f"mint.distributed.P2POp, but got {type(p).__name__}.")
    got = comm_func.batch_isend_irecv(p2p_op_list)
    for i, (p, value) in enumerate(zip(p2p_op_list, got)):
        if p.op == "irecv":
            write(api, f"p2p_op_list[{i}].tensor", p.tensor, value)
    return [CommHandle() for _ in p2p_op_list]
