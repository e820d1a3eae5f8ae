"""Discrete Fourier transforms over np.fft: FFTN, IFFTN, RFFTN, IRFFTN, HFFTN, IHFFTN (and
their one-dim HFFT, IHFFT), and the complex parts Real and Imag.

Each transform is a (real-)linear map applied over the dims `dim`, after each of them is
cropped or zero-padded to its signal size `s` (numpy's and MindSpore's rule). Integer and
float16/float32/complex64 inputs give complex64 (or float32 for the real outputs of
IRFFTN/HFFT); float64/complex128 give complex128 (float64).

Gradients follow the convention of a real loss L: the gradient of a complex tensor z is
dL/dRe(z) + i dL/dIm(z), so a real-linear map's backward is its adjoint under Re<a, b>:
the transform the other way with the normalization swapped ("backward" <-> "forward"), the
one-sided spectra weighted for the bins they stand for twice (Hermitian symmetry), the
signal sizes cropped or padded back. `FFTGrad` (internal, made by the backward rules) runs
that adjoint; its own backward is the forward transform again. msops's other complex
backward rules (Mul, ...) do not conjugate, so only chains of these ops, Real, Imag, Cast
and real-weighted linear ops differentiate correctly through complex values.

Sharding: the dims outside `dim` are batch dims, split like an element-wise op; the
transformed dims are whole (each output element reads all of them).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.lowering import run_lowered
from msops.primitives.math_ops import Cast, Mul, UnaryElementwise, check_rank
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
from msops.primitives.shape_ops import _copied
from msops.primitives.sharding import DimSpec, dims

__all__ = ["FFTN", "IFFTN", "RFFTN", "IRFFTN", "HFFTN", "IHFFTN", "HFFT", "IHFFT", "Real",
           "Imag"]

NORMS = ("backward", "forward", "ortho")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
#: what a transform takes: every number but bool (real-input transforms: no complex)
_ANY = mstype.int_type + mstype.uint_type + mstype.float_type + mstype.complex_type
_REAL = mstype.int_type + mstype.uint_type + mstype.float_type
_DOUBLE = (mstype.float64, mstype.complex128)


def _complex_of(dtype: mstype.Type) -> mstype.Type:
    return mstype.complex128 if dtype in _DOUBLE else mstype.complex64


def _real_of(dtype: mstype.Type) -> mstype.Type:
    return mstype.float64 if dtype in _DOUBLE else mstype.float32


def _resize(a: np.ndarray, axes: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """`a` cropped or zero-padded (at the end) to `sizes` along `axes`."""
    if all(a.shape[d] == n for d, n in zip(axes, sizes)):
        return a
    crop = tuple(slice(0, sizes[list(axes).index(d)]) if d in axes else slice(None)
                 for d in range(a.ndim))
    a = a[crop]
    pad = [(0, max(sizes[list(axes).index(d)] - a.shape[d], 0)) if d in axes else (0, 0)
           for d in range(a.ndim)]
    return np.pad(a, pad) if any(p for _, p in pad) else a


def _twice_weights(m: int, n: int, ndim: int, axis: int, dtype: Any) -> np.ndarray:
    """Weights of a one-sided spectrum of m = n // 2 + 1 bins along `axis`: 2 for the bins
    standing for a conjugate pair, 1 for bin 0 and (n even) the Nyquist bin."""
    w = np.full(m, 2.0, dtype)
    w[0] = 1.0
    if n % 2 == 0 and m > 1:
        w[m - 1] = 1.0
    return w.reshape((m,) + (1,) * (ndim - 1 - axis))


class _FFT(PrimitiveWithInfer):
    """A transform over `dim` at signal sizes `s`, normalized by `norm` (family base).

    Subclasses set `in_types`, `out_real` (a real output), `half_in` / `half_out` (the last
    transformed dim is a one-sided spectrum on the way in / out), and `_forward` /
    `_adjoint` (numpy: the transform of the resized input, and its adjoint)."""

    in_types: tuple = _ANY
    out_real = False
    half_in = False
    half_out = False

    @prim_attr_register
    def __init__(self, s: Any = None, dim: Any = None, norm: str | None = None) -> None:
        self._check_attrs(s, dim, norm)

    def _check_attrs(self, s: Any, dim: Any, norm: Any) -> None:
        for arg, v in (("s", s), ("dim", dim)):
            if v is not None and (not isinstance(v, tuple) or not all(
                    isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v)):
                raise TypeError(f"For '{self.name}', the '{arg}' should be a tuple of ints or "
                                f"None, but got {v!r}.")
        if s is not None and any(n < 1 and n != -1 for n in s):
            raise ValueError(f"For '{self.name}', every value of 's' should be positive (or -1: "
                             f"the input's size), but got {s}.")
        if s is not None and dim is not None and len(s) != len(dim):
            raise ValueError(f"For '{self.name}', the 's' and 'dim' should have the same "
                             f"length, but got {len(s)} and {len(dim)}.")
        if norm is not None and norm not in NORMS:
            raise ValueError(f"For '{self.name}', the 'norm' should be one of {list(NORMS)} or "
                             f"None, but got {norm!r}.")

    @property
    def mode(self) -> str:
        return self.norm or "backward"

    def plan(self, shape: Sequence[int]) -> tuple[tuple, tuple]:
        """(dims, signal sizes) for an input of `shape`: the transformed dims in [0, ndim) and
        the length each is cropped/padded to (and, for IRFFTN/HFFT, the output's last)."""
        ndim = len(shape)
        check_rank(self.name, "input", shape, 1)
        if self.dim is None:
            d = tuple(range(ndim - (len(self.s) if self.s is not None else ndim), ndim))
            if self.s is not None and len(self.s) > ndim:
                raise ValueError(f"For '{self.name}', the 's' should have at most {ndim} "
                                 f"values (the input's rank), but got {self.s}.")
        else:
            d = tuple(validator.check_axis_in_range(a, ndim, "dim", self.name)
                      for a in self.dim)
        if len(set(d)) != len(d) or not d:
            raise ValueError(f"For '{self.name}', the 'dim' should name distinct dims (at "
                             f"least one), but got {self.dim}.")
        sizes = [shape[a] for a in d]
        if self.half_in:                     # the input's last dim holds n // 2 + 1 bins
            sizes[-1] = 2 * (shape[d[-1]] - 1)
        if self.s is not None:
            sizes = [n if v == -1 else int(v) for n, v in zip(sizes, self.s)]
        if any(n < 1 for n in sizes):
            bad = d[sizes.index(min(sizes))]
            raise ValueError(f"For '{self.name}', the signal size along dim {bad} should be "
                             f"positive, but got {min(sizes)} (give 's' or 'n').")
        return d, tuple(sizes)

    def infer_shape(self, x_shape: list) -> list:
        d, sizes = self.plan(x_shape)
        out = list(x_shape)
        for a, n in zip(d, sizes):
            out[a] = n
        if self.half_out:
            out[d[-1]] = sizes[-1] // 2 + 1
        return out

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("input", x_dtype, self.in_types, self.name)
        return _real_of(x_dtype) if self.out_real else _complex_of(x_dtype)

    def in_sizes(self, sizes: tuple) -> tuple:
        """The sizes the input is cropped/padded to before the transform."""
        if self.half_in:
            return sizes[:-1] + (sizes[-1] // 2 + 1,)
        return sizes

    writes_output = True
    kernel = run_lowered

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        d, sizes = self.plan(in_abstracts[0].shape)
        # the copy rounds numpy's result to the output's dtype (same kind)
        return _copied(out_abstract, lambda x: self._forward(
            _resize(x, d, self.in_sizes(sizes)), d, sizes))

    def _forward(self, x: np.ndarray, d: tuple, sizes: tuple) -> np.ndarray:
        raise NotImplementedError

    def _adjoint(self, dy: np.ndarray, d: tuple, sizes: tuple) -> np.ndarray:
        raise NotImplementedError

    def adjoint(self, dy: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The gradient of the input x for the output's gradient dy (x's shape and dtype)."""
        d, sizes = self.plan(x.shape)
        dx = _resize(self._adjoint(dy, d, sizes), d, [x.shape[a] for a in d])
        if not np.iscomplexobj(x):
            dx = dx.real
        return np.ascontiguousarray(dx.astype(x.dtype, copy=False))


class FFTN(_FFT):
    """`FFTN(s=None, dim=None, norm=None)(input)`: the n-dim DFT over `dim` (all dims, or the
    last len(s)), each cropped/padded to `s`; complex output (ops.fft, fft2, fftn)."""

    def _forward(self, x, d, sizes):
        return np.fft.fftn(x, axes=d, norm=self.mode)

    def _adjoint(self, dy, d, sizes):
        return np.fft.ifftn(dy, axes=d, norm=_SWAP[self.mode])


class IFFTN(_FFT):
    """`IFFTN(s=None, dim=None, norm=None)(input)`: the inverse n-dim DFT (ops.ifft, ifft2,
    ifftn)."""

    def _forward(self, x, d, sizes):
        return np.fft.ifftn(x, axes=d, norm=self.mode)

    def _adjoint(self, dy, d, sizes):
        return np.fft.fftn(dy, axes=d, norm=_SWAP[self.mode])


class RFFTN(_FFT):
    """`RFFTN(s=None, dim=None, norm=None)(input)`: the DFT of a real input, its last
    transformed dim one-sided (s[-1] // 2 + 1 bins) (ops.rfft, rfft2, rfftn)."""

    in_types = _REAL
    half_out = True

    def _forward(self, x, d, sizes):
        return np.fft.rfftn(x, axes=d, norm=self.mode)

    def _adjoint(self, dy, d, sizes):
        # irfftn counts the bins of a conjugate pair twice: halve them first
        w = _twice_weights(dy.shape[d[-1]], sizes[-1], dy.ndim, d[-1], dy.real.dtype)
        return np.fft.irfftn(dy / w, s=sizes, axes=d, norm=_SWAP[self.mode])


class IRFFTN(_FFT):
    """`IRFFTN(s=None, dim=None, norm=None)(input)`: the real signal of a one-sided spectrum;
    its last transformed dim has s[-1] samples (default 2 * (bins - 1)) (ops.irfft, ...)."""

    out_real = True
    half_in = True

    def _forward(self, x, d, sizes):
        return np.fft.irfftn(x, s=sizes, axes=d, norm=self.mode)

    def _adjoint(self, dy, d, sizes):
        spec = np.fft.rfftn(dy, axes=d, norm=_SWAP[self.mode])
        return spec * _twice_weights(spec.shape[d[-1]], sizes[-1], dy.ndim, d[-1],
                                     spec.real.dtype)


class HFFTN(_FFT):
    """`HFFTN(s=None, dim=None, norm=None)(input)`: the real DFT of a signal with Hermitian
    symmetry given by its one-sided half (last dim: s[-1] samples out, default
    2 * (size - 1)): irfftn of its conjugate, normalized the other way (ops.hfft2, hfftn)."""

    out_real = True
    half_in = True

    def _forward(self, x, d, sizes):
        return np.fft.irfftn(np.conj(x), s=sizes, axes=d, norm=_SWAP[self.mode])

    def _adjoint(self, dy, d, sizes):
        spec = np.fft.rfftn(dy, axes=d, norm=self.mode)
        return np.conj(spec * _twice_weights(spec.shape[d[-1]], sizes[-1], dy.ndim, d[-1],
                                             spec.real.dtype))


class IHFFTN(_FFT):
    """`IHFFTN(s=None, dim=None, norm=None)(input)`: the one-sided inverse DFT of a real
    signal, the inverse of HFFTN (ops.ihfft2, ihfftn)."""

    in_types = _REAL
    half_out = True

    def _forward(self, x, d, sizes):
        return np.conj(np.fft.rfftn(x, axes=d, norm=_SWAP[self.mode]))

    def _adjoint(self, dy, d, sizes):
        # irfftn counts the bins of a conjugate pair twice: halve them first
        w = _twice_weights(dy.shape[d[-1]], sizes[-1], dy.ndim, d[-1], dy.real.dtype)
        return np.fft.irfftn(np.conj(dy) / w, s=sizes, axes=d, norm=self.mode)


class _OneDim(_FFT):
    """HFFT / IHFFT: `(n=None, dim=-1, norm=None)`, one dim."""

    @prim_attr_register
    def __init__(self, n: int | None = None, dim: int = -1, norm: str | None = None) -> None:
        for arg, v in (("n", n), ("dim", dim)):
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool)):
                raise TypeError(f"For '{self.name}', the '{arg}' should be an int, but got "
                                f"{type(v).__name__}.")
        if dim is None:
            raise TypeError(f"For '{self.name}', the 'dim' should be an int, but got NoneType.")
        if n is not None and n < 1:
            raise ValueError(f"For '{self.name}', the 'n' should be positive, but got {n}.")
        self._check_attrs(None if n is None else (n,), (dim,), norm)
        self.s, self.dim = (None if n is None else (int(n),)), (int(dim),)


class HFFT(_OneDim, HFFTN):
    """`HFFT(n=None, dim=-1, norm=None)(input)`: HFFTN over one dim (ops.hfft)."""


class IHFFT(_OneDim, IHFFTN):
    """`IHFFT(n=None, dim=-1, norm=None)(input)`: IHFFTN over one dim (ops.ihfft)."""


@sharding_rule(_FFT)
def fft_spec(prim: _FFT, ins: list, outs: list, consts: dict) -> DimSpec:
    """Dims outside `dim` carry over (batch dims); the transformed dims are whole."""
    d, _ = prim.plan(ins[0])
    x = list(dims(len(ins[0])))
    y = list(x)
    for a in d:
        x[a], y[a] = f"t{a}", f"f{a}"
    why = "the transform mixes every element along it"
    return DimSpec((tuple(x),), (tuple(y),),
                   unsplittable=tuple((l, why) for a in d for l in (f"t{a}", f"f{a}")),
                   reduction_name="transformed dim")


class FFTGrad(PrimitiveWithInfer):
    """`FFTGrad(transform)(dout, x)`: x's gradient through `transform` (its adjoint, x's
    shape and dtype). Internal: made by the transforms' backward rules, not exported."""

    @prim_attr_register
    def __init__(self, transform: _FFT) -> None:
        pass

    def infer_shape(self, dout_shape: list, x_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, dout_dtype: mstype.Type, x_dtype: mstype.Type) -> mstype.Type:
        return x_dtype

    def kernel(self, dout: np.ndarray, x: np.ndarray) -> np.ndarray:
        return self.transform.adjoint(dout, x)


declare_without("sharding", FFTGrad,
                reason="it is made only by autodiff, on the rank-local graph")


@bprop(_FFT, complex_values=True)
def fft_bprop(prim: _FFT, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The adjoint transform of dout (FFTGrad)."""
    return (g.apply(FFTGrad(prim), [dout, inputs[0]]),)


@bprop(FFTGrad, complex_values=True)
def fft_grad_bprop(prim: FFTGrad, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The adjoint's adjoint: the transform itself, on dout."""
    return g.apply(prim.transform, [dout]), None


# -- complex parts ---------------------------------------------------------------------------
class _Part(UnaryElementwise):
    """A real part of each element: float32 of complex64, float64 of complex128; a real
    input gives `_of_real` of itself (as MindSpore)."""

    valid_types = _ANY + (mstype.bool_,)
    out_may_be_input = False

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("input", x_dtype, self.valid_types, self.name)
        return _real_of(x_dtype) if x_dtype.kind == "complex" else x_dtype

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        return _copied(out_abstract, type(self)._np_op)


class Real(_Part):
    """`Real()(input)`: the real part of each element (a real input: itself)."""

    _np_op = staticmethod(np.real)


class Imag(_Part):
    """`Imag()(input)`: the imaginary part of each element (a real input: zeros)."""

    _np_op = staticmethod(lambda x: np.imag(x) if np.iscomplexobj(x) else np.zeros_like(x))


@bprop(Real, complex_values=True)
def real_bprop(prim: Real, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dL/dRe = dout, dL/dIm = 0: dout itself as a complex (or the real input's) gradient."""
    return (g.apply(Cast(), [dout, g.add_const(inputs[0].dtype)]),)


@bprop(Imag, complex_values=True)
def imag_bprop(prim: Imag, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """dL/dRe = 0, dL/dIm = dout: i * dout (zeros for a real input)."""
    x = inputs[0]
    if x.dtype.kind != "complex":
        return (g.add_const(np.zeros(tuple(x.shape), x.dtype.np_dtype)),)
    as_complex = g.apply(Cast(), [dout, g.add_const(x.dtype)])
    return (g.apply(Mul(), [as_complex, g.add_const(np.asarray(1j, x.dtype.np_dtype))]),)
