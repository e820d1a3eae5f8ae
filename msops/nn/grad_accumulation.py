"""Gradient accumulation: over micro-batches, `nn.GradAccumulationCell` (as MindSpore's);
over mini-steps, `MiniSteps` (what TrainOneStepCell does under `grad_accumulation_step`).

One training step splits every input along dim 0 into `micro_size` micro-batches, runs
the network on each and returns the SUM of their losses (MindSpore's cell adds the micro
outputs). Its gradients are therefore the sums of the micro-batches' gradients: for a
loss that is a mean over the batch, `micro_size` times the gradient of the mean loss over
the whole batch. To train as one step on the whole batch, scale by 1/micro_size (e.g.
`TrainOneStepCell(cell, opt, sens=1/micro_size)`, or divide the learning rate).

The whole step is one graph: the micro-batches are unrolled and their gradients summed by
autodiff, so the accumulation costs no buffer here; with optimizer sharding the
accumulated gradient is what `_MicroStepAllGather`'s backward reduce-scatters.
"""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.parallel.param_store import state_like

__all__ = ["GradAccumulationCell", "MiniSteps"]


class GradAccumulationCell(Cell):
    """`GradAccumulationCell(network, micro_size)`: `network` (returning the loss) run on
    `micro_size` equal dim-0 slices of its inputs; returns the sum of the micro losses.

    >>> cell = GradAccumulationCell(nn.WithLossCell(net, nn.MSELoss()), micro_size=2)
    """

    def __init__(self, network: Cell, micro_size: int) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        validator.check_value_type("network", network, Cell, name)
        self.micro_size = validator.check_positive_int(micro_size, "micro_size", name)
        self.network = network
        self._slice = ops.StridedSlice()
        self._add = ops.Add()

    def _micro(self, i: int, x: Any) -> Any:
        """Micro-batch i of one input (a non-Tensor input is passed whole)."""
        if not isinstance(x, Tensor) and not hasattr(x, "shape"):
            return x
        shape = tuple(x.shape)
        if not shape or shape[0] % self.micro_size:
            raise ValueError(f"For '{self.cls_name}', the inputs' dim 0 should be divisible "
                             f"by micro_size: {self.micro_size}, but got shape "
                             f"{list(shape)}.")
        size = shape[0] // self.micro_size
        begin = (i * size,) + (0,) * (len(shape) - 1)
        end = ((i + 1) * size,) + shape[1:]
        return self._slice(x, begin, end, (1,) * len(shape))

    def construct(self, *inputs: Any) -> Any:
        total = None
        for i in range(self.micro_size):
            loss = self.network(*(self._micro(i, x) for x in inputs))
            total = loss if total is None else self._add(total, loss)
        return total


class MiniSteps:
    """Gradient accumulation over mini-steps (`grad_accumulation_step=k` in the auto-parallel
    context): the training step's gradients are added into per-weight buffers
    (`accu_grads.<name>`, laid out like their weight) for k-1 calls; the k-th call hands
    the optimizer (buffer + gradient) / k and zeroes the buffers. For a mean loss, k
    mini-steps of batch b are then one step of batch k·b (the mean of the k mini-batch
    gradients is the gradient of the mean over k·b samples)."""

    def __init__(self, weights: Sequence[Parameter], k: int) -> None:
        self.k = k
        self.buffers = tuple(state_like(p, 0.0, f"accu_grads.{p.name}") for p in weights)
        self.mirrors = list(zip(self.buffers, weights))
        self.calls = 0                       # training-step calls so far
        self._assign = ops.Assign()
        self._zeros = ops.ZerosLike()

    def applies(self) -> bool:
        """Whether this call is the k-th of its group (the optimizer runs)."""
        return self.calls % self.k == self.k - 1

    def accumulate(self, grads: Sequence[Any]) -> None:
        """buffer += gradient, for every weight (ops: eager or traced)."""
        for buf, g in zip(self.buffers, grads):
            self._assign(buf, buf + g)

    def drain(self, grads: Sequence[Any]) -> tuple:
        """The k mini-steps' mean gradient per weight; the buffers back to zero."""
        totals = tuple((buf + g) / self.k for buf, g in zip(self.buffers, grads))
        for buf in self.buffers:
            self._assign(buf, self._zeros(buf))
        return totals
