"""QR in LAPACK's Householder form: Geqrf (x -> y, tau), Orgqr (the explicit Q's first N
columns) and Ormqr (Q or Q^H times another matrix), MindSpore's primitives of those names.

y (..., M, N) holds R on and above the diagonal and, below it, the reflectors' vectors: w_j
is 1 at j, y[j+1:, j] below, 0 above; Q = H_1 ... H_k with H_j = I - tau_j w_j w_j^H.
Float32, float64, complex64 and complex128. Like the other factorisations the batch dims
split freely in a parallel graph and the matrix dims stay whole. msops gives these three
no gradient (differentiating through one is a NotImplementedError naming it); `ops.qr`
is the differentiable QR.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.linalg_ops import _WHOLE, matrix_dims, rounded
from msops.primitives.math_ops import NoAttrPrimitive, check_same_dtype, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import declare_without, sharding_rule
from msops.primitives.sharding import DimSpec, dims

__all__ = ["Geqrf", "Orgqr", "Ormqr"]

#: the dtypes of MindSpore's Householder ops
householder_types = (mstype.float32, mstype.float64, mstype.complex64, mstype.complex128)


def _reflector(y: np.ndarray, j: int) -> np.ndarray:
    """w_j (..., M): 1 at j, y's column j below it, 0 above."""
    w = np.zeros(y.shape[:-1], y.dtype)
    w[..., j] = 1
    w[..., j + 1:] = y[..., j + 1:, j]
    return w


def apply_reflectors(y: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool,
                     adjoint: bool) -> np.ndarray:
    """Q c, Q^H c (left) or c Q, c Q^H (right) with Q = H_1 ... H_k from y's vectors and
    tau (k = tau's last dim); each H_j = I - tau_j w_j w_j^H is applied in turn."""
    k = tau.shape[-1]
    # Q c = H_1 (... (H_k c)): the last reflector first; Q^H c reverses the order and
    # conjugates tau. Right products mirror that.
    order = range(k) if left == adjoint else range(k - 1, -1, -1)
    scale = np.conj(tau) if adjoint else tau
    out = c.copy()
    for j in order:
        w = _reflector(y, j)
        t = scale[..., j, None, None]
        if left:             # H c = c - tau w (w^H c)
            out = out - t * w[..., :, None] * (np.conj(w)[..., None, :] @ out)
        else:                # c H = c - tau (c w) w^H
            out = out - t * (out @ w[..., :, None]) * np.conj(w)[..., None, :]
    return out


def _check_tau(prim_name: str, x: Sequence[int], tau: Sequence[int], most: int,
               what: str) -> None:
    """tau (..., K) beside x (..., M, N): the same batch dims, K <= `most`."""
    if len(tau) != len(x) - 1 or list(tau[:-1]) != list(x[:-2]) or tau[-1] > most:
        raise ValueError(f"For '{prim_name}', the 'tau' should have shape {list(x[:-2])} + "
                         f"[K] with K <= {most} ({what}), but got shape {list(tau)}.")


# -- Geqrf ---------------------------------------------------------------------------------
class Geqrf(NoAttrPrimitive):
    """`Geqrf()(x)` -> (y, tau): x (..., M, N) = Q R in Householder form (LAPACK's geqrf):
    y (..., M, N) with R on and above the diagonal and the reflectors below, tau
    (..., min(M, N)).

    >>> y, tau = Geqrf()(Tensor(np.array([[-2.0, -1.0], [1.0, 2.0]], np.float32)))
    >>> y.asnumpy().round(4)
    array([[ 2.2361,  1.7889],
           [-0.2361,  1.3416]], dtype=float32)
    """

    fresh_outputs = True

    def infer_shape(self, x_shape: list) -> tuple:
        m, n, k = matrix_dims(self.name, "x", x_shape)
        return list(x_shape), list(x_shape[:-2]) + [k]

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        dtype = validator.check_tensor_dtype_valid("x", x_dtype, householder_types, self.name)
        return dtype, dtype

    def kernel(self, x: np.ndarray) -> tuple:
        if not np.isfinite(x).all():
            raise ValueError(f"For '{self.name}', the 'x' should be finite, but got NaN or "
                             f"inf entries.")
        h, tau = np.linalg.qr(x.astype(compute_dtype(x.dtype), copy=False), mode="raw")
        return rounded(np.swapaxes(h, -1, -2), x.dtype), rounded(tau, x.dtype)


