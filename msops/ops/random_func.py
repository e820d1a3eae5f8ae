"""Functional spellings of the random primitives, with `mindspore.ops`' names, arguments and
defaults: uniform, standard_normal, rand, randn, randint, rand_like, randn_like,
randint_like, randperm. Each is one call of a random primitive (msops.primitives.random_ops), so it
draws like them: counter-based, keyed by the global seed and `seed` (None: 0), the same
eagerly, compiled and sharded; every call advances the draw counter.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.math_ops import Add, Mul, Sub
from msops.primitives.random_ops import (RandpermDraw, StandardNormal, StandardNormalOf,
                                         UniformInt, UniformIntOf, UniformReal, UniformRealOf)

__all__ = ["uniform", "standard_normal", "rand", "randn", "randint", "rand_like", "randn_like",
           "randint_like", "randperm"]


def _seed(name: str, seed: Any) -> int:
    """`seed` as the op seed: None -> 0; else a non-negative int."""
    if seed is None:
        return 0
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise TypeError(f"For '{name}', the 'seed' should be None or an int >= 0, but got "
                        f"{seed!r}.")
    return seed


def _size(name: str, size: tuple) -> tuple:
    """`*size` as a shape: ints, or one tuple/list of ints."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0
               for n in size):
        raise ValueError(f"For '{name}', the 'size' should be positive ints or one tuple of "
                         f"them, but got {size!r}.")
    return tuple(int(n) for n in size)


def _dtype(name: str, dtype: Any, valid: tuple, default: mstype.Type) -> mstype.Type:
    if dtype is None:
        return default
    if dtype not in valid:
        raise ValueError(f"For '{name}', the 'dtype' should be one of {list(valid)}, but got "
                         f"{dtype!r}.")
    return dtype


def uniform(shape: tuple, minval: Tensor, maxval: Tensor, seed: int | None = None,
            dtype: mstype.Type = mstype.float32) -> Tensor:
    """Values uniform in [minval, maxval): float32 (UniformReal scaled, minval and maxval
    broadcast with the shape) or int32 (UniformInt, 0-d int32 bounds)."""
    s = _seed("uniform", seed)
    if _dtype("uniform", dtype, (mstype.float32, mstype.int32), mstype.float32) == mstype.int32:
        return _prim(UniformInt, s, 0)(shape, minval, maxval)
    unit = _prim(UniformReal, s, 0)(shape)
    return _prim(Add)(_prim(Mul)(unit, _prim(Sub)(maxval, minval)), minval)


def standard_normal(shape: tuple, seed: int | None = None) -> Tensor:
    """float32 standard normal values of `shape` (StandardNormal)."""
    return _prim(StandardNormal, _seed("standard_normal", seed), 0)(shape)


def rand(*size: Any, dtype: mstype.Type | None = None, seed: int | None = None) -> Tensor:
    """Values uniform in [0, 1) of shape `size`, float32 unless `dtype` (a float type)."""
    t = _dtype("rand", dtype, mstype.float_type, mstype.float32)
    return _prim(UniformRealOf, _seed("rand", seed), 0, t)(_size("rand", size))


def randn(*size: Any, dtype: mstype.Type | None = None, seed: int | None = None) -> Tensor:
    """Standard normal values of shape `size`, float32 unless `dtype` (a float type)."""
    t = _dtype("randn", dtype, mstype.float_type, mstype.float32)
    return _prim(StandardNormalOf, _seed("randn", seed), 0, t)(_size("randn", size))


def randint(low: int, high: int, size: tuple, seed: int | None = None, *,
            dtype: mstype.Type | None = None) -> Tensor:
    """Integers uniform in [low, high) of shape `size`, int64 unless `dtype` (an int type)."""
    return _randint("randint", low, high, size, seed, dtype, mstype.int64)


def _randint(name: str, low: Any, high: Any, size: Any, seed: Any, dtype: Any,
             default: mstype.Type) -> Tensor:
    for arg, v in (("low", low), ("high", high)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"For '{name}', the '{arg}' should be an int, but got {v!r}.")
    if low >= high:
        raise ValueError(f"For '{name}', the 'low' should be < 'high', but got low {low} and "
                         f"high {high}.")
    if not isinstance(size, tuple):
        raise TypeError(f"For '{name}', the 'size' should be a tuple, but got {size!r}.")
    t = _dtype(name, dtype, mstype.int_type, default)
    info = np.iinfo(t.np_dtype)
    if low < info.min or high - 1 > info.max:
        raise ValueError(f"For '{name}', [low, high) should fit in {t}, but got low {low} and "
                         f"high {high}.")
    bounds = [Tensor(np.asarray(v, np.int64)) for v in (low, high)]
    return _prim(UniformIntOf, _seed(name, seed), 0, t)(_size(name, (size,)), *bounds)


def rand_like(input: Tensor, seed: int | None = None, *,  # noqa: A002
              dtype: mstype.Type | None = None) -> Tensor:
    """rand of input's shape, in input's dtype unless `dtype` (float types)."""
    x = check_tensor("rand_like", "input", input)
    return rand(tuple(x.shape), dtype=_dtype("rand_like", dtype or x.dtype, mstype.float_type,
                                             mstype.float32), seed=seed)


def randn_like(input: Tensor, seed: int | None = None, *,  # noqa: A002
               dtype: mstype.Type | None = None) -> Tensor:
    """randn of input's shape, in input's dtype unless `dtype` (float types)."""
    x = check_tensor("randn_like", "input", input)
    return randn(tuple(x.shape), dtype=_dtype("randn_like", dtype or x.dtype,
                                              mstype.float_type, mstype.float32), seed=seed)


def randint_like(input: Tensor, low: int, high: int, seed: int | None = None, *,  # noqa: A002
                 dtype: mstype.Type | None = None) -> Tensor:
    """randint of input's shape, in input's dtype unless `dtype` (int types)."""
    x = check_tensor("randint_like", "input", input)
    return _randint("randint_like", low, high, tuple(x.shape), seed, dtype or x.dtype, x.dtype)


def randperm(n: Any, seed: int = 0, offset: int = 0,
             dtype: mstype.Type = mstype.int64) -> Tensor:
    """A random permutation of 0 .. n-1 in `dtype` (n: an int, or a Tensor of shape () or
    (1,) holding it). `seed` -1 (MindSpore's "from the time") is seed 0: draws here are
    always reproducible. `offset` keys the draw like a second seed."""
    if isinstance(n, Tensor):
        if n.size != 1 or n.dtype not in mstype.int_type:
            raise ValueError(f"For 'randperm', the 'n' Tensor should hold one int, but got "
                             f"shape {n.shape} and dtype {n.dtype}.")
        n = int(n.asnumpy().reshape(()))
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"For 'randperm', the 'n' should be an int or an int Tensor, but got "
                        f"{type(n).__name__}.")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < -1:
        raise ValueError(f"For 'randperm', the 'seed' should be an int >= -1, but got {seed!r}.")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"For 'randperm', the 'offset' should be an int >= 0, but got "
                         f"{offset!r}.")
    return _prim(RandpermDraw, max(seed, 0), offset, dtype)(n)
