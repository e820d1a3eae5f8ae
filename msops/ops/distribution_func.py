"""Random draws of `mindspore.ops`' random family beyond uniform / normal: normal, laplace,
standard_laplace, gamma, random_gamma, poisson, random_poisson, multinomial,
multinomial_with_replacement, random_categorical, shuffle, choice_with_mask, and the
candidate samplers uniform_candidate_sampler and log_uniform_candidate_sampler
(msops.primitives.sampler_ops: a sequential draw, never split).

Each call makes exactly one draw of msops' counter-based streams (a UniformReal /
StandardNormal / RandpermDraw of msops.primitives.random_ops, keyed by the global seed and
the call's `seed`), then maps it by deterministic primitives: inverse CDFs (Laplace's in
closed form, the gamma's and Poisson's by msops.primitives.quantile_ops), a search of the
cumulative probabilities (draws with replacement), the largest u ** (1 / p) keys (without
replacement, Efraimidis-Spirakis), a sort by the draws (choice_with_mask). So the same seed
gives the same numbers eagerly and compiled, every call advances the counter once, and an
element-wise draw sharded by a strategy on its output is the serial draw's block. The
values are not MindSpore's (its Philox streams). No gradient flows into a draw.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.random_func import _seed
from msops.ops.slice_func import slice_along
from msops.primitives.array_ops import Concat, Reshape, StopGradient
from msops.primitives.arith_ops import FloorMod
from msops.primitives.elementwise_ops import FloorDiv, Greater, GreaterEqual, Select
from msops.primitives.gather_ops import Gather
from msops.primitives.math_ops import Add, Cast, Log, Mul, RealDiv, ReduceSum, Sub
from msops.primitives.nn_ops import Softmax
from msops.primitives.quantile_ops import GammaQuantile, PoissonQuantile
from msops.primitives.random_ops import RandpermDraw, StandardNormalOf, UniformRealOf
from msops.primitives.sampler_ops import CandidateSampler
from msops.primitives.scan_ops import CumSum
from msops.primitives.shape_ops import ExpandDims
from msops.primitives.sort_ops import Sort, TopK
from msops.primitives.stack_ops import Stack
from msops.primitives.transcendental_ops import Log1p
from msops.primitives.unary_ops import Abs, Sign

__all__ = ["normal", "laplace", "standard_laplace", "gamma", "random_gamma", "poisson",
           "random_poisson", "multinomial", "multinomial_with_replacement",
           "random_categorical", "shuffle", "choice_with_mask", "uniform_candidate_sampler",
           "log_uniform_candidate_sampler"]

#: half a step of a float64 uniform draw (a multiple of 2**-53): added, u lies in (0, 1)
_HALF_STEP = 2.0 ** -54


def _shape(name: str, shape: Any) -> tuple:
    """A tuple (or list, or 1-D int Tensor) of non-negative ints."""
    if isinstance(shape, Tensor):
        if len(shape.shape) != 1 or shape.dtype not in mstype.int_type:
            raise TypeError(f"For '{name}', the 'shape' Tensor should be 1-D of an int dtype, "
                            f"but got shape {list(shape.shape)} and dtype {shape.dtype}.")
        shape = tuple(int(v) for v in shape.asnumpy())
    if not isinstance(shape, (tuple, list)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in shape):
        raise TypeError(f"For '{name}', the 'shape' should be a tuple of positive ints, but got "
                        f"{shape!r}.")
    return tuple(int(v) for v in shape)


def _param(name: str, arg: str, value: Any, valid: tuple = mstype.float_type) -> Tensor:
    """A distribution parameter: a Tensor of a `valid` dtype, or a Python number (float32)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Tensor(np.array(value, np.float32))
    check_tensor(name, arg, value)
    validator.check_tensor_dtype_valid(arg, value.dtype, valid, name)
    return value


