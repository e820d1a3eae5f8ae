"""`ops.batch_norm` and `ops.embedding`, the functional faces of nn.BatchNorm* and
nn.Embedding with `mindspore.ops`' arguments.

batch_norm is the BatchNorm primitive (any (N, C, *) input viewed as (N, C, rest, 1)); in
training it normalises with the batch's statistics and writes the updated running ones into
the `running_mean` / `running_var` Parameters with `Assign` (MindSpore's convention: new =
(1 - momentum) * running + momentum * batch statistic, the batch's biased variance).
embedding is a Gather of weight's rows; `padding_idx`'s row gets no gradient; `max_norm`
rescales each looked-up row whose `norm_type` norm exceeds it to that norm, as MindSpore
(and PyTorch) do: the output holds the rescaled rows, a Parameter weight is rewritten in
place for the rows looked up (Assign), and the gradient reaches the weight as if it had been
rescaled before the lookup (it passes unscaled)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Parameter, Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float
from msops.ops.norm_func import vector_norm
from msops.primitives.array_ops import Reshape, StopGradient
from msops.primitives.elementwise_ops import Greater, Select
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Add, Cast, Equal, Mul, RealDiv, ReduceSum, Sub
from msops.primitives.nn_ops import BatchNorm, OneHot
from msops.primitives.shape_ops import BroadcastTo, ExpandDims
from msops.primitives.state_ops import Assign

__all__ = ["batch_norm", "embedding"]


def batch_norm(input_x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1) of input_x (N, C, *):
    the batch's mean and biased variance when `training` (the Parameters running_mean and
    running_var then updated in place to (1 - momentum) * running + momentum * batch), else
    running_mean and running_var, as `mindspore.ops.batch_norm`."""
    name = "batch_norm"
    check_float(name, "input_x", input_x)
    validator.check_bool("training", training, name)
    validator.check_value_type("momentum", momentum, float, name)
    validator.check_value_type("eps", eps, float, name)
    if not 0 <= momentum <= 1:
        raise ValueError(f"For '{name}', the 'momentum' should be in [0, 1], but got "
                         f"{momentum}.")
    if not 0 < eps <= 1:
        raise ValueError(f"For '{name}', the 'eps' should be in (0, 1], but got {eps}.")
    shape = tuple(input_x.shape)
    if len(shape) < 2:
        raise ValueError(f"For '{name}', the 'input_x' should be (N, C, *), but got shape "
                         f"{list(shape)}.")
    stats = {"running_mean": running_mean, "running_var": running_var, "weight": weight,
             "bias": bias}
    for arg, value in stats.items():
        check_float(name, arg, value)
        if tuple(value.shape) != (shape[1],):
            raise ValueError(f"For '{name}', the '{arg}' should have shape [C] = [{shape[1]}], "
                             f"but got {list(value.shape)}.")
    if training:
        for arg in ("running_mean", "running_var"):
            if not isinstance(stats[arg], Parameter):
                raise TypeError(f"For '{name}', the '{arg}' should be a Parameter when "
                                f"'training' is True (it is updated in place), but got "
                                f"{type(stats[arg]).__name__}.")
    x = input_x if len(shape) in (2, 4) else \
        _prim(Reshape)(input_x, shape[:2] + (math.prod(shape[2:]), 1))
    outs = _prim(BatchNorm, training, eps, momentum, "NCHW")(x, weight, bias, running_mean,
                                                             running_var)
    if training:
        _prim(Assign)(running_mean, outs[1])
        _prim(Assign)(running_var, outs[2])
    return outs[0] if len(shape) in (2, 4) else _prim(Reshape)(outs[0], shape)


def _check_index(name: str, input: Any, weight: Any) -> None:
    check_tensor(name, "input", input)
    check_float(name, "weight", weight)
    if input.dtype not in mstype.int_type:
        raise TypeError(f"For '{name}', the 'input' should have an int dtype, but got "
                        f"{input.dtype}.")
    if len(weight.shape) != 2:
        raise ValueError(f"For '{name}', the 'weight' should be 2-D (num_embeddings, "
                         f"embedding_dim), but got shape {list(weight.shape)}.")


