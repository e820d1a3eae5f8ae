"""nn.LayerNorm (MindSpore's arguments): `ops.LayerNorm` with its gamma and beta Parameters."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter
from msops.nn.cell import Cell
from msops.nn.initializer import initializer

__all__ = ["LayerNorm"]


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
        self.epsilon = epsilon
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
