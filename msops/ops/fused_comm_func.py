"""`ops.all_gather_matmul` and `ops.matmul_reduce_scatter` (MindSpore 2.5+, experimental):
tensor parallelism's gather-then-multiply and multiply-then-reduce-scatter as one collective
each, the communication overlapped with the product (primitives/fused_comm_ops.py). They
work eagerly and in compiled graphs, and differentiate through each other."""
from __future__ import annotations

from typing import Any

from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.primitives.collective import ReduceOp
from msops.primitives.fused_comm_ops import AllGatherMatmul, MatmulReduceScatter

__all__ = ["all_gather_matmul", "matmul_reduce_scatter"]


def _operands(api: str, input: Any, x2: Any, bias: Any, group: Any, world_size: Any) -> Any:
    """The checks both functions share; returns the group (this process must be a member)."""
    from msops.communication._comm_call import member_group   # it imports msops.ops
    validator.check_int("world_size", world_size, api)
    check_tensor(api, "input", input)
    check_tensor(api, "x2", x2)
    if bias is not None:
        raise ValueError(f"For '{api}', the 'bias' should be None (the only value supported, "
                         f"as in MindSpore), but got {type(bias).__name__}.")
    if not isinstance(group, str):
        raise TypeError(f"For '{api}', the 'group' should be a str, but got "
                        f"{type(group).__name__}.")
    return member_group(api, group)


def _collective(api: str, cls: type, g: Any, **attrs: Any) -> Any:
    """The call's primitive: one per (class, Group, attributes) eagerly, fresh when traced.
    Flags and ints are type-checked first: a cached primitive is found by equal values,
    and 1 == True."""
    from msops.communication._comm_call import collective     # it imports msops.ops
    for arg, value in attrs.items():
        if arg.startswith(("trans_", "gather_output")):
            validator.check_bool(arg, value, api)
        elif arg in ("gather_index", "comm_turn"):
            validator.check_int(arg, value, api)
    return collective(cls, g, **attrs)


def all_gather_matmul(input: Tensor, x2: Tensor, group: str, world_size: int, *,
                      bias: Tensor | None = None, gather_index: int = 0,
                      gather_output: bool = True, comm_turn: int = 0, trans_input: bool = False,
                      trans_x2: bool = False) -> tuple:
    """(allgather(input) @ x2, allgather(input)) over `group` of `world_size` ranks: input
    (m, k) and x2 (k, n) ((n, k) with trans_x2) give output (m*world_size, n) and gather_out
    (m*world_size, k), shape (0,) when gather_output is False. float16, bfloat16, float32."""
    g = _operands("all_gather_matmul", input, x2, bias, group, world_size)
    prim = _collective("all_gather_matmul", AllGatherMatmul, g, world_size=world_size,
                       gather_index=gather_index, gather_output=gather_output,
                       comm_turn=comm_turn, trans_input=trans_input, trans_x2=trans_x2)
    return prim(input, x2)


def matmul_reduce_scatter(input: Tensor, x2: Tensor, group: str, world_size: int, *,
                          reduce_op: str = ReduceOp.SUM, bias: Tensor | None = None,
                          comm_turn: int = 0, trans_input: bool = False,
                          trans_x2: bool = False) -> Tensor:
    """reducescatter(input @ x2) (sum) over `group` of `world_size` ranks: input (m, k), m
    divisible by world_size, and x2 (k, n) ((n, k) with trans_x2) give (m/world_size, n),
    this rank's rows of the sum. float16, bfloat16, float32."""
    g = _operands("matmul_reduce_scatter", input, x2, bias, group, world_size)
    prim = _collective("matmul_reduce_scatter", MatmulReduceScatter, g, world_size=world_size,
                       reduce_op=reduce_op, comm_turn=comm_turn, trans_input=trans_input,
                       trans_x2=trans_x2)
    return prim(input, x2)
