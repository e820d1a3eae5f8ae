"""Training wrappers, as `mindspore.nn`: WithLossCell, TrainOneStepCell and
DistributedGradReducer."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.autodiff import value_and_grad
from msops.common import dtype as mstype
from msops.common import validator
from msops.communication.management import GlobalComm, get_group_size
from msops.nn.cell import Cell
from msops.nn.optim import Optimizer

__all__ = ["WithLossCell", "TrainOneStepCell", "DistributedGradReducer", "WithEvalCell"]


class WithLossCell(Cell):
    """`loss_fn(backbone(data), label)`: a network and its loss as one Cell."""

    def __init__(self, backbone: Cell, loss_fn: Cell) -> None:
        super().__init__(auto_prefix=False)
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data: Any, label: Any) -> Any:
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self) -> Cell:
        return self._backbone


class WithEvalCell(Cell):
    """Evaluation: `(loss_fn(network(data), label), network(data), label)`, the outputs
    Model.eval hands to its metrics."""

    def __init__(self, network: Cell, loss_fn: Cell, add_cast_fp32: bool = False) -> None:
        super().__init__(auto_prefix=False)
        self._network = network
        self._loss_fn = loss_fn
        self.add_cast_fp32 = validator.check_bool("add_cast_fp32", add_cast_fp32,
                                                  "WithEvalCell")

    def construct(self, data: Any, label: Any) -> Any:
        outputs = self._network(data)
        if self.add_cast_fp32:
            outputs = ops.Cast()(outputs, mstype.float32)
        return self._loss_fn(outputs, label), outputs, label


class TrainOneStepCell(Cell):
    """One training step: the loss and the gradients of `network` (a Cell returning the
    loss) with respect to the optimizer's parameters, scaled by `sens`, then the update.
    Returns the loss.

    In a parallel context (GRAPH_MODE) the loss is the global loss and each gradient this
    rank's slice of its Parameter (msops.parallel.backward); the optimizer updates that
    slice. The loss and gradients come from one compiled graph in GRAPH_MODE (once per input
    signature, `ms.value_and_grad`); the optimizer update runs after it (see nn.optim).
    So the step itself is not traced: calling it runs `construct` in either mode.
    """

    def __init__(self, network: Cell, optimizer: Optimizer, sens: float = 1.0) -> None:
        super().__init__(auto_prefix=False)
        validator.check_value_type("sens", sens, (int, float), self.cls_name)
        self.network = network
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.sens = float(sens)
        self.__dict__["_value_and_grad"] = value_and_grad(network, None, list(self.weights))

    def construct(self, *inputs: Any) -> Any:
        loss, grads = self._value_and_grad(*inputs)
        if self.sens != 1.0:
            grads = tuple(_scaled(g, self.sens) for g in grads)
        self.optimizer(grads)
        return loss

    def __call__(self, *inputs: Any) -> Any:
        return self.construct(*inputs)


class DistributedGradReducer(Cell):
    """Data-parallel gradient reduction: `reducer(grads)` sums each gradient over `group`
    (AllReduce) and, when `mean`, divides it by `degree` (default: the group's size).

    `parameters` are the optimizer's (one gradient each, same order); every rank calls it
    with gradients of the same shapes. Returns a tuple of Tensors.
    """

    def __init__(self, parameters: Any, mean: bool = True, degree: int | None = None,
                 fusion_type: int = 1, group: str = GlobalComm.WORLD_COMM_GROUP) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        self.mean = validator.check_bool("mean", mean, name)
        if degree is None:
            degree = get_group_size(group)
        self.degree = validator.check_positive_int(degree, "degree", name)
        self.parameters = tuple(parameters)
        self.allreduce = ops.AllReduce(ops.ReduceOp.SUM, group)

    def construct(self, grads: Any) -> tuple:
        grads = tuple(grads)
        if len(grads) != len(self.parameters):
            raise ValueError(f"For '{self.cls_name}', the number of 'grads' should be the "
                             f"number of parameters: {len(self.parameters)}, but got "
                             f"{len(grads)}.")
        out = tuple(self.allreduce(g) for g in grads)
        if self.mean and self.degree != 1:
            out = tuple(g / self.degree for g in out)
        return out


def _scaled(grad: Any, sens: float) -> Any:
    """`grad * sens`, keeping the layout a parallel gradient carries (its slice's place)."""
    out = grad * sens
    layout = getattr(grad, "layout", None)
    if layout is not None:
        out.layout = layout
    return out
