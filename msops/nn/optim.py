"""Optimizers, as `mindspore.nn`: SGD and Momentum, updating their Parameters in place.

`optimizer(gradients)` takes one gradient per parameter (the order of `parameters`) and
writes each new value into its Parameter (`set_data`: compiled graphs read the new value
at their next step). The update runs in numpy on the host for now: compiling it into the
training step's graph needs an Assign primitive (a later slice of "Autodiff and training").

In a parallel context a gradient is this rank's slice of its Parameter (it carries the
Parameter's `layout`): the optimizer updates that slice only, and its moments are slices
too. A Parameter's data is then current on this rank only inside its slice, which is all
the compiled graphs of that layout read.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.communication import get_rank
from msops.nn.cell import Cell

__all__ = ["Optimizer", "SGD", "Momentum"]


class Optimizer(Cell):
    """The base: `parameters` (Parameters, or a Cell's `trainable_params()`), a number
    `learning_rate` and `weight_decay` (g + weight_decay * p before the update)."""

    def __init__(self, learning_rate: float, parameters: Sequence[Parameter],
                 weight_decay: float = 0.0) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        params = list(parameters)
        if not params or any(not isinstance(p, Parameter) for p in params):
            raise TypeError(f"For '{name}', the 'parameters' should be a non-empty list of "
                            f"Parameters, but got {parameters!r}.")
        validator.check_value_type("learning_rate", learning_rate, (int, float), name)
        validator.check_value_type("weight_decay", weight_decay, (int, float), name)
        if learning_rate < 0 or weight_decay < 0:
            raise ValueError(f"For '{name}', the 'learning_rate' and 'weight_decay' should be "
                             f">= 0, but got {learning_rate} and {weight_decay}.")
        self.__dict__["parameters"] = params          # not registered: the network owns them
        self.learning_rate, self.weight_decay = float(learning_rate), float(weight_decay)

    def _gradients(self, gradients: Sequence[Any]) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        """Per parameter: (the part updated: a slice index, or () for all of it, its current
        value, its gradient + weight decay)."""
        if len(gradients) != len(self.parameters):
            raise ValueError(f"For '{self.cls_name}', the number of gradients should be the "
                             f"number of parameters: {len(self.parameters)}, but got "
                             f"{len(gradients)}.")
        out = []
        for p, g in zip(self.parameters, gradients):
            layout = getattr(g, "layout", None)
            g = g.asnumpy() if isinstance(g, Tensor) else np.asarray(g)
            part: Any = ()
            if layout is not None and tuple(layout.tensor_shape) == tuple(p.shape):
                part = layout.slice_of(get_rank())         # this rank's slice (parallel)
            value = p.asnumpy()[part]
            if g.shape != value.shape:
                raise ValueError(f"For '{self.cls_name}', the gradient of '{p.name}' should "
                                 f"have its shape {list(value.shape)}, but got "
                                 f"{list(g.shape)}.")
            out.append((part, value, g + self.weight_decay * value if self.weight_decay else g))
        return out

    @staticmethod
    def _write(p: Parameter, part: Any, value: np.ndarray) -> None:
        """Write `value` into `part` of `p` (all of it when part is ())."""
        if part == ():
            p.set_data(value)
            return
        data = p.asnumpy().copy()
        data[part] = value
        p.set_data(data)

    def __call__(self, gradients: Sequence[Any]) -> bool:
        """Update every parameter from its gradient (eagerly, in either mode)."""
        return self.construct(gradients)


class SGD(Optimizer):
    """Stochastic gradient descent with momentum (as `mindspore.nn.SGD`, torch's rule):
    v = g at the first step, then v = momentum * v + (1 - dampening) * g;
    p -= lr * (g + momentum * v) with nesterov, else p -= lr * v (v = g without momentum)."""

    def __init__(self, params: Sequence[Parameter], learning_rate: float = 0.1,
                 momentum: float = 0.0, dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(learning_rate, params, weight_decay)
        validator.check_value_type("momentum", momentum, (int, float), self.cls_name)
        validator.check_value_type("dampening", dampening, (int, float), self.cls_name)
        validator.check_bool("nesterov", nesterov, self.cls_name)
        if momentum < 0 or (nesterov and (momentum <= 0 or dampening != 0)):
            raise ValueError(f"For '{self.cls_name}', the 'momentum' should be >= 0 (> 0 with "
                             f"zero dampening for nesterov), but got momentum={momentum}, "
                             f"dampening={dampening}, nesterov={nesterov}.")
        self.momentum, self.dampening, self.nesterov = float(momentum), float(dampening), nesterov
        self.moments: list[np.ndarray | None] = [None] * len(self.parameters)

    def construct(self, gradients: Sequence[Any]) -> bool:
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            step = g
            if self.momentum:
                v = self.moments[k]
                v = g.copy() if v is None else self.momentum * v + (1 - self.dampening) * g
                self.moments[k] = v
                step = g + self.momentum * v if self.nesterov else v
            self._write(p, part, value - self.learning_rate * step)
        return True


class Momentum(Optimizer):
    """Momentum (as `mindspore.nn.Momentum`, ApplyMomentum): v = momentum * v + g (v starts
    at 0); p -= lr * v, or lr * (g + momentum * v) with use_nesterov."""

    def __init__(self, params: Sequence[Parameter], learning_rate: float, momentum: float,
                 weight_decay: float = 0.0, use_nesterov: bool = False) -> None:
        super().__init__(learning_rate, params, weight_decay)
        validator.check_value_type("momentum", momentum, (int, float), self.cls_name)
        validator.check_bool("use_nesterov", use_nesterov, self.cls_name)
        if momentum < 0:
            raise ValueError(f"For '{self.cls_name}', the 'momentum' should be >= 0, but got "
                             f"{momentum}.")
        self.momentum, self.use_nesterov = float(momentum), use_nesterov
        self.moments: list[np.ndarray | None] = [None] * len(self.parameters)   # v = 0

    def construct(self, gradients: Sequence[Any]) -> bool:
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            v = self.moments[k]
            v = self.moments[k] = g.copy() if v is None else self.momentum * v + g
            step = g + self.momentum * v if self.use_nesterov else v
            self._write(p, part, value - self.learning_rate * step)
        return True
