"""ASGD and Rprop (as `mindspore.nn`): averaged SGD with a decaying step, and resilient
backpropagation's sign-driven per-element step sizes. See msops/nn/optim.py for what every
optimizer takes (groups, learning-rate forms, weight decay, loss scale) and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import validator
from msops.common.dtype import float64
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer

__all__ = ["ASGD", "Rprop", "StepCount"]


class StepCount:
    """The float64 0-d values an update needs from `global_step` (t = global_step + 1, as
    MindSpore counts the step being taken): `t` and `first` (1.0 at t == 1, else 0.0)."""

    def __init__(self) -> None:
        self._cast, self._squeeze, self._equal = ops.Cast(), ops.Squeeze(), ops.Equal()

    def __call__(self, global_step: Any) -> dict:
        step = self._squeeze(global_step)
        return {"t": self._cast(step + 1, float64),
                "first": self._cast(self._equal(step, 0), float64)}


def _check_float(name: str, arg: str, value: Any) -> float:
    """A float argument (MindSpore's validators take float, not int, for these)."""
    validator.check_value_type(arg, value, (float,), name)
    return float(value)


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
        self.lambd = _check_float(name, "lambd", lambd)
        self.alpha = _check_float(name, "alpha", alpha)
        self.t0 = _check_float(name, "t0", t0)
        self.__dict__["eta"] = tuple(self._scalar_state(f"eta.{p.name}", 0.0)
                                     for p in self.parameters)
        self.__dict__["mu"] = tuple(self._scalar_state(f"mu.{p.name}", 1.0)
                                    for p in self.parameters)
        self.__dict__["ax"] = self._state_like("ax")
        self._step = StepCount()
        self._pow = ops.Pow()
        self._maximum = ops.Maximum()

    def _shared_values(self) -> dict:
        # eta and mu are float64 per-parameter scalars: _update reads the float64 values
        # (the step values it is given are cast to the parameter's dtype)
        self.__dict__["_now"] = self._step(self.global_step)
        return {}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        now, lr = self._now, self._rates[self._groups.lr_index[k]]
        eta = self.eta[k] * (1.0 - now["first"]) + lr * now["first"]
        new = p * self._as(1.0 - self.lambd * eta, p.dtype) - self._as(eta, p.dtype) * g
        self._assign(self.ax[k], self.ax[k] + (new - self.ax[k]) * self._as(self.mu[k], p.dtype))
        self._assign(self.eta[k], lr / self._pow(1.0 + self.lambd * lr * now["t"], self.alpha))
        self._assign(self.mu[k], 1.0 / self._maximum(now["t"] - self.t0, 1.0))
        return new


class Rprop(Optimizer):
    """Resilient backpropagation (as `mindspore.nn.Rprop`), g the gradient decayed,
    centralized and unscaled (see Optimizer), element-wise:
    f = etaplus where g * prev > 0, etaminus where < 0, else 1;
    step = clip(step * f, min_step, max_step)  (step starts at lr: the learning rate is
    read at the first step only);  g' = 0 where f == etaminus, else g;
    p -= sign(g') * step;  prev = g'.  State: `prev.<p>` and `step_size.<p>` (from 0)."""

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate = 0.1,
                 etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50.),
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay)
        name = self.cls_name
        for arg, value in (("etas", etas), ("step_sizes", step_sizes)):
            if not isinstance(value, tuple) or len(value) != 2:
                raise TypeError(f"For '{name}', the '{arg}' should be a tuple of 2 floats, "
                                f"but got {value!r}.")
        self.etaminus = _check_float(name, "etaminus", etas[0])
        self.etaplus = _check_float(name, "etaplus", etas[1])
        self.step_size_min = _check_float(name, "min_step_sizes", step_sizes[0])
        self.step_size_max = _check_float(name, "max_step_sizes", step_sizes[1])
        if not 0.0 < self.etaminus < 1.0 or not self.etaplus > 1.0:
            raise ValueError(f"For '{name}', the 'etas' should be (etaminus, etaplus) with "
                             f"etaminus in (0, 1) and etaplus > 1, but got {etas}.")
        if self.step_size_min > self.step_size_max:
            raise ValueError(f"For '{name}', the 'step_sizes' should be (min, max) with min <= "
                             f"max, but got {step_sizes}.")
        self.__dict__["prev"] = self._state_like("prev")
        self.__dict__["step_size"] = self._state_like("step_size")
        self._step = StepCount()
        self._sign = ops.Sign()
        self._select = ops.Select()
        self._greater, self._less = ops.Greater(), ops.Less()
        self._clip = ops.clip_by_value

    def _shared_values(self) -> dict:
        return {"first": self._step(self.global_step)["first"]}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        first = step["first"]
        size = self.step_size[k] * (1.0 - first) + step["lr"] * first
        product = g * self.prev[k]
        zeros = g * 0.0
        factor = self._select(self._greater(product, zeros), zeros + self.etaplus,
                              self._select(self._less(product, zeros), zeros + self.etaminus,
                                           zeros + 1.0))
        size = self._assign(self.step_size[k],
                            self._clip(size * factor, self.step_size_min, self.step_size_max))
        g = self._select(self._less(product, zeros), zeros, g)
        self._assign(self.prev[k], g)
        return p - self._sign(g) * size
