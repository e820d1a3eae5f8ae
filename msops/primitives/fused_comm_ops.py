"""AllGatherMatmul and MatmulReduceScatter: tensor parallelism's communication fused with the
matrix product it feeds or drains (MindSpore 2.5+'s experimental fused ops).

    AllGatherMatmul:     output = allgather(input) @ x2     (and gather_out = allgather(input))
    MatmulReduceScatter: output = reducescatter(input @ x2)

Each is a collective (the group, the eager cross-rank check and the watchdog of every
collective; an ordinary collective node in a compiled graph) whose kernel overlaps the
communication with the product on the CPU: AllGatherMatmul posts one nonblocking broadcast
per rank's block (MPI Ibcast, rooted at the block's owner) and multiplies each block as
it arrives while the others travel; MatmulReduceScatter runs a ring reduce-scatter
(Isend/Irecv between neighbours) whose every step multiplies the output block it is about
to pass on while the previous step's message travels. Between row slices of a product
the kernel tests the pending requests, which drives MPI's progress engine (MPICH moves
nonblocking transfers only inside MPI calls).

Each is the other's adjoint: the gradient of allgather(X) @ W with respect to X is a
reduce-scatter of dout @ W^T, and that of reducescatter(X @ W) is allgather(dout) @ W^T.
As MindSpore's: 2-D inputs of one dtype, world_size 2, 4 or 8 (the group's size),
gather_index 0, comm_turn 0, trans_input False; float16 and bfloat16 (multiplied and
reduced in float32, rounded once) and, msops running on CPUs, float32 too.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.communication import GlobalComm
from msops.primitives.collective import Collective, ReduceOp
from msops.primitives.comm_ops import AllGather, ReduceScatter
from msops.primitives.math_ops import Add, MatMul, check_rank, check_same_dtype, compute_dtype
from msops.primitives.mpi import call
from msops.primitives.primitive import prim_attr_register
from msops.primitives.rules import bprop

__all__ = ["AllGatherMatmul", "MatmulReduceScatter"]

#: the dtypes both ops take: MindSpore's float16 and bfloat16, and float32 on CPUs
FUSED_DTYPES = (mstype.float16, mstype.bfloat16, mstype.float32)
#: the group sizes MindSpore's fused ops support
WORLD_SIZES = (2, 4, 8)
#: the largest tag Send/Receive accept (MPI guarantees at least this)
_USER_TAGS = 32767
#: row slices per block: between two, the kernel tests the pending transfers (progress)
_SLICES = 4


class _FusedMatmul(Collective):
    """What both fused ops share: the group and world_size, the 2-D operands, the product."""

    def _init_fused(self, group: str, world_size: int, trans_input: bool, trans_x2: bool,
                    comm_turn: int) -> None:
        self._init_group(group)
        validator.check_int("world_size", world_size, self.name)
        if world_size not in WORLD_SIZES:
            raise ValueError(f"For '{self.name}', the 'world_size' should be one of "
                             f"{list(WORLD_SIZES)}, but got {world_size}.")
        if world_size != self.rank_size:
            raise ValueError(f"For '{self.name}', the 'world_size' should be the size of group "
                             f"'{self.group}': {self.rank_size}, but got {world_size}.")
        validator.check_bool("trans_input", trans_input, self.name)
        validator.check_bool("trans_x2", trans_x2, self.name)
        if trans_input:
            raise ValueError(f"For '{self.name}', the 'trans_input' should be False (the only "
                             f"value supported, as in MindSpore), but got True.")
        validator.check_int("comm_turn", comm_turn, self.name)
        if comm_turn != 0:
            raise ValueError(f"For '{self.name}', the 'comm_turn' should be 0 (the only value "
                             f"supported, as in MindSpore), but got {comm_turn}.")
        self.add_prim_attr("no_eliminate", True)

    def _operands(self, x_shape: list, x2_shape: list) -> tuple[int, int, int]:
        """(m, k, n) of input (m, k) and x2 (k, n), or (n, k) with trans_x2."""
        check_rank(self.name, "input", x_shape, 2, 2)
        check_rank(self.name, "x2", x2_shape, 2, 2)
        k2, n = (x2_shape[1], x2_shape[0]) if self.trans_x2 else (x2_shape[0], x2_shape[1])
        if x_shape[1] != k2:
            raise ValueError(f"For '{self.name}', the contraction dim of 'x2' should be == "
                             f"input's dim 1: {x_shape[1]}, but got {k2} (input shape "
                             f"{list(x_shape)}, x2 shape {list(x2_shape)}, trans_x2="
                             f"{self.trans_x2}).")
        return x_shape[0], x_shape[1], n

    def infer_dtype(self, x_dtype: mstype.Type, x2_dtype: mstype.Type) -> Any:
        return check_same_dtype(self.name, {"input": x_dtype, "x2": x2_dtype}, FUSED_DTYPES)

    def _weight(self, x2: np.ndarray, ct: np.dtype) -> np.ndarray:
        """x2 as the (k, n) right operand, in the compute dtype."""
        w = x2.T if self.trans_x2 else x2
        return w if w.dtype == ct else w.astype(ct)

    def _multiply(self, a: np.ndarray, w: np.ndarray, out: np.ndarray,
                  pending: Sequence[Any]) -> None:
        """out := a @ w (a cast to w's dtype), a few row slices at a time, testing the
        `pending` requests between slices so that their transfers progress meanwhile."""
        from mpi4py import MPI
        rows = a.shape[0]
        waiting = [r for r in pending if r]          # completed requests are null (falsy)
        step = max(1, -(-rows // _SLICES)) if waiting else rows
        lo = 0
        while lo < rows:
            part, target = a[lo:lo + step], out[lo:lo + step]
            if part.dtype != w.dtype:
                part = part.astype(w.dtype)
            if target.dtype == w.dtype:
                np.matmul(part, w, out=target)
            else:
                np.copyto(target, np.matmul(part, w), casting="unsafe")
            lo += step
            if waiting and call(self, MPI.Request.Testall, waiting):
                waiting, step = [], rows - lo        # all arrived: the rest in one product


class AllGatherMatmul(_FusedMatmul):
    """allgather(input) @ x2 over `group`, the gather overlapped with the product.

    Inputs: input (m, k) and x2 (k, n) ((n, k) with trans_x2), one dtype. Outputs:
    (output (m*world_size, n), gather_out (m*world_size, k), every rank's input in
    group-rank order; shape (0,) when gather_output is False).
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP, world_size: int = 2,
                 gather_index: int = 0, gather_output: bool = True, comm_turn: int = 0,
                 trans_input: bool = False, trans_x2: bool = False) -> None:
        self._init_fused(group, world_size, trans_input, trans_x2, comm_turn)
        validator.check_int("gather_index", gather_index, self.name)
        if gather_index != 0:
            raise ValueError(f"For '{self.name}', the 'gather_index' should be 0 (gather "
                             f"'input', the only value supported, as in MindSpore), but got "
                             f"{gather_index}.")
        validator.check_bool("gather_output", gather_output, self.name)

    def infer_shape(self, x_shape: list, x2_shape: list) -> tuple:
        m, k, n = self._operands(x_shape, x2_shape)
        rows = m * self.rank_size if m >= 0 else -1
        return [rows, n], ([rows, k] if self.gather_output else [0])

    def infer_dtype(self, x_dtype: mstype.Type, x2_dtype: mstype.Type) -> tuple:
        dtype = super().infer_dtype(x_dtype, x2_dtype)
        return dtype, dtype

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes

    def kernel(self, x: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rank j's block arrives by an Ibcast rooted at j (all posted at once, in group
        order on every rank); this rank multiplies its own block first, then each next
        rank's as it arrives, while the later ones travel."""
        comm, n, me = self._comm(), self.rank_size, self._my_rank()
        m, k = x.shape
        w = self._weight(x2, compute_dtype(x.dtype))
        gathered = np.empty((n * m, k), x.dtype)
        gathered[me * m:(me + 1) * m] = x
        t = mstype.mpi_move_type(x.dtype)
        requests = [call(self, comm.Ibcast, [gathered[j * m:(j + 1) * m], t], j)
                    for j in range(n)]
        out = np.empty((n * m, w.shape[1]), x.dtype)
        for step in range(n):
            j = (me + step) % n
            call(self, requests[j].Wait)
            rows = slice(j * m, (j + 1) * m)
            self._multiply(gathered[rows], w, out[rows], requests)
        return out, (gathered if self.gather_output else np.empty((0,), x.dtype))


