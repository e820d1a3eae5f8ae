"""AdaMax (as `mindspore.nn.AdaMax`): Adam with the infinity norm in place of the second
moment. See msops/nn/optim.py for what every optimizer takes and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer, check_betas

__all__ = ["AdaMax"]


class AdaMax(Optimizer):
    """AdaMax (ApplyAdaMax), with t = global_step + 1 and g the gradient decayed,
    centralized and unscaled (see Optimizer):
    m = beta1 * m + (1 - beta1) * g;  v = max(beta2 * v, |g|)   (both start at 0);
    p -= lr / (1 - beta1**t) * m / (v + eps).
    State: `moment1`, `moment2`, `beta1_power` (beta1**t, float64)."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 0.001,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-08,
                 weight_decay: float = 0.0, loss_scale: float = 1.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        check_betas(self.cls_name, beta1, beta2, eps, open_low=True)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.__dict__["moment1"] = self._state_like("moment1")
        self.__dict__["moment2"] = self._state_like("moment2")
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self._abs = ops.Abs()
        self._maximum = ops.Maximum()

    def _shared_values(self) -> dict:
        b1p = self._assign(self.beta1_power, self.beta1_power * self.beta1)
        return {"correction": 1.0 / (1.0 - b1p)}

    def _step_values(self, lr: Any, shared: dict) -> dict:
        return {"lr": lr * shared["correction"]}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        b1 = self.beta1
        m = self._assign(self.moment1[k], self.moment1[k] * b1 + g * (1 - b1))
        v = self._assign(self.moment2[k],
                         self._maximum(self.moment2[k] * self.beta2, self._abs(g)))
        return p - step["lr"] * m / (v + self.eps)
