"""InstanceNorm1d/2d/3d, as `mindspore.nn`: each sample's channels normalised on their own
(biased variance over the spatial dims), in training and inference alike: a GroupNorm with
one channel a group (`nn_func.group_norm_of`), so a batch split needs no communication."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.nn.cell import Cell
from msops.nn.normalization import affine_parameters
from msops.ops import nn_func

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(Cell):
    """`(num_features, eps=1e-5, momentum=0.1, affine=True, gamma_init='ones',
    beta_init='zeros', dtype=float32)`: x (N, C, *spatial) with C = num_features, `ndim`
    dims; gamma and beta (C,) are trained when `affine`. `momentum` is checked and kept,
    as MindSpore's (instance statistics are never accumulated)."""

    ndim = 4

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.num_features = validator.check_positive_int(num_features, "num_features", name)
        self.eps = validator.check_value_type("eps", eps, float, name)
        if not 0 < eps < float("inf"):
            raise ValueError(f"For '{name}', the 'eps' should be > 0 and finite, but got {eps}.")
        validator.check_value_type("momentum", momentum, float, name)
        if not 0 <= momentum <= 1:
            raise ValueError(f"For '{name}', the 'momentum' should be in [0, 1], "
                             f"but got {momentum}.")
        self.momentum = momentum
        self.affine = validator.check_bool("affine", affine, name)
        self.gamma, self.beta = affine_parameters(name, num_features, gamma_init, beta_init,
                                                  dtype, affine)

    def construct(self, x):
        shape = list(x.shape)
        if len(shape) != self.ndim or shape[1] != self.num_features:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be {self.ndim}-D (N, C, ...) "
                             f"with C = num_features {self.num_features}, but got shape "
                             f"{shape}.")
        return nn_func.group_norm_of(self.cls_name, x, self.num_features, self.gamma,
                                     self.beta, self.eps)

    def extend_repr(self) -> str:
        return (f"num_features={self.num_features}, eps={self.eps}, "
                f"momentum={self.momentum}, affine={self.affine}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of x (N, C, L)."""

    ndim = 3


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of x (N, C, H, W)."""

    ndim = 4


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of x (N, C, D, H, W)."""

    ndim = 5
