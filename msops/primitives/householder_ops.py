"""QR in LAPACK's Householder form: Geqrf (x -> y, tau), Orgqr (the explicit Q's first N
columns) and Ormqr (Q or Q^H times another matrix), MindSpore's primitives of those names.

y (..., M, N) holds R on and above the diagonal and, below it, the reflectors' vectors: w_j
is 1 at j, y[j+1:, j] below, 0 above; Q = H_1 ... H_k with H_j = I - tau_j w_j w_j^H.
Float32, float64, complex64 and complex128. Like the other factorisations the batch dims
split freely in a parallel graph and the matrix dims stay whole. Orgqr and Ormqr
differentiate (the reflector steps run backwards in numpy: ReflectorsGrad); Geqrf has no
gradient (a NotImplementedError naming it; `ops.qr` is the differentiable QR).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.linalg_ops import _WHOLE, matrix_dims, rounded
from msops.primitives.math_ops import NoAttrPrimitive, check_same_dtype, compute_dtype
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, declare_without, sharding_rule
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


def _steps(tau: np.ndarray, left: bool, adjoint: bool) -> tuple:
    """(the reflectors' order, their scales) of Q c, Q^H c (left) or c Q, c Q^H (right) with
    Q = H_1 ... H_k: Q c applies the last reflector first, Q^H c the first with conj(tau);
    right products mirror that."""
    k = tau.shape[-1]
    order = range(k) if left == adjoint else range(k - 1, -1, -1)
    return order, (np.conj(tau) if adjoint else tau)


def _left_step(c: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """H c = c - s w (w^H c), s of shape (..., 1, 1)."""
    return c - s * w[..., :, None] * (np.conj(w)[..., None, :] @ c)


def apply_reflectors(y: np.ndarray, tau: np.ndarray, c: np.ndarray, left: bool,
                     adjoint: bool) -> np.ndarray:
    """Q c, Q^H c (left) or c Q, c Q^H (right) with Q = H_1 ... H_k from y's vectors and
    tau (k = tau's last dim); each H_j = I - tau_j w_j w_j^H is applied in turn (a right
    product as the left one of c^H: (c H)^H = H^H c^H)."""
    order, scale = _steps(tau, left, adjoint)
    out = c if left else _h(c)
    for j in order:
        s = scale[..., j, None, None]
        out = _left_step(out, _reflector(y, j), s if left else np.conj(s))
    return out if left else _h(out)


def _h(a: np.ndarray) -> np.ndarray:
    """The conjugate transpose of each matrix."""
    return np.conj(np.swapaxes(a, -1, -2))


def reflectors_grad(y: np.ndarray, tau: np.ndarray, c: np.ndarray, g: np.ndarray,
                    left: bool, adjoint: bool) -> tuple:
    """(dy, dtau, dc) of apply_reflectors for the output's gradient g (dL/dRe + i dL/dIm):
    the steps run again, then backwards. For a left step out = c - s w u, u = w^H c:
    dc = g - conj(s) w (w^H g), ds = -w^H g u^H, dw = -conj(s) g c^H w - s c g^H w; a
    right step is the left one of the conjugate transposes (ds conjugated). dw lands in
    y's column j below the diagonal; ds in tau_j (conjugated for Q^H)."""
    order, scale = _steps(tau, left, adjoint)
    cur = c if left else _h(c)
    seen = []
    for j in order:
        s = scale[..., j, None, None] if left else np.conj(scale[..., j, None, None])
        seen.append((j, cur, s))
        cur = _left_step(cur, _reflector(y, j), s)
    grad = g if left else _h(g)
    dy, dtau = np.zeros_like(y), np.zeros_like(tau)
    for j, before, s in reversed(seen):
        w = _reflector(y, j)
        gw = grad @ (_h(before) @ w[..., :, None])                   # g c^H w
        cw = before @ (_h(grad) @ w[..., :, None])                   # c g^H w
        dw = (-np.conj(s) * gw - s * cw)[..., 0]
        u_h = _h(before) @ w[..., :, None]                           # u^H = c^H w
        ds = -(np.conj(w)[..., None, :] @ grad @ u_h)[..., 0, 0]
        ds = ds if left else np.conj(ds)                             # s was conj(scale)
        dtau[..., j] = np.conj(ds) if adjoint else ds
        dy[..., j + 1:, j] = dw[..., j + 1:]
        grad = grad - np.conj(s) * w[..., :, None] * (np.conj(w)[..., None, :] @ grad)
    return dy, dtau, (grad if left else _h(grad))


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


declare_without("bprop", Geqrf, reason="msops gives the Householder factorisation no "
                                       "gradient (differentiate ops.qr's factors instead)")


class ReflectorsGrad(PrimitiveWithInfer):
    """`ReflectorsGrad(left, adjoint)(x, tau, other, dout)` -> (dx, dtau, dother): the
    backward of Ormqr (Orgqr: other = I), `reflectors_grad` in numpy. Internal; not
    exported."""

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, left: bool = True, adjoint: bool = False) -> None:
        self.from_left, self.adjoint = left, adjoint

    def infer_shape(self, x_shape: list, tau_shape: list, other_shape: list,
                    dout_shape: list) -> tuple:
        return list(x_shape), list(tau_shape), list(other_shape)

    def infer_dtype(self, x_dtype: mstype.Type, *others: mstype.Type) -> tuple:
        return x_dtype, x_dtype, x_dtype

    def kernel(self, x: np.ndarray, tau: np.ndarray, other: np.ndarray,
               dout: np.ndarray) -> tuple:
        ct = compute_dtype(x.dtype)
        grads = reflectors_grad(x.astype(ct), tau.astype(ct), other.astype(ct),
                                dout.astype(ct), self.from_left, self.adjoint)
        return tuple(rounded(v, x.dtype) for v in grads)


declare_without("sharding", ReflectorsGrad, reason="it is made only by autodiff, on the "
                                                   "rank-local graph")
declare_without("bprop", ReflectorsGrad, reason="second derivatives of Orgqr and Ormqr are "
                                                "not supported")


@bprop(Ormqr, complex_values=True)
def ormqr_bprop(prim: Ormqr, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """ReflectorsGrad: x's reflector entries (the strict lower part of its first K columns;
    nothing else is read), tau and other."""
    grads = g.apply(ReflectorsGrad(prim.from_left, prim.adjoint), list(inputs) + [dout])
    return tuple(g.getitem(grads, i) for i in range(3))


@bprop(Orgqr, complex_values=True)
def orgqr_bprop(prim: Orgqr, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """Orgqr is Ormqr of the identity's first N columns: ReflectorsGrad's dx and dtau."""
    x, tau = inputs
    m, n = x.shape[-2:]
    eye = np.broadcast_to(np.eye(m, n, dtype=x.dtype.np_dtype), tuple(x.shape))
    grads = g.apply(ReflectorsGrad(), [x, tau, g.add_const(np.ascontiguousarray(eye)), dout])
    return g.getitem(grads, 0), g.getitem(grads, 1)


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
