"""Building complex values and their moduli: Complex (real, imag -> real + i imag) and
ComplexAbs (|z|), MindSpore's primitives of those names.

Both are element-wise (math_ops' family: numpy broadcasting, the element-wise sharding
rule, no communication). Their gradients follow autodiff's convention for complex values,
dL/dRe + i dL/dIm of a real loss: Complex hands dout's real part to `real` and its
imaginary part to `imag`; ComplexAbs is Abs restricted to complex inputs (its rule gives
dout * z / |z|).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.primitives.fft_ops import Imag, Real
from msops.primitives.lowering import out_spec
from msops.primitives.math_ops import _Binary, check_same_dtype, sum_to
from msops.primitives.rules import bprop
from msops.primitives.unary_ops import Abs

__all__ = ["Complex", "ComplexAbs"]

#: Complex's output dtype for each input dtype
_COMPLEX_OF = {mstype.float32: mstype.complex64, mstype.float64: mstype.complex128}


class Complex(_Binary):
    """`Complex()(real, imag)`: real + i imag element-wise, broadcast; float32 inputs give
    complex64, float64 ones complex128 (both inputs of one dtype).

    >>> Complex()(Tensor(np.array([1.0, 2.0], np.float32)),
    ...           Tensor(np.array([3.0, -1.0], np.float32))).asnumpy()
    array([1.+3.j, 2.-1.j], dtype=complex64)
    """

    valid_types = (mstype.float32, mstype.float64)
    out_may_be_input = False        # complex output, real inputs: never one of them

    def infer_dtype(self, real_dtype: mstype.Type, imag_dtype: mstype.Type) -> mstype.Type:
        dtype = check_same_dtype(self.name, {"real": real_dtype, "imag": imag_dtype},
                                 self.valid_types)
        return _COMPLEX_OF[dtype]

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        shape, dtype = out_spec(out_abstract)

        def build(real: np.ndarray, imag: np.ndarray, out: np.ndarray | None = None
                  ) -> np.ndarray:
            if out is None:
                out = np.empty(shape, dtype)
            out.real = real
            out.imag = imag
            return out
        return build


@bprop(Complex, complex_values=True)
def complex_bprop(prim: Complex, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Re(dout) to real, Im(dout) to imag (each summed back over what broadcasting added)."""
    real, imag = inputs
    return (sum_to(g, g.apply(Real(), [dout]), real.shape),
            sum_to(g, g.apply(Imag(), [dout]), imag.shape))


class ComplexAbs(Abs):
    """`ComplexAbs()(x)`: |x| of each complex element, float32 of complex64 and float64 of
    complex128 (`Abs` restricted to complex inputs).

    >>> ComplexAbs()(Tensor(np.array([3 + 4j], np.complex64))).asnumpy()
    array([5.], dtype=float32)
    """

    valid_types = mstype.complex_type