def _broadcast(name: str, shape: tuple, *params: Any) -> tuple:
    try:
        return tuple(np.broadcast_shapes(shape, *(tuple(p.shape) for p in params)))
    except ValueError:
        raise ValueError(f"For '{name}', the 'shape' {shape} and the parameters' shapes "
                         f"{[list(p.shape) for p in params]} should broadcast together.") from None


def _uniform64(seed: int, seed2: int, shape: tuple) -> Any:
    """float64 draws uniform in (0, 1) (half a step above the [0, 1) grid) of `shape`."""
    return _prim(Add)(_prim(UniformRealOf, seed, seed2, mstype.float64)(shape), _HALF_STEP)


def _f64(x: Any) -> Any:
    return _prim(Cast)(x, mstype.float64)


def normal(shape: tuple, mean: Any, stddev: Any, seed: int | None = None) -> Tensor:
    """float32 normal draws of mean `mean` and standard deviation `stddev` (Tensors or
    numbers), of the broadcast of `shape` with their shapes, as `mindspore.ops.normal`."""
    name = "normal"
    s = _seed(name, seed)
    mean, stddev = _param(name, "mean", mean), _param(name, "stddev", stddev)
    out = _broadcast(name, _shape(name, shape), mean, stddev)
    z = _prim(StandardNormalOf, s, 0, mstype.float32)(out)
    scale = _prim(Cast)(stddev, mstype.float32)
    return _prim(Add)(_prim(Mul)(z, scale), _prim(Cast)(mean, mstype.float32))


def _standard_laplace(name: str, seed: Any, shape: tuple) -> Any:
    """float64 Laplace(0, 1) draws: -sign(c) * log(1 - 2 |c|) of c = u - 1/2, c in (-1/2, 1/2)."""
    c = _prim(Sub)(_uniform64(_seed(name, seed), 0, shape), 0.5)
    tail = _prim(Log1p)(_prim(Mul)(_prim(Abs)(c), -2.0))
    return _prim(Mul)(_prim(Sign)(c), tail) * -1.0


def laplace(shape: tuple, mean: Any, lambda_param: Any, seed: int | None = None) -> Tensor:
    """float32 Laplace draws of location `mean` and scale `lambda_param` (density
    exp(-|x - mean| / lambda) / (2 lambda)), of the broadcast of `shape` with their shapes,
    as `mindspore.ops.laplace`."""
    name = "laplace"
    mean, scale = _param(name, "mean", mean), _param(name, "lambda_param", lambda_param)
    out = _broadcast(name, _shape(name, shape), mean, scale)
    x = _prim(Add)(_prim(Mul)(_standard_laplace(name, seed, out), _f64(scale)), _f64(mean))
    return _prim(Cast)(x, mstype.float32)


def standard_laplace(shape: tuple, seed: int | None = None) -> Tensor:
    """float32 Laplace(0, 1) draws of `shape`, as `mindspore.ops.standard_laplace`."""
    name = "standard_laplace"
    return _prim(Cast)(_standard_laplace(name, seed, _shape(name, shape)), mstype.float32)


def gamma(shape: tuple, alpha: Any, beta: Any, seed: int | None = None) -> Tensor:
    """Gamma draws of shape `alpha` (> 0) and inverse scale `beta` (> 0; mean alpha / beta),
    of the broadcast of `shape` with their shapes, in alpha's dtype, as `mindspore.ops.gamma`."""
    name = "gamma"
    alpha, beta = _param(name, "alpha", alpha), _param(name, "beta", beta)
    out = _broadcast(name, _shape(name, shape), alpha, beta)
    g = _prim(GammaQuantile)(_uniform64(_seed(name, seed), 0, out), _f64(alpha))
    return _prim(Cast)(_prim(RealDiv)(g, _f64(beta)), alpha.dtype)