def padded_rows(name: str, input: Any, weight: Any, rows: Any, padding_idx: Any) -> Any:
    """`rows` (weight's rows at `input`), those looked up at padding_idx (an int in
    [-num, num), or None) passing no gradient to the weight."""
    if padding_idx is None:
        return rows
    n = weight.shape[0]
    if not isinstance(padding_idx, int) or isinstance(padding_idx, bool) or \
            not -n <= padding_idx < n:
        raise ValueError(f"For '{name}', the 'padding_idx' should be an int in [{-n}, {n - 1}], "
                         f"but got {padding_idx!r}.")
    pad = Tensor(np.array(padding_idx % n, mstype.dtype_to_nptype(input.dtype)))
    at = _prim(ExpandDims)(_prim(Equal)(input, pad), -1)
    return _prim(Select)(_prim(BroadcastTo, tuple(rows.shape))(at), _prim(StopGradient)(rows),
                         rows)


def embedding(input: Any, weight: Any, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False) -> Any:
    """The rows of weight (num_embeddings, embedding_dim) at the int indices `input`, giving
    input's shape + (embedding_dim,), as `mindspore.ops.embedding`: `padding_idx`'s row gets
    no gradient; with `max_norm`, looked-up rows of norm (`norm_type`) above it are rescaled
    to it, in the output and (a Parameter weight) in place; `scale_grad_by_freq` divides
    each row's gradient by how often the batch looks it up."""
    name = "embedding"
    _check_index(name, input, weight)
    validator.check_bool("scale_grad_by_freq", scale_grad_by_freq, name)
    n = weight.shape[0]
    table = weight
    if scale_grad_by_freq:
        table = _frequency_scaled(input, weight)
    rows = _prim(Gather)(table, input, 0)
    if max_norm is not None:
        validator.check_value_type("max_norm", max_norm, (float, int), name)
        validator.check_value_type("norm_type", norm_type, (float, int), name)
        scale = _row_scale(weight, float(max_norm), float(norm_type))      # (num, 1)
        hit = _looked_up(input, n, weight.dtype)                            # (num, 1)
        keep = Tensor(np.ones((n, 1), weight.dtype.np_dtype))
        scale = _prim(Select)(_prim(Greater)(hit, 0.0), scale, keep)
        renormed = _prim(StopGradient)(_prim(Mul)(weight, scale))
        delta = _prim(Sub)(_prim(Gather)(renormed, input, 0), _prim(StopGradient)(rows))
        out = _prim(Add)(rows, delta)
        if isinstance(weight, Parameter):
            _prim(Assign)(weight, renormed)
        rows = out
    return padded_rows(name, input, weight, rows, padding_idx)


def _row_scale(weight: Any, max_norm: float, norm_type: float) -> Any:
    """(num, 1): max_norm / (norm + 1e-7) for rows of norm above max_norm, else 1."""
    norms = _prim(StopGradient)(vector_norm(weight, norm_type, -1, True))
    ones = Tensor(np.ones(tuple(norms.shape), weight.dtype.np_dtype))
    shrink = _prim(RealDiv)(Tensor(np.array(max_norm, weight.dtype.np_dtype)),
                            _prim(Add)(norms, 1e-7))
    return _prim(Select)(_prim(Greater)(norms, max_norm), shrink, ones)


def _looked_up(input: Any, n: int, dtype: mstype.Type) -> Any:
    """(num, 1) counts of how often each row is looked up by `input`."""
    flat = _prim(Reshape)(input, (-1,))
    on, off = (Tensor(np.array(v, dtype.np_dtype)) for v in (1, 0))
    hot = _prim(OneHot, -1)(flat, n, on, off)                       # (k, num)
    return _prim(Reshape)(_prim(ReduceSum, False)(hot, 0), (n, 1))


def _frequency_scaled(input: Any, weight: Any) -> Any:
    """weight, its gradient divided per row by the row's count in `input` (the value kept):
    w / c + stop_gradient(w - w / c)."""
    counts = _prim(StopGradient)(_prim(Cast)(_looked_up(input, weight.shape[0], weight.dtype),
                                             weight.dtype))
    ones = Tensor(np.ones((weight.shape[0], 1), weight.dtype.np_dtype))
    safe = _prim(Select)(_prim(Greater)(counts, 0.0), counts, ones)
    scaled = _prim(RealDiv)(weight, safe)
    return _prim(Add)(scaled, _prim(StopGradient)(_prim(Sub)(weight, scaled)))
