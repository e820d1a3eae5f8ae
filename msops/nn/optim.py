"""Optimizers, as `mindspore.nn`: SGD, Momentum, Adam and AdamWeightDecay, updating their
Parameters in place.

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

from typing import Any, Callable, Sequence, Union

import numpy as np

from msops.common import validator
from msops.common.tensor import Parameter, Tensor
from msops.communication import get_rank
from msops.nn.cell import Cell

__all__ = ["Optimizer", "SGD", "Momentum", "Adam", "AdamWeightDecay"]

LearningRate = Union[float, Sequence[float], Callable[[int], Any]]


def _check_learning_rate(learning_rate: Any, name: str) -> Any:
    """A number, a non-empty list/tuple of numbers (one per step, the last repeated), or a
    callable of the global step (a `LearningRateSchedule`); numbers must be >= 0."""
    if callable(learning_rate):
        return learning_rate
    values = list(learning_rate) if isinstance(learning_rate, (list, tuple)) else [learning_rate]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0
                         for v in values):
        raise TypeError(f"For '{name}', the 'learning_rate' should be a number >= 0, a "
                        f"non-empty list/tuple of them or a schedule (a callable of the "
                        f"global step), but got {learning_rate!r}.")
    if isinstance(learning_rate, (list, tuple)):
        return tuple(float(v) for v in values)
    return float(learning_rate)


class Optimizer(Cell):
    """The base: `parameters` (Parameters, or a Cell's `trainable_params()`), a
    `learning_rate` (a number; a list/tuple, one per step, the last repeated; or a
    schedule: a callable of the global step, as `nn.LearningRateSchedule`) and
    `weight_decay` (g + weight_decay * p before the update, applied to every parameter)."""

    _decay_in_gradient = True                         # False: the subclass decays p itself

    def __init__(self, learning_rate: LearningRate, parameters: Sequence[Parameter],
                 weight_decay: float = 0.0) -> None:
        super().__init__(auto_prefix=False)
        name = self.cls_name
        params = list(parameters)
        if not params or any(not isinstance(p, Parameter) for p in params):
            raise TypeError(f"For '{name}', the 'parameters' should be a non-empty list of "
                            f"Parameters, but got {parameters!r}.")
        validator.check_value_type("weight_decay", weight_decay, (int, float), name)
        if weight_decay < 0:
            raise ValueError(f"For '{name}', the 'weight_decay' should be >= 0, but got "
                             f"{weight_decay}.")
        self.__dict__["parameters"] = params          # not registered: the network owns them
        self.learning_rate = _check_learning_rate(learning_rate, name)
        self.weight_decay = float(weight_decay)
        self.global_step = 0                          # steps taken; the schedule's argument

    def get_lr(self) -> float:
        """The learning rate of the current step (`global_step`)."""
        lr = self.learning_rate
        if isinstance(lr, tuple):
            return lr[min(self.global_step, len(lr) - 1)]
        if callable(lr):
            value = lr(self.global_step)
            return float(np.asarray(value.asnumpy() if isinstance(value, Tensor) else value))
        return lr

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
            decay = self.weight_decay if self._decay_in_gradient else 0.0
            out.append((part, value, g + decay * value if decay else g))
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
        """Update every parameter from its gradient (eagerly, in either mode), then count
        the step."""
        done = self.construct(gradients)
        self.global_step += 1
        return done


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
        lr = self.get_lr()
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            step = g
            if self.momentum:
                v = self.moments[k]
                v = g.copy() if v is None else self.momentum * v + (1 - self.dampening) * g
                self.moments[k] = v
                step = g + self.momentum * v if self.nesterov else v
            self._write(p, part, value - lr * step)
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
        lr = self.get_lr()
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            v = self.moments[k]
            v = self.moments[k] = g.copy() if v is None else self.momentum * v + g
            step = g + self.momentum * v if self.use_nesterov else v
            self._write(p, part, value - lr * step)
        return True


def _check_betas(name: str, beta1: float, beta2: float, eps: float) -> None:
    """0 <= beta < 1 and eps > 0, as MindSpore's Adam validators."""
    for arg, value in (("beta1", beta1), ("beta2", beta2), ("eps", eps)):
        validator.check_value_type(arg, value, (int, float), name)
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1 and eps > 0):
        raise ValueError(f"For '{name}', the 'beta1' and 'beta2' should be in [0, 1) and "
                         f"'eps' > 0, but got beta1={beta1}, beta2={beta2}, eps={eps}.")


class Adam(Optimizer):
    """Adam (as `mindspore.nn.Adam`, ApplyAdam), with t = global_step + 1, g the gradient
    plus weight_decay * p (L2, as MindSpore's Optimizer):
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2 (both start at 0);
    lr_t = lr * sqrt(1 - beta2**t) / (1 - beta1**t);
    p -= lr_t * m / (sqrt(v) + eps), or lr_t * (beta1 * m + (1 - beta1) * g) / (sqrt(v) + eps)
    with use_nesterov. (eps is added after the bias correction, as ApplyAdam.)"""

    def __init__(self, params: Sequence[Parameter], learning_rate: LearningRate = 1e-3,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
                 weight_decay: float = 0.0, use_nesterov: bool = False) -> None:
        super().__init__(learning_rate, params, weight_decay)
        _check_betas(self.cls_name, beta1, beta2, eps)
        validator.check_bool("use_nesterov", use_nesterov, self.cls_name)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.use_nesterov = use_nesterov
        self.moments1: list[Any] = [0.0] * len(self.parameters)
        self.moments2: list[Any] = [0.0] * len(self.parameters)

    def construct(self, gradients: Sequence[Any]) -> bool:
        t = self.global_step + 1
        b1, b2 = self.beta1, self.beta2
        lr_t = self.get_lr() * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            m = self.moments1[k] = b1 * self.moments1[k] + (1 - b1) * g
            v = self.moments2[k] = b2 * self.moments2[k] + (1 - b2) * g * g
            step = b1 * m + (1 - b1) * g if self.use_nesterov else m
            self._write(p, part, value - lr_t * step / (np.sqrt(v) + self.eps))
        return True


class AdamWeightDecay(Optimizer):
    """Adam with decoupled weight decay (as `mindspore.nn.AdamWeightDecay`: no bias
    correction, unlike torch's AdamW; the decay is not added to the gradient):
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2 (both start at 0);
    p -= lr * (m / (sqrt(v) + eps) + weight_decay * p)."""

    _decay_in_gradient = False

    def __init__(self, params: Sequence[Parameter], learning_rate: LearningRate = 1e-3,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-6,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay)
        _check_betas(self.cls_name, beta1, beta2, eps)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.moments1: list[Any] = [0.0] * len(self.parameters)
        self.moments2: list[Any] = [0.0] * len(self.parameters)

    def construct(self, gradients: Sequence[Any]) -> bool:
        lr, b1, b2 = self.get_lr(), self.beta1, self.beta2
        for k, (p, (part, value, g)) in enumerate(zip(self.parameters,
                                                      self._gradients(gradients))):
            m = self.moments1[k] = b1 * self.moments1[k] + (1 - b1) * g
            v = self.moments2[k] = b2 * self.moments2[k] + (1 - b2) * g * g
            update = m / (np.sqrt(v) + self.eps) + self.weight_decay * value
            self._write(p, part, value - lr * update)
        return True
