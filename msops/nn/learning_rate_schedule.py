"""Learning-rate schedules, as `mindspore.nn`: Cells mapping the global step to the learning
rate of that step (a 0-d float32 Tensor).

An optimizer given a schedule as its `learning_rate` calls it with its `global_step` (0 at
the first step). The value is computed in float32 like MindSpore's graph (the step cast to
float32 first). A schedule runs eagerly in either mode: it is a few scalar operations on
the host, where the optimizer reads it, so compiling it would only add a graph per step
value. Formulas follow MindSpore's code; where its docstring says otherwise the code wins
(NaturalExpDecayLR: p is the step itself, not step / decay_steps).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.nn.cell import Cell

__all__ = ["LearningRateSchedule", "ExponentialDecayLR", "NaturalExpDecayLR", "InverseDecayLR",
           "CosineDecayLR", "PolynomialDecayLR", "WarmUpLR"]

f32 = np.float32


def check_float(value: Any, arg: str, name: str, positive: bool = True) -> float:
    """A float (an int is accepted too, a bool is not) > 0, or >= 0 when not `positive`."""
    validator.check_value_type(arg, value, (float, int), name)
    if not math.isfinite(value) or (value <= 0 if positive else value < 0):
        raise ValueError(f"For '{name}', the '{arg}' should be a finite number "
                         f"{'> 0' if positive else '>= 0'}, but got {value}.")
    return float(value)


def _step_of(global_step: Any, name: str) -> f32:
    """The global step (an int, or a Tensor / array of one int) as float32, >= 0."""
    if isinstance(global_step, Tensor):
        global_step = global_step.asnumpy()
    value = np.asarray(global_step)
    if value.size != 1 or value.dtype.kind not in "iu":
        raise TypeError(f"For '{name}', the 'global_step' should be an int or a Tensor of "
                        f"one int, but got {global_step!r}.")
    step = int(value.reshape(()))
    if step < 0:
        raise ValueError(f"For '{name}', the 'global_step' should be >= 0, but got {step}.")
    return f32(step)


class LearningRateSchedule(Cell):
    """The base of schedules: subclasses define `construct(global_step)` returning the
    learning rate as a 0-d Tensor. Calling a schedule always runs it eagerly."""

    def construct(self, global_step: Any) -> Tensor:
        raise NotImplementedError(f"For '{self.cls_name}', construct(global_step) is not "
                                  f"defined.")

    def __call__(self, global_step: Any) -> Tensor:
        return self.construct(global_step)

    def _lr(self, value: Any) -> Tensor:
        return Tensor(np.asarray(value, f32))


class _DecayLR(LearningRateSchedule):
    """The three decays of `learning_rate` by `decay_rate` per `decay_steps` steps."""

    def __init__(self, learning_rate: float, decay_rate: float, decay_steps: int,
                 is_stair: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        self.decay_steps = validator.check_positive_int(decay_steps, "decay_steps", name)
        self.learning_rate = check_float(learning_rate, "learning_rate", name)
        self.decay_rate = check_float(decay_rate, "decay_rate", name)
        self.is_stair = validator.check_bool("is_stair", is_stair, name)

    def _p(self, global_step: Any) -> f32:
        """step / decay_steps, floored when is_stair."""
        p = _step_of(global_step, self.cls_name) / f32(self.decay_steps)
        return np.floor(p) if self.is_stair else p

    def extend_repr(self) -> str:
        return (f"learning_rate={self.learning_rate}, decay_rate={self.decay_rate}, "
                f"decay_steps={self.decay_steps}, is_stair={self.is_stair}")


class ExponentialDecayLR(_DecayLR):
    """learning_rate * decay_rate ** p, p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step: Any) -> Tensor:
        return self._lr(f32(self.learning_rate) * f32(self.decay_rate) ** self._p(global_step))


