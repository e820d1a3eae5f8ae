"""Proximal optimizers with l1 / l2 regularisation in the update (as `mindspore.nn`):
ProximalAdagrad and FTRL. See msops/nn/optim.py for what every optimizer takes and how it
runs."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.optim import LearningRate, Optimizer, check_non_negative

__all__ = ["ProximalAdagrad", "FTRL"]


class ProximalAdagrad(Optimizer):
    """ProximalAdagrad (ApplyProximalAdagrad), g the gradient decayed, centralized and
    unscaled (see Optimizer): accum += g**2 (from `accum`);
    v = p - lr * g / sqrt(accum);  p = sign(v) / (1 + lr * l2) * max(|v| - lr * l1, 0).
    State: `accum`. `use_locking` picks a kernel option in MindSpore: the same numbers."""

    def __init__(self, params: Sequence[Any], accum: float = 0.1,
                 learning_rate: LearningRate = 0.001, l1: float = 0.0, l2: float = 0.0,
                 use_locking: bool = False, loss_scale: float = 1.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        name = self.cls_name
        self.l1, self.l2 = check_non_negative(name, "l1", l1), check_non_negative(name, "l2", l2)
        self.use_locking = validator.check_bool("use_locking", use_locking, name)
        accum = check_non_negative(name, "accum", accum)
        self.__dict__["accum"] = self._state_like("accum", accum)
        self._sqrt, self._sign, self._abs = ops.Sqrt(), ops.Sign(), ops.Abs()
        self._maximum = ops.Maximum()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        lr = step["lr"]
        accum = self._assign(self.accum[k], self.accum[k] + g * g)
        v = p - lr * g / self._sqrt(accum)
        shrunk = self._maximum(self._abs(v) - lr * self.l1, v * 0.0)
        return self._sign(v) / (lr * self.l2 + 1.0) * shrunk


class FTRL(Optimizer):
    """FTRL (ApplyFtrl), g the gradient decayed (ungrouped: every parameter, as
    MindSpore's FTRL), centralized and unscaled; n = -lr_power:
    m' = m + g**2 (m from `initial_accum`);  u += g - (m'**n - m**n) / lr * p (u from 0);
    p = (sign(u) * l1 - u) / (m'**n / lr + 2 * l2) where |u| > l1, else 0;  m = m'.
    `learning_rate` is one number > 0 (no schedule or group rates, as MindSpore's).
    State: `moments` (m), `linear` (u)."""

    def __init__(self, params: Sequence[Any], initial_accum: float = 0.1,
                 learning_rate: float = 0.001, lr_power: float = -0.5, l1: float = 0.0,
                 l2: float = 0.0, use_locking: bool = False, loss_scale: float = 1.0,
                 weight_decay: float = 0.0) -> None:
        name = type(self).__name__
        validator.check_value_type("learning_rate", learning_rate, (int, float), name)
        if isinstance(learning_rate, bool) or not learning_rate > 0:
            raise ValueError(f"For '{name}', the 'learning_rate' should be a number > 0 (no "
                             f"schedule or per-step list), but got {learning_rate!r}.")
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        if self.is_group_lr:
            raise ValueError(f"For '{name}', group learning rates are not supported, but a "
                             f"group sets 'lr'.")
        if not self.is_group:                     # MindSpore's FTRL decays every parameter
            self._groups.weight_decay = [self.weight_decay] * len(self.parameters)
        validator.check_value_type("lr_power", lr_power, (int, float), name)
        if not lr_power <= 0:
            raise ValueError(f"For '{name}', the 'lr_power' should be <= 0, but got "
                             f"{lr_power}.")
        self.lr_power = float(lr_power)
        self.l1, self.l2 = check_non_negative(name, "l1", l1), check_non_negative(name, "l2", l2)
        self.use_locking = validator.check_bool("use_locking", use_locking, name)
        self.__dict__["moments"] = self._state_like(
            "moments", check_non_negative(name, "initial_accum", initial_accum))
        self.__dict__["linear"] = self._state_like("linear")
        self._pow, self._sign, self._abs = ops.Pow(), ops.Sign(), ops.Abs()
        self._greater, self._select = ops.Greater(), ops.Select()

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        lr, power = step["lr"], -self.lr_power
        m = self.moments[k]
        m_new = m + g * g
        m_new_pow = self._pow(m_new, power)
        u = self._assign(self.linear[k],
                         self.linear[k] + g - (m_new_pow - self._pow(m, power)) / lr * p)
        self._assign(self.moments[k], m_new)
        solved = (self._sign(u) * self.l1 - u) / (m_new_pow / lr + 2.0 * self.l2)
        return self._select(self._greater(self._abs(u), self.l1), solved, u * 0.0)