class MatmulReduceScatter(_FusedMatmul):
    """reducescatter(input @ x2) over `group` (sum), the reduction overlapped with the product.

    Inputs: input (m, k), m divisible by world_size, and x2 (k, n) ((n, k) with trans_x2),
    one dtype. Output: (m/world_size, n): group rank r holds rows [r*m/N, (r+1)*m/N) of
    the sum over ranks of input @ x2.
    """

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP, world_size: int = 2,
                 reduce_op: str = ReduceOp.SUM, comm_turn: int = 0, trans_input: bool = False,
                 trans_x2: bool = False) -> None:
        self._init_fused(group, world_size, trans_input, trans_x2, comm_turn)
        validator.check_value_type("reduce_op", reduce_op, str, self.name)
        if reduce_op != ReduceOp.SUM:
            raise ValueError(f"For '{self.name}', the 'reduce_op' should be 'sum' (the only "
                             f"value supported, as in MindSpore), but got '{reduce_op}'.")

    def infer_shape(self, x_shape: list, x2_shape: list) -> list:
        m, _, n = self._operands(x_shape, x2_shape)
        if m >= 0 and m % self.rank_size:
            raise ValueError(f"For '{self.name}', the 'input' dim 0 should be divisible by "
                             f"world_size: {self.rank_size}, but got {m} (input shape "
                             f"{list(x_shape)}).")
        return [m // self.rank_size if m >= 0 else -1, n]

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray, x2: np.ndarray) -> np.ndarray:
        """A ring reduce-scatter fed by the product: at step s this rank multiplies output
        block b = (rank - 1 - s) mod N, adds the running sum of that block the left
        neighbour sends, and sends the total on to the right; after N-1 steps block `rank`
        holds every rank's sum. Each step's product runs while the previous step's send
        and this step's receive travel (Isend/Irecv). float16/bfloat16 in float32."""
        from mpi4py import MPI
        comm, n, me = self._comm(), self.rank_size, self._my_rank()
        ct = compute_dtype(x.dtype)
        w = self._weight(x2, ct)
        block, cols = x.shape[0] // n, w.shape[1]
        partial = np.empty((x.shape[0], cols), ct)
        incoming = [np.empty((block, cols), ct) for _ in range(2)]
        t, tag = mstype.mpi_move_type(ct), _ring_tag(comm)
        left, right = (me - 1) % n, (me + 1) % n
        sends: list = []
        recv = call(self, comm.Irecv, [incoming[1], t], left, tag)
        for s in range(n):
            b = (me - 1 - s) % n
            acc = partial[b * block:(b + 1) * block]
            self._multiply(x[b * block:(b + 1) * block], w, acc, sends + [recv])
            if s > 0:
                call(self, recv.Wait)
                acc += incoming[s % 2]
                if s < n - 1:                   # the other buffer is free: its sum is added
                    recv = call(self, comm.Irecv, [incoming[(s + 1) % 2], t], left, tag)
            if s < n - 1:
                sends.append(call(self, comm.Isend, [acc, t], right, tag))
        call(self, MPI.Request.Waitall, sends)
        result = partial[me * block:(me + 1) * block]
        return result.copy() if ct == x.dtype else result.astype(x.dtype)