# -- Orgqr ---------------------------------------------------------------------------------
class Orgqr(NoAttrPrimitive):
    """`Orgqr()(x, tau)`: the first N columns of H_1 ... H_K, from the reflectors in x
    (..., M, N) (M >= N) and tau (..., K) (K <= N); x's shape and dtype.

    >>> y, tau = Geqrf()(Tensor(np.array([[-2.0, -1.0], [1.0, 2.0]], np.float32)))
    >>> Orgqr()(y, tau).asnumpy().round(4)
    array([[-0.8944,  0.4472],
           [ 0.4472,  0.8944]], dtype=float32)
    """

    def infer_shape(self, x_shape: list, tau_shape: list) -> list:
        m, n, _ = matrix_dims(self.name, "x", x_shape)
        if m < n:
            raise ValueError(f"For '{self.name}', the 'x' should have rows >= columns, but got "
                             f"shape {list(x_shape)}.")
        _check_tau(self.name, x_shape, tau_shape, n, "x's columns")
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, tau_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "tau": tau_dtype}, householder_types)

    def kernel(self, x: np.ndarray, tau: np.ndarray) -> np.ndarray:
        ct = compute_dtype(x.dtype)
        m, n = x.shape[-2:]
        eye = np.broadcast_to(np.eye(m, n, dtype=ct), x.shape)
        q = apply_reflectors(x.astype(ct), tau.astype(ct), eye, left=True, adjoint=False)
        return rounded(q, x.dtype)


# -- Ormqr ---------------------------------------------------------------------------------
class Ormqr(PrimitiveWithInfer):
    """`Ormqr(left=True, transpose=False)(x, tau, other)`: Q @ other (`left`) or other @ Q,
    with Q^H for Q (`transpose`), Q = H_1 ... H_K from the reflectors in x (..., mn, K')
    (mn = other's rows when `left`, else its columns) and tau (..., K), K <= min(mn, K');
    other (..., m, n) gives the output's shape and dtype.

    >>> x = Tensor(np.array([[1.0, 0.0], [0.5, 1.0]], np.float32))
    >>> Ormqr()(x, Tensor(np.array([0.0, 0.0], np.float32)), Tensor(np.eye(2, dtype=np.float32))
    ...         ).asnumpy()
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, left: bool = True, transpose: bool = False) -> None:
        validator.check_bool("left", left, self.name)
        validator.check_bool("transpose", transpose, self.name)
        # `left`/`transpose` stay in attrs (MindSpore's names); read as these
        self.from_left, self.adjoint = left, transpose

    def infer_shape(self, x_shape: list, tau_shape: list, other_shape: list) -> list:
        mn, kk, _ = matrix_dims(self.name, "x", x_shape)
        matrix_dims(self.name, "other", other_shape)
        if list(other_shape[:-2]) != list(x_shape[:-2]):
            raise ValueError(f"For '{self.name}', the 'other' should have the batch dims of "
                             f"'x' {list(x_shape[:-2])}, but got shape {list(other_shape)}.")
        want = other_shape[-2] if self.from_left else other_shape[-1]
        if mn != want:
            side = "rows" if self.from_left else "columns"
            raise ValueError(f"For '{self.name}', the 'x' should have as many rows as 'other' "
                             f"has {side} ({want}), but got x shape {list(x_shape)} and other "
                             f"shape {list(other_shape)}.")
        _check_tau(self.name, x_shape, tau_shape, min(mn, kk), "min of x's dims")
        return list(other_shape)

    def infer_dtype(self, x_dtype: mstype.Type, tau_dtype: mstype.Type,
                    other_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"x": x_dtype, "tau": tau_dtype,
                                            "other": other_dtype}, householder_types)

    def kernel(self, x: np.ndarray, tau: np.ndarray, other: np.ndarray) -> np.ndarray:
        ct = compute_dtype(other.dtype)
        out = apply_reflectors(x.astype(ct), tau.astype(ct), other.astype(ct),
                               left=self.from_left, adjoint=self.adjoint)
        return rounded(out, other.dtype)


_NO_GRAD = ("msops gives the Householder form no gradient (differentiate ops.qr's factors "
            "instead)")
declare_without("bprop", Geqrf, reason=_NO_GRAD)
declare_without("bprop", Orgqr, reason=_NO_GRAD)
declare_without("bprop", Ormqr, reason=_NO_GRAD)


# -- sharding --------------------------------------------------------------------------------
@sharding_rule(Geqrf, Orgqr, Ormqr)
def householder_spec(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """The batch dims split freely; every matrix dim, and tau's, stays whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    letters = []
    for i, shape in enumerate(list(ins) + list(outs)):
        letters.append(batch + tuple(f"t{i}_{j}" for j in range(len(shape) - len(batch))))
    whole = tuple(l for ls in letters for l in ls[len(batch):])
    return DimSpec(tuple(letters[:len(ins)]), tuple(letters[len(ins):]),
                   unsplittable=tuple((l, _WHOLE) for l in whole))
