"""Loss scaling, as `mindspore.nn`: TrainOneStepWithLossScaleCell and the cells updating its
scale, FixedLossScaleUpdateCell and DynamicLossScaleUpdateCell.

A loss-scaled step differentiates loss * scale (the scale seeds the backward, as
MindSpore's sens, so small float16 gradients do not flush to zero), divides the gradients
by the scale, and checks them for overflow: an inf or a NaN in any gradient, on any rank
(the count of non-finite elements is summed over the world in a parallel context, so
every rank takes the same decision). An overflowing step skips the optimizer's update
(`msops.nn.skip_update`: a select in the compiled graph) and the update cell adjusts the
scale. The step returns (loss, overflow, scale), the scale being the one this step used.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.communication.management import GlobalComm
from msops.autodiff import value_and_grad
from msops.nn.cell import Cell
from msops.nn.optim import Optimizer
from msops.nn.skip_update import skipped_when
from msops.nn.wrap import TrainOneStepCell
from msops.parallel.context import get_auto_parallel_context, is_parallel
from msops.parallel.stages import stage_num

__all__ = ["TrainOneStepWithLossScaleCell", "FixedLossScaleUpdateCell",
           "DynamicLossScaleUpdateCell", "check_loss_scale", "check_scale_factor",
           "nonfinite_count"]


def check_loss_scale(value: Any, arg_name: str, cls_name: str) -> float:
    """A loss scale: a number >= 1 (else the TypeError / ValueError naming `cls_name`)."""
    validator.check_value_type(arg_name, value, (int, float), cls_name)
    if not value >= 1:
        raise ValueError(f"For '{cls_name}', the '{arg_name}' should be >= 1, but got "
                         f"{value}.")
    return float(value)


def check_scale_factor(value: Any, cls_name: str) -> float:
    """A scale factor: a number > 1."""
    validator.check_value_type("scale_factor", value, (int, float), cls_name)
    if not value > 1:
        raise ValueError(f"For '{cls_name}', the 'scale_factor' should be > 1, but got "
                         f"{value}.")
    return value


def nonfinite_count(tensors: Any) -> Any:
    """How many elements of `tensors` (a Tensor or a sequence of them) are inf or NaN: a
    float32 scalar (ops, so traced into a step; over a parallel step's split slices the
    sums are combined by the local tail)."""
    tensors = tuple(tensors) if isinstance(tensors, (tuple, list)) else (tensors,)
    if not tensors:
        raise ValueError("For 'all_finite', the 'inputs' should hold at least one Tensor, but "
                         "got none.")
    reduce_sum = ops.ReduceSum()
    counts = [reduce_sum(ops.cast(ops.logical_not(ops.isfinite(t)), mstype.float32))
              for t in tensors]
    return ops.addn(counts) if len(counts) > 1 else counts[0]


class FixedLossScaleUpdateCell(Cell):
    """`FixedLossScaleUpdateCell(loss_scale_value)`: the scale stays `loss_scale_value`;
    `cell(loss_scale, overflow)` returns `overflow` (the step still skips an overflowing
    update)."""

    def __init__(self, loss_scale_value: float) -> None:
        super().__init__(auto_prefix=False)
        self.loss_scale_value = check_loss_scale(loss_scale_value, "loss_scale_value",
                                                 self.cls_name)

    def get_loss_scale(self) -> float:
        return self.loss_scale_value

    def construct(self, loss_scale: Any, overflow: Any) -> Any:
        return overflow


class DynamicLossScaleUpdateCell(Cell):
    """`DynamicLossScaleUpdateCell(loss_scale_value, scale_factor, scale_window)`:
    `cell(loss_scale, overflow)` writes the Parameter `loss_scale` in place and returns
    `overflow`. On an overflowing step the scale becomes max(scale / scale_factor, 1); after
    `scale_window` steps in a row without overflow it becomes scale * scale_factor. The steps
    are counted by the Parameters `current_iterator_step` and `last_overflow_iterator_step`
    (MindSpore's names; ops only, so the update is part of the compiled step)."""

    def __init__(self, loss_scale_value: float, scale_factor: int, scale_window: int) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        self.loss_scale_value = check_loss_scale(loss_scale_value, "loss_scale_value", name)
        self.scale_factor = check_scale_factor(scale_factor, name)
        self.scale_window = validator.check_positive_int(scale_window, "scale_window", name)
        self.cur_iter = Parameter(Tensor(np.asarray(1, np.int32)), "current_iterator_step",
                                  requires_grad=False)
        self.last_overflow_iter = Parameter(Tensor(np.asarray(0, np.int32)),
                                            "last_overflow_iterator_step", requires_grad=False)
        self._assign = ops.Assign()

    def get_loss_scale(self) -> float:
        return self.loss_scale_value

    def construct(self, loss_scale: Any, overflow: Any) -> Any:
        cur, last = self.cur_iter, self.last_overflow_iter
        grown = ops.greater_equal(cur - last, self.scale_window)   # the window is clean
        one = ops.ones_like(loss_scale)
        lowered = ops.select(overflow, ops.maximum(loss_scale / self.scale_factor, one),
                             loss_scale)
        raised = ops.logical_and(grown, ops.logical_not(overflow))
        self._assign(self.last_overflow_iter,
                     ops.select(ops.logical_or(overflow, grown), cur, last))
        self._assign(loss_scale, ops.select(raised, lowered * self.scale_factor, lowered))
        self._assign(self.cur_iter, cur + 1)
        return overflow


def _scalar(scale: Any) -> Any:
    """The scale as a 0-d Tensor (a (1,) one would broadcast a 0-d gradient to (1,))."""
    return ops.reshape(scale, ())


class _ScaledLoss(Cell):
    """(loss * scale, loss): differentiating the first output only seeds the backward with
    the scale (MindSpore's sens); the second is the step's loss."""

    def __init__(self, network: Cell, scale: Parameter, cls_name: str) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self.__dict__["_scale"] = scale          # the training cell's Parameter
        self.__dict__["_owner"] = cls_name

    def construct(self, *inputs: Any) -> Any:
        loss = self.network(*inputs)
        if not isinstance(loss, Tensor):
            raise TypeError(f"For '{self._owner}', the network should return one loss "
                            f"Tensor, but got {type(loss).__name__}.")
        return loss * ops.cast(_scalar(self._scale), loss.dtype), loss


class TrainOneStepWithLossScaleCell(TrainOneStepCell):
    """`TrainOneStepWithLossScaleCell(network, optimizer, scale_sense)`: one training step
    of `network` (returning the loss) with loss scaling; returns (loss, overflow, scale).

    `scale_sense` is a Cell updating the scale (`FixedLossScaleUpdateCell`,
    `DynamicLossScaleUpdateCell`, what a LossScaleManager's `get_update_cell()` gives), or
    a Tensor of shape () or (1,): a fixed scale the host may change by `set_sense_scale`.
    The scale is the float32 Parameter `scale_sense`. GRAPH_MODE compiles forward,
    backward, overflow check, scale update and the (skippable) optimizer update into one
    graph, as TrainOneStepCell; PYNATIVE_MODE runs the same ops eagerly."""

    def __init__(self, network: Cell, optimizer: Optimizer, scale_sense: Any) -> None:
        super().__init__(network, optimizer)
        name = self.cls_name
        self.loss_scaling_manager = None
        if isinstance(scale_sense, Cell):
            if not callable(getattr(scale_sense, "get_loss_scale", None)):
                raise TypeError(f"For '{name}', a Cell 'scale_sense' should update the scale "
                                f"and have get_loss_scale() (DynamicLossScaleUpdateCell, "
                                f"FixedLossScaleUpdateCell), but got {scale_sense.cls_name}.")
            value = np.asarray(scale_sense.get_loss_scale(), np.float32)
            self.loss_scaling_manager = scale_sense
        elif isinstance(scale_sense, Tensor):
            if tuple(scale_sense.shape) not in ((), (1,)):
                raise ValueError(f"For '{name}', the shape of 'scale_sense' should be () or "
                                 f"(1,), but got {tuple(scale_sense.shape)}.")
            value = scale_sense.asnumpy().astype(np.float32)
        else:
            raise TypeError(f"For '{name}', the 'scale_sense' should be a Cell or a Tensor, "
                            f"but got {type(scale_sense).__name__}.")
        self.scale_sense = Parameter(Tensor(value), "scale_sense", requires_grad=False)
        self.__dict__["_value_and_grad"] = value_and_grad(
            _ScaledLoss(network, self.scale_sense, name), None, list(self.weights),
            has_aux=True)
        # as MindSpore: the overflow count is summed over the world in a parallel context
        self.is_distributed = is_parallel()
        if self.is_distributed:
            self.allreduce = ops.AllReduce(ops.ReduceOp.SUM, GlobalComm.WORLD_COMM_GROUP)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # an overflow is an expected event the step handles: no numpy warning for it
        with np.errstate(over="ignore", invalid="ignore"):
            return super().__call__(*args, **kwargs)

    def set_sense_scale(self, sens: Tensor) -> None:
        """Write a new scale (a Tensor of the scale's shape) into `scale_sense`."""
        if not isinstance(sens, Tensor):
            raise TypeError(f"For '{self.cls_name}', the 'sens' should be a Tensor, but got "
                            f"{type(sens).__name__}.")
        if sens.size != 1:
            raise ValueError(f"For '{self.cls_name}', the 'sens' should hold one value, but "
                             f"got shape {tuple(sens.shape)}.")
        data = sens.asnumpy().astype(np.float32).reshape(self.scale_sense.shape)
        self.scale_sense.set_data(Tensor(data))

    def start_overflow_check(self, pre_cond: Any, compute_input: Any) -> tuple:
        """(status, compute_input): the status `get_overflow_status` takes (MindSpore's
        device float status; here nothing to clear, a False scalar)."""
        return Tensor(np.asarray(False)), compute_input

    def get_overflow_status(self, status: Any, compute_output: Any) -> Any:
        """A bool scalar: True when any Tensor of `compute_output` (the gradients) holds an
        inf or a NaN, on any rank in a parallel context."""
        total = nonfinite_count(compute_output)
        # Pipelined, the count is already every stage's: each gradient's count runs on its
        # stage and the sum on the last, the scalars crossing stages (parallel/stage_split.py),
        # and the flag goes back to every stage's update; a world AllReduce there would run
        # on the last stage's ranks only.
        if self.is_distributed and stage_num() == 1:
            total = self.allreduce(total)
        return ops.greater(total, 0.0)

    def process_loss_scale(self, overflow: Any) -> Any:
        """The update cell (if any) adjusts the scale; returns `overflow`."""
        if self.loss_scaling_manager is None:
            return overflow
        return self.loss_scaling_manager(self.scale_sense, overflow)

    def _apply(self, outputs: Any, grads: tuple) -> Any:
        """Unscale, reduce, check for overflow, update the scale and, unless the step
        overflowed, the parameters."""
        value = get_auto_parallel_context("grad_accumulation_step")
        if value > 1:
            raise NotImplementedError(
                f"For '{self.cls_name}', the auto-parallel context's 'grad_accumulation_step' "
                f"should be 1 (a skipped update across accumulated steps is not implemented), "
                f"but got {value}.")
        loss = outputs[1]
        scale = self.scale_sense * 1.0          # this step's scale, read before its update
        inverse = ops.reciprocal(_scalar(scale))
        grads = tuple(g * ops.cast(inverse, g.dtype) for g in grads)
        grads = self._reduced(grads)
        overflow = self.get_overflow_status(None, grads)
        overflow = self.process_loss_scale(overflow)
        with skipped_when(overflow):
            self._update(grads)
        return loss, overflow, scale