def _ring_tag(comm: Any) -> int:
    """The tag of MatmulReduceScatter's ring messages: MPI's largest, above the tags
    Send/Receive accept (<= 32767), so no user message matches them."""
    from mpi4py import MPI
    upper = comm.Get_attr(MPI.TAG_UB)
    return upper if isinstance(upper, int) and upper > _USER_TAGS else _USER_TAGS


# -- backward rules -----------------------------------------------------------------------------
# Each fused op's backward is the other fused op, over the same group and world_size.

def _is_zero(node: Any) -> bool:
    """Whether a gradient is a constant of zeros (an output nobody differentiated)."""
    return node.kind == "const" and node.value is not None and not np.any(node.value)


@bprop(AllGatherMatmul)
def all_gather_matmul_bprop(prim: AllGatherMatmul, inputs: list, out: Any, dout: list,
                            g: Any) -> tuple:
    """With G = allgather(input), W = op(x2): d input = reducescatter(dout @ W^T + d gather_out)
    (MatmulReduceScatter when gather_out got no gradient), d x2 = G^T @ dout (its transpose
    with trans_x2); G is gather_out, or gathered again when gather_output is False."""
    x, x2 = inputs
    d_out, d_gathered = dout
    if prim.gather_output and not _is_zero(d_gathered):
        product = g.apply(MatMul(transpose_b=not prim.trans_x2), [d_out, x2])
        dx = g.apply(ReduceScatter(ReduceOp.SUM, prim.group),
                     [g.apply(Add(), [product, d_gathered])])
    else:
        dx = g.apply(MatmulReduceScatter(prim.group, prim.world_size,
                                         trans_x2=not prim.trans_x2), [d_out, x2])
    gathered = (g.getitem(out, 1) if prim.gather_output
                else g.apply(AllGather(prim.group), [x]))
    if prim.trans_x2:
        dx2 = g.apply(MatMul(transpose_a=True), [d_out, gathered])
    else:
        dx2 = g.apply(MatMul(transpose_a=True), [gathered, d_out])
    return dx, dx2


@bprop(MatmulReduceScatter)
def matmul_reduce_scatter_bprop(prim: MatmulReduceScatter, inputs: list, out: Any, dout: Any,
                                g: Any) -> tuple:
    """With D = allgather(dout), W = op(x2): d input = D @ W^T and D itself from one
    AllGatherMatmul; d x2 = input^T @ D (its transpose with trans_x2)."""
    x, x2 = inputs
    fused = g.apply(AllGatherMatmul(prim.group, prim.world_size, trans_x2=not prim.trans_x2),
                    [dout, x2])
    dx, gathered = g.getitem(fused, 0), g.getitem(fused, 1)
    if prim.trans_x2:
        dx2 = g.apply(MatMul(transpose_a=True), [gathered, x])
    else:
        dx2 = g.apply(MatMul(transpose_a=True), [x, gathered])
    return dx, dx2
