"""Functional spellings of the transformer op set, as `mindspore.ops` has them: thin calls of
the primitives (see _dispatch.py). As `mindspore.ops.functional` (imported as `F`), the
module also holds every other functional spelling of msops.ops (F.cast, F.depend, F.fill,
F.shape, ...); its `__all__` lists its own."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.ops._dispatch import _binary, _prim
from msops.primitives.activation_ops import FastGeLU, GeLU, LogSoftmax
from msops.primitives.elementwise_ops import (BiasAdd, Erf, FloorDiv, Greater, GreaterEqual,
                                              Less, LessEqual, Maximum, Minimum, NotEqual,
                                              OnesLike, Pow, Select, Sigmoid, Sqrt, Tanh,
                                              ZerosLike)
from msops.primitives.debug_ops import Print
from msops.primitives.gather_ops import (Gather, GatherD, GatherNd, ScatterNd,
                                         TensorScatterUpdate)
from msops.primitives.math_ops import Add, Cast, Mul, promoted
from msops.primitives.shape_ops import ExpandDims, Squeeze, Tile

__all__ = ["gather", "gather_d", "gather_elements", "gather_nd", "scatter_nd",
           "tensor_scatter_update", "gelu", "fast_gelu",
           "sigmoid", "tanh", "erf", "log_softmax", "sqrt", "pow", "maximum", "minimum",
           "floor_div", "select", "greater", "gt", "greater_equal", "ge", "less", "lt",
           "less_equal", "le", "not_equal", "ne", "zeros_like", "ones_like", "bias_add",
           "tile", "expand_dims", "squeeze"]

def gather(input_params: Any, input_indices: Any, axis: int, batch_dims: int = 0) -> Any:
    """`Gather(batch_dims)(input_params, input_indices, axis)`."""
    return _prim(Gather, batch_dims)(input_params, input_indices, axis)


def gather_d(x: Any, dim: int, index: Any) -> Any:
    """`GatherD()(x, dim, index)`."""
    return _prim(GatherD)(x, dim, index)


def gather_elements(input: Any, dim: int, index: Any) -> Any:
    """The newer name of `gather_d`."""
    return gather_d(input, dim, index)


def gather_nd(input_x: Any, indices: Any) -> Any:
    """`GatherNd()(input_x, indices)`."""
    return _prim(GatherNd)(input_x, indices)


def scatter_nd(indices: Any, updates: Any, shape: Any) -> Any:
    """`ScatterNd()(indices, updates, shape)`: zeros of shape, updates added at indices."""
    return _prim(ScatterNd)(indices, updates, tuple(shape))


def tensor_scatter_update(input_x: Any, indices: Any, updates: Any) -> Any:
    """`TensorScatterUpdate()(input_x, indices, updates)`: input_x with the addressed
    slices replaced."""
    return _prim(TensorScatterUpdate)(input_x, indices, updates)


def gelu(input_x: Any, approximate: str = "none") -> Any:
    """GELU: `approximate="tanh"` is `GeLU`; "none" (MindSpore's default) the exact
    x * (1 + erf(x / sqrt(2))) / 2."""
    if approximate == "tanh":
        return _prim(GeLU)(input_x)
    if approximate != "none":
        raise ValueError(f"For 'gelu', the 'approximate' should be 'none' or 'tanh', but got "
                         f"{approximate!r}.")
    erf_part = _prim(Erf)(_prim(Mul)(input_x, 0.7071067811865476))
    return _prim(Mul)(_prim(Mul)(input_x, 0.5), _prim(Add)(erf_part, 1.0))


def fast_gelu(x: Any) -> Any:
    """`FastGeLU()(x)`."""
    return _prim(FastGeLU)(x)


def sigmoid(input: Any) -> Any:
    """`Sigmoid()(input)`."""
    return _prim(Sigmoid)(input)


def tanh(input: Any) -> Any:
    """`Tanh()(input)`."""
    return _prim(Tanh)(input)


def erf(input: Any) -> Any:
    """`Erf()(input)`."""
    return _prim(Erf)(input)


def log_softmax(logits: Any, axis: int = -1) -> Any:
    """`LogSoftmax(axis)(logits)`."""
    return _prim(LogSoftmax, axis)(logits)


def sqrt(x: Any) -> Any:
    """`Sqrt()(x)`."""
    return _prim(Sqrt)(x)


def pow(input: Any, exponent: Any) -> Any:
    """`Pow()(input, exponent)`, mixed dtypes promoted (an int input and a float exponent:
    float32)."""
    return _prim(Pow)(*promoted((input, exponent)))


maximum = _binary(Maximum, "`Maximum()(input, other)`.")
minimum = _binary(Minimum, "`Minimum()(input, other)`.")
floor_div = _binary(FloorDiv, "`FloorDiv()(input, other)`.")
greater = gt = _binary(Greater, "`Greater()(input, other)`: input > other.")
greater_equal = ge = _binary(GreaterEqual, "`GreaterEqual()(input, other)`: input >= other.")
less = lt = _binary(Less, "`Less()(input, other)`: input < other.")
less_equal = le = _binary(LessEqual, "`LessEqual()(input, other)`: input <= other.")
not_equal = ne = _binary(NotEqual, "`NotEqual()(input, other)`: input != other.")


def select(cond: Any, x: Any, y: Any) -> Any:
    """`Select()(cond, x, y)`: x where cond, else y."""
    return _prim(Select)(cond, x, y)


def _like(cls: type, input: Any, dtype: mstype.Type | None) -> Any:
    out = _prim(cls)(input)
    return out if dtype is None else _prim(Cast)(out, dtype)


def zeros_like(input: Any, dtype: mstype.Type | None = None) -> Any:
    """Zeros of input's shape, in `dtype` (input's when None)."""
    return _like(ZerosLike, input, dtype)


def ones_like(input: Any, dtype: mstype.Type | None = None) -> Any:
    """Ones of input's shape, in `dtype` (input's when None)."""
    return _like(OnesLike, input, dtype)


def bias_add(input_x: Any, bias: Any) -> Any:
    """`BiasAdd()(input_x, bias)`: bias along dim 1."""
    return _prim(BiasAdd)(input_x, bias)


def tile(input: Any, dims: tuple) -> Any:
    """`Tile()(input, dims)`."""
    return _prim(Tile)(input, tuple(dims))


def expand_dims(input_x: Any, axis: int) -> Any:
    """`ExpandDims()(input_x, axis)`."""
    return _prim(ExpandDims)(input_x, axis)


def squeeze(input: Any, axis: int | tuple | None = None) -> Any:
    """`Squeeze(axis)(input)`; None squeezes every dim of size 1."""
    return _prim(Squeeze, () if axis is None else axis)(input)


# mindspore.ops.functional holds every functional spelling: so does this module (F)
from msops.ops.array_func import *  # noqa: E402,F401,F403
from msops.ops.clip_func import *  # noqa: E402,F401,F403
from msops.ops.math_func import *  # noqa: E402,F401,F403
from msops.ops.order_func import *  # noqa: E402,F401,F403
from msops.ops.elementwise_func import *  # noqa: E402,F401,F403
from msops.ops.random_func import *  # noqa: E402,F401,F403
from msops.ops.value_func import (depend, dtype, fill, numel, ones, rank,  # noqa: E402,F401
                                  shape, size, zeros)
from msops.ops.creation_func import *  # noqa: E402,F401,F403
from msops.ops.mask_func import *  # noqa: E402,F401,F403
from msops.ops.slice_func import *  # noqa: E402,F401,F403
from msops.ops.pad_func import *  # noqa: E402,F401,F403
from msops.ops.norm_func import *  # noqa: E402,F401,F403
from msops.ops.einsum_func import *  # noqa: E402,F401,F403
from msops.ops.class_loss_func import *  # noqa: E402,F401,F403
from msops.ops.loss_func import *  # noqa: E402,F401,F403
from msops.ops.nn_func import *  # noqa: E402,F401,F403
from msops.ops.matrix_func import *  # noqa: E402,F401,F403
from msops.ops.channel_func import *  # noqa: E402,F401,F403
from msops.ops.pool_func import *  # noqa: E402,F401,F403
from msops.ops.stats_func import *  # noqa: E402,F401,F403
from msops.ops.pointwise_func import *  # noqa: E402,F401,F403
from msops.ops.shape_func import *  # noqa: E402,F401,F403
from msops.ops.scatter_func import *  # noqa: E402,F401,F403
from msops.ops.margin_loss_func import *  # noqa: E402,F401,F403
from msops.ops.linalg_func import *  # noqa: E402,F401,F403
from msops.ops.products_func import *  # noqa: E402,F401,F403
from msops.ops.activation_func import *  # noqa: E402,F401,F403
from msops.ops.patch_func import *  # noqa: E402,F401,F403


def print_(*input_x: Any) -> Any:
    """`Print()(*input_x)`: print strings and Tensors each time it runs (as
    `mindspore.ops.print_`); the returned Tensor means nothing."""
    return _prim(Print)(*input_x)


__all__ += ["print_"]
