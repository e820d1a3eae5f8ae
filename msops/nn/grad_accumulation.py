"""Gradient accumulation: over micro-batches, `nn.GradAccumulationCell` (as MindSpore's);
over mini-steps, `MiniSteps` (what TrainOneStepCell does under `grad_accumulation_step`).

One training step splits every input along dim 0 into `micro_size` micro-batches, runs
the network on each and returns the SUM of their losses (MindSpore's cell adds the micro
outputs). Its gradients are therefore the sums of the micro-batches' gradients: for a
loss that is a mean over the batch, `micro_size` times the gradient of the mean loss over
the whole batch. To train as one step on the whole batch, scale by 1/micro_size (e.g.
`TrainOneStepCell(cell, opt, sens=1/micro_size)`, or divide the learning rate).

The whole step is one graph: the micro-batches are unrolled and their gradients summed by
autodiff, so without optimizer sharding the accumulation costs no buffer. With the parallel
optimizer (`enable_parallel_optimizer=True`) a sharded weight is gathered once a step, in
front of every micro-batch, by a `_MicroStepAllGather(group, mean_flag=False)`: its
backward writes the micro-batches' summed gradient into the weight's buffer z
(`accu_grads.<name>`, laid out as the gathered weight) and reduce-scatters it once a step,
instead of a gather and a reduce-scatter per micro-batch. (`mean_flag` stays False: the
backward's seeds already divide by the replicas, so parallel equals serial; MindSpore's
`gradients_mean` would divide twice.)

Under `grad_accumulation_step=k` with the parallel optimizer, `MiniSteps` gathers a sharded
weight by a `_MiniStepAllGather(group, k, mean_flag=False)` whose z is the weight's
`accu_grads.<name>` buffer laid out as the gathered weight: every call adds the unreduced
gradient into z, and the reduce-scatter runs only in the k-th call's graph (the other
calls' graphs do not use the reduced gradient, so dead-node elimination drops it).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops import ops
from msops.common.state_epoch import bump
from msops.common.tensor import Parameter, Tensor
from msops.nn.cell import Cell
from msops.nn.micro_batches import MicroBatches
from msops.parallel.param_store import state_like

__all__ = ["GradAccumulationCell", "MiniSteps"]


class GradAccumulationCell(MicroBatches):
    """`GradAccumulationCell(network, micro_size)`: `network` (returning the loss) run on
    `micro_size` equal dim-0 slices of its inputs; returns the sum of the micro losses.

    >>> cell = GradAccumulationCell(nn.WithLossCell(net, nn.MSELoss()), micro_size=2)
    """

    def __init__(self, network: Cell, micro_size: int) -> None:
        super().__init__(network, micro_size, "micro_size")
        self.micro_size = micro_size
        self.__dict__["_accu"] = {}        # id(weight) -> its z buffer (optimizer sharding)

    def shard_gather(self, param: Parameter, group: str) -> tuple:
        """The parallel optimizer's gather of a sharded weight in this micro-batched step
        (`msops.parallel.opt_gather`): a `_MicroStepAllGather` and the weight's buffer z."""
        buf = self._accu.get(id(param))
        if buf is None:
            buf = self._accu[id(param)] = _buffer_of(param)
        return ops._MicroStepAllGather(group, False), buf


def _buffer_of(param: Parameter) -> Parameter:
    """A zero accumulation buffer for `param` (MindSpore's name: `accu_grads.<name>`)."""
    return Parameter(Tensor(np.zeros(param._full_shape, param.asnumpy().dtype)),
                     f"accu_grads.{param.name}", requires_grad=False)


class MiniSteps:
    """Gradient accumulation over mini-steps (`grad_accumulation_step=k` in the auto-parallel
    context): the training step's gradients are added into per-weight buffers
    (`accu_grads.<name>`, laid out like their weight; as the gathered weight when its
    parallel-optimizer gather accumulates, `shard_gather`) for k-1 calls; the k-th call hands
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
        self._by_weight = {id(p): buf for p, buf in zip(weights, self.buffers)}
        self.gathered: set[int] = set()      # ids of weights whose gather accumulates (this compile)
        self._cleared: dict[int, Parameter] = {}   # buffers the host clears after the k-th call

    def shard_gather(self, param: Parameter, group: str) -> tuple | None:
        """The parallel optimizer's gather of a sharded weight (`msops.parallel.opt_gather`):
        a `_MiniStepAllGather` accumulating into the weight's buffer, or None (not ours)."""
        buf = self._by_weight.get(id(param))
        if buf is None:
            return None
        self.gathered.add(id(param))
        self._cleared[id(buf)] = buf
        return ops._MiniStepAllGather(group, self.k, False), buf

    def applies(self) -> bool:
        """Whether this call is the k-th of its group (the optimizer runs)."""
        return self.calls % self.k == self.k - 1

    def accumulate(self, grads: Sequence[Any]) -> None:
        """buffer += gradient, for every weight (ops: eager or traced); a weight whose
        gather accumulates (`gathered`) needs nothing here."""
        for (buf, p), g in zip(self.mirrors, grads):
            if id(p) not in self.gathered:
                self._assign(buf, buf + g)

    def drain(self, grads: Sequence[Any]) -> tuple:
        """The k mini-steps' mean gradient per weight; the buffers back to zero (a gathered
        weight's gradient is already the k calls' sum; its buffer is cleared by the host
        after the call: the backward wrote it, so the graph may not read it again)."""
        totals = []
        for (buf, p), g in zip(self.mirrors, grads):
            if id(p) in self.gathered:
                totals.append(g / self.k)
            else:
                totals.append((buf + g) / self.k)
                self._assign(buf, self._zeros(buf))
        return tuple(totals)

    def finish_call(self) -> None:
        """After one training-step call: count it; after the k-th, clear the buffers the
        gathers accumulated into."""
        applied = self.applies()
        if applied:
            for buf in self._cleared.values():
                buf._data.fill(0)
                buf.version += 1
        self.calls += 1
        if self.applies() != applied:      # the next call compiles to the other graph
            bump()
