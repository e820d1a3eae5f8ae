"""`mindspore.mint.nn.functional`: PyTorch's functional layer API (`dim`, `training`,
`bias`, `reduction`, ...) over msops.ops' functional forms."""
from __future__ import annotations

from typing import Any

from msops import ops
from msops.common import dtype as mstype
from msops.mint._args import check_dim, check_tensor
from msops.mint.indexing import one_hot  # noqa: F401
from msops.mint.nn._pool import avg_pool2d, max_pool2d  # noqa: F401
from msops.ops.norm_embed_func import padded_rows
from msops.ops import (adaptive_avg_pool2d, cross_entropy, gelu, group_norm,  # noqa: F401
                       hardsigmoid, hardswish, hardtanh, interpolate, l1_loss, layer_norm,
                       mish, mse_loss, pixel_shuffle, selu, softplus, softsign)

__all__ = ["relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "dropout",
           "linear", "conv2d", "layer_norm", "embedding", "cross_entropy", "mse_loss",
           "l1_loss", "binary_cross_entropy_with_logits", "pad", "interpolate", "max_pool2d",
           "avg_pool2d", "one_hot", "normalize"]
__all__ += ["leaky_relu", "elu", "hardtanh", "softplus", "mish", "hardswish", "hardsigmoid",
            "relu6", "logsigmoid", "selu", "softsign", "nll_loss", "smooth_l1_loss",
            "binary_cross_entropy", "adaptive_avg_pool2d", "adaptive_max_pool2d", "group_norm",
            "pixel_shuffle"]


def relu(input: Any, inplace: bool = False) -> Any:
    """max(input, 0) (`ops.relu`); msops Tensors are not written in place, so `inplace`
    returns the result as a new Tensor."""
    return ops.relu(input)


def silu(input: Any, inplace: bool = False) -> Any:
    """input * sigmoid(input) (`ops.silu`)."""
    return ops.silu(input)


def sigmoid(input: Any) -> Any:
    """1 / (1 + exp(-input)) (`ops.sigmoid`)."""
    return ops.sigmoid(input)


def tanh(input: Any) -> Any:
    """The hyperbolic tangent (`ops.tanh`)."""
    return ops.tanh(input)


def _softmax_dim(name: str, input: Any, dim: Any) -> int:
    check_tensor(f"nn.functional.{name}", "input", input)
    return -1 if dim is None else check_dim(f"nn.functional.{name}", dim, len(input.shape))


def softmax(input: Any, dim: int | None = None, dtype: mstype.Type | None = None) -> Any:
    """exp(input) / sum(exp(input)) along `dim` (None: the last) (`ops.softmax`)."""
    return ops.softmax(input, _softmax_dim("softmax", input, dim), dtype=dtype)


def log_softmax(input: Any, dim: int | None = None, dtype: mstype.Type | None = None) -> Any:
    """log(softmax(input)) along `dim` (None: the last), in `dtype` when given."""
    dim = _softmax_dim("log_softmax", input, dim)
    return ops.log_softmax(input if dtype is None else ops.cast(input, dtype), dim)


def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) when
    training (`ops.dropout`, drawing from the global seed)."""
    return ops.dropout(input, float(p) if isinstance(p, int) and not isinstance(p, bool)
                       else p, training)


def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    """input @ weight.T + bias, weight (out_features, in_features) (`ops.dense`)."""
    return ops.dense(input, weight, bias)


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Any:
    """2-D cross-correlation of input (N, C_in, H, W) with weight (C_out, C_in / groups, kH,
    kW); `padding` an int, (h, w), or 'valid' / 'same' (`ops.conv2d`'s pad_mode)."""
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"For 'mint.nn.functional.conv2d', the 'padding' should be an "
                             f"int, a pair, 'valid' or 'same', but got {padding!r}.")
        return ops.conv2d(input, weight, bias, stride, padding, 0, dilation, groups)
    return ops.conv2d(input, weight, bias, stride, "pad", padding, dilation, groups)


def embedding(input: Any, weight: Any, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False) -> Any:
    """The rows of `weight` (num_embeddings, embedding_dim) at the indices `input`
    (`ops.gather`); the row `padding_idx` gets no gradient. `max_norm` renormalises rows in
    place in PyTorch: not supported (an error), nor `scale_grad_by_freq`."""
    name = "mint.nn.functional.embedding"
    check_tensor("nn.functional.embedding", "weight", weight)
    if max_norm is not None or scale_grad_by_freq:
        raise ValueError(f"For '{name}', 'max_norm' should be None and 'scale_grad_by_freq' "
                         f"False (not supported by msops), but got {max_norm!r} and "
                         f"{scale_grad_by_freq!r}.")
    return padded_rows(name, input, weight, ops.gather(weight, input, 0), padding_idx)


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Any:
    """Binary cross entropy of sigmoid(input) against target (`ops.
    binary_cross_entropy_with_logits`, whose pos_weight comes before reduction)."""
    return ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def pad(input: Any, pad: Any, mode: str = "constant", value: float | None = None) -> Any:
    """input padded by `pad` = (left, right) of the last dim, then of the one before, ...
    (`ops.pad`)."""
    return ops.pad(input, pad, mode, value)


def normalize(input: Any, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Any:
    """input / max(||input||_p along dim, eps) (`ops.vector_norm`, clamp and div)."""
    check_tensor("nn.functional.normalize", "input", input)
    dim = check_dim("nn.functional.normalize", dim, len(input.shape))
    norm = ops.vector_norm(input, p, dim, True)
    return ops.div(input, ops.clamp(norm, eps))


def leaky_relu(input: Any, negative_slope: float = 0.01, inplace: bool = False) -> Any:
    """input where positive, else negative_slope * input (`ops.leaky_relu`'s alpha)."""
    return ops.leaky_relu(input, negative_slope)


def elu(input: Any, alpha: float = 1.0, inplace: bool = False) -> Any:
    """input where positive, else alpha * (exp(input) - 1) (`ops.elu`)."""
    return ops.elu(input, alpha)


def relu6(input: Any, inplace: bool = False) -> Any:
    """min(max(input, 0), 6) (`ops.relu6`)."""
    return ops.relu6(input)


def logsigmoid(input: Any) -> Any:
    """log(sigmoid(input)) (`ops.logsigmoid`)."""
    return ops.logsigmoid(input)


def nll_loss(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
             reduction: str = "mean") -> Any:
    """-input[n, target[n]] (weighted), reduced (`ops.nll_loss`)."""
    return ops.nll_loss(input, target, weight, ignore_index, reduction)


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0) -> Any:
    """Huber-like loss: 0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta; reduced by
    'mean' by default (`ops.smooth_l1_loss`'s default is 'none')."""
    return ops.smooth_l1_loss(input, target, beta, reduction)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None,
                         reduction: str = "mean") -> Any:
    """-(target log(input) + (1 - target) log(1 - input)), input probabilities
    (`ops.binary_cross_entropy`)."""
    return ops.binary_cross_entropy(input, target, weight, reduction)


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    """The max of each adaptive bin of input (N, C, H, W) (`ops.adaptive_max_pool2d`)."""
    return ops.adaptive_max_pool2d(input, output_size, return_indices)
