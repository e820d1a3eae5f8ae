"""Fourier transforms as `mindspore.ops` spells them: fft, ifft, fft2, ifft2, fftn, ifftn,
rfft, irfft, rfft2, irfft2, rfftn, irfftn, hfft, ihfft, hfft2, ihfft2, hfftn, ihfftn (each
one primitive of msops.primitives.fft_ops), fftshift / ifftshift (rolls), fftfreq /
rfftfreq (constants), and the complex parts real / imag / conj."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import dtype as mstype
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.slice_func import roll
from msops.primitives.math_ops import Conj
from msops.primitives.fft_ops import (FFTN, HFFT, HFFTN, IFFTN, IHFFT, IHFFTN, IRFFTN, RFFTN,
                                      Imag, Real)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq",
           "real", "imag", "conj"]


def _ints(name: str, arg: str, value: Any) -> tuple | None:
    """None, an int or a sequence of ints, as a tuple (TypeError naming `name` otherwise)."""
    if value is None:
        return None
    items = value if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise TypeError(f"For '{name}', the '{arg}' should be an int or a tuple of ints, but "
                        f"got {value!r}.")
    return tuple(int(v) for v in items)


def _one(name: str, arg: str, value: Any) -> int | None:
    if value is not None and (not isinstance(value, (int, np.integer)) or isinstance(value, bool)):
        raise TypeError(f"For '{name}', the '{arg}' should be an int, but got "
                        f"{type(value).__name__}.")
    return value


def _call(cls: type, name: str, input: Any, s: Any, dim: Any, norm: Any) -> Any:
    check_tensor(name, "input", input)
    return _prim(cls, _ints(name, "s", s), _ints(name, "dim", dim), norm)(input)


def _call1(cls: type, name: str, input: Any, n: Any, dim: Any, norm: Any) -> Any:
    n, dim = _one(name, "n", n), _one(name, "dim", dim)
    return _call(cls, name, input, None if n is None else (n,), dim, norm)


def fft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The 1-d DFT of `input` along `dim`, cropped/zero-padded to `n` first; complex."""
    return _call1(FFTN, "fft", input, n, dim, norm)


def ifft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The 1-d inverse DFT along `dim` (at length `n`)."""
    return _call1(IFFTN, "ifft", input, n, dim, norm)


def fft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The 2-d DFT over `dim` (the last two), at sizes `s`."""
    return _call(FFTN, "fft2", input, s, dim, norm)


def ifft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The 2-d inverse DFT over `dim`."""
    return _call(IFFTN, "ifft2", input, s, dim, norm)


def fftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The n-d DFT over `dim` (all dims, or the last len(s) when s is given)."""
    return _call(FFTN, "fftn", input, s, dim, norm)


def ifftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The n-d inverse DFT over `dim`."""
    return _call(IFFTN, "ifftn", input, s, dim, norm)


def rfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The 1-d DFT of a real input: n // 2 + 1 bins (the others are their conjugates)."""
    return _call1(RFFTN, "rfft", input, n, dim, norm)


def irfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The real signal of n samples (default 2 * (bins - 1)) of a one-sided spectrum."""
    return _call1(IRFFTN, "irfft", input, n, dim, norm)


def rfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The 2-d DFT of a real input, the last dim one-sided."""
    return _call(RFFTN, "rfft2", input, s, dim, norm)


def irfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The inverse of rfft2: a real output."""
    return _call(IRFFTN, "irfft2", input, s, dim, norm)


def rfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The n-d DFT of a real input, the last transformed dim one-sided."""
    return _call(RFFTN, "rfftn", input, s, dim, norm)


def irfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The inverse of rfftn: a real output."""
    return _call(IRFFTN, "irfftn", input, s, dim, norm)


def hfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The real DFT of a Hermitian-symmetric signal given by its one-sided half."""
    check_tensor("hfft", "input", input)
    return _prim(HFFT, _one("hfft", "n", n), _one("hfft", "dim", dim), norm)(input)


