"""Parameter initial values, as `mindspore.common.initializer`: `initializer(init, shape,
dtype)` from a Tensor/ndarray, a number, an Initializer (`Normal(sigma=0.01, mean=0.0)`,
`Uniform(scale=0.07)`, `Constant(value)`, `One()`, `Zero()`) or its name ('normal',
'uniform', 'ones', 'zeros').

Random values come from one seeded numpy Generator, so every rank of an SPMD program that
builds the same network in the same order gets the same weights; `set_seed` restarts it.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor

__all__ = ["initializer", "set_seed", "get_seed", "next_draw", "Initializer", "Normal", "Uniform", "Constant", "One",
           "Zero"]

_rng = [np.random.default_rng(0)]
_seed = [0]
_draws = [0]      # random ops drawn since the last set_seed (the counter of counter-based draws)


def set_seed(seed: int) -> None:
    """Restart the generator behind 'normal' initial values and the counter of random ops."""
    _rng[0] = np.random.default_rng(seed)
    _seed[0], _draws[0] = int(seed), 0


def get_seed() -> int:
    """The global seed (0 until `set_seed`)."""
    return _seed[0]


def next_draw() -> int:
    """The counter of the next random op's draw (0, 1, ... after each `set_seed`)."""
    _draws[0] += 1
    return _draws[0] - 1


class Initializer:
    """The base: `init_data(shape, np_dtype)` gives the values (a numpy array)."""

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Normal(Initializer):
    """N(mean, sigma**2) values."""

    def __init__(self, sigma: float = 0.01, mean: float = 0.0) -> None:
        self.sigma, self.mean = sigma, mean

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return _rng[0].normal(self.mean, self.sigma, shape).astype(np_dtype)


class Uniform(Initializer):
    """U(-scale, scale) values."""

    def __init__(self, scale: float = 0.07) -> None:
        self.scale = scale

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return _rng[0].uniform(-self.scale, self.scale, shape).astype(np_dtype)


class Constant(Initializer):
    """Every value `value`."""

    def __init__(self, value: float) -> None:
        self.value = value

    def init_data(self, shape: tuple, np_dtype: Any) -> np.ndarray:
        return np.full(shape, self.value, np_dtype)


class One(Constant):
    """Ones."""

    def __init__(self) -> None:
        super().__init__(1)


class Zero(Constant):
    """Zeros."""

    def __init__(self) -> None:
        super().__init__(0)


_NAMED = {"normal": Normal, "uniform": Uniform, "ones": One, "zeros": Zero}


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
    if isinstance(init, (int, float)) and not isinstance(init, bool):
        init = Constant(init)
    elif isinstance(init, str) and init.lower() in _NAMED:
        init = _NAMED[init.lower()]()
    if isinstance(init, Initializer):
        return Tensor(init.init_data(shape, np_dtype))
    raise ValueError(f"For '{prim_name}', the '{arg}' should be a Tensor, a numpy array, a "
                     f"number, an Initializer or one of {sorted(_NAMED)}, but got {init!r}.")
