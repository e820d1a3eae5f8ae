"""Learning-rate lists, as `mindspore.nn`'s dynamic_lr: one Python float per step, to pass
as an optimizer's `learning_rate` (step i uses element i, the last one repeated).

Each builder works per epoch: with current_epoch = floor(i / step_per_epoch) for step i,
the formulas are MindSpore's (its code, in float64 Python arithmetic).
"""
from __future__ import annotations

import math
from typing import Sequence

from msops.common import validator
from msops.nn.learning_rate_schedule import check_float

__all__ = ["piecewise_constant_lr", "exponential_decay_lr", "natural_exp_decay_lr",
           "inverse_decay_lr", "cosine_decay_lr", "polynomial_decay_lr", "warmup_lr"]


def piecewise_constant_lr(milestone: Sequence[int], learning_rates: Sequence[float]) -> list:
    """learning_rates[t] for the steps in [milestone[t-1], milestone[t]) (milestone[-1] steps
    in all); milestones are positive and non-decreasing, one learning rate each."""
    name = "piecewise_constant_lr"
    validator.check_value_type("milestone", milestone, (tuple, list), name)
    validator.check_value_type("learning_rates", learning_rates, (tuple, list), name)
    if len(milestone) != len(learning_rates):
        raise ValueError(f"For '{name}', the size of 'milestone' should be the size of "
                         f"'learning_rates': {len(learning_rates)}, but got {len(milestone)}.")
    lr: list = []
    last = 0
    for i, (item, rate) in enumerate(zip(milestone, learning_rates)):
        validator.check_positive_int(item, f"milestone[{i}]", name)
        rate = check_float(rate, f"learning_rates[{i}]", name, positive=False)
        if item < last:
            raise ValueError(f"For '{name}', the 'milestone[{i}]' should be >= milestone[{i - 1}]"
                             f": {last}, but got {item}.")
        lr += [rate] * (item - last)
        last = item
    return lr


def _epochs(name: str, total_step: int, step_per_epoch: int, decay_epoch: int,
            decay_arg: str = "decay_epoch") -> list:
    """current_epoch of every step, after checking the three counts."""
    validator.check_positive_int(total_step, "total_step", name)
    validator.check_positive_int(step_per_epoch, "step_per_epoch", name)
    validator.check_positive_int(decay_epoch, decay_arg, name)
    return [i // step_per_epoch for i in range(total_step)]


def _decay_args(name: str, learning_rate: float, decay_rate: float, is_stair: bool) -> None:
    check_float(learning_rate, "learning_rate", name)
    check_float(decay_rate, "decay_rate", name)
    validator.check_bool("is_stair", is_stair, name)


def exponential_decay_lr(learning_rate: float, decay_rate: float, total_step: int,
                         step_per_epoch: int, decay_epoch: int, is_stair: bool = False) -> list:
    """learning_rate * decay_rate ** (current_epoch / decay_epoch) (the ratio floored when
    is_stair)."""
    name = "exponential_decay_lr"
    _decay_args(name, learning_rate, decay_rate, is_stair)
    out = []
    for e in _epochs(name, total_step, step_per_epoch, decay_epoch):
        p = e // decay_epoch if is_stair else e / decay_epoch
        out.append(learning_rate * decay_rate ** p)
    return out


def natural_exp_decay_lr(learning_rate: float, decay_rate: float, total_step: int,
                         step_per_epoch: int, decay_epoch: int, is_stair: bool = False) -> list:
    """learning_rate * e ** (-decay_rate * current_epoch), the epoch rounded down to a
    multiple of decay_epoch when is_stair (MindSpore's code: no division by decay_epoch)."""
    name = "natural_exp_decay_lr"
    _decay_args(name, learning_rate, decay_rate, is_stair)
    out = []
    for e in _epochs(name, total_step, step_per_epoch, decay_epoch):
        p = (e // decay_epoch) * decay_epoch if is_stair else e
        out.append(learning_rate * math.e ** (-decay_rate * p))
    return out


def inverse_decay_lr(learning_rate: float, decay_rate: float, total_step: int,
                     step_per_epoch: int, decay_epoch: int, is_stair: bool = False) -> list:
    """learning_rate / (1 + decay_rate * current_epoch / decay_epoch) (the ratio floored
    when is_stair)."""
    name = "inverse_decay_lr"
    _decay_args(name, learning_rate, decay_rate, is_stair)
    out = []
    for e in _epochs(name, total_step, step_per_epoch, decay_epoch):
        p = e // decay_epoch if is_stair else e / decay_epoch
        out.append(learning_rate / (1 + decay_rate * p))
    return out


def cosine_decay_lr(min_lr: float, max_lr: float, total_step: int, step_per_epoch: int,
                    decay_epoch: int) -> list:
    """min_lr + (max_lr - min_lr) / 2 * (1 + cos(pi * min(current_epoch, decay_epoch) /
    decay_epoch))."""
    name = "cosine_decay_lr"
    check_float(min_lr, "min_lr", name, positive=False)
    check_float(max_lr, "max_lr", name)
    if min_lr >= max_lr:
        raise ValueError(f"For '{name}', the 'max_lr' should be > 'min_lr': {min_lr}, but got "
                         f"{max_lr}.")
    delta = 0.5 * (max_lr - min_lr)
    return [min_lr + delta * (1 + math.cos(math.pi * min(e, decay_epoch) / decay_epoch))
            for e in _epochs(name, total_step, step_per_epoch, decay_epoch)]


def polynomial_decay_lr(learning_rate: float, end_learning_rate: float, total_step: int,
                        step_per_epoch: int, decay_epoch: int, power: float,
                        update_decay_epoch: bool = False) -> list:
    """(learning_rate - end_learning_rate) * (1 - t / d) ** power + end_learning_rate with
    t = min(current_epoch, decay_epoch) and d = decay_epoch; with update_decay_epoch,
    t = current_epoch and d = decay_epoch * max(ceil(current_epoch / decay_epoch), 1)."""
    name = "polynomial_decay_lr"
    check_float(learning_rate, "learning_rate", name)
    check_float(end_learning_rate, "end_learning_rate", name, positive=False)
    check_float(power, "power", name)
    validator.check_bool("update_decay_epoch", update_decay_epoch, name)
    delta, out = learning_rate - end_learning_rate, []
    for e in _epochs(name, total_step, step_per_epoch, decay_epoch):
        if update_decay_epoch:
            t, d = e, decay_epoch * max(math.ceil(e / decay_epoch), 1)
        else:
            t, d = min(e, decay_epoch), decay_epoch
        out.append(delta * (1 - t / d) ** power + end_learning_rate)
    return out


def warmup_lr(learning_rate: float, total_step: int, step_per_epoch: int,
              warmup_epoch: int) -> list:
    """learning_rate * min(current_epoch, warmup_epoch) / warmup_epoch."""
    name = "warmup_lr"
    check_float(learning_rate, "learning_rate", name, positive=False)
    return [learning_rate * min(e, warmup_epoch) / warmup_epoch
            for e in _epochs(name, total_step, step_per_epoch, warmup_epoch, "warmup_epoch")]