def random_gamma(shape: tuple, alpha: Any, seed: int = 0) -> Tensor:
    """Standard gamma draws (scale 1) of shape `alpha` (> 0): shape + alpha.shape, one draw
    per alpha entry and index of `shape`, in alpha's dtype, as `mindspore.ops.random_gamma`."""
    name = "random_gamma"
    alpha = _param(name, "alpha", alpha)
    out = _shape(name, shape) + tuple(alpha.shape)
    g = _prim(GammaQuantile)(_uniform64(_seed(name, seed), 0, out), _f64(alpha))
    return _prim(Cast)(g, alpha.dtype)


def poisson(shape: tuple, mean: Any, seed: int | None = None) -> Tensor:
    """float32 Poisson counts of mean `mean` (> 0), of the broadcast of `shape` with its
    shape, as `mindspore.ops.poisson`."""
    name = "poisson"
    mean = _param(name, "mean", mean)
    out = _broadcast(name, _shape(name, shape), mean)
    k = _prim(PoissonQuantile)(_uniform64(_seed(name, seed), 0, out), _f64(mean))
    return _prim(Cast)(k, mstype.float32)


_POISSON_TYPES = (mstype.float16, mstype.float32, mstype.float64, mstype.int32, mstype.int64)


def random_poisson(shape: Any, rate: Any, seed: int | None = None,
                   dtype: mstype.Type = mstype.float32) -> Tensor:
    """Poisson counts of mean `rate` (>= 0): shape (a tuple or 1-D int Tensor) + rate.shape,
    in `dtype` (float16/32/64, int32/64), as `mindspore.ops.random_poisson`."""
    name = "random_poisson"
    validator.check_type_name("dtype", dtype, _POISSON_TYPES, name)
    rate = _param(name, "rate", rate)
    out = _shape(name, shape) + tuple(rate.shape)
    k = _prim(PoissonQuantile)(_uniform64(_seed(name, seed), 0, out), _f64(rate))
    return _prim(Cast)(k, dtype)


def _probabilities(name: str, arg: str, x: Any) -> tuple:
    """(x as (N, C) float64 weights, whether x was 1-D)."""
    check_tensor(name, arg, x)
    validator.check_tensor_dtype_valid(arg, x.dtype, mstype.float_type, name)
    if len(x.shape) not in (1, 2) or x.shape[-1] == 0:
        raise ValueError(f"For '{name}', the '{arg}' should be 1-D (C,) or 2-D (N, C) with C > "
                         f"0, but got shape {list(x.shape)}.")
    flat = len(x.shape) == 1
    return _f64(_prim(Reshape)(x, (1, x.shape[0])) if flat else x), flat


def _with_replacement(p: Any, samples: int, seed: int, seed2: int) -> Any:
    """(N, samples) int32 categories: the index j with cdf_{j-1} <= u < cdf_j of each
    draw u, cdf the running sums of each row's weights over their total."""
    n, c = p.shape
    cdf = _prim(CumSum)(p, 1)
    cdf = _prim(RealDiv)(cdf, slice_along(cdf, 1, c - 1, c))
    u = _prim(ExpandDims)(_uniform64(seed, seed2, (n, samples)), 2)            # (N, S, 1)
    passed = _prim(GreaterEqual)(u, _prim(ExpandDims)(cdf, 1))                 # (N, S, C)
    count = _prim(ReduceSum, False)(_prim(Cast)(passed, mstype.int32), 2)
    # u above a last cdf a rounding below 1 picks the last category
    return _prim(Select)(_prim(GreaterEqual)(count, c), count * 0 + (c - 1), count)


def _without_replacement(p: Any, samples: int, seed: int, seed2: int) -> Any:
    """(N, samples) int32 distinct categories in the order of successive draws without
    replacement: the largest keys log(u) / p (u ** (1 / p); weight 0 comes last)."""
    n, c = p.shape
    positive = _prim(Greater)(p, 0.0)
    ones, never = (Tensor(np.full((n, c), v)) for v in (1.0, -np.inf))
    keys = _prim(RealDiv)(_prim(Log)(_uniform64(seed, seed2, (n, c))),
                          _prim(Select)(positive, p, ones))
    return _prim(TopK, True)(_prim(Select)(positive, keys, never), samples)[1]


