"""Parameter initial values: a Tensor/ndarray, or 'normal' (sigma 0.01), 'ones', 'zeros'.

'normal' draws from one seeded numpy Generator, so every rank of an SPMD program that
builds the same network in the same order gets the same weights; `set_seed` restarts it.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor

__all__ = ["initializer", "set_seed"]

_rng = [np.random.default_rng(0)]


def set_seed(seed: int) -> None:
    """Restart the generator behind 'normal' initial values."""
    _rng[0] = np.random.default_rng(seed)


def initializer(init: Any, shape: Sequence[int], dtype: mstype.Type = mstype.float32,
                arg: str = "init", prim_name: str | None = None) -> Tensor:
    """A Tensor of `shape` and `dtype` from `init` (ValueError if a given value's shape differs)."""
    np_dtype = mstype.dtype_to_nptype(dtype)
    shape = tuple(shape)
    if isinstance(init, (Tensor, np.ndarray)):
        value = np.asarray(init.asnumpy() if isinstance(init, Tensor) else init)
        if value.shape != shape:
            raise ValueError(f"For '{prim_name}', the shape of '{arg}' should be {list(shape)}, "
                             f"but got {list(value.shape)}.")
        return Tensor(value.astype(np_dtype))
    if init == "normal":
        return Tensor(_rng[0].normal(0.0, 0.01, shape).astype(np_dtype))
    if init == "ones":
        return Tensor(np.ones(shape, np_dtype))
    if init == "zeros":
        return Tensor(np.zeros(shape, np_dtype))
    raise ValueError(f"For '{prim_name}', the '{arg}' should be a Tensor, a numpy array, "
                     f"'normal', 'ones' or 'zeros', but got {init!r}.")
