"""`mindspore.mint.optim`: AdamW with PyTorch's arguments and update (bias-corrected moments,
eps added to the corrected sqrt(v), weight decay decoupled: p *= 1 - lr * weight_decay),
on nn.Adam's state and update machinery (moments, beta powers, amsgrad's vhat, groups,
learning-rate schedules, the compiled step)."""
from __future__ import annotations

from typing import Any, Sequence

from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """`mint.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
    amsgrad=False, *, maximize=False)`; with t the step and g the gradient (-g if maximize):
    p *= 1 - lr * wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g**2 (vhat = max(vhat, v)
    with amsgrad); p -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)."""

    _decay_in_gradient = False

    def __init__(self, params: Sequence[Any], lr: float = 1e-3,
                 betas: tuple = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, maximize: bool = False) -> None:
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"For 'AdamW', the 'betas' should be a pair of floats, but got "
                             f"{betas!r}.")
        validator.check_bool("maximize", maximize, "AdamW")
        super().__init__(params, lr, betas[0], betas[1], eps, weight_decay=weight_decay,
                         use_amsgrad=amsgrad)
        if not self._groups.is_group:   # PyTorch's decays every parameter; nn's optimizers
            # leave "beta"/"gamma" (normalisation) parameters undecayed unless grouped
            self._groups.weight_decay = [weight_decay] * len(self._groups.parameters)
        self.maximize = maximize

    def _shared_values(self) -> dict:
        b1p = self._assign(self.beta1_power, self.beta1_power * self.beta1)
        b2p = self._assign(self.beta2_power, self.beta2_power * self.beta2)
        return {"m_scale": 1.0 / (1.0 - b1p), "v_scale": 1.0 / (1.0 - b2p)}

    def _step_values(self, lr: Any, shared: dict) -> dict:
        """The plain rate: the bias corrections apply to m and v (Adam folds them into lr)."""
        return {"lr": lr, **shared}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        b1, b2, lr = self.beta1, self.beta2, step["lr"]
        if self.maximize:
            g = -g
        decay = self._groups.weight_decay[k]
        if decay:
            p = p * (1.0 - lr * decay)
        m = self._assign(self.moment1[k], self.moment1[k] * b1 + g * (1 - b1))
        v = self._assign(self.moment2[k], self.moment2[k] * b2 + g * g * (1 - b2))
        if self.use_amsgrad:
            v = self._assign(self.vhat[k], self._maximum(self.vhat[k], v))
        return p - lr * (m * step["m_scale"]) / (self._sqrt(v * step["v_scale"]) + self.eps)
