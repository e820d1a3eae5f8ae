"""RMSProp and Adagrad (as `mindspore.nn`): updates scaled by a running average, or a
running sum, of the squared gradients. See msops/nn/optim.py for what every optimizer
takes (groups, learning-rate forms, weight decay, loss scale) and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer, check_non_negative

__all__ = ["RMSProp", "Adagrad"]


class RMSProp(Optimizer):
    """RMSProp (as `mindspore.nn.RMSProp`: ApplyRMSProp, or ApplyCenteredRMSProp with
    `centered`), g the gradient decayed, centralized and unscaled (see Optimizer):
    s = decay * s + (1 - decay) * g**2   (s starts at 1, as MindSpore's `mean_square`);
    centered: mg = decay * mg + (1 - decay) * g (from 0), and s - mg**2 replaces s below;
    m = momentum * m + lr * g / sqrt(s + epsilon)   (m starts at 0);  p -= m.
    State: `mean_square`, `moment`, `mean_grad` (centered). `use_locking` picks a kernel
    option in MindSpore: accepted, the same numbers."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 0.1,
                 decay: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-10,
                 use_locking: bool = False, centered: bool = False, loss_scale: float = 1.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = self.cls_name
        self.decay = check_non_negative(name, "decay", decay)
        self.momentum = check_non_negative(name, "momentum", momentum)
        self.epsilon = check_non_negative(name, "epsilon", epsilon, positive=True)
        self.use_locking = validator.check_bool("use_locking", use_locking, name)
        self.centered = validator.check_bool("centered", centered, name)
        if centered:
            self.__dict__["mean_grad"] = self._state_like("mean_grad")
        self.__dict__["mean_square"] = self._state_like("mean_square", 1.0)
        self.__dict__["moment"] = self._state_like("moment")
        self._sqrt = ops.Sqrt()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        d = self.decay
        s = self._assign(self.mean_square[k], self.mean_square[k] * d + g * g * (1 - d))
        if self.centered:
            mg = self._assign(self.mean_grad[k], self.mean_grad[k] * d + g * (1 - d))
            s = s - mg * mg
        m = self._assign(self.moment[k], self.moment[k] * self.momentum +
                         step["lr"] * g / self._sqrt(s + self.epsilon))
        return p - m


class Adagrad(Optimizer):
    """Adagrad (as `mindspore.nn.Adagrad`, ApplyAdagrad), g the gradient decayed,
    centralized and unscaled (see Optimizer): h += g**2 (with `update_slots`; h starts at
    `accum`);  p -= lr * g / sqrt(h). State: `accum`."""

    def __init__(self, params: Sequence[Any], accum: float = 0.1,
                 learning_rate: LearningRate = 0.001, update_slots: bool = True,
                 loss_scale: float = 1.0, weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.update_slots = validator.check_bool("update_slots", update_slots, self.cls_name)
        self.__dict__["accum"] = self._state_like(
            "accum", check_non_negative(self.cls_name, "accum", accum))
        self._sqrt = ops.Sqrt()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        h = self.accum[k]
        if self.update_slots:
            h = self._assign(h, h + g * g)
        return p - step["lr"] * g / self._sqrt(h)
