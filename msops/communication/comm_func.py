"""`mindspore.communication.comm_func` (MindSpore 2.4-2.8): collectives as functions that
return new Tensors, each a thin wrapper over one of msops's communication primitives.

Every reducing/gathering call returns `(Tensor, CommHandle or None)` like MindSpore's;
`reduce`, `broadcast`, `gather_into_tensor`, `scatter_tensor` and `recv` return the Tensor
alone, `barrier` and `send` None, `isend` a handle. `src`/`dst`/`peer` are global ranks.
msops's collectives complete before they return, so `async_op=True` gives a handle whose
`wait()` returns at once. The calls work eagerly and while a graph is traced (ms.jit,
GRAPH_MODE), where the handles are None-or-completed too.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor
from msops.communication._comm_call import (CommHandle, check_async, check_divisible, check_peer,
                                            check_tensor, check_tensors, collective, exchange_lists,
                                            group_rank, handle, irecv_from, isend_to,
                                            member_group, member_rank, point_to_point,
                                            recv_from, reducing, resolve_group, send_to,
                                            shape_of, single_exchange)
from msops.communication.group import Group
from msops.communication.management import GlobalComm
from msops.primitives.collective import ReduceOp
from msops.primitives.comm_ops import (AllGather, AllReduce, Barrier, Broadcast,
                                       CollectiveGather, CollectiveScatter, Receive, Reduce,
                                       ReduceScatter, Send)

__all__ = ["all_reduce", "all_gather_into_tensor", "all_to_all_with_output_shape",
           "all_to_all_single_with_output_shape", "barrier", "broadcast", "gather_into_tensor",
           "isend", "irecv", "reduce_scatter_tensor", "reduce", "scatter_tensor", "send",
           "recv", "P2POp", "batch_isend_irecv", "CommHandle"]

_WORLD = GlobalComm.WORLD_COMM_GROUP


def _rows(api: str, tensor: Tensor) -> None:
    """The gathering/scattering calls work along dim 0: a 0-d Tensor has none."""
    if not tensor.shape:
        raise ValueError(f"For '{api}', the 'tensor' should have rank >= 1, but got a 0-d "
                         f"Tensor.")


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: str = _WORLD,
               async_op: bool = False) -> tuple:
    """Reduce `tensor` with `op` over `group`; every rank gets the result.
    Returns (Tensor of tensor's shape, CommHandle or None)."""
    op, g = reducing("all_reduce", "tensor", tensor, op, group, async_op)
    return collective(AllReduce, g, op=op)(tensor), handle(async_op)


def all_gather_into_tensor(tensor: Tensor, group: str = _WORLD, async_op: bool = False) -> tuple:
    """Every rank's `tensor` concatenated along dim 0 in group-rank order: (N*x1, x2, ...).
    Returns (Tensor, CommHandle or None)."""
    api = "all_gather_into_tensor"
    check_tensor(api, "tensor", tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    _rows(api, tensor)
    return collective(AllGather, g)(tensor), handle(async_op)


def reduce_scatter_tensor(tensor: Tensor, op: str = ReduceOp.SUM, group: str = _WORLD,
                          async_op: bool = False) -> tuple:
    """Reduce `tensor` with `op` over `group`; group rank i keeps rows [i*x1/N, (i+1)*x1/N)
    of the result. x1 must divide by N. Returns (Tensor (x1/N, ...), CommHandle or None)."""
    api = "reduce_scatter_tensor"
    op, g = reducing(api, "tensor", tensor, op, group, async_op)
    _rows(api, tensor)
    check_divisible(api, "tensor", tensor, g.size)
    return collective(ReduceScatter, g, op=op)(tensor), handle(async_op)


def reduce(tensor: Tensor, dst: int, op: str = ReduceOp.SUM, group: str = _WORLD) -> Tensor:
    """Reduce `tensor` with `op` over `group` onto global rank `dst`, which gets the result;
    every other rank gets a meaningless zeros Tensor of shape [1] (as MindSpore's)."""
    api = "reduce"
    op, g = reducing(api, "tensor", tensor, op, group)
    root = group_rank(api, "dst", dst, g)
    return collective(Reduce, g, dest_rank=root, op=op)(tensor)


def broadcast(tensor: Tensor, src: int = 0, group: str = _WORLD) -> Tensor:
    """Global rank `src`'s `tensor` on every rank of `group` (every rank passes a Tensor of
    the same shape and dtype; only src's values are read)."""
    api = "broadcast"
    check_tensor(api, "tensor", tensor)
    g = member_group(api, group)
    root = group_rank(api, "src", src, g)
    return collective(Broadcast, g, root_rank=root)((tensor,))[0]


def gather_into_tensor(tensor: Tensor, dst: int = 0, group: str = _WORLD) -> Tensor:
    """Every rank's `tensor` concatenated along dim 0 on global rank `dst`; every other rank
    gets a meaningless zeros Tensor of shape [1] (as MindSpore's)."""
    api = "gather_into_tensor"
    check_tensor(api, "tensor", tensor)
    g = member_group(api, group)
    root = group_rank(api, "dst", dst, g)
    _rows(api, tensor)
    return collective(CollectiveGather, g, dest_rank=root)(tensor)


def scatter_tensor(tensor: Tensor, src: int = 0, group: str = _WORLD) -> Tensor:
    """Global rank `src`'s `tensor` split evenly along dim 0: group rank i gets the i-th of
    N slices (every rank passes a Tensor of the same shape; only src's values are read)."""
    api = "scatter_tensor"
    check_tensor(api, "tensor", tensor)
    g = member_group(api, group)
    root = group_rank(api, "src", src, g)
    _rows(api, tensor)
    check_divisible(api, "tensor", tensor, g.size)
    return collective(CollectiveScatter, g, src_rank=root)(tensor)


def barrier(group: str = _WORLD) -> None:
    """Block until every rank of `group` has called it."""
    api = "barrier"
    g = member_group(api, group)
    collective(Barrier, g)()


def send(tensor: Tensor, dst: int = 0, group: str = _WORLD, tag: int = 0) -> None:
    """Send `tensor` to global rank `dst`, matched there by a recv with the same `tag`."""
    send_to("send", tensor, dst, group, tag)


def recv(tensor: Tensor, src: int = 0, group: str = _WORLD, tag: int = 0) -> Tensor:
    """Receive from global rank `src` a Tensor of `tensor`'s shape and dtype (its values are
    not read). A message of another size is a ValueError."""
    return recv_from("recv", tensor, src, group, tag)


def isend(tensor: Tensor, dst: int = 0, group: str = _WORLD, tag: int = 0) -> CommHandle:
    """Start sending `tensor` to global rank `dst` (MPI's Isend) and return its CommHandle:
    the caller goes on (two ranks may isend to each other, then recv) and `wait()`
    completes the send. In a compiled function it is the graph's (blocking) Send."""
    return isend_to("isend", tensor, dst, group, tag)


def irecv(tensor: Tensor, src: int = 0, group: str = _WORLD, tag: int = 0) -> tuple:
    """Start receiving from global rank `src` a Tensor of `tensor`'s shape and dtype:
    (Tensor, CommHandle). The Tensor holds the message once `wait()` has returned."""
    return irecv_from("irecv", tensor, src, group, tag)


def all_to_all_single_with_output_shape(output_shape: Any, tensor: Tensor,
                                        output_split_sizes: Any = None,
                                        input_split_sizes: Any = None, group: Any = None,
                                        async_op: bool = False) -> tuple:
    """Rows of `tensor` split by `input_split_sizes` (None: evenly) go to the group's ranks
    in order; the rows received, split by `output_split_sizes`, make a Tensor of
    `output_shape` (a shape or a Tensor of that shape). Returns (Tensor, CommHandle or None).
    Sizes that disagree across ranks raise the same ValueError on every rank."""
    api = "all_to_all_single_with_output_shape"
    check_tensor(api, "tensor", tensor)
    out_shape = shape_of(api, "output_shape", output_shape)
    check_async(api, async_op)
    g = member_group(api, group)
    return (single_exchange(api, out_shape, tensor, output_split_sizes, input_split_sizes, g),
            handle(async_op))


def all_to_all_with_output_shape(output_shape_list: Sequence[Any],
                                 input_tensor_list: Sequence[Tensor], group: Any = None,
                                 async_op: bool = False) -> tuple:
    """input_tensor_list[j] goes to group rank j; what rank j sends here comes back shaped
    output_shape_list[j] (shapes or Tensors of those shapes). Every input has one dtype.
    Returns (tuple of Tensors, CommHandle or None)."""
    api = "all_to_all_with_output_shape"
    check_async(api, async_op)
    g = member_group(api, group)
    sends = check_tensors(api, "input_tensor_list", input_tensor_list, g.size)
    if not isinstance(output_shape_list, (list, tuple)):
        raise TypeError(f"For '{api}', the 'output_shape_list' should be a list or tuple, but "
                        f"got {type(output_shape_list).__name__}.")
    if len(output_shape_list) != g.size:
        raise ValueError(f"For '{api}', the length of 'output_shape_list' should be the group "
                         f"size {g.size}, but got {len(output_shape_list)}.")
    shapes = [shape_of(api, f"output_shape_list[{i}]", s) for i, s in enumerate(output_shape_list)]
    return tuple(exchange_lists(api, g, sends, shapes)), handle(async_op)


class P2POp:
    """One send or receive of `batch_isend_irecv`: `op` is "isend"/"irecv" (or the functions
    isend/irecv), `tensor` the Tensor to send or to receive like (or, for irecv, a shape
    with `recv_dtype`), `peer` a global rank. `tag` must be 0, as MindSpore's."""

    def __init__(self, op: str | Callable, tensor: Any, peer: int, group: Any = None,
                 tag: int = 0, *, recv_dtype: mstype.Type | None = None) -> None:
        api = "P2POp"
        name = op if isinstance(op, str) else getattr(op, "__name__", None)
        if name not in ("isend", "irecv"):
            raise ValueError(f"For '{api}', the 'op' should be 'isend', 'irecv' or one of those "
                             f"functions, but got {op!r}.")
        if not isinstance(tensor, (Tensor, tuple)):
            raise TypeError(f"For '{api}', the 'tensor' should be a Tensor or (for irecv) a "
                            f"shape tuple, but got {type(tensor).__name__}.")
        if isinstance(tensor, tuple):
            if name == "isend":
                raise TypeError(f"For '{api}', an 'isend' should send a Tensor, but got the "
                                f"shape {tensor}.")
            shape_of(api, "tensor", tensor)
            if not isinstance(recv_dtype, mstype.Type):
                raise TypeError(f"For '{api}', an 'irecv' of a shape needs 'recv_dtype' (an "
                                f"msops dtype), but got {recv_dtype!r}.")
        if not isinstance(peer, int) or isinstance(peer, bool):
            raise TypeError(f"For '{api}', the 'peer' should be an int, but got "
                            f"{type(peer).__name__}.")
        if tag != 0:
            raise NotImplementedError(f"For '{api}', the 'tag' should be 0 (tags are not "
                                      f"supported, as in MindSpore), but got {tag!r}.")
        self.op, self.tensor, self.peer, self.group, self.tag = name, tensor, peer, group, tag
        self.recv_dtype = recv_dtype

    def __repr__(self) -> str:
        return f"P2POp({self.op!r}, peer={self.peer}, group={self.group!r})"


def batch_isend_irecv(p2p_op_list: list) -> tuple:
    """Run a list of P2POps, all over one group; returns one Tensor per op: the Tensor
    received for an irecv, a meaningless 0-d zero of the sent dtype for an isend.

    The ops run in an order that cannot deadlock whatever the ranks' lists are (as long as
    they match): each rank takes its peers in increasing order of the pair (lower rank,
    higher rank), and within a pair the lower rank sends first. Messages between two ranks
    keep their list order on both sides."""
    api = "batch_isend_irecv"
    if not isinstance(p2p_op_list, list):
        raise TypeError(f"For '{api}', the 'p2p_op_list' should be a list of P2POp, but got "
                        f"{type(p2p_op_list).__name__}.")
    if not p2p_op_list:
        raise ValueError(f"For '{api}', the 'p2p_op_list' should not be empty.")
    for i, p in enumerate(p2p_op_list):
        if not isinstance(p, P2POp):
            raise TypeError(f"For '{api}', the 'p2p_op_list[{i}]' should be a P2POp, but got "
                            f"{type(p).__name__}.")
    groups = {p.group for p in p2p_op_list}
    if len({resolve_group(api, grp).name for grp in groups}) > 1:
        raise ValueError(f"For '{api}', every P2POp should use one group, but got "
                         f"{sorted(str(grp) for grp in groups)}.")
    g = resolve_group(api, p2p_op_list[0].group)
    me = member_rank(api, g)
    peers = [check_peer(api, "peer", group_rank(api, "peer", p.peer, g), g)
             for p in p2p_op_list]
    results: list = [None] * len(p2p_op_list)
    for peer in sorted(set(peers), key=lambda q: (min(me, q), max(me, q))):
        mine = [i for i, q in enumerate(peers) if q == peer]
        sends = [i for i in mine if p2p_op_list[i].op == "isend"]
        recvs = [i for i in mine if p2p_op_list[i].op == "irecv"]
        for i in (sends + recvs if me < peer else recvs + sends):
            results[i] = _run_p2p(p2p_op_list[i], peer, g)
    return tuple(results)


def _run_p2p(p: P2POp, peer: int, g: Group) -> Tensor:
    if p.op == "isend":
        point_to_point(Send, g, sr_tag=0, dest_rank=peer)(p.tensor)
        return Tensor(np.zeros((), p.tensor.dtype.np_dtype))
    shape, dtype = ((tuple(p.tensor.shape), p.tensor.dtype) if isinstance(p.tensor, Tensor)
                    else (tuple(p.tensor), p.recv_dtype))
    return point_to_point(Receive, g, sr_tag=0, src_rank=peer, shape=shape, dtype=dtype)()
