"""Quantile functions, the element-wise half of the random draws of ops.gamma / random_gamma
(GammaQuantile) and ops.poisson / random_poisson (PoissonQuantile).

A draw there is a counter-based uniform u of the output's shape (UniformReal: the same
eagerly, compiled and on every rank's block of a sharded output) mapped through the
distribution's inverse CDF: one uniform per element, exactly distributed, no rejection loop,
so a sharded draw equals the serial one. The maps are element-wise binary ops (u and the
distribution's parameter broadcast together) on float64, and pass no gradient (the draw is
piecewise constant in u, and MindSpore gives its random ops none). Internal; not exported.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from msops.common import dtype as mstype
from msops.primitives.elementwise_ops import no_gradient_bprop
from msops.primitives.math_ops import _Binary
from msops.primitives.rules import bprop

__all__: list = []


def _gamma_quantile(u: np.ndarray, alpha: np.ndarray, out: np.ndarray | None = None) -> Any:
    """The standard gamma (scale 1) of shape alpha at probability u."""
    with np.errstate(all="ignore"):
        return special.gammaincinv(alpha, u, out=out)


def _poisson_quantile(u: np.ndarray, rate: np.ndarray, out: np.ndarray | None = None) -> Any:
    """The least k with P(X <= k) >= u for X ~ Poisson(rate), as a float: a guess from the
    inverse of the regularised upper incomplete gamma (pdtrik), then corrected by one step
    each way against the exact CDF (pdtr)."""
    u, rate = np.broadcast_arrays(u, rate)
    with np.errstate(all="ignore"):
        k = np.maximum(np.ceil(special.pdtrik(u, rate)), 0.0)
        k = np.where(np.isfinite(k), k, 0.0)
        for _ in range(64):                              # walk up where the CDF falls short
            short = special.pdtr(k, rate) < u
            if not short.any():
                break
            k = k + short
        while True:                                      # and down where k - 1 suffices
            over = (k > 0) & (special.pdtr(k - 1, rate) >= u)
            if not over.any():
                break
            k = k - over
    if out is None:
        return k
    np.copyto(out, k)
    return out


class GammaQuantile(_Binary):
    """`GammaQuantile()(u, alpha)`: the standard gamma quantile of shape alpha (> 0) at u in
    [0, 1), float64, broadcast."""

    valid_types = (mstype.float64,)
    _np_op = staticmethod(_gamma_quantile)


class PoissonQuantile(_Binary):
    """`PoissonQuantile()(u, rate)`: the Poisson quantile of rate (>= 0) at u in (0, 1) as
    a float64 count, broadcast."""

    valid_types = (mstype.float64,)
    _np_op = staticmethod(_poisson_quantile)


bprop(GammaQuantile, PoissonQuantile)(no_gradient_bprop)
