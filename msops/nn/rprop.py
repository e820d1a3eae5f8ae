"""Rprop (as `mindspore.nn.Rprop`): resilient backpropagation, per-element step sizes
grown or shrunk by the sign of successive gradients. See msops/nn/optim.py for what every
optimizer takes (groups, learning-rate forms, weight decay, loss scale) and how it runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer, check_float

__all__ = ["Rprop"]


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
        self.etaminus = check_float(name, "etaminus", etas[0])
        self.etaplus = check_float(name, "etaplus", etas[1])
        self.step_size_min = check_float(name, "min_step_sizes", step_sizes[0])
        self.step_size_max = check_float(name, "max_step_sizes", step_sizes[1])
        if not 0.0 < self.etaminus < 1.0 or not self.etaplus > 1.0:
            raise ValueError(f"For '{name}', the 'etas' should be (etaminus, etaplus) with "
                             f"etaminus in (0, 1) and etaplus > 1, but got {etas}.")
        if self.step_size_min > self.step_size_max:
            raise ValueError(f"For '{name}', the 'step_sizes' should be (min, max) with min <= "
                             f"max, but got {step_sizes}.")
        self.__dict__["prev"] = self._state_like("prev")
        self.__dict__["step_size"] = self._state_like("step_size")
        self._sign = ops.Sign()
        self._select = ops.Select()
        self._greater, self._less = ops.Greater(), ops.Less()
        self._clip = ops.clip_by_value

    def _shared_values(self) -> dict:
        return {"first": self._step_number()["first"]}

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