def _draw_categories(name: str, x: Any, samples: Any, replacement: Any, seed: int,
                     seed2: int, dtype: mstype.Type) -> Tensor:
    validator.check_positive_int(samples, "num_samples", name)
    validator.check_bool("replacement", replacement, name)
    p, flat = _probabilities(name, "input", x)
    p = _prim(StopGradient)(p)
    if not replacement and samples > p.shape[1]:
        raise ValueError(f"For '{name}', the 'num_samples' should be at most the {p.shape[1]} "
                         f"categories when drawing without replacement, but got {samples}.")
    draw = _with_replacement if replacement else _without_replacement
    out = _prim(Cast)(draw(p, samples, seed, seed2), dtype)
    return _prim(Reshape)(out, (samples,)) if flat else out


def multinomial(input: Any, num_samples: int, replacement: bool = True,
                seed: int | None = None) -> Tensor:
    """int32 category indices drawn from the weights `input` (C,) or (N, C) (non-negative,
    each row's total > 0; not necessarily normalised): (num_samples,) or (N, num_samples),
    with or without replacement, as `mindspore.ops.multinomial`."""
    name = "multinomial"
    return _draw_categories(name, input, num_samples, replacement, _seed(name, seed), 0,
                            mstype.int32)


def multinomial_with_replacement(x: Any, seed: int, offset: int, numsamples: int,
                                 replacement: bool = False) -> Tensor:
    """int64 category indices drawn from the weights x (C,) or (N, C), keyed by `seed` and
    `offset` (a second seed), as `mindspore.ops.multinomial_with_replacement`."""
    name = "multinomial_with_replacement"
    validator.check_non_negative_int(seed, "seed", name)
    validator.check_non_negative_int(offset, "offset", name)
    return _draw_categories(name, x, numsamples, replacement, seed, offset, mstype.int64)


def random_categorical(logits: Any, num_sample: int, seed: int = 0,
                       dtype: mstype.Type = mstype.int64) -> Tensor:
    """Category indices drawn with replacement from softmax(logits) of each row of logits
    (batch, classes): (batch, num_sample) in `dtype` (int16/32/64), as
    `mindspore.ops.random_categorical`."""
    name = "random_categorical"
    check_tensor(name, "logits", logits)
    validator.check_tensor_dtype_valid("logits", logits.dtype, mstype.float_type, name)
    validator.check_type_name("dtype", dtype, (mstype.int16, mstype.int32, mstype.int64), name)
    if len(logits.shape) != 2:
        raise ValueError(f"For '{name}', the 'logits' should be 2-D (batch, classes), but got "
                         f"shape {list(logits.shape)}.")
    p = _prim(Softmax, -1)(_f64(logits))
    return _draw_categories(name, p, num_sample, True, _seed(name, seed), 0, dtype)


def shuffle(x: Any, seed: int | None = None) -> Tensor:
    """x with its rows (dim 0) in a random order (a randperm of them), as
    `mindspore.ops.shuffle`."""
    name = "shuffle"
    check_tensor(name, "x", x)
    if not x.shape:
        raise ValueError(f"For '{name}', the 'x' should have rank >= 1, but got a 0-d Tensor.")
    order = _prim(RandpermDraw, _seed(name, seed), 0, mstype.int32)(x.shape[0])
    return _prim(Gather)(x, order, 0)


