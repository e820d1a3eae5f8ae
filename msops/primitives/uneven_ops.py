"""AllGatherV and ReduceScatterV: the gather and reduce-scatter of uneven 1-D pieces.

Rank i's piece has `split_sizes[i]` elements; every rank passes the same split sizes (the
eager check compares them: `consts_agree`). Each call is one MPI buffer call with counts
(Allgatherv, Reduce_scatter) into an output of the inferred shape; each is the other's
transpose, so each one's backward rule is the other with the same split sizes.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.communication import GlobalComm
from msops.primitives.collective import (Collective, ReduceOp, check_reduce_dtype, counts_value,
                                         no_backward, packed_displs, tensor_dtype)
from msops.primitives.mpi import call, reduced
from msops.primitives.primitive import prim_attr_register
from msops.primitives.rules import bprop

__all__ = ["AllGatherV", "ReduceScatterV"]


def _one_dim(prim: Collective, x_shape: Sequence[int]) -> None:
    if len(x_shape) != 1:
        raise ValueError(f"For '{prim.name}', the 'input_x' should be 1-D (flatten it first), "
                         f"but got shape {list(x_shape)}.")


class _SplitCollective(Collective):
    """What AllGatherV and ReduceScatterV share: one const input of split sizes, the same
    on every rank, validated into rank_size non-negative ints."""

    const_inputs = (1,)
    consts_agree = True
    writes_output = True
    #: the name of the split-sizes input in errors (MindSpore's)
    split_arg = ""

    def _sizes(self, value: Any) -> tuple[int, ...]:
        return counts_value(self, self.split_arg, value)

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        """With a communicator and x's dtype known, the MPI call is bound once here."""
        dtype = getattr(in_abstracts[0].dtype, "np_dtype", None)
        if self._group._comm is None or dtype is None:
            return self.kernel
        return self._bound(self._sizes(in_abstracts[1].value), np.dtype(dtype))


class AllGatherV(_SplitCollective):
    """Gather uneven 1-D pieces from every rank of `group`, concatenated in group-rank order.

    Inputs: input_x, 1-D of output_split_sizes[rank] elements; output_split_sizes, the
    element count of every rank's piece (list, tuple or 1-D int Tensor of rank_size
    non-negative ints, the same on every rank). Outputs: 1-D, sum(output_split_sizes)
    elements, dtype of input_x (shape (0,) when every piece is empty).

    >>> AllGatherV()(Tensor(np.arange(rank + 3)), [3, 4])      # 2 ranks
    [0 1 2 0 1 2 3]
    """

    same_shapes = False                 # each rank's piece has its own length
    split_arg = "output_split_sizes"

    @prim_attr_register
    def __init__(self, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_group(group)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list, output_split_sizes: Any) -> list:
        _one_dim(self, x_shape)
        sizes = self._sizes(output_split_sizes)
        mine = sizes[self._my_rank()]
        if x_shape[0] >= 0 and x_shape[0] != mine:
            raise ValueError(f"For '{self.name}', the 'input_x' should have "
                             f"output_split_sizes[{self._my_rank()}] = {mine} elements (this "
                             f"rank's piece), but got {x_shape[0]} (output_split_sizes "
                             f"{list(sizes)}).")
        return [sum(sizes)]

    def infer_dtype(self, x_dtype: mstype.Type, output_split_sizes: Any) -> mstype.Type:
        return tensor_dtype(self, x_dtype)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes

    def kernel(self, x: np.ndarray, output_split_sizes: Any,
               out: np.ndarray | None = None) -> np.ndarray:
        return self._bound(self._sizes(output_split_sizes), x.dtype)(x, output_split_sizes, out)

    def _bound(self, sizes: tuple[int, ...], dtype: np.dtype) -> Callable:
        """The call for these sizes and dtype: one Allgatherv into `out`."""
        comm, t = self._comm(), mstype.mpi_move_type(dtype)
        spec, total = (list(sizes), list(packed_displs(sizes))), sum(sizes)

        def run(x: np.ndarray, _sizes: Any, out: np.ndarray | None = None) -> np.ndarray:
            if out is None:
                out = np.empty(total, dtype)
            call(self, comm.Allgatherv, [x, t], [out, spec, t])
            return out
        return run