def ihfft(input: Any, n: int | None = None, dim: int = -1, norm: str | None = None) -> Any:
    """The one-sided inverse DFT of a real signal (the inverse of hfft)."""
    check_tensor("ihfft", "input", input)
    return _prim(IHFFT, _one("ihfft", "n", n), _one("ihfft", "dim", dim), norm)(input)


def hfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The 2-d hfft: the real DFT of a Hermitian signal given by its one-sided half."""
    return _call(HFFTN, "hfft2", input, s, dim, norm)


def ihfft2(input: Any, s: Any = None, dim: Any = (-2, -1), norm: str | None = None) -> Any:
    """The 2-d ihfft: the one-sided inverse DFT of a real signal."""
    return _call(IHFFTN, "ihfft2", input, s, dim, norm)


def hfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The n-d hfft over `dim`."""
    return _call(HFFTN, "hfftn", input, s, dim, norm)


def ihfftn(input: Any, s: Any = None, dim: Any = None, norm: str | None = None) -> Any:
    """The n-d ihfft over `dim`."""
    return _call(IHFFTN, "ihfftn", input, s, dim, norm)


def _shift(name: str, input: Any, dim: Any, sign: int) -> Any:
    check_tensor(name, "input", input)
    ndim = len(input.shape)
    dims = _ints(name, "dim", dim) if dim is not None else tuple(range(ndim))
    for d in dims:
        if not -ndim <= d < ndim:
            raise ValueError(f"For '{name}', the 'dim' should be in [{-ndim}, {ndim}), but got "
                             f"{d}.")
    if not dims:
        return input
    return roll(input, [sign * (input.shape[d] // 2) for d in dims], list(dims))


def fftshift(input: Any, dim: Any = None) -> Any:
    """input rolled so the zero frequency is at the centre of each of `dim` (all dims)."""
    return _shift("fftshift", input, dim, 1)


def ifftshift(input: Any, dim: Any = None) -> Any:
    """The inverse of fftshift."""
    return _shift("ifftshift", input, dim, -1)


def _freq(name: str, n: Any, d: Any, dtype: Any, values: Any) -> Tensor:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"For '{name}', the 'n' should be a positive int, but got {n!r}.")
    if not isinstance(d, (int, float, np.integer, np.floating)) or isinstance(d, bool):
        raise TypeError(f"For '{name}', the 'd' should be a float, but got "
                        f"{type(d).__name__}.")
    dtype = mstype.float32 if dtype is None else dtype
    if not isinstance(dtype, mstype.Type) or dtype not in mstype.float_type + mstype.complex_type:
        raise TypeError(f"For '{name}', the 'dtype' should be a float or complex dtype, but "
                        f"got {dtype!r}.")
    return Tensor(np.asarray(values(int(n), float(d))).astype(dtype.np_dtype))


def fftfreq(n: int, d: float = 1.0, dtype: Any = None) -> Tensor:
    """The sample frequencies of an n-point DFT at spacing d: [0, 1, ..., -1] / (d * n)."""
    return _freq("fftfreq", n, d, dtype, np.fft.fftfreq)


def rfftfreq(n: int, d: float = 1.0, dtype: Any = None) -> Tensor:
    """The non-negative sample frequencies of rfft: [0, 1, ..., n // 2] / (d * n)."""
    return _freq("rfftfreq", n, d, dtype, np.fft.rfftfreq)


def real(input: Any) -> Any:
    """The real part of each element (a real input: itself)."""
    check_tensor("real", "input", input)
    return _prim(Real)(input)


def imag(input: Any) -> Any:
    """The imaginary part of each element (a real input: zeros)."""
    check_tensor("imag", "input", input)
    return _prim(Imag)(input)


def conj(input: Any) -> Any:
    """The complex conjugate of each element (a real input: itself)."""
    check_tensor("conj", "input", input)
    return _prim(Conj)(input)
