"""Batch normalization layers, as `mindspore.nn`: BatchNorm1d (N, C) and BatchNorm2d (NCHW or
NHWC), over the BatchNorm primitive.

Training (`set_train()`, or `use_batch_statistics=True`) normalises with the batch's mean and
biased variance and updates the moving statistics, MindSpore's momentum convention:
    moving = momentum * moving + (1 - momentum) * batch statistic   (momentum 0.9 by default)
with the batch's biased variance, as MindSpore's CPU kernel (its GPU/Ascend kernels fold in
N / (N - 1), cuDNN's unbiased running variance). The update is written back after the call:
at once in PYNATIVE_MODE, after the compiled step in GRAPH_MODE (`update_parameter`). In a
parallel graph with the batch split, the statistics are the global batch's (the primitive's
expansion AllReduces them), so the moving statistics equal the serial network's.
Inference uses the moving statistics.
"""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter
from msops.graph.tracer import update_parameter
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _BatchNorm(Cell):
    """The shared body: parameters `gamma`, `beta` (trainable when affine), `moving_mean`,
    `moving_variance` (never trainable), all (C,); `ndim` the input rank it takes."""

    ndim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.9,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 moving_mean_init: Any = "zeros", moving_var_init: Any = "ones",
                 use_batch_statistics: bool | None = None, data_format: str = "NCHW",
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.num_features = validator.check_positive_int(num_features, "num_features", name)
        validator.check_value_type("eps", eps, (float, int), name)
        validator.check_value_type("momentum", momentum, (float, int), name)
        if not 0 <= momentum <= 1:
            raise ValueError(f"For '{name}', the 'momentum' should be in [0, 1], "
                             f"but got {momentum}.")
        validator.check_bool("affine", affine, name)
        if use_batch_statistics is not None:
            validator.check_bool("use_batch_statistics", use_batch_statistics, name)
        self.data_format = validator.check_string("data_format", data_format,
                                                  ("NCHW", "NHWC"), name)
        self.eps, self.momentum = eps, momentum
        self.use_batch_statistics = use_batch_statistics
        shape = (num_features,)

        def param(init, arg, trainable):
            return Parameter(initializer(init, shape, dtype, arg, name), requires_grad=trainable)
        self.gamma = param(gamma_init, "gamma_init", affine)
        self.beta = param(beta_init, "beta_init", affine)
        self.moving_mean = param(moving_mean_init, "moving_mean_init", False)
        self.moving_variance = param(moving_var_init, "moving_var_init", False)
        # MindSpore's momentum weighs the old statistic; the primitive's weighs the new one.
        kw = dict(epsilon=float(eps), momentum=1.0 - momentum, data_format=data_format)
        self.bn_train = ops.BatchNorm(is_training=True, **kw)
        self.bn_infer = ops.BatchNorm(is_training=False, **kw)

    def construct(self, x):
        if len(x.shape) != self.ndim:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be {self.ndim}-D, but got "
                             f"shape {list(x.shape)}.")
        use_batch = self.training if self.use_batch_statistics is None \
            else self.use_batch_statistics
        if not use_batch:
            return self.bn_infer(x, self.gamma, self.beta, self.moving_mean,
                                 self.moving_variance)[0]
        y, moving_mean, moving_variance, _, _ = self.bn_train(
            x, self.gamma, self.beta, self.moving_mean, self.moving_variance)
        update_parameter(self.moving_mean, moving_mean)
        update_parameter(self.moving_variance, moving_variance)
        return y

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = in_strategy[0]
        c = x[3] if self.ndim == 4 and self.data_format == "NHWC" else x[1]
        full = (x,) + ((c,),) * 4
        self.bn_train.shard(full, out_strategy)
        self.bn_infer.shard(full, out_strategy)

    def extend_repr(self) -> str:
        return f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}"


class BatchNorm1d(_BatchNorm):
    """Batch normalization of x (N, C) over its channels: gamma * x_hat + beta.

    `shard(((n, c),))` shards the BatchNorm primitive as ((n, c), (c,), (c,), (c,), (c,)).
    """

    ndim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.9,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 moving_mean_init: Any = "zeros", moving_var_init: Any = "ones",
                 use_batch_statistics: bool | None = None,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, "NCHW", dtype)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of x (N, C, H, W) (or NHWC with data_format="NHWC") per channel.

    `shard(((n, c, h, w),))` shards the BatchNorm primitive as (x, (c,), (c,), (c,), (c,)).
    """

    ndim = 4
