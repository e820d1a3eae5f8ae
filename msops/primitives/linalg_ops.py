"""Linear-algebra primitives on batches of matrices (..., M, N): MatrixInverse,
MatrixDeterminant, LogMatrixDeterminant, Cholesky, MatrixSolve, MatrixTriangularSolve.

Float inputs only; float16 and bfloat16 are factorised in float32 and rounded once into the
output. A singular (or, for Cholesky, not positive definite) matrix is a ValueError naming
the op, the argument and the batch index, as MindSpore's CPU kernels raise; only the
determinants have a value there (0, and sign 0 with log|det| = -inf). In a parallel graph
the batch dims split freely; the matrix dims stay whole (every entry of a factorisation
reads the whole matrix). Each backward rule is made of primitives (these ones, products,
transposes, Tril), so it differentiates again.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import contiguous
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.math_ops import (Add, BatchMatMul, MatMul, Mul, Neg, NoAttrPrimitive,
                                       check_same_dtype, compute_dtype, scalar)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.rules import bprop, sharding_rule
from msops.primitives.sharding import DimSpec, dims
from msops.primitives.triangle_ops import Tril, Triu

__all__ = ["MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "Cholesky",
           "MatrixSolve", "MatrixTriangularSolve"]

#: what each op accepts (float16/bfloat16 run in float32)
linalg_types = mstype.float_type


# -- shared checks and kernels ---------------------------------------------------------------
def check_square(prim_name: str, arg: str, shape: Sequence[int]) -> int:
    """n of a batch of square matrices (..., n, n); a ValueError naming op and argument."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"For '{prim_name}', the '{arg}' should be a square matrix (..., n, n), "
                         f"but got shape {list(shape)}.")
    return shape[-1]


def check_rhs(prim_name: str, matrix: Sequence[int], rhs: Sequence[int]) -> None:
    """rhs (..., n, k) beside matrix (..., n, n): the same batch dims, n rows."""
    n = check_square(prim_name, "matrix", matrix)
    if len(rhs) != len(matrix) or list(rhs[:-2]) != list(matrix[:-2]) or rhs[-2] != n:
        raise ValueError(f"For '{prim_name}', the 'rhs' should have shape "
                         f"{list(matrix[:-2]) + [n]} + [k] (matrix shape {list(matrix)}), but "
                         f"got shape {list(rhs)}.")


def float_dtype(prim_name: str, arg: str, dtype: mstype.Type) -> mstype.Type:
    return validator.check_tensor_dtype_valid(arg, dtype, linalg_types, prim_name)


def _singular(prim_name: str, arg: str, index: tuple, what: str = "invertible") -> ValueError:
    at = f" at batch index {index}" if index else ""
    return ValueError(f"For '{prim_name}', the '{arg}' should be {what}, but got a matrix "
                      f"that is not{at}.")


def per_matrix(prim_name: str, arg: str, fn: Callable, x: np.ndarray, *more: np.ndarray,
               what: str = "invertible") -> np.ndarray:
    """fn over the batch (numpy's batched routine) in x's compute dtype; a numpy LinAlgError
    becomes the op's ValueError naming the first failing matrix's batch index."""
    ct = compute_dtype(x.dtype)
    args = [a.astype(ct, copy=False) for a in (x,) + more]
    try:
        return fn(*args)
    except np.linalg.LinAlgError:
        for index in np.ndindex(x.shape[:-2]):
            try:
                fn(*(a[index] for a in args))
            except np.linalg.LinAlgError:
                raise _singular(prim_name, arg, index, what) from None
        raise _singular(prim_name, arg, (), what) from None


