"""ASGD (as `mindspore.nn.ASGD`): SGD with a decaying step size and a running average of
the parameters. See msops/nn/optim.py for what every optimizer takes (groups,
learning-rate forms, weight decay, loss scale) and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer, check_float

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD (as `mindspore.nn.ASGD`), t the step being taken (1 first), g the
    gradient decayed, centralized and unscaled (see Optimizer), per parameter:
    eta = lr at t == 1;  p = p * (1 - lambd * eta) - eta * g;  ax += (p - ax) * mu;
    then eta = lr / (1 + lambd * lr * t)**alpha  and  mu = 1 / max(1, t - t0)
    (mu starts at 1, so ax = p until t passes t0). State: `eta.<p>`, `mu.<p>` (float64
    0-d, whole on every rank) and `ax.<p>` (the average, laid out like p)."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 0.1,
                 lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay)
        name = self.cls_name
        self.lambd = check_float(name, "lambd", lambd)
        self.alpha = check_float(name, "alpha", alpha)
        self.t0 = check_float(name, "t0", t0)
        self.__dict__["eta"] = tuple(self._scalar_state(f"eta.{p.name}", 0.0)
                                     for p in self.parameters)
        self.__dict__["mu"] = tuple(self._scalar_state(f"mu.{p.name}", 1.0)
                                    for p in self.parameters)
        self.__dict__["ax"] = self._state_like("ax")
        self._pow = ops.Pow()
        self._maximum = ops.Maximum()

    def _shared_values(self) -> dict:
        # eta and mu are float64 per-parameter scalars: _update reads the float64 values
        # (the step values it is given are cast to the parameter's dtype)
        self.__dict__["_now"] = self._step_number()
        return {}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        now, lr = self._now, self._rates[self._groups.lr_index[k]]
        eta = self.eta[k] * (1.0 - now["first"]) + lr * now["first"]
        new = p * self._as(1.0 - self.lambd * eta, p.dtype) - self._as(eta, p.dtype) * g
        self._assign(self.ax[k], self.ax[k] + (new - self.ax[k]) * self._as(self.mu[k], p.dtype))
        self._assign(self.eta[k], lr / self._pow(1.0 + self.lambd * lr * now["t"], self.alpha))
        self._assign(self.mu[k], 1.0 / self._maximum(now["t"] - self.t0, 1.0))
        return new