class ReduceScatterV(_SplitCollective):
    """Reduce 1-D x with `op` over `group` and scatter the result in uneven pieces.

    Inputs: input_x, 1-D of sum(input_split_sizes) elements, the same shape on every rank;
    input_split_sizes, the element count of every rank's piece (list, tuple or 1-D int
    Tensor of rank_size non-negative ints, the same on every rank). Outputs: 1-D,
    input_split_sizes[rank] elements of the reduction (group rank i holds elements
    [sum(sizes[:i]), sum(sizes[:i+1]))), dtype of input_x. float16/bfloat16 reduce in
    float32, rounded once.
    """

    split_arg = "input_split_sizes"

    @prim_attr_register
    def __init__(self, op: str = ReduceOp.SUM, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        self._init_reduce_op(op)
        self._init_group(group)
        self.add_prim_attr("no_eliminate", True)

    def infer_shape(self, x_shape: list, input_split_sizes: Any) -> list:
        _one_dim(self, x_shape)
        sizes = self._sizes(input_split_sizes)
        if x_shape[0] >= 0 and x_shape[0] != sum(sizes):
            raise ValueError(f"For '{self.name}', the sum of 'input_split_sizes' should be == "
                             f"the 'input_x' length: {x_shape[0]}, but got {list(sizes)} "
                             f"(sum {sum(sizes)}).")
        return [sizes[self._my_rank()]]

    def infer_dtype(self, x_dtype: mstype.Type, input_split_sizes: Any) -> mstype.Type:
        return check_reduce_dtype(self.op, x_dtype, self.name)

    def comm_bytes(self, in_bytes: int) -> int:
        return (self.rank_size - 1) * in_bytes // self.rank_size

    def kernel(self, x: np.ndarray, input_split_sizes: Any,
               out: np.ndarray | None = None) -> np.ndarray:
        return self._bound(self._sizes(input_split_sizes), x.dtype)(x, input_split_sizes, out)

    def _bound(self, sizes: tuple[int, ...], dtype: np.dtype) -> Callable:
        """The call for these sizes: one Reduce_scatter with counts, in x's reduce dtype."""
        comm, counts = self._comm(), list(sizes)
        shape = (sizes[self._my_rank()],)

        def reduce_scatter(send: Any, recv: Any, op: Any) -> None:
            comm.Reduce_scatter(send, recv, counts, op)

        def run(x: np.ndarray, _sizes: Any, out: np.ndarray | None = None) -> np.ndarray:
            return reduced(self, reduce_scatter, x, shape, out)
        return run


# -- backward rules -----------------------------------------------------------------------------
# The transpose of a gather of uneven pieces is the reduce-scatter (sum) of the same pieces.

@bprop(AllGatherV)
def allgatherv_bprop(prim: AllGatherV, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """ReduceScatterV(sum) of dout with the same split sizes: this rank's piece of every
    rank's gradient, summed."""
    sizes = g.add_const(prim._sizes(inputs[1].value))
    return g.apply(ReduceScatterV(ReduceOp.SUM, prim.group), [dout, sizes]), None


@bprop(ReduceScatterV)
def reduce_scatterv_bprop(prim: ReduceScatterV, inputs: list, out: Any, dout: Any,
                          g: Any) -> tuple:
    """sum: AllGatherV of dout with the same split sizes (every rank's piece reaches every
    rank)."""
    if prim.op != ReduceOp.SUM:
        raise no_backward(prim, f"for op '{prim.op}' (only sum)")
    sizes = g.add_const(prim._sizes(inputs[1].value))
    return g.apply(AllGatherV(prim.group), [dout, sizes]), None
