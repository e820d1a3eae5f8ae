"""Layers: Dense, ReLU, Identity, Flatten and Dropout (MindSpore's arguments and names);
BatchNorm1d/2d live in nn.normalization (re-exported here)."""
from __future__ import annotations

import math

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.shard_layout import Layout
from msops.common.tensor import Parameter
from msops.nn.activation import ACTIVATIONS, _Wrapper
from msops.nn.activation_ext import EXT_ACTIVATIONS
from msops.nn.cell import Cell
from msops.common.initializer import HeUniform, Uniform
from msops.nn.initializer import initializer
from msops.nn.normalization import BatchNorm1d, BatchNorm2d
from msops.primitives.primitive import Primitive

__all__ = ["Dense", "Linear", "ReLU", "Identity", "Flatten", "Dropout", "BatchNorm1d",
           "BatchNorm2d"]


class ReLU(Cell):
    """max(x, 0) element-wise; `shard(((a, b),))` shards its ReLU primitive."""

    def __init__(self) -> None:
        super().__init__()
        self.relu = ops.ReLU()

    def construct(self, x):
        return self.relu(x)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        self.relu.shard(in_strategy, out_strategy)


class Identity(_Wrapper):
    """Its input (`ops.Identity`), as `mindspore.nn.Identity()`: a placeholder layer;
    `shard` shards the primitive."""

    primitive = ops.Identity


class Flatten(Cell):
    """x (N, ...) as (N, the product of the other dims) (`ops.Flatten`), as
    `mindspore.nn.Flatten()`; `shard(((a, 1, ...),))` splits dim 0 only."""

    def __init__(self) -> None:
        super().__init__()
        self.flatten = ops.Flatten()

    def construct(self, x):
        return self.flatten(x)

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        self.flatten.shard(in_strategy, out_strategy)


