"""mint.distributed's uneven collectives (MindSpore 2.7+): the gather and reduce-scatter of
pieces of different dim-0 sizes, written into the caller's output Tensor.

Each is one AllGatherV / ReduceScatterV of the flattened rows (split sizes in rows times
the elements of one row). An argument error found on one rank only (its output's or
input's dim 0 against the split sizes) is raised on every rank of the group, as the
primitives' own errors are (`fail_together`): no rank is left waiting in the call.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from msops.common.tensor import Tensor
from msops.communication._comm_call import (CommHandle, check_async, check_tensor, collective,
                                            fail_together, handle, member_group, reducing,
                                            row_splits)
from msops.mint.distributed._inplace import write
from msops.ops.array_func import reshape
from msops.primitives.collective import ReduceOp
from msops.primitives.comm_ops import AllGatherV, ReduceScatterV

__all__ = ["all_gather_into_tensor_uneven", "reduce_scatter_tensor_uneven"]


def _checked(prim: Any, check: Callable[[], Any]) -> Any:
    """check()'s value; its TypeError/ValueError raised on every rank of prim's group."""
    try:
        return check()
    except (TypeError, ValueError) as err:
        fail_together(prim, err)


def _rows_of(api: str, arg: str, t: Tensor) -> None:
    if not t.shape:
        raise ValueError(f"For '{api}', the '{arg}' should have rank >= 1, but got a 0-d "
                         f"Tensor.")


def _same_rows(api: str, output: Tensor, input: Tensor, rows: int) -> None:
    """output is (rows, *input.shape[1:])."""
    want = (rows,) + tuple(input.shape[1:])
    if tuple(output.shape) != want:
        raise ValueError(f"For '{api}', the 'output' should have shape {list(want)}, but got "
                         f"{list(output.shape)}.")


def _run(api: str, prim: Any, rows: tuple, output: Tensor, input: Tensor,
         async_op: bool) -> CommHandle | None:
    """output := prim on input's flattened rows, the split sizes `rows` in elements."""
    block = int(np.prod(input.shape[1:], dtype=np.int64))
    got = prim(reshape(input, (-1,)), tuple(r * block for r in rows))
    write(api, "output", output, reshape(got, tuple(output.shape)))
    return handle(async_op)


def all_gather_into_tensor_uneven(output: Tensor, input: Tensor,
                                  output_split_sizes: list | None = None,
                                  group: str | None = None,
                                  async_op: bool = False) -> CommHandle | None:
    """output := every rank's input concatenated along dim 0; rank i's input has
    output_split_sizes[i] rows (None: output's dim 0 split evenly over the group).
    output is (sum(output_split_sizes), *input.shape[1:])."""
    api = "all_gather_into_tensor_uneven"
    check_tensor(api, "output", output)
    check_tensor(api, "input", input)
    check_async(api, async_op)
    g = member_group(api, group)
    prim = collective(AllGatherV, g)

    def sizes() -> tuple:
        _rows_of(api, "input", input)
        _rows_of(api, "output", output)
        rows = row_splits(api, "output_split_sizes", output_split_sizes, output.shape[0],
                          g.size)
        if rows[g.rank] != input.shape[0]:
            raise ValueError(f"For '{api}', the 'input' dim 0 should be "
                             f"output_split_sizes[{g.rank}] = {rows[g.rank]} (this rank's "
                             f"piece), but got shape {list(input.shape)}.")
        _same_rows(api, output, input, sum(rows))
        return rows
    return _run(api, prim, _checked(prim, sizes), output, input, async_op)


def reduce_scatter_tensor_uneven(output: Tensor, input: Tensor,
                                 input_split_sizes: list | None = None,
                                 op: str = ReduceOp.SUM, group: str | None = None,
                                 async_op: bool = False) -> CommHandle | None:
    """output := this rank's piece of `input` reduced with `op` over the group: group rank
    i's piece is input_split_sizes[i] rows (None: input's dim 0 split evenly), so output
    is (input_split_sizes[rank], *input.shape[1:]). input has the same shape everywhere."""
    api = "reduce_scatter_tensor_uneven"
    check_tensor(api, "output", output)
    op, g = reducing(api, "input", input, op, group, async_op)
    prim = collective(ReduceScatterV, g, op=op)

    def sizes() -> tuple:
        _rows_of(api, "input", input)
        rows = row_splits(api, "input_split_sizes", input_split_sizes, input.shape[0], g.size)
        _same_rows(api, output, input, rows[g.rank])
        return rows
    return _run(api, prim, _checked(prim, sizes), output, input, async_op)
