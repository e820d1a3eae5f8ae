"""`mindspore.ops.communication` (MindSpore 2.9+), whose collectives `mindspore.ops` exports
too: in MindSpore 2.10 they are mint.distributed's torch-style functions (results written
into the caller's Tensors, a CommHandle or None returned), so this namespace is msops's
`mint.distributed` itself, not a third family; `set_comm_ops_inplace(False)` gives
all_reduce, all_gather_into_tensor, reduce_scatter_tensor and all_to_all_single their
returning form, (Tensor, CommHandle or None).

`mindspore.ops` also exports them (`OPS_NAMES`, attached by the package, msops/__init__.py:
this module sits in the mint layer, above ops), except `gather` and `scatter`, which in
`msops.ops` stay the array ops (`ops.gather(input_params, input_indices, axis)`); the
collectives of those names are `msops.ops.communication.gather` / `.scatter`.

MindSpore 2.10's `ops.communication` also has `gather_into_tensor`, `scatter_tensor` and
`all_to_all_v_c` (mint.distributed has not): they are here, torch-style like the rest,
over CollectiveGather, comm_func's scatter and the AllToAllV exchange.
"""
from __future__ import annotations

from typing import Any

from msops.common.tensor import Tensor, check_tensor
from msops.communication import comm_func
from msops.communication._comm_call import (CommHandle, check_async, collective, group_rank,
                                            handle, member_group, single_exchange)
from msops.mint.distributed import *  # noqa: F401,F403
from msops.mint.distributed import P2POp, __all__ as _distributed_all  # noqa: F401
from msops.mint.distributed._inplace import set_comm_ops_inplace, write
from msops.primitives.comm_ops import CollectiveGather

__all__ = list(_distributed_all) + ["P2POp", "set_comm_ops_inplace", "gather_into_tensor",
                                    "scatter_tensor", "all_to_all_v_c"]

#: the names `msops.ops` takes from here: MindSpore 2.10's communication functions in
#: `mindspore.ops`, less those that mean array ops there
OPS_NAMES = tuple(n for n in __all__ if n not in ("gather", "scatter", "ReduceOp", "CommHandle"))


def gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, dst: int = 0,
                       group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """On global rank `dst`, output_tensor := every rank's input_tensor concatenated along
    dim 0 in group-rank order (N*x1, ...); the other ranks' output_tensor is left as it is."""
    api = "gather_into_tensor"
    check_tensor(api, "output_tensor", output_tensor)
    check_tensor(api, "input_tensor", input_tensor)
    check_async(api, async_op)
    g = member_group(api, group)
    root = group_rank(api, "dst", dst, g)
    if not input_tensor.shape:
        raise ValueError(f"For '{api}', the 'input_tensor' should have rank >= 1, but got a "
                         f"0-d Tensor.")
    # side_effect_io: a compiled graph keeps the gather on the ranks that do not read it
    prim = collective(CollectiveGather, g, dest_rank=root).add_prim_attr("side_effect_io", True)
    got = prim(input_tensor)
    if g.rank == root:
        write(api, "output_tensor", output_tensor, got)
    return handle(async_op)


def scatter_tensor(output_tensor: Tensor, input_tensor: Tensor, src: int = 0,
                   group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """output_tensor := group rank i's slice of global rank `src`'s input_tensor split evenly
    along dim 0 (every rank passes an input_tensor of one shape; only src's is read)."""
    api = "scatter_tensor"
    check_tensor(api, "output_tensor", output_tensor)
    check_tensor(api, "input_tensor", input_tensor)
    check_async(api, async_op)
    write(api, "output_tensor", output_tensor, comm_func.scatter_tensor(input_tensor, src, group))
    return handle(async_op)


def all_to_all_v_c(output: Tensor, input: Tensor, send_count_matrix: Any,
                   group: str | None = None, async_op: bool = False) -> CommHandle | None:
    """send_count_matrix[i*N + j] rows of rank i's input go to rank j (N the group's size,
    rows counted along dim 0, in rank order): input has sum(row `rank`) rows, and
    output := the rows every rank sends here, in rank order (sum(column `rank`) rows; the
    other dims those of input). One AllToAllV; every rank passes the same matrix (ranks
    whose counts disagree raise the same ValueError)."""
    api = "all_to_all_v_c"
    check_tensor(api, "output", output)
    check_tensor(api, "input", input)
    check_async(api, async_op)
    g = member_group(api, group)
    n, me = g.size, g.rank
    counts = _count_matrix(api, send_count_matrix, n)
    sends, recvs = counts[me * n:(me + 1) * n], counts[me::n]
    for arg, t, rows, what in (("input", input, sends, f"row {me}"),
                               ("output", output, recvs, f"column {me}")):
        if not t.shape or t.shape[0] != sum(rows):
            raise ValueError(f"For '{api}', the '{arg}' dim 0 should be the sum of "
                             f"'send_count_matrix' {what} (this rank's): {sum(rows)} "
                             f"{list(rows)}, but got shape {list(t.shape)}.")
    got = single_exchange(api, tuple(output.shape), input, recvs, sends, g)
    write(api, "output", output, got)
    return handle(async_op)


def _count_matrix(api: str, value: Any, n: int) -> tuple:
    """send_count_matrix as N*N non-negative ints (a flat list or tuple, or an int Tensor)."""
    if isinstance(value, Tensor):
        value = value.asnumpy().reshape(-1).tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"For '{api}', the 'send_count_matrix' should be a list of ints, but "
                        f"got {type(value).__name__}.")
    if len(value) != n * n or any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                  for v in value):
        raise ValueError(f"For '{api}', the 'send_count_matrix' should be {n * n} "
                         f"non-negative ints (group size {n} squared, rank i's sends to rank j "
                         f"at i*{n}+j), but got {list(value)}.")
    return tuple(value)
