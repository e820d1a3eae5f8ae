"""Normalization layers, as `mindspore.nn`: LayerNorm, GroupNorm, and BatchNorm1d (N, C) and
BatchNorm2d (NCHW or NHWC) over the BatchNorm primitive.

BatchNorm training (`set_train()`, or `use_batch_statistics=True`) normalises with the batch's
mean and biased variance and updates the moving statistics, MindSpore's momentum convention:
    moving = momentum * moving + (1 - momentum) * batch statistic   (momentum 0.9 by default)
with the batch's biased variance, as MindSpore's CPU kernel (its GPU/Ascend kernels fold in
N / (N - 1), cuDNN's unbiased running variance). The update is written back by `ops.Assign`:
at once in PYNATIVE_MODE, as a node of the compiled step in GRAPH_MODE. In a
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
from msops.nn.cell import Cell
from msops.nn.initializer import initializer
from msops.ops import nn_func

__all__ = ["LayerNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class LayerNorm(Cell):
    """`LayerNorm(normalized_shape, begin_norm_axis=-1, begin_params_axis=-1, gamma_init='ones',
    beta_init='zeros', epsilon=1e-7, dtype=float32)`: x normalised over its dims from
    begin_norm_axis, times gamma plus beta (Parameters of `normalized_shape`, which should be
    x.shape[begin_params_axis:]). `shard(((a, b, ...),))` shards the primitive with gamma
    and beta split as x's dims from begin_params_axis; a split normalised dim is allowed
    (its statistics are AllReduced, so the sharded layer equals the serial one).
    """

    def __init__(self, normalized_shape: Any, begin_norm_axis: int = -1,
                 begin_params_axis: int = -1, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 epsilon: float = 1e-7, dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        validator.check_value_type("normalized_shape", normalized_shape, (tuple, list), name)
        shape = tuple(normalized_shape)
        for d in shape:
            validator.check_positive_int(d, "normalized_shape", name)
        self.normalized_shape = shape
        self.begin_norm_axis, self.begin_params_axis = begin_norm_axis, begin_params_axis
        self.epsilon = validator.check_value_type("epsilon", epsilon, (int, float), self.cls_name)
        self.gamma = Parameter(initializer(gamma_init, shape, dtype, "gamma_init", name),
                               name="gamma")
        self.beta = Parameter(initializer(beta_init, shape, dtype, "beta_init", name),
                              name="beta")
        self.layer_norm = ops.LayerNorm(begin_norm_axis, begin_params_axis, float(epsilon))

    def construct(self, x):
        return self.layer_norm(x, self.gamma, self.beta)[0]

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        params = x[len(x) - len(self.normalized_shape):]
        self.layer_norm.shard((x, params, params), out_strategy)

    def extend_repr(self) -> str:
        return (f"normalized_shape={list(self.normalized_shape)}, "
                f"begin_norm_axis={self.begin_norm_axis}, "
                f"begin_params_axis={self.begin_params_axis}, epsilon={self.epsilon}")


def affine_parameters(name: str, channels: int, gamma_init: Any, beta_init: Any,
                      dtype: mstype.Type, affine: bool) -> tuple:
    """gamma and beta, Parameters (channels,) from their initializers, trained when `affine`."""
    shape = (channels,)
    gamma = Parameter(initializer(gamma_init, shape, dtype, "gamma_init", name), name="gamma",
                      requires_grad=affine)
    beta = Parameter(initializer(beta_init, shape, dtype, "beta_init", name), name="beta",
                     requires_grad=affine)
    return gamma, beta


class GroupNorm(Cell):
    """`GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, gamma_init='ones',
    beta_init='zeros', dtype=float32)`, as `mindspore.nn.GroupNorm`: x (N, C, *) normalised
    per sample over each of num_groups groups of C / num_groups channels (biased variance),
    times gamma plus beta (Parameters (C,), trained when `affine`): `ops.group_norm`, built
    from Reshape / ReduceMean / Rsqrt, so a batch split shards it with no communication.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.num_groups = validator.check_positive_int(num_groups, "num_groups", name)
        self.num_channels = validator.check_positive_int(num_channels, "num_channels", name)
        if num_channels % num_groups:
            raise ValueError(f"For '{name}', the 'num_channels' should be divisible by "
                             f"'num_groups' {num_groups}, but got {num_channels}.")
        nn_func.check_groups(name, num_groups, eps)
        self.eps = eps
        self.affine = validator.check_bool("affine", affine, name)
        self.gamma, self.beta = affine_parameters(name, num_channels, gamma_init, beta_init,
                                                  dtype, affine)

    def construct(self, x):
        if len(x.shape) < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be (N, C, *) with C = "
                             f"num_channels {self.num_channels}, but got shape {list(x.shape)}.")
        return nn_func.group_norm_of(self.cls_name, x, self.num_groups, self.gamma, self.beta,
                                     self.eps)

    def extend_repr(self) -> str:
        return (f"num_groups={self.num_groups}, num_channels={self.num_channels}, "
                f"eps={self.eps}, affine={self.affine}")


