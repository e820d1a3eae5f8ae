"""Signal windows with `mindspore.ops`' names, arguments and defaults: hann_window,
hamming_window, kaiser_window, bartlett_window and blackman_window.

A window is a constant of its length: computed once in float64 numpy (the Kaiser window's
I0 by special_kernels' series) and returned as a Tensor of `dtype` (float32 when None).
`periodic=True` gives the periodic window for spectral analysis (the symmetric one of
length + 1 without its last point), as MindSpore's and torch's.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import Tensor
from msops.ops.creation_func import check_dtype
from msops.primitives.special_kernels import bessel_i0

__all__ = ["hann_window", "hamming_window", "kaiser_window", "bartlett_window",
           "blackman_window"]


def _window(name: str, window_length: Any, periodic: Any, dtype: Any,
            symmetric: Callable[[int], np.ndarray]) -> Tensor:
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(f"For '{name}', the 'window_length' should be an int, but got "
                        f"{type(window_length).__name__}.")
    if window_length < 0:
        raise ValueError(f"For '{name}', the 'window_length' should be >= 0, but got "
                         f"{window_length}.")
    validator.check_bool("periodic", periodic, name)
    dtype = check_dtype(name, mstype.float32 if dtype is None else dtype)
    if dtype not in mstype.float_type:
        raise TypeError(f"For '{name}', the 'dtype' should be a float dtype, but got {dtype}.")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        n = window_length + 1 if periodic else window_length
        values = symmetric(n)[:window_length]
    return Tensor(values.astype(dtype.np_dtype))


def _cosines(n: int, coefficients: tuple) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k i / (n - 1)) for i in [0, n)."""
    phase = 2.0 * np.pi * np.arange(n) / (n - 1)
    return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def hann_window(window_length: int, periodic: bool = True, *,
                dtype: mstype.Type | None = None) -> Tensor:
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype,
                   lambda n: _cosines(n, (0.5, 0.5)))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: mstype.Type | None = None) -> Tensor:
    """alpha - beta cos(2 pi n / (N - 1))."""
    for arg, v in (("alpha", alpha), ("beta", beta)):
        validator.check_value_type(arg, v, (float, int), "hamming_window")
    return _window("hamming_window", window_length, periodic, dtype,
                   lambda n: _cosines(n, (float(alpha), float(beta))))


def blackman_window(window_length: int, periodic: bool = True, *,
                    dtype: mstype.Type | None = None) -> Tensor:
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype,
                   lambda n: _cosines(n, (0.42, 0.5, 0.08)))


def bartlett_window(window_length: int, periodic: bool = True, *,
                    dtype: mstype.Type | None = None) -> Tensor:
    """The triangle 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype,
                   lambda n: 1.0 - np.abs(2.0 * np.arange(n) / (n - 1) - 1.0))


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: mstype.Type | None = None) -> Tensor:
    """I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)."""
    validator.check_value_type("beta", beta, (float, int), "kaiser_window")

    def kaiser(n: int) -> np.ndarray:
        ratio = 2.0 * np.arange(n) / (n - 1) - 1.0
        return bessel_i0(beta * np.sqrt(np.maximum(1.0 - ratio * ratio, 0.0))) / \
            bessel_i0(np.asarray(float(beta)))
    return _window("kaiser_window", window_length, periodic, dtype, kaiser)
