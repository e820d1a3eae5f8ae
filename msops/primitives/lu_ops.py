"""LU factors in LAPACK's packed form: LuUnpack (LU_data, LU_pivots -> P, L, U) and LuSolve
(A y = b from A's packed factors), MindSpore's primitives of those names.

The packed form is getrf's (scipy.linalg.lu_factor's, MindSpore's): LU_data (..., M, N)
holds U on and above the diagonal and L's strict lower part (L's diagonal is 1s);
LU_pivots (..., min(M, N)) are 1-based row interchanges applied in order (row i swapped
with row LU_pivots[i] - 1), so A = P L U. Like the other linalg ops, the batch dims split
freely in a parallel graph and the matrix dims stay whole; the backward rules are made of
primitives (LuUnpack, triangular solves, products, Tril/Triu).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.primitives.linalg_ops import (_WHOLE, MatrixTriangularSolve, check_square,
                                         linalg_types, matrix_dims, mm, per_matrix, rounded)
from msops.primitives.math_ops import (Add, Neg, NoAttrPrimitive, broadcast_shape,
                                       check_rank, check_same_dtype, compute_dtype, sum_to)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.shape_ops import BroadcastTo
from msops.primitives.sharding import DimSpec, broadcast_letters, dims
from msops.primitives.triangle_ops import Tril, Triu

__all__ = ["LuUnpack", "LuSolve"]

#: LU_pivots' dtypes (MindSpore's)
pivot_types = (mstype.int8, mstype.uint8, mstype.int16, mstype.int32, mstype.int64)


def _check_pivots(prim_name: str, data: Sequence[int], pivots: Sequence[int],
                  data_arg: str, pivots_arg: str) -> None:
    """pivots (..., min(M, N)) beside data (..., M, N): the same batch dims."""
    want = list(data[:-2]) + [min(data[-2], data[-1])]
    if list(pivots) != want:
        raise ValueError(f"For '{prim_name}', the '{pivots_arg}' should have shape {want} "
                         f"(the batch dims of '{data_arg}' {list(data)} and min(M, N)), but "
                         f"got shape {list(pivots)}.")


def permutation(prim_name: str, pivots: np.ndarray, m: int) -> np.ndarray:
    """The row order perm (..., m) with A[perm] = L U: LAPACK's 1-based interchanges applied
    in order; a pivot outside [1, m] is the op's ValueError."""
    if pivots.size and (pivots.min() < 1 or pivots.max() > m):
        bad = pivots[(pivots < 1) | (pivots > m)].flat[0]
        raise ValueError(f"For '{prim_name}', the 'LU_pivots' should be in [1, {m}], but got "
                         f"{int(bad)}.")
    flat = pivots.reshape(-1, pivots.shape[-1]).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for i in range(flat.shape[1]):
        j = flat[:, i]
        perm[rows, i], perm[rows, j] = perm[rows, j], perm[rows, i].copy()
    return perm.reshape(pivots.shape[:-1] + (m,))


def unpacked(data: np.ndarray) -> tuple:
    """(L (..., M, k) with its unit diagonal, U (..., k, N)) of packed LU data."""
    m, n = data.shape[-2:]
    k = min(m, n)
    low = np.tril(data[..., :, :k], -1) + np.eye(m, k, dtype=data.dtype)
    return low, np.triu(data[..., :k, :])


