"""Lamb (as `mindspore.nn.Lamb`): Adam's step rescaled per parameter by a trust ratio
||p|| / ||step||. See msops/nn/optim.py for what every optimizer takes and how it runs,
msops/nn/layer_norms.py for how the norms stay whole in a parallel step."""
from __future__ import annotations

from typing import Any, Sequence

from msops import ops
from msops.common.tensor import Parameter
from msops.nn.layer_norms import both_positive, norm, ratio_where
from msops.nn.optim import LearningRate, Optimizer, check_betas

__all__ = ["Lamb"]


class Lamb(Optimizer):
    """Lamb, with t = global_step + 1 and g the gradient, centralized when its group says
    so (no loss scale: MindSpore's Lamb takes none):
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g**2  (both from 0);
    r = (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps);
    u = r + weight_decay * p   (decoupled; ungrouped, not for "beta"/"gamma" names);
    p -= lr * ratio * u, ratio = ||p|| / ||u|| when both norms are > 0, else 1.
    State: `lamb_m`, `lamb_v` (MindSpore's names), `beta1_power`, `beta2_power`."""

    _decay_in_gradient = False
    _layerwise = True

    def __init__(self, params: Sequence[Any], learning_rate: LearningRate,
                 beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-06,
                 weight_decay: float = 0.0) -> None:
        super().__init__(learning_rate, params, weight_decay)
        check_betas(self.cls_name, beta1, beta2, eps, open_low=True)
        self.beta1, self.beta2, self.eps = float(beta1), float(beta2), float(eps)
        self.__dict__["moments1"] = self._state_like("lamb_m")
        self.__dict__["moments2"] = self._state_like("lamb_v")
        self.beta1_power = self._scalar_state("beta1_power", 1.0)
        self.beta2_power = self._scalar_state("beta2_power", 1.0)
        self._sqrt = ops.Sqrt()

    def _shared_values(self) -> dict:
        b1p = self._assign(self.beta1_power, self.beta1_power * self.beta1)
        b2p = self._assign(self.beta2_power, self.beta2_power * self.beta2)
        return {"m_scale": 1.0 / (1.0 - b1p), "v_scale": 1.0 / (1.0 - b2p)}

    def _update(self, k: int, p: Parameter, g: Any, step: dict) -> Any:
        b1, b2 = self.beta1, self.beta2
        m = self._assign(self.moments1[k], self.moments1[k] * b1 + g * (1 - b1))
        v = self._assign(self.moments2[k], self.moments2[k] * b2 + g * g * (1 - b2))
        u = m * step["m_scale"] / (self._sqrt(v * step["v_scale"]) + self.eps)
        decay = self._groups.weight_decay[k]
        if decay:
            u = u + p * decay
        w_norm, u_norm = norm(p), norm(u)
        return p - step["lr"] * ratio_where(both_positive(w_norm, u_norm), w_norm, u_norm) * u