class NaturalExpDecayLR(_DecayLR):
    """learning_rate * exp(-decay_rate * p), p = step, or floor(step / decay_steps) *
    decay_steps when is_stair (MindSpore's code; its docstring divides by decay_steps)."""

    def construct(self, global_step: Any) -> Tensor:
        p = _step_of(global_step, self.cls_name)
        if self.is_stair:
            p = np.floor(p / f32(self.decay_steps)) * f32(self.decay_steps)
        return self._lr(f32(self.learning_rate) * np.exp(-f32(self.decay_rate) * p))


class InverseDecayLR(_DecayLR):
    """learning_rate / (1 + decay_rate * p), p = step / decay_steps (floored when is_stair)."""

    def construct(self, global_step: Any) -> Tensor:
        return self._lr(f32(self.learning_rate) /
                        (f32(1) + f32(self.decay_rate) * self._p(global_step)))


class CosineDecayLR(LearningRateSchedule):
    """min_lr + (max_lr - min_lr) / 2 * (1 + cos(pi * min(step, decay_steps) / decay_steps))."""

    def __init__(self, min_lr: float, max_lr: float, decay_steps: int) -> None:
        super().__init__()
        name = self.cls_name
        self.min_lr = check_float(min_lr, "min_lr", name, positive=False)
        self.max_lr = check_float(max_lr, "max_lr", name)
        self.decay_steps = validator.check_positive_int(decay_steps, "decay_steps", name)
        if self.min_lr >= self.max_lr:
            raise ValueError(f"For '{name}', the 'max_lr' should be > 'min_lr': {min_lr}, but "
                             f"got {max_lr}.")

    def construct(self, global_step: Any) -> Tensor:
        p = np.minimum(_step_of(global_step, self.cls_name), f32(self.decay_steps))
        delta = f32(0.5 * (self.max_lr - self.min_lr))
        return self._lr(f32(self.min_lr) + delta *
                        (f32(1) + np.cos(f32(math.pi) * p / f32(self.decay_steps))))


class PolynomialDecayLR(LearningRateSchedule):
    """(learning_rate - end_learning_rate) * (1 - s / d) ** power + end_learning_rate, with
    s = min(step, decay_steps) and d = decay_steps; with update_decay_steps, s = step and
    d = decay_steps * max(ceil(step / decay_steps), 1) (the decay restarts from a lower lr)."""

    def __init__(self, learning_rate: float, end_learning_rate: float, decay_steps: int,
                 power: float, update_decay_steps: bool = False) -> None:
        super().__init__()
        name = self.cls_name
        self.learning_rate = check_float(learning_rate, "learning_rate", name)
        self.end_learning_rate = check_float(end_learning_rate, "end_learning_rate", name,
                                             positive=False)
        self.decay_steps = validator.check_positive_int(decay_steps, "decay_steps", name)
        self.power = check_float(power, "power", name)
        self.update_decay_steps = validator.check_bool("update_decay_steps",
                                                       update_decay_steps, name)

    def construct(self, global_step: Any) -> Tensor:
        step, d = _step_of(global_step, self.cls_name), f32(self.decay_steps)
        if self.update_decay_steps:
            d = d * np.maximum(np.ceil(step / d), f32(1))
        else:
            step = np.minimum(step, d)
        diff = f32(self.learning_rate - self.end_learning_rate)
        return self._lr(diff * (f32(1) - step / d) ** f32(self.power) +
                        f32(self.end_learning_rate))


class WarmUpLR(LearningRateSchedule):
    """learning_rate * min(step, warmup_steps) / warmup_steps."""

    def __init__(self, learning_rate: float, warmup_steps: int) -> None:
        super().__init__()
        name = self.cls_name
        self.learning_rate = check_float(learning_rate, "learning_rate", name)
        self.warmup_steps = validator.check_positive_int(warmup_steps, "warmup_steps", name)

    def construct(self, global_step: Any) -> Tensor:
        w = f32(self.warmup_steps)
        return self._lr(f32(self.learning_rate) *
                        (np.minimum(_step_of(global_step, self.cls_name), w) / w))
