"""An optimizer's parameter groups (as `mindspore.nn.Optimizer`): what each parameter is
updated with.

`parameters` is a list of Parameters, or a list of dicts, each a group:
* `params` (required): the group's Parameters;
* `lr`: its learning rate (any form `learning_rate` takes), else the optimizer's;
* `weight_decay`: its weight decay, else the optimizer's;
* `grad_centralization`: subtract from each gradient its mean over all dims but the
  first (convolution weights, 4-D, only);
* `order_params` (a dict of its own): the order of the update, which is the order of
  the gradients the optimizer takes; every listed Parameter must be in a group, and every
  grouped Parameter listed. Without it the order is the groups', one after another.
Ungrouped, the weight decay applies to the Parameters whose names hold neither "beta"
nor "gamma" (normalisation scales and shifts); grouped, to every Parameter of a group.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import validator
from msops.common.tensor import Parameter, Tensor

__all__ = ["ParameterGroups", "check_learning_rate"]

_KEYS = ("params", "lr", "weight_decay", "grad_centralization")


def check_learning_rate(learning_rate: Any, name: str, arg: str = "learning_rate") -> Any:
    """A number; a non-empty list/tuple, 1-D Tensor or array of numbers (one per step, the
    last repeated); or a callable of the global step (a `LearningRateSchedule`). Numbers
    are >= 0. Returns a float, a tuple of floats or the callable."""
    if callable(learning_rate) and not isinstance(learning_rate, Tensor):
        return learning_rate
    if isinstance(learning_rate, (Tensor, np.ndarray)):
        value = learning_rate.asnumpy() if isinstance(learning_rate, Tensor) else learning_rate
        if value.ndim <= 1 and value.dtype.kind in "iuf":
            learning_rate = float(value) if value.ndim == 0 else [float(v) for v in value]
    values = list(learning_rate) if isinstance(learning_rate, (list, tuple)) else [learning_rate]
    if not values or any(isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0
                         for v in values):
        raise TypeError(f"For '{name}', the '{arg}' should be a number >= 0, a non-empty "
                        f"list/tuple or 1-D Tensor of them, or a schedule (a callable of the "
                        f"global step), but got {learning_rate!r:.200}.")
    if isinstance(learning_rate, (list, tuple)):
        return tuple(float(v) for v in values)
    return float(learning_rate)


def _check_weight_decay(value: Any, name: str, arg: str) -> float:
    validator.check_value_type(arg, value, (int, float), name)
    if not value >= 0:
        raise ValueError(f"For '{name}', the '{arg}' should be >= 0, but got {value}.")
    return float(value)


def _parameters(value: Any, name: str, arg: str) -> list[Parameter]:
    """`value` (any iterable: a list, a ParameterTuple, a filter of get_parameters()) as a
    non-empty list of Parameters."""
    try:
        params = None if isinstance(value, (str, dict, Tensor)) else list(value)
    except TypeError:
        params = None
    if not params or any(not isinstance(p, Parameter) for p in params):
        raise TypeError(f"For '{name}', the '{arg}' should be a non-empty list of Parameters, "
                        f"but got {value!r:.200}.")
    return params


class ParameterGroups:
    """The parameters of an optimizer in update order, and for each its learning rate
    (`lr_index` into `learning_rates`), weight decay and gradient centralization."""

    def __init__(self, name: str, parameters: Any, learning_rate: Any,
                 weight_decay: Any) -> None:
        learning_rate = check_learning_rate(learning_rate, name)
        weight_decay = _check_weight_decay(weight_decay, name, "weight_decay")
        try:                          # any iterable: a list, a filter of get_parameters()
            items = list(parameters) if not isinstance(parameters, (str, dict, Tensor)) \
                else parameters
        except TypeError:
            items = parameters
        self.is_group = isinstance(items, list) and bool(items) and all(
            isinstance(g, dict) for g in items)
        if not self.is_group:
            self.parameters = _parameters(items, name, "parameters")
            self._check_unique(name, self.parameters)
            self.learning_rates: list[Any] = [learning_rate]
            self.lr_index = [0] * len(self.parameters)
            self.weight_decay = [0.0 if "beta" in p.name or "gamma" in p.name else weight_decay
                                 for p in self.parameters]
            self.centralize = [False] * len(self.parameters)
            self.is_group_lr = False
            return
        order = [g for g in items if "order_params" in g]
        groups = [g for g in items if "order_params" not in g]
        if len(order) > 1 or not groups:
            raise ValueError(f"For '{name}', the group list should hold at least one group "
                             f"with 'params' and at most one 'order_params' entry, but got "
                             f"{len(groups)} groups and {len(order)} 'order_params'.")
        self.is_group_lr = any("lr" in g for g in groups)
        self.learning_rates = [] if self.is_group_lr else [learning_rate]
        by_id: dict[int, tuple[int, float, bool]] = {}
        listed: list[Parameter] = []
        for i, group in enumerate(groups):
            unknown = sorted(set(group) - set(_KEYS))
            if unknown or "params" not in group:
                raise ValueError(f"For '{name}', group {i} should have the key 'params' and "
                                 f"only keys of {list(_KEYS)} (or be {{'order_params': ...}}), "
                                 f"but got {sorted(group)}.")
            params = _parameters(group["params"], name, f"params' of group {i}")
            if self.is_group_lr:
                self.learning_rates.append(check_learning_rate(
                    group.get("lr", learning_rate), name, f"lr' of group {i}"))
            decay = _check_weight_decay(group.get("weight_decay", weight_decay), name,
                                        f"weight_decay' of group {i}")
            gc = group.get("grad_centralization", False)
            validator.check_bool(f"grad_centralization' of group {i}", gc, name)
            for p in params:
                if id(p) in by_id:
                    raise ValueError(f"For '{name}', the Parameter '{p.name}' should be in one "
                                     f"group, but it is in two.")
                if gc and len(p.shape) != 4:
                    raise ValueError(f"For '{name}', 'grad_centralization' of group {i} applies "
                                     f"to convolution weights (4-D) only, but '{p.name}' has "
                                     f"shape {list(p.shape)}.")
                by_id[id(p)] = (len(self.learning_rates) - 1 if self.is_group_lr else 0,
                                decay, gc)
                listed.append(p)
        if order:
            ordered = _parameters(order[0]["order_params"], name, "order_params")
            self._check_unique(name, ordered, "order_params")
            stray = [p.name for p in ordered if id(p) not in by_id]
            left = [p.name for p in listed if id(p) not in {id(q) for q in ordered}]
            if stray or left:
                raise ValueError(f"For '{name}', 'order_params' should list exactly the grouped "
                                 f"Parameters, but {stray} are in no group and {left} are "
                                 f"not listed.")
            listed = ordered
        self.parameters = listed
        self.lr_index = [by_id[id(p)][0] for p in listed]
        self.weight_decay = [by_id[id(p)][1] for p in listed]
        self.centralize = [by_id[id(p)][2] for p in listed]

    @staticmethod
    def _check_unique(name: str, params: Sequence[Parameter], arg: str = "parameters") -> None:
        seen: set[int] = set()
        for p in params:
            if id(p) in seen:
                raise ValueError(f"For '{name}', the '{arg}' should hold each Parameter once, "
                                 f"but '{p.name}' is there twice.")
            seen.add(id(p))

    @staticmethod
    def lr_at(learning_rate: Any, step: int) -> float:
        """The value of one learning rate (float, tuple or schedule) at `step`."""
        if isinstance(learning_rate, tuple):
            return learning_rate[min(step, len(learning_rate) - 1)]
        if callable(learning_rate):
            value = learning_rate(step)
            return float(np.asarray(value.asnumpy() if isinstance(value, Tensor) else value))
        return learning_rate