# -- LuUnpack ------------------------------------------------------------------------------
class LuUnpack(PrimitiveWithInfer):
    """`LuUnpack(unpack_data=True, unpack_pivots=True)(LU_data, LU_pivots)` -> (pivots, L,
    U): the permutation matrix P (..., M, M), L (..., M, k) and U (..., k, N) (k = min(M,
    N)) with A = P L U, all of LU_data's dtype; an output not unpacked is zeros of its
    shape (the functional form returns None there, as MindSpore).

    >>> p, l, u = LuUnpack()(Tensor(np.array([[2.0, 1.0], [0.5, 1.5]], np.float32)),
    ...                      Tensor(np.array([2, 2], np.int32)))
    >>> p.asnumpy()
    array([[0., 1.],
           [1., 0.]], dtype=float32)
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, unpack_data: bool = True, unpack_pivots: bool = True) -> None:
        validator.check_bool("unpack_data", unpack_data, self.name)
        validator.check_bool("unpack_pivots", unpack_pivots, self.name)

    def infer_shape(self, data_shape: list, pivots_shape: list) -> tuple:
        m, n, k = matrix_dims(self.name, "LU_data", data_shape)
        _check_pivots(self.name, data_shape, pivots_shape, "LU_data", "LU_pivots")
        batch = list(data_shape[:-2])
        return batch + [m, m], batch + [m, k], batch + [k, n]

    def infer_dtype(self, data_dtype: mstype.Type, pivots_dtype: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("LU_data", data_dtype, pivot_types +
                                           mstype.float_type,
                                           self.name)
        validator.check_tensor_dtype_valid("LU_pivots", pivots_dtype, pivot_types, self.name)
        return data_dtype, data_dtype, data_dtype

    def kernel(self, data: np.ndarray, pivots: np.ndarray) -> tuple:
        p_shape, l_shape, u_shape = self.infer_shape(list(data.shape), list(pivots.shape))
        if self.unpack_pivots:
            perm = permutation(self.name, pivots, data.shape[-2])
            # A[perm] = L U, so P = I[perm]^T: column perm[i] of P is e_i
            p = np.swapaxes(np.eye(data.shape[-2], dtype=data.dtype)[perm], -1, -2)
        else:
            p = np.zeros(p_shape, data.dtype)
        if self.unpack_data:
            low, up = unpacked(data)
        else:
            low, up = np.zeros(l_shape, data.dtype), np.zeros(u_shape, data.dtype)
        return (np.ascontiguousarray(p), np.ascontiguousarray(low),
                np.ascontiguousarray(up))


def _eye(g: Any, rows: int, cols: int, like: Any) -> Any:
    """The constant 0/1 (rows, cols) identity block of `like`'s dtype, batched like it."""
    block = np.eye(rows, cols, dtype=like.dtype.np_dtype)
    return g.add_const(block.reshape((1,) * (len(like.shape) - 2) + block.shape))