def choice_with_mask(input_x: Any, count: int = 256, seed: int = 0,
                     seed2: int = 0) -> tuple:
    """(index (count, rank) int32, mask (count,) bool): up to `count` of the True positions
    of the bool input_x (rank 1 to 5) in a random order, the rest zero rows with mask False,
    as `mindspore.ops.choice_with_mask`."""
    name = "choice_with_mask"
    check_tensor(name, "input_x", input_x)
    validator.check_tensor_dtype_valid("input_x", input_x.dtype, (mstype.bool_,), name)
    validator.check_positive_int(count, "count", name)
    validator.check_non_negative_int(seed, "seed", name)
    validator.check_non_negative_int(seed2, "seed2", name)
    shape = tuple(input_x.shape)
    if not 1 <= len(shape) <= 5:
        raise ValueError(f"For '{name}', the 'input_x' should have rank 1 to 5, but got shape "
                         f"{list(shape)}.")
    size = math.prod(shape)
    flat = _prim(Reshape)(input_x, (size,))
    # True positions get draws in (0, 1), the others 2: sorted, the chosen come first
    keys = _prim(Select)(flat, _uniform64(seed, seed2, (size,)),
                         Tensor(np.full((size,), 2.0)))
    order = slice_along(_prim(Sort, 0, False)(keys)[1], 0, 0, min(count, size))
    mask = _prim(Gather)(flat, order, 0)
    coords, rest = [], order
    for n in reversed(shape):
        coords.append(_prim(FloorMod)(rest, n))
        rest = _prim(FloorDiv)(rest, n)
    index = _prim(Stack, -1)(tuple(reversed(coords)))
    index = _prim(Mul)(index, _prim(ExpandDims)(_prim(Cast)(mask, mstype.int32), 1))
    if count > size:
        index = _prim(Concat, 0)((index, Tensor(np.zeros((count - size, len(shape)), np.int32))))
        mask = _prim(Concat, 0)((mask, Tensor(np.zeros(count - size, np.bool_))))
    return index, mask


def _sample_candidates(name: str, kind: str, true_classes: Any, num_true: Any, num_sampled: Any,
                       unique: Any, range_max: Any, seed: Any, remove_accidental_hits: Any) -> tuple:
    check_tensor(name, "true_classes", true_classes)
    validator.check_tensor_dtype_valid("true_classes", true_classes.dtype,
                                       (mstype.int32, mstype.int64), name)
    validator.check_non_negative_int(seed, "seed", name)
    for arg, value in (("num_true", num_true), ("num_sampled", num_sampled),
                       ("range_max", range_max)):
        validator.check_positive_int(value, arg, name)
    validator.check_bool("unique", unique, name)
    if unique and num_sampled > range_max:
        raise ValueError(f"For '{name}', the 'num_sampled' should be at most 'range_max' "
                         f"{range_max} when 'unique' is True, but got {num_sampled}.")
    if len(true_classes.shape) != 2 or true_classes.shape[1] != num_true:
        raise ValueError(f"For '{name}', the 'true_classes' should be (batch_size, num_true) = "
                         f"(batch_size, {num_true}), but got {list(true_classes.shape)}.")
    return _prim(CandidateSampler, seed, 0, kind, num_true, num_sampled, unique, range_max,
                 remove_accidental_hits)(true_classes)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int = 0,
                              remove_accidental_hits: bool = False) -> tuple:
    """(sampled_candidates (num_sampled,), true_expected_count (batch, num_true) float32,
    sampled_expected_count (num_sampled,) float32): classes drawn uniformly from
    [0, range_max) (distinct when `unique`; never a true class when
    `remove_accidental_hits`) and each class's expected count in the draw, as
    `mindspore.ops.uniform_candidate_sampler`. seed 0 is op seed 0 (draws here are always
    reproducible from the global seed)."""
    return _sample_candidates("uniform_candidate_sampler", "uniform", true_classes, num_true,
                              num_sampled, unique, range_max, seed, remove_accidental_hits)


def log_uniform_candidate_sampler(true_classes: Any, num_true: int = 1, num_sampled: int = 5,
                                  unique: bool = True, range_max: int = 5,
                                  seed: int = 0) -> tuple:
    """uniform_candidate_sampler's outputs for the log-uniform (Zipfian) distribution
    P(k) = log((k + 2) / (k + 1)) / log(range_max + 1) over [0, range_max), as
    `mindspore.ops.log_uniform_candidate_sampler`."""
    return _sample_candidates("log_uniform_candidate_sampler", "log_uniform", true_classes,
                              num_true, num_sampled, unique, range_max, seed, False)