def rounded(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The result in the output's dtype, a new C-contiguous array."""
    return contiguous(np.asarray(value).astype(dtype, copy=False))


# -- products and transposes the backward rules build with -------------------------------------
def mm(g: Any, x: Any, y: Any, ta: bool = False, tb: bool = False) -> Any:
    """x @ y on matrices or batches of them (MatMul for 2-D, BatchMatMul otherwise)."""
    cls = MatMul if len(x.shape) == 2 and len(y.shape) == 2 else BatchMatMul
    return g.apply(cls(transpose_a=ta, transpose_b=tb), [x, y])


def mt(g: Any, x: Any) -> Any:
    """x with its last two dims swapped."""
    perm = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return g.apply(Transpose(), [x, g.add_const(perm)])


def as_matrices(g: Any, v: Any) -> Any:
    """A batch of numbers (...) as (..., 1, 1), to scale a batch of matrices."""
    return g.apply(Reshape(), [v, g.add_const(tuple(v.shape) + (1, 1))])


# -- MatrixInverse -------------------------------------------------------------------------
class MatrixInverse(PrimitiveWithInfer):
    """`MatrixInverse(adjoint=False)(x)`: the inverse of each matrix of x (..., n, n) (of its
    transpose with `adjoint`, real inputs); same shape and dtype. A singular matrix is a
    ValueError.

    >>> MatrixInverse()(Tensor(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))).asnumpy()
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, adjoint: bool = False) -> None:
        validator.check_bool("adjoint", adjoint, self.name)

    def infer_shape(self, x_shape: list) -> list:
        check_square(self.name, "x", x_shape)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return float_dtype(self.name, "x", x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        inv = per_matrix(self.name, "x", np.linalg.inv, x)
        return rounded(inv.swapaxes(-1, -2) if self.adjoint else inv, x.dtype)


@bprop(MatrixInverse)
def matrix_inverse_bprop(prim: MatrixInverse, inputs: list, out: Any, dout: Any,
                         g: Any) -> tuple:
    """d inv(x) = -inv(x) dx inv(x): dx = -Y^T dY Y^T (adjoint: Y = inv(x)^T, so
    dx = -Y dY^T Y)."""
    y = out
    if prim.adjoint:
        return (g.apply(Neg(), [mm(g, y, mm(g, dout, y, ta=True))]),)
    return (g.apply(Neg(), [mm(g, y, mm(g, dout, y, tb=True), ta=True)]),)


# -- determinants --------------------------------------------------------------------------
class MatrixDeterminant(NoAttrPrimitive):
    """`MatrixDeterminant()(x)`: the determinant of each matrix of x (..., n, n) -> (...);
    0 for a singular one.

    >>> MatrixDeterminant()(Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))).asnumpy()
    array(-2., dtype=float32)
    """

    fresh_outputs = True

    def infer_shape(self, x_shape: list) -> list:
        check_square(self.name, "x", x_shape)
        return list(x_shape[:-2])

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return float_dtype(self.name, "x", x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        return rounded(np.linalg.det(x.astype(compute_dtype(x.dtype), copy=False)), x.dtype)


class LogMatrixDeterminant(NoAttrPrimitive):
    """`LogMatrixDeterminant()(x)` -> (sign, log_abs_det): the sign of each determinant of x
    (..., n, n) and the log of its absolute value, both (...) of x's dtype; a singular
    matrix gives (0, -inf).

    >>> s, v = LogMatrixDeterminant()(Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)))
    >>> s.asnumpy(), v.asnumpy()
    (array(-1., dtype=float32), array(0.6931472, dtype=float32))
    """

    fresh_outputs = True

    def infer_shape(self, x_shape: list) -> tuple:
        check_square(self.name, "x", x_shape)
        return list(x_shape[:-2]), list(x_shape[:-2])

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        dtype = float_dtype(self.name, "x", x_dtype)
        return dtype, dtype

    def kernel(self, x: np.ndarray) -> tuple:
        sign, log_abs = np.linalg.slogdet(x.astype(compute_dtype(x.dtype), copy=False))
        return rounded(sign, x.dtype), rounded(log_abs, x.dtype)


def _inverse_transpose(g: Any, x: Any) -> Any:
    """inv(x)^T: the derivative of log|det x| (det x times it: that of det x)."""
    return g.apply(MatrixInverse(adjoint=True), [x])


@bprop(MatrixDeterminant)
def matrix_determinant_bprop(prim: MatrixDeterminant, inputs: list, out: Any, dout: Any,
                             g: Any) -> tuple:
    """d det(x) = det(x) tr(inv(x) dx): dx = dout det(x) inv(x)^T (a singular x has no
    inverse: its gradient is a ValueError, as MindSpore's rule)."""
    x, = inputs
    scale = as_matrices(g, g.apply(Mul(), [dout, out]))
    return (g.apply(Mul(), [scale, _inverse_transpose(g, x)]),)


@bprop(LogMatrixDeterminant)
def log_matrix_determinant_bprop(prim: LogMatrixDeterminant, inputs: list, out: Any,
                                 dout: list, g: Any) -> tuple:
    """log|det x|: dx = dout inv(x)^T; the sign is piecewise constant (no gradient)."""
    x, = inputs
    return (g.apply(Mul(), [as_matrices(g, dout[1]), _inverse_transpose(g, x)]),)


# -- Cholesky ------------------------------------------------------------------------------
class Cholesky(PrimitiveWithInfer):
    """`Cholesky(upper=False)(input_x)`: the Cholesky factor of each symmetric positive
    definite matrix of input_x (..., n, n): L lower with A = L L^T, or (`upper`) U = L^T with
    A = U^T U. Only the lower triangle of A is read; a matrix that is not positive definite
    is a ValueError.

    >>> Cholesky()(Tensor(np.array([[1.0, 1.0], [1.0, 2.0]], np.float32))).asnumpy()
    array([[1., 0.],
           [1., 1.]], dtype=float32)
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, upper: bool = False) -> None:
        validator.check_bool("upper", upper, self.name)

    def infer_shape(self, x_shape: list) -> list:
        check_square(self.name, "input_x", x_shape)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return float_dtype(self.name, "input_x", x_dtype)

    def kernel(self, x: np.ndarray) -> np.ndarray:
        low = per_matrix(self.name, "input_x", np.linalg.cholesky, x,
                         what="symmetric positive definite")
        return rounded(low.swapaxes(-1, -2) if self.upper else low, x.dtype)


@bprop(Cholesky)
def cholesky_bprop(prim: Cholesky, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """With A = L L^T and the gradient dL: S = L^-T Phi(L^T dL) L^-1, Phi the lower triangle
    with its diagonal halved, and dA = (S + S^T) / 2, the symmetric gradient (the
    perturbations that keep A symmetric, as MindSpore's and PyTorch's rules)."""
    low, d_low = (mt(g, out), mt(g, dout)) if prim.upper else (out, dout)
    p = mm(g, low, d_low, ta=True)
    half = scalar(g, 0.5, p.dtype)
    phi = g.apply(Mul(), [g.apply(Add(), [g.apply(Tril(0), [p]), g.apply(Tril(-1), [p])]),
                          half])
    inv = g.apply(MatrixInverse(), [low])
    s = mm(g, inv, mm(g, phi, inv), ta=True)
    return (g.apply(Mul(), [g.apply(Add(), [s, mt(g, s)]), half]),)


# -- solves --------------------------------------------------------------------------------
class _Solve(PrimitiveWithInfer):
    """matrix (..., n, n) and rhs (..., n, k) of one float dtype -> x (..., n, k)."""

    fresh_outputs = True

    def infer_shape(self, matrix_shape: list, rhs_shape: list) -> list:
        check_rhs(self.name, matrix_shape, rhs_shape)
        return list(rhs_shape)

    def infer_dtype(self, matrix_dtype: mstype.Type, rhs_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"matrix": matrix_dtype, "rhs": rhs_dtype},
                                linalg_types)

    def _system(self, matrix: np.ndarray) -> np.ndarray:
        """The matrix of the system solved (its transpose with `adjoint`)."""
        return matrix.swapaxes(-1, -2) if self.adjoint else matrix

    def kernel(self, matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        solved = per_matrix(self.name, "matrix", np.linalg.solve, self._system(matrix), rhs)
        return rounded(solved, rhs.dtype)


class MatrixSolve(_Solve):
    """`MatrixSolve(adjoint=False)(matrix, rhs)`: x with matrix @ x = rhs (matrix^T @ x = rhs
    with `adjoint`) for each matrix (..., n, n) and rhs (..., n, k) of the batch. A singular
    matrix is a ValueError.

    >>> MatrixSolve()(Tensor(np.array([[1.0, 4.0], [2.0, 7.0]], np.float32)),
    ...               Tensor(np.array([[1.0], [3.0]], np.float32))).asnumpy()
    array([[ 5.],
           [-1.]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, adjoint: bool = False) -> None:
        validator.check_bool("adjoint", adjoint, self.name)


class MatrixTriangularSolve(_Solve):
    """`MatrixTriangularSolve(lower=True, adjoint=False)(matrix, rhs)`: x with T @ x = rhs
    (T^T @ x = rhs with `adjoint`), T the lower (upper) triangle of each matrix (..., n, n);
    the other triangle is not read. A zero on T's diagonal is a ValueError.

    >>> MatrixTriangularSolve()(Tensor(np.array([[2.0, 9.0], [1.0, 1.0]], np.float32)),
    ...                         Tensor(np.array([[2.0], [3.0]], np.float32))).asnumpy()
    array([[1.],
           [2.]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, lower: bool = True, adjoint: bool = False) -> None:
        validator.check_bool("lower", lower, self.name)
        validator.check_bool("adjoint", adjoint, self.name)
        # `lower` stays in attrs (MindSpore's name), but as an attribute it would hide
        # Primitive.lower, the kernel-lowering method: it is read as `lower_triangle`
        del self.__dict__["lower"]
        self.lower_triangle = lower

    def _system(self, matrix: np.ndarray) -> np.ndarray:
        tri = np.tril(matrix) if self.lower_triangle else np.triu(matrix)
        return tri.swapaxes(-1, -2) if self.adjoint else tri


@bprop(MatrixSolve, MatrixTriangularSolve)
def solve_bprop(prim: _Solve, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """x = A^-1 rhs (A the system's matrix): d rhs = A^-T dout, the solve with the other
    `adjoint`; d matrix = -d rhs x^T (adjoint: -x d rhs^T), kept to the triangle read."""
    matrix, _ = inputs
    other = (MatrixSolve(not prim.adjoint) if isinstance(prim, MatrixSolve) else
             MatrixTriangularSolve(prim.lower_triangle, not prim.adjoint))
    d_rhs = g.apply(other, [matrix, dout])
    d_matrix = mm(g, out, d_rhs, tb=True) if prim.adjoint else mm(g, d_rhs, out, tb=True)
    d_matrix = g.apply(Neg(), [d_matrix])
    if isinstance(prim, MatrixTriangularSolve):
        d_matrix = g.apply(Tril(0) if prim.lower_triangle else Triu(0), [d_matrix])
    return d_matrix, d_rhs


# -- sharding --------------------------------------------------------------------------------
_WHOLE = "a factorisation reads the whole matrix"


@sharding_rule(MatrixInverse, Cholesky)
def square_spec(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """The batch dims split freely; the two matrix dims stay whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    x = batch + ("r", "c")
    return DimSpec((x,), (x,), unsplittable=(("r", _WHOLE), ("c", _WHOLE)))


@sharding_rule(MatrixDeterminant, LogMatrixDeterminant)
def determinant_spec(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """One number per matrix: the batch dims split freely, the matrix dims stay whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    return DimSpec((batch + ("r", "c"),), tuple(batch for _ in outs),
                   unsplittable=(("r", _WHOLE), ("c", _WHOLE)))


@sharding_rule(_Solve)
def solve_spec(prim: _Solve, ins: list, outs: list, consts: dict) -> DimSpec:
    """matrix (b.., r, c), rhs (b.., r, k) -> x (b.., c, k): the batch dims and rhs's columns
    k split freely (each column is its own system); r and c stay whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    return DimSpec((batch + ("r", "c"), batch + ("r", "k")), (batch + ("c", "k"),),
                   unsplittable=(("r", _WHOLE), ("c", _WHOLE)))
