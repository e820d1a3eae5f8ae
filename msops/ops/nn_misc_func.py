"""Small functions of `mindspore.ops`' nn family over msops' primitives and functional forms:
prelu, pdist, mirror_pad, intopk, fliplr, flipud, msort, is_floating_point, and
the aliases soft_shrink (softshrink), mse_loss_ext (mse_loss) and adaptive_avg_pool2d_ext
(adaptive_avg_pool2d)."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float, check_like
from msops.ops.elementwise_func import softshrink
from msops.ops.loss_func import mse_loss
from msops.ops.norm_func import vector_norm
from msops.ops.pool_func import adaptive_avg_pool2d
from msops.ops.pad_func import pad_dims
from msops.ops.slice_func import flip
from msops.primitives.elementwise_ops import Greater, Less
from msops.primitives.piecewise_ops import LogicalAnd
from msops.primitives.gather_ops import Gather, GatherD
from msops.primitives.math_ops import Cast, ReduceSum, Sub
from msops.primitives.prelu import PReLU
from msops.primitives.shape_ops import ExpandDims, Squeeze
from msops.primitives.sort_ops import Sort
from msops.primitives.unary_ops import Abs

__all__ = ["prelu", "pdist", "mirror_pad", "intopk", "fliplr", "flipud", "msort",
           "is_floating_point", "soft_shrink", "mse_loss_ext", "adaptive_avg_pool2d_ext"]


def prelu(input: Any, weight: Any) -> Any:
    """max(input, 0) + weight * min(input, 0), weight (C,) a slope per channel (dim 1 of
    input) or (1,) one slope, as `mindspore.ops.prelu` (the PReLU primitive)."""
    check_float("prelu", "input", input)
    check_like("prelu", "weight", weight, input, "input")
    return _prim(PReLU)(input, weight)


def pdist(input: Any, p: float = 2.0) -> Any:
    """The p-norm distances of every pair i < j of the N rows of input (*, N, M), in the
    order (0, 1), (0, 2), ..., (N - 2, N - 1): shape (*, N (N - 1) / 2), as
    `mindspore.ops.pdist` (p >= 0; 0 counts the differing entries, inf takes the largest)."""
    name = "pdist"
    check_float(name, "input", input)
    validator.check_value_type("p", p, (float, int), name)
    if p < 0:
        raise ValueError(f"For '{name}', the 'p' should be >= 0, but got {p}.")
    shape = tuple(input.shape)
    if len(shape) < 2:
        raise ValueError(f"For '{name}', the 'input' should be (*, N, M), but got shape "
                         f"{list(shape)}.")
    n = shape[-2]
    if n < 2:
        return Tensor(np.zeros(shape[:-2] + (0,), input.dtype.np_dtype))
    first, second = (Tensor(i.astype(np.int32)) for i in np.triu_indices(n, 1))
    axis = len(shape) - 2
    diff = _prim(Sub)(_prim(Gather)(input, first, axis), _prim(Gather)(input, second, axis))
    return vector_norm(diff, float(p), -1)


def mirror_pad(input_x: Any, paddings: Any, mode: str) -> Any:
    """input_x padded by `paddings` (rank, 2) (an int Tensor or nested tuple: the (before,
    after) counts of each dim) with its mirror image: 'REFLECT' leaves the edge out (so a
    count must be below the dim's size), 'SYMMETRIC' repeats it (at most the size), as
    `mindspore.ops.MirrorPad`'s function form."""
    name = "mirror_pad"
    check_tensor(name, "input_x", input_x)
    validator.check_value_type("mode", mode, str, name)
    validator.check_string("mode", mode, ("REFLECT", "SYMMETRIC"), name)
    pads = paddings.asnumpy() if isinstance(paddings, Tensor) else np.asarray(paddings)
    ndim = len(input_x.shape)
    if pads.shape != (ndim, 2) or pads.dtype.kind not in "iu" or (pads < 0).any():
        raise ValueError(f"For '{name}', the 'paddings' should be {ndim} x 2 non-negative ints "
                         f"(one (before, after) pair per dim of 'input_x'), but got "
                         f"{pads.tolist()!r}.")
    spec = [(d, int(b), int(a)) for d, (b, a) in enumerate(pads) if b or a]
    return pad_dims(name, input_x, spec, mode.lower())


def intopk(x1: Any, x2: Any, k: int) -> Any:
    """Whether each target x2[i] is among the k largest predictions of row x1[i] (x1 (N, C)
    float16/float32, x2 (N,) int32), as `mindspore.ops.intopk`: True when fewer than k
    entries of the row beat the target's (ties count in); a non-finite target never is."""
    name = "intopk"
    check_tensor(name, "x1", x1)
    check_tensor(name, "x2", x2)
    validator.check_tensor_dtype_valid("x1", x1.dtype, (mstype.float16, mstype.float32), name)
    validator.check_tensor_dtype_valid("x2", x2.dtype, (mstype.int32,), name)
    validator.check_value_type("k", k, int, name)
    if len(x1.shape) != 2 or tuple(x2.shape) != (x1.shape[0],):
        raise ValueError(f"For '{name}', the 'x1' should be 2-D (N, C) and 'x2' 1-D (N,), but "
                         f"got shapes {list(x1.shape)} and {list(x2.shape)}.")
    target = _prim(GatherD)(x1, 1, _prim(ExpandDims)(x2, 1))               # (N, 1)
    beaten = _prim(ReduceSum, False)(_prim(Cast)(_prim(Greater)(x1, target), mstype.int32), 1)
    finite = _prim(Less)(_prim(Abs)(_prim(Squeeze, 1)(target)), float("inf"))
    return _prim(LogicalAnd)(_prim(Less)(beaten, Tensor(np.array(k, np.int32))), finite)


def fliplr(input: Any) -> Any:
    """input (rank >= 2) with the order of its columns (dim 1) reversed."""
    check_tensor("fliplr", "input", input)
    if len(input.shape) < 2:
        raise ValueError(f"For 'fliplr', the 'input' should have rank >= 2, but got shape "
                         f"{list(input.shape)}.")
    return flip(input, (1,))


def flipud(input: Any) -> Any:
    """input (rank >= 1) with the order of its rows (dim 0) reversed."""
    check_tensor("flipud", "input", input)
    if not input.shape:
        raise ValueError("For 'flipud', the 'input' should have rank >= 1, but got shape [].")
    return flip(input, (0,))


def msort(input: Any) -> Any:
    """input sorted ascending along dim 0 (the values of `Sort(0)`)."""
    check_tensor("msort", "input", input)
    return _prim(Sort, 0, False)(input)[0]


def is_floating_point(input: Any) -> bool:
    """Whether input's dtype is a float one (float16, bfloat16, float32, float64)."""
    check_tensor("is_floating_point", "input", input)
    return input.dtype in mstype.float_type


def soft_shrink(input: Any, lambd: float = 0.5) -> Any:
    """input - lambd above lambd, input + lambd below -lambd, else 0 (`ops.softshrink`)."""
    return softshrink(input, lambd)


def mse_loss_ext(input: Any, target: Any, reduction: str = "mean") -> Any:
    """(input - target)**2 (broadcast) reduced by `reduction` (`ops.mse_loss`)."""
    return mse_loss(input, target, reduction)



def adaptive_avg_pool2d_ext(input: Any, output_size: Any) -> Any:
    """input (N, C, H, W) or (C, H, W) averaged over adaptive bins to output_size (an int or
    (OH, OW), None keeping a dim) (`ops.adaptive_avg_pool2d`)."""
    return adaptive_avg_pool2d(input, output_size)