@bprop(LuUnpack)
def lu_unpack_bprop(prim: LuUnpack, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """L is LU_data's strict lower part (and constant 1s), U its upper part, P a function of
    the pivots only: dLU_data = tril(dL, -1) placed in (M, N) + triu(dU) placed in (M, N)
    (products with constant identity blocks); the pivots get none. Without `unpack_data`
    nothing flows."""
    data, _ = inputs
    m, n, k = matrix_dims(prim.name, "LU_data", data.shape)
    if not prim.unpack_data:
        return g.add_const(np.zeros(tuple(data.shape), data.dtype.np_dtype)), None
    low = mm(g, g.apply(Tril(-1), [dout[1]]), _eye(g, k, n, data))
    up = mm(g, _eye(g, m, k, data), g.apply(Triu(0), [dout[2]]))
    return g.apply(Add(), [low, up]), None


# -- LuSolve -------------------------------------------------------------------------------
class LuSolve(NoAttrPrimitive):
    """`LuSolve()(x, lu_data, lu_pivots)`: y with A y = x for each A = P L U given packed
    (lu_data (..., m, m), lu_pivots (..., m) int32); x (..., m, k), whose batch dims
    broadcast with lu_data's; float dtypes, x and lu_data alike. A zero on U's diagonal is a
    ValueError.

    >>> LuSolve()(Tensor(np.array([[1.0], [3.0], [3.0]], np.float32)),
    ...           Tensor(np.array([[2.0, 1, 1], [0.5, 1, 1.5], [0.5, 0, 2.5]], np.float32)),
    ...           Tensor(np.array([2, 2, 3], np.int32))).asnumpy().round(4)
    array([[ 1.9],
           [-1.4],
           [ 0.6]], dtype=float32)
    """

    def infer_shape(self, x_shape: list, data_shape: list, pivots_shape: list) -> list:
        check_rank(self.name, "x", x_shape, 2)
        m = check_square(self.name, "lu_data", data_shape)
        _check_pivots(self.name, data_shape, pivots_shape, "lu_data", "lu_pivots")
        if x_shape[-2] != m:
            raise ValueError(f"For '{self.name}', the 'x' should have {m} rows (lu_data shape "
                             f"{list(data_shape)}), but got shape {list(x_shape)}.")
        batch = broadcast_shape(self.name, x_shape[:-2], data_shape[:-2], "x", "lu_data")
        return list(batch) + list(x_shape[-2:])

    def infer_dtype(self, x_dtype: mstype.Type, data_dtype: mstype.Type,
                    pivots_dtype: mstype.Type) -> mstype.Type:
        validator.check_tensor_dtype_valid("lu_pivots", pivots_dtype, (mstype.int32,),
                                           self.name)
        return check_same_dtype(self.name, {"x": x_dtype, "lu_data": data_dtype},
                                linalg_types)

    def kernel(self, x: np.ndarray, data: np.ndarray, pivots: np.ndarray) -> np.ndarray:
        shape = self.infer_shape(list(x.shape), list(data.shape), list(pivots.shape))
        ct = compute_dtype(x.dtype)
        m = data.shape[-1]
        perm = permutation(self.name, pivots, m)
        low, up = unpacked(data.astype(ct))
        # b[perm] = L U y: the pivots' rows of b, then the two triangles
        batch = tuple(shape[:-2])
        rows = np.take_along_axis(np.broadcast_to(x.astype(ct), batch + x.shape[-2:]),
                                  np.broadcast_to(perm, batch + (m,))[..., None], -2)
        low = np.broadcast_to(low, batch + (m, m))
        up = np.broadcast_to(up, batch + (m, m))
        z = np.linalg.solve(low, rows)
        y = per_matrix(self.name, "lu_data", np.linalg.solve, up, z)
        return rounded(y, x.dtype)


@bprop(LuSolve)
def lu_solve_bprop(prim: LuSolve, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """y = A^-1 x with A = P L U: dx = A^-T dout = P L^-T U^-T dout (two triangular solves);
    with dA = -dx y^T, dL = tril(P^T dA U^T, -1) and dU = triu(L^T P^T dA) (L's unit
    diagonal is not a variable), which LU_data packs as their sum. Broadcast batch dims are
    summed back to each input's shape."""
    x, data, pivots = inputs
    p, low, up = (g.getitem(g.apply(LuUnpack(), [data, pivots]), i) for i in range(3))
    batch = tuple(out.shape[:-2])
    if batch != tuple(data.shape[:-2]):
        m = data.shape[-1]
        p, low, up = (g.apply(BroadcastTo(batch + (m, m)), [v]) for v in (p, low, up))
    z = g.apply(MatrixTriangularSolve(lower=False, adjoint=True), [up, dout])
    dx = mm(g, p, g.apply(MatrixTriangularSolve(lower=True, adjoint=True), [low, z]))
    d_a = g.apply(Neg(), [mm(g, dx, out, tb=True)])
    pt_da = mm(g, p, d_a, ta=True)
    d_low = g.apply(Tril(-1), [mm(g, pt_da, up, tb=True)])
    d_up = g.apply(Triu(0), [mm(g, low, pt_da, ta=True)])
    d_data = g.apply(Add(), [d_low, d_up])
    return sum_to(g, dx, x.shape), sum_to(g, d_data, data.shape), None


# -- sharding --------------------------------------------------------------------------------
@sharding_rule(LuUnpack)
def lu_unpack_spec(prim: LuUnpack, ins: list, outs: list, consts: dict) -> DimSpec:
    """The batch dims split freely; the matrix dims and the pivots' dim stay whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    whole = ("m", "n", "k", "p", "q")
    return DimSpec((batch + ("m", "n"), batch + ("k",)),
                   (batch + ("p", "q"), batch + ("p", "k"), batch + ("k", "n")),
                   unsplittable=tuple((l, _WHOLE) for l in whole))


@sharding_rule(LuSolve)
def lu_solve_spec(prim: LuSolve, ins: list, outs: list, consts: dict) -> DimSpec:
    """Batch dims aligned to the output from the right (broadcast ones unsplit), split
    freely; x's columns split (each its own system); the matrix dims stay whole."""
    out = outs[0]
    nb = len(out) - 2
    x_batch = broadcast_letters(ins[0][:-2], out[:-2], prefix="b")
    lu_batch = broadcast_letters(ins[1][:-2], out[:-2], prefix="b")
    return DimSpec((x_batch + ("r", "c"), lu_batch + ("r", "s"), lu_batch + ("s",)),
                   (dims(nb, prefix="b") + ("r", "c"),),
                   unsplittable=(("r", _WHOLE), ("s", _WHOLE)))
