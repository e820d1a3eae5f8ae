"""Adadelta (as `mindspore.nn.Adadelta`): steps scaled by the ratio of running RMS of the
past updates and of the gradients. See msops/nn/optim.py for what every optimizer takes
and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (ApplyAdadelta), g the gradient decayed, centralized and unscaled (see
    Optimizer), every state from 0:
    accum = rho * accum + (1 - rho) * g**2;
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g;
    accum_update = rho * accum_update + (1 - rho) * update**2;  p -= lr * update.
    State: `accum`, `accum_update`."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 1.0,
                 rho: float = 0.9, epsilon: float = 1e-6, loss_scale: float = 1.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = self.cls_name
        validator.check_value_type("rho", rho, (int, float), name)
        validator.check_value_type("epsilon", epsilon, (int, float), name)
        if not (0 <= rho <= 1 and epsilon >= 0):
            raise ValueError(f"For '{name}', the 'rho' should be in [0, 1] and 'epsilon' >= 0, "
                             f"but got rho={rho}, epsilon={epsilon}.")
        self.rho, self.epsilon = float(rho), float(epsilon)
        self.__dict__["accum"] = self._state_like("accum")
        self.__dict__["accum_update"] = self._state_like("accum_update")
        self._sqrt = ops.Sqrt()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        rho, eps = self.rho, self.epsilon
        accum = self._assign(self.accum[k], self.accum[k] * rho + g * g * (1 - rho))
        update = self._sqrt(self.accum_update[k] + eps) / self._sqrt(accum + eps) * g
        self._assign(self.accum_update[k],
                     self.accum_update[k] * rho + update * update * (1 - rho))
        return p - step["lr"] * update
