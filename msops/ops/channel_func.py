"""Per-channel array functions, as `mindspore.ops`: dropout1d / dropout2d / dropout3d (whole
channels zeroed: one Dropout draw per (sample, channel), broadcast over the channel's
values, so the mask comes from the Dropout primitive's seeded counter draws, alike eager
and compiled), pixel_shuffle, pixel_unshuffle and channel_shuffle (Reshape / Transpose /
Reshape)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.ops._tensor_args import check_float
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.math_ops import Mul
from msops.primitives.nn_ops import Dropout

__all__ = ["dropout1d", "dropout2d", "dropout3d", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle"]


def channel_dropout(name: str, input: Any, p: float, training: bool, ranks: tuple) -> Any:
    """input (N, C, *) (or (C, *) when its rank is ranks[0] and ranks has two) with each
    channel zeroed with probability p, the kept ones scaled by 1 / (1 - p), in training."""
    validator.check_value_type("p", p, float, name)
    if not 0 <= p <= 1:
        raise ValueError(f"For '{name}', the 'p' should be in [0, 1], but got {p}.")
    validator.check_bool("training", training, name)
    check_float(name, "input", input)
    shape = tuple(input.shape)
    if len(shape) not in ranks:
        raise ValueError(f"For '{name}', the 'input' should be "
                         f"{' or '.join(map(str, ranks))}-D, but got shape {list(shape)}.")
    if not training or p == 0:
        return input
    lead = 1 if len(ranks) == 2 and len(shape) == ranks[0] else 2    # (C, *) or (N, C, *)
    mask_shape = shape[:lead] + (1,) * (len(shape) - lead)
    dtype = input.dtype.np_dtype
    if p == 1:
        return _prim(Mul)(input, Tensor(np.zeros(mask_shape, dtype)))
    mask = _prim(Dropout, 1.0 - p)(Tensor(np.ones(mask_shape, dtype)))[0]
    return _prim(Mul)(input, mask)


def dropout1d(input: Any, p: float = 0.5, training: bool = True) -> Any:
    """Whole channels of input (N, C, L) or (C, L) zeroed with probability p, the rest
    scaled by 1 / (1 - p), when `training`; as `mindspore.ops.dropout1d`."""
    return channel_dropout("dropout1d", input, p, training, (2, 3))


def dropout2d(input: Any, p: float = 0.5, training: bool = True) -> Any:
    """Whole channels of input (N, C, H, W) zeroed with probability p, the rest scaled by
    1 / (1 - p), when `training`; as `mindspore.ops.dropout2d`."""
    return channel_dropout("dropout2d", input, p, training, (4,))


def dropout3d(input: Any, p: float = 0.5, training: bool = True) -> Any:
    """Whole channels of input (N, C, D, H, W) zeroed with probability p, the rest scaled
    by 1 / (1 - p), when `training`; as `mindspore.ops.dropout3d`."""
    return channel_dropout("dropout3d", input, p, training, (5,))


def _factor(name: str, arg: str, r: Any, input: Any) -> tuple:
    validator.check_positive_int(r, arg, name)
    if not isinstance(input, Tensor) and not hasattr(input, "shape"):
        raise TypeError(f"For '{name}', the 'input' should be a Tensor, but got "
                        f"{type(input).__name__}.")
    shape = tuple(input.shape)
    if len(shape) < 3:
        raise ValueError(f"For '{name}', the 'input' should have rank >= 3 (*, C, H, W), but "
                         f"got shape {list(shape)}.")
    return shape


def pixel_shuffle(input: Any, upscale_factor: int) -> Any:
    """input (*, C * r * r, H, W) rearranged to (*, C, H * r, W * r), r = upscale_factor:
    output[..., c, h * r + i, w * r + j] = input[..., c * r * r + i * r + j, h, w]."""
    return shuffle("pixel_shuffle", input, upscale_factor)


def pixel_unshuffle(input: Any, downscale_factor: int) -> Any:
    """pixel_shuffle's inverse: input (*, C, H * r, W * r) to (*, C * r * r, H, W),
    r = downscale_factor."""
    return unshuffle("pixel_unshuffle", input, downscale_factor)


def shuffle(name: str, input: Any, r: int) -> Any:
    """pixel_shuffle, its errors naming `name`."""
    shape = _factor(name, "upscale_factor", r, input)
    *lead, c, h, w = shape
    if c % (r * r):
        raise ValueError(f"For '{name}', the channels of 'input' should be divisible by "
                         f"upscale_factor ** 2 = {r * r}, but got shape {list(shape)}.")
    b = math.prod(lead)
    x = _prim(Reshape)(input, (b, c // (r * r), r, r, h, w))
    x = _prim(Transpose)(x, (0, 1, 4, 2, 5, 3))
    return _prim(Reshape)(x, tuple(lead) + (c // (r * r), h * r, w * r))


def unshuffle(name: str, input: Any, r: int) -> Any:
    """pixel_unshuffle, its errors naming `name`."""
    shape = _factor(name, "downscale_factor", r, input)
    *lead, c, h, w = shape
    if h % r or w % r:
        raise ValueError(f"For '{name}', the height and width of 'input' should be divisible "
                         f"by downscale_factor {r}, but got shape {list(shape)}.")
    b = math.prod(lead)
    x = _prim(Reshape)(input, (b, c, h // r, r, w // r, r))
    x = _prim(Transpose)(x, (0, 1, 3, 5, 2, 4))
    return _prim(Reshape)(x, tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(x: Any, groups: int) -> Any:
    """x (N, C, *) with its C channels, seen as `groups` groups of C / groups, interleaved:
    output channel j * groups + g is input channel g * (C / groups) + j, as
    `mindspore.ops.channel_shuffle`."""
    name = "channel_shuffle"
    validator.check_positive_int(groups, "groups", name)
    if not isinstance(x, Tensor) and not hasattr(x, "shape"):
        raise TypeError(f"For '{name}', the 'x' should be a Tensor, but got "
                        f"{type(x).__name__}.")
    shape = tuple(x.shape)
    if len(shape) < 3 or shape[1] % groups:
        raise ValueError(f"For '{name}', the 'x' should be (N, C, *) of rank >= 3 with C "
                         f"divisible by groups {groups}, but got shape {list(shape)}.")
    n, c, rest = shape[0], shape[1], shape[2:]
    y = _prim(Reshape)(x, (n, groups, c // groups, math.prod(rest)))
    y = _prim(Transpose)(y, (0, 2, 1, 3))
    return _prim(Reshape)(y, shape)