class _BatchNorm(Cell):
    """The shared body: parameters `gamma`, `beta` (trainable when affine), `moving_mean`,
    `moving_variance` (never trainable), all (C,); `ndims` the input ranks it takes."""

    ndims = (2,)

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
        self.assign = ops.Assign()

    def construct(self, x):
        if len(x.shape) not in self.ndims:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be "
                             f"{' or '.join(map(str, self.ndims))}-D, but got "
                             f"shape {list(x.shape)}.")
        return self._normalise(x)

    def _normalise(self, x):
        """x (2-D or 4-D) normalised; in training the moving statistics are updated."""
        use_batch = self.training if self.use_batch_statistics is None \
            else self.use_batch_statistics
        if not use_batch:
            return self.bn_infer(x, self.gamma, self.beta, self.moving_mean,
                                 self.moving_variance)[0]
        y, moving_mean, moving_variance, _, _ = self._train(
            [x, self.gamma, self.beta, self.moving_mean, self.moving_variance])
        self.assign(self.moving_mean, moving_mean)
        self.assign(self.moving_variance, moving_variance)
        return y

    def _train(self, args: list) -> Any:
        """BatchNorm's five outputs in training (the batch's statistics)."""
        return self.bn_train(*args)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = in_strategy[0]
        c = x[3] if len(x) == 4 and self.data_format == "NHWC" else x[1]
        full = (x,) + ((c,),) * 4
        self.bn_train.shard(full, out_strategy)
        self.bn_infer.shard(full, out_strategy)

    def extend_repr(self) -> str:
        return f"num_features={self.num_features}, eps={self.eps}, momentum={self.momentum}"


class _ChannelsFirstBatchNorm(_BatchNorm):
    """The BatchNorms without data_format (channels at dim 1)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.9,
                 affine: bool = True, gamma_init: Any = "ones", beta_init: Any = "zeros",
                 moving_mean_init: Any = "zeros", moving_var_init: Any = "ones",
                 use_batch_statistics: bool | None = None,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__(num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, "NCHW", dtype)


class BatchNorm1d(_ChannelsFirstBatchNorm):
    """Batch normalization of x (N, C) over its channels: gamma * x_hat + beta.

    `shard(((n, c),))` shards the BatchNorm primitive as ((n, c), (c,), (c,), (c,), (c,)).
    """

    ndims = (2,)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of x (N, C, H, W) (or NHWC with data_format="NHWC") per channel.

    `shard(((n, c, h, w),))` shards the BatchNorm primitive as (x, (c,), (c,), (c,), (c,)).
    """

    ndims = (4,)


class BatchNorm3d(_ChannelsFirstBatchNorm):
    """Batch normalization of x (N, C, D, H, W) per channel, as `mindspore.nn.BatchNorm3d`
    (no data_format): x is viewed as (N, C, D * H, W) for the BatchNorm primitive, as
    MindSpore does. `shard(((n, 1, 1, 1, 1),))` splits the batch only (the views keep dim 0
    alone whole or split)."""

    ndims = (5,)

    def construct(self, x):
        shape = tuple(x.shape)
        if len(shape) != 5:
            raise ValueError(f"For '{self.cls_name}', the 'x' should be 5-D (N, C, D, H, W), "
                             f"but got shape {list(shape)}.")
        n, c, d, h, w = shape
        y = self._normalise(ops.reshape(x, (n, c, d * h, w)))
        return ops.reshape(y, shape)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        x = tuple(in_strategy[0])
        if len(x) != 5 or any(s != 1 for s in x[1:]):
            raise ValueError(f"For '{self.cls_name}', the strategy should be ((n, 1, 1, 1, 1),) "
                             f"(the batch split only), but got {in_strategy}.")
        super()._shard_primitives(((x[0], 1, 1, 1),), out_strategy)