class Dropout(Cell):
    """Randomly zero elements with probability p = 1 - keep_prob, scaling the rest by
    1/keep_prob, in training (`set_train()`); the identity otherwise (`ops.Dropout`).

    As `mindspore.nn.Dropout`: `keep_prob` (1.x) or `p` (2.x, the drop probability), not
    both; neither gives p = 0.5. The mask comes from the global `ms.set_seed` seed.
    """

    def __init__(self, keep_prob: float | None = None, p: float | None = None,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        if keep_prob is not None and p is not None:
            raise ValueError(f"For '{name}', only one of 'keep_prob' and 'p' should be given, "
                             f"but got keep_prob={keep_prob} and p={p}.")
        if p is not None:
            validator.check_value_type("p", p, float, name)
            if not 0 <= p < 1:
                raise ValueError(f"For '{name}', the 'p' should be in [0, 1), but got {p}.")
            keep_prob = 1.0 - p
        elif keep_prob is None:
            keep_prob = 0.5
        validator.check_value_type("keep_prob", keep_prob, float, name)
        if not 0 < keep_prob <= 1:
            raise ValueError(f"For '{name}', the 'keep_prob' should be in (0, 1], "
                             f"but got {keep_prob}.")
        self.keep_prob = keep_prob
        self.dropout = ops.Dropout(keep_prob)

    def construct(self, x):
        if not self.training or self.keep_prob == 1.0:
            return x
        return self.dropout(x)[0]

    def extend_repr(self) -> str:
        return f"p={1.0 - self.keep_prob}"


_ACTIVATIONS = {"relu": ReLU, **ACTIVATIONS, **EXT_ACTIVATIONS}


def get_activation(activation: Any, prim_name: str = "get_activation") -> Any:
    """A Cell or Primitive from `activation` (a name such as 'relu', or a Cell/Primitive);
    as `mindspore.nn.get_activation`, a new layer for a name, None for None."""
    if activation is None or isinstance(activation, (Cell, Primitive)):
        return activation
    if isinstance(activation, str) and activation.lower() in _ACTIVATIONS:
        return _ACTIVATIONS[activation.lower()]()
    raise ValueError(f"For '{prim_name}', the 'activation' should be one of "
                     f"{sorted(_ACTIVATIONS)}, a Cell or a Primitive, but got {activation!r}.")


class Dense(Cell):
    """Fully connected layer: y = activation(x @ weight.T + bias).

    Input x (*, in_channels) (as rows of its last dim); weight (out_channels, in_channels)
    (MatMul with transpose_b=True), bias (out_channels,); output (*, out_channels).
    `shard(((a, b),))` shards the MatMul as ((a, b), (1, b)) and the bias add as ((a, 1), (1,));
    `shard((layout(rows, cols),))` likewise with Layouts.
    """

    def __init__(self, in_channels: int, out_channels: int, weight_init: Any = "normal",
                 bias_init: Any = "zeros", has_bias: bool = True, activation: Any = None,
                 dtype: mstype.Type = mstype.float32) -> None:
        super().__init__()
        name = self.cls_name
        self.in_channels = validator.check_positive_int(in_channels, "in_channels", name)
        self.out_channels = validator.check_positive_int(out_channels, "out_channels", name)
        self.has_bias = validator.check_bool("has_bias", has_bias, name)
        self.weight = Parameter(initializer(weight_init, (out_channels, in_channels), dtype,
                                            "weight_init", name), name="weight")
        self.matmul = ops.MatMul(transpose_b=True)
        self.reshape = ops.Reshape()
        if has_bias:
            self.bias = Parameter(initializer(bias_init, (out_channels,), dtype, "bias_init",
                                              name), name="bias")
            self.bias_add = ops.Add()
        self.activation = get_activation(activation, name)

    def construct(self, x):
        shape = tuple(x.shape)
        if not shape:
            raise ValueError(f"For '{self.cls_name}', 'x' should have shape (*, "
                             f"{self.in_channels}), but got a 0-d Tensor.")
        if len(shape) != 2:                      # (*, in_channels): rows of the last dim
            x = self.reshape(x, (-1, shape[-1]))
        x = self.matmul(x, self.weight)
        if self.has_bias:
            x = self.bias_add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        if len(shape) != 2:
            x = self.reshape(x, shape[:-1] + (self.out_channels,))
        return x

    def _shard_primitives(self, in_strategy, out_strategy) -> None:
        if in_strategy is None:
            return
        if isinstance(in_strategy[0], Layout):   # x's layout (rows, in): the same cuts
            lay = in_strategy[0]
            base = Layout(lay.device_matrix, lay.alias_name)
            if len(lay.aliases) != 2:
                raise ValueError(f"For '{self.cls_name}', the layout of x should have 2 "
                                 f"entries (rows, in_channels), but got {lay!r}.")
            rows, cols = lay.aliases
            self.matmul.shard((lay, base("None", cols)))
            if self.has_bias:
                self.bias_add.shard((base(rows, "None"), base("None")))
            return
        a, b = in_strategy[0]
        self.matmul.shard(((a, b), (1, b)))
        if self.has_bias:
            self.bias_add.shard(((a, 1), (1,)))

    def extend_repr(self) -> str:
        return (f"input_channels={self.in_channels}, output_channels={self.out_channels}, "
                f"has_bias={self.has_bias}")


class Linear(Dense):
    """y = x @ weight.T + bias, as `mindspore.nn.Linear(in_features, out_features,
    bias=True, weight_init=None, bias_init=None, dtype=None)`: MindSpore 2.x's spelling of
    Dense, with its defaults (weight HeUniform(sqrt(5)), bias Uniform(1 / sqrt(in_features)),
    float32)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 weight_init: Any = None, bias_init: Any = None,
                 dtype: mstype.Type | None = None) -> None:
        name = type(self).__name__
        validator.check_positive_int(in_features, "in_features", name)
        validator.check_positive_int(out_features, "out_features", name)
        validator.check_bool("bias", bias, name)
        super().__init__(in_features, out_features,
                         HeUniform(math.sqrt(5)) if weight_init is None else weight_init,
                         Uniform(1 / math.sqrt(in_features)) if bias_init is None else bias_init,
                         has_bias=bias, dtype=mstype.float32 if dtype is None else dtype)
        self.in_features, self.out_features = in_features, out_features
