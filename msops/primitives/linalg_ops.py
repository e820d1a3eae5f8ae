"""Linear-algebra primitives on batches of matrices (..., M, N): MatrixInverse,
MatrixDeterminant, LogMatrixDeterminant, Cholesky, MatrixSolve, MatrixTriangularSolve, Qr,
Svd, MatrixExp and Eig (complex eigenvalues and eigenvectors of general square matrices).

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
from msops.primitives.array_ops import Concat, Reshape, Split, Transpose
from msops.primitives.elementwise_ops import Select, ZerosLike
from msops.primitives.lowering import out_spec, run_lowered
from msops.primitives.math_ops import (Add, BatchMatMul, Equal, MatMul, Mul, Neg, NoAttrPrimitive,
                                       RealDiv, Sub, check_rank, check_same_dtype,
                                       compute_dtype, scalar)
from msops.primitives.primitive import PrimitiveWithInfer, prim_attr_register
from msops.primitives.batching import leading_batch
from msops.primitives.rules import batch_rule, bprop, declare_without, sharding_rule
from msops.primitives.sharding import DimSpec, dims
from msops.primitives.triangle_ops import Tril, Triu

__all__ = ["MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "Cholesky",
           "MatrixSolve", "MatrixTriangularSolve", "Qr", "Svd", "MatrixExp", "Eig"]

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
    """`dtype` if it is a float dtype, else the op's TypeError naming `arg`."""
    return validator.check_tensor_dtype_valid(arg, dtype, linalg_types, prim_name)


def _singular(prim_name: str, arg: str, index: tuple, what: str = "invertible") -> ValueError:
    """The op's error for a matrix that is not `what` (at `index` of the batch)."""
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
    """The result in the output's dtype, a new C-contiguous array (beyond float16's range:
    inf, as any float16 result)."""
    with np.errstate(over="ignore"):
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


class _WritesResult(PrimitiveWithInfer):
    """A single-output linalg op: `_compute` factorises in the compute dtype (numpy's
    routines allocate their result); its lowered kernel rounds that once into `out`."""

    writes_output = True
    kernel = run_lowered

    def _compute(self, *values: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def lower(self, in_abstracts: Sequence[Any], out_abstract: Any) -> Callable:
        _, dtype = out_spec(out_abstract)
        compute = self._compute

        def linalg(*values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            result = compute(*values)
            if out is None:
                return rounded(result, dtype)
            with np.errstate(over="ignore"):
                np.copyto(out, result, casting="unsafe")
            return out
        return linalg


class _SquareToSquare(_WritesResult):
    """A float batch of square matrices in, one of the same shape and dtype out; `_arg`:
    the input's name in errors."""

    _arg = "x"

    def infer_shape(self, x_shape: list) -> list:
        check_square(self.name, self._arg, x_shape)
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return float_dtype(self.name, self._arg, x_dtype)


# -- MatrixInverse -------------------------------------------------------------------------
class MatrixInverse(_SquareToSquare):
    """`MatrixInverse(adjoint=False)(x)`: the inverse of each matrix of x (..., n, n) (of its
    transpose with `adjoint`, real inputs); same shape and dtype. A singular matrix is a
    ValueError.

    >>> MatrixInverse()(Tensor(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))).asnumpy()
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """

    @prim_attr_register
    def __init__(self, adjoint: bool = False) -> None:
        validator.check_bool("adjoint", adjoint, self.name)

    def _compute(self, x: np.ndarray) -> np.ndarray:
        inv = per_matrix(self.name, "x", np.linalg.inv, x)
        return inv.swapaxes(-1, -2) if self.adjoint else inv


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
class MatrixDeterminant(_WritesResult, NoAttrPrimitive):
    """`MatrixDeterminant()(x)`: the determinant of each matrix of x (..., n, n) -> (...);
    0 for a singular one.

    >>> MatrixDeterminant()(Tensor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))).asnumpy()
    array(-2., dtype=float32)
    """

    def infer_shape(self, x_shape: list) -> list:
        check_square(self.name, "x", x_shape)
        return list(x_shape[:-2])

    def infer_dtype(self, x_dtype: mstype.Type) -> mstype.Type:
        return float_dtype(self.name, "x", x_dtype)

    def _compute(self, x: np.ndarray) -> np.ndarray:
        return np.linalg.det(x.astype(compute_dtype(x.dtype), copy=False))


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
class Cholesky(_SquareToSquare):
    """`Cholesky(upper=False)(input_x)`: the Cholesky factor of each symmetric positive
    definite matrix of input_x (..., n, n): L lower with A = L L^T, or (`upper`) U = L^T with
    A = U^T U. Only the lower triangle of A is read; a matrix that is not positive definite
    is a ValueError.

    >>> Cholesky()(Tensor(np.array([[1.0, 1.0], [1.0, 2.0]], np.float32))).asnumpy()
    array([[1., 0.],
           [1., 1.]], dtype=float32)
    """

    _arg = "input_x"

    @prim_attr_register
    def __init__(self, upper: bool = False) -> None:
        validator.check_bool("upper", upper, self.name)

    def _compute(self, x: np.ndarray) -> np.ndarray:
        low = per_matrix(self.name, "input_x", np.linalg.cholesky, x,
                         what="symmetric positive definite")
        return low.swapaxes(-1, -2) if self.upper else low


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
class _Solve(_WritesResult):
    """matrix (..., n, n) and rhs (..., n, k) of one float dtype -> x (..., n, k)."""

    def infer_shape(self, matrix_shape: list, rhs_shape: list) -> list:
        check_rhs(self.name, matrix_shape, rhs_shape)
        return list(rhs_shape)

    def infer_dtype(self, matrix_dtype: mstype.Type, rhs_dtype: mstype.Type) -> mstype.Type:
        return check_same_dtype(self.name, {"matrix": matrix_dtype, "rhs": rhs_dtype},
                                linalg_types)

    def _system(self, matrix: np.ndarray) -> np.ndarray:
        """The matrix of the system solved (its transpose with `adjoint`)."""
        return matrix.swapaxes(-1, -2) if self.adjoint else matrix

    def _compute(self, matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        return per_matrix(self.name, "matrix", np.linalg.solve, self._system(matrix), rhs)


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


# -- MatrixExp -----------------------------------------------------------------------------
#: Higham's degree-13 Pade approximant of exp (numerators' coefficients b_0 .. b_13) and the
#: 1-norm up to which it is exact to double precision (Higham 2005, "The scaling and
#: squaring method for the matrix exponential revisited")
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def expm(a: np.ndarray) -> np.ndarray:
    """exp of each matrix of a (..., n, n), by scaling and squaring: a / 2^s has 1-norm
    <= theta_13, its exp is the Pade approximant q^-1 p, squared s times (s per matrix). A
    matrix with a NaN or inf entry gives NaN (computed on zeros meanwhile, without
    warnings)."""
    n = a.shape[-1]
    bad = ~np.isfinite(a).all(axis=(-2, -1))
    if bad.any():
        a = np.where(bad[..., None, None], 0, a)
    norm = np.abs(a).sum(axis=-2).max(axis=-1, initial=0.0)
    with np.errstate(divide="ignore"):
        s = np.maximum(0, np.ceil(np.log2(norm / _THETA13))).astype(np.int64)
    x = a / np.exp2(s)[..., None, None]
    eye = np.broadcast_to(np.eye(n, dtype=a.dtype), a.shape)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    b = _PADE13
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2
             + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 \
        + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for k in range(int(s.max(initial=0))):
        r = np.where((k < s)[..., None, None], r @ r, r)
    return np.where(bad[..., None, None], np.nan, r) if bad.any() else r


class MatrixExp(_SquareToSquare, NoAttrPrimitive):
    """`MatrixExp()(x)`: the matrix exponential of each matrix of x (..., n, n) (the sum of
    x^k / k!); same shape and dtype.

    >>> MatrixExp()(Tensor(np.array([[0.0, 1.0], [0.0, 0.0]], np.float32))).asnumpy()
    array([[1., 1.],
           [0., 1.]], dtype=float32)
    """

    def _compute(self, x: np.ndarray) -> np.ndarray:
        return expm(x.astype(compute_dtype(x.dtype), copy=False))


@bprop(MatrixExp)
def matrix_exp_bprop(prim: MatrixExp, inputs: list, out: Any, dout: Any, g: Any) -> tuple:
    """The adjoint of exp's Frechet derivative: dx is the upper-right block of
    exp([[x^T, dout], [0, x^T]]) (a MatrixExp of twice the size, so it differentiates
    again)."""
    x, = inputs
    xt = mt(g, x)
    top = g.apply(Concat(-1), [g.make_tuple([xt, dout])])
    bottom = g.apply(Concat(-1), [g.make_tuple([g.apply(ZerosLike(), [x]), xt])])
    big = g.apply(MatrixExp(), [g.apply(Concat(-2), [g.make_tuple([top, bottom])])])
    upper = g.getitem(g.apply(Split(-2, 2), [big]), 0)
    return (g.getitem(g.apply(Split(-1, 2), [upper]), 1),)


# -- decompositions ------------------------------------------------------------------------
def matrix_dims(prim_name: str, arg: str, shape: Sequence[int]) -> tuple:
    """(m, n, min(m, n)) of a batch of matrices (..., m, n)."""
    check_rank(prim_name, arg, shape, 2)
    m, n = shape[-2], shape[-1]
    return m, n, min(m, n)


def _reduced_only(prim_name: str, shape: Sequence[int], tall: bool) -> None:
    """The backward rules below are those of the reduced factorisations: a ValueError for
    the other shapes, whose extra columns (not functions of x) have no gradient."""
    m, n, _ = matrix_dims(prim_name, "x", shape)
    if (tall and m < n) or (not tall and m != n):
        what = "rows >= columns" if tall else "a square x"
        raise ValueError(f"For '{prim_name}', the gradient needs {what} with these attributes, "
                         f"but got x shape {list(shape)}.")


class Qr(PrimitiveWithInfer):
    """`Qr(full_matrices=False)(x)` -> (q, r): x (..., m, n) = q r with q's columns
    orthonormal and r upper triangular; q (..., m, k), r (..., k, n) with k = min(m, n), or
    q (..., m, m), r (..., m, n) with `full_matrices`. (numpy's signs: r's diagonal may be
    negative, as MindSpore's CPU kernel.)

    >>> q, r = Qr()(Tensor(np.array([[3.0, 1.0], [4.0, 2.0]], np.float32)))
    >>> np.allclose(q.asnumpy() @ r.asnumpy(), [[3, 1], [4, 2]])
    True
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, full_matrices: bool = False) -> None:
        validator.check_bool("full_matrices", full_matrices, self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        m, n, k = matrix_dims(self.name, "x", x_shape)
        cols = m if self.full_matrices else k
        batch = list(x_shape[:-2])
        return batch + [m, cols], batch + [cols, n]

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        dtype = float_dtype(self.name, "x", x_dtype)
        return dtype, dtype

    def kernel(self, x: np.ndarray) -> tuple:
        mode = "complete" if self.full_matrices else "reduced"
        q, r = np.linalg.qr(x.astype(compute_dtype(x.dtype), copy=False), mode=mode)
        return rounded(q, x.dtype), rounded(r, x.dtype)


def times_inverse_transpose(g: Any, x: Any, r: Any) -> Any:
    """x r^-T for an upper-triangular r: the transpose of the solve r y = x^T."""
    return mt(g, g.apply(MatrixTriangularSolve(lower=False), [r, mt(g, x)]))


def _qr_tall_grad(g: Any, q: Any, r: Any, dq: Any, dr: Any) -> Any:
    """dx of x = q r for m >= n (reduced): with A = q^T dq - dq^T q + r dr^T - dr r^T
    (antisymmetric) and L its lower triangle, dx = q (dr + L r^-T) + (dq - q q^T dq) r^-T
    (r must be invertible: x of full column rank)."""
    qdq = mm(g, q, dq, ta=True)
    rdr = mm(g, r, dr, tb=True)
    anti = g.apply(Sub(), [g.apply(Add(), [qdq, rdr]), g.apply(Add(), [mt(g, qdq), mt(g, rdr)])])
    low = g.apply(Tril(0), [anti])
    first = mm(g, q, g.apply(Add(), [dr, times_inverse_transpose(g, low, r)]))
    rest = g.apply(Sub(), [dq, mm(g, q, qdq)])
    return g.apply(Add(), [first, times_inverse_transpose(g, rest, r)])


def _columns(g: Any, x: Any, n: int, cols: slice) -> Any:
    """x @ P with P the 0/1 (n, k) matrix picking columns `cols` of n (a constant, batched
    like x), so the selection and its transpose are products."""
    pick = np.eye(n, dtype=x.dtype.np_dtype)[:, cols]
    return g.add_const(pick.reshape((1,) * (len(x.shape) - 2) + pick.shape))


@bprop(Qr)
def qr_bprop(prim: Qr, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """Reduced Qr of x (m, n): m >= n by `_qr_tall_grad`; m < n by splitting x = [X | Y],
    r = [U | V] (X = q U square, V = q^T Y): dY = q dV, and dX is the square gradient with
    dq + Y dV^T for dq (Roberts & Roberts 2020). `full_matrices` with m > n has no gradient
    (q's extra columns are not functions of x)."""
    x, = inputs
    m, n, _ = matrix_dims(prim.name, "x", x.shape)
    if prim.full_matrices and m > n:
        _reduced_only(prim.name, x.shape, tall=False)
    q, r = g.getitem(out, 0), g.getitem(out, 1)
    dq, dr = dout
    if m >= n:
        return (_qr_tall_grad(g, q, r, dq, dr),)
    left, right = _columns(g, x, n, slice(0, m)), _columns(g, x, n, slice(m, n))
    dv = mm(g, dr, right)
    dq_total = g.apply(Add(), [dq, mm(g, mm(g, x, right), dv, tb=True)])
    dx = _qr_tall_grad(g, q, mm(g, r, left), dq_total, mm(g, dr, left))
    dy = mm(g, q, dv)
    return (g.apply(Add(), [mm(g, dx, left, tb=True), mm(g, dy, right, tb=True)]),)


class Svd(PrimitiveWithInfer):
    """`Svd(full_matrices=False, compute_uv=True)(input)` -> (s, u, v): x (..., m, n) =
    u diag(s) v^T, s (..., k) descending (k = min(m, n)), u (..., m, k) and v (..., n, k)
    ((..., m, m) and (..., n, n) with `full_matrices`). Without `compute_uv`, u and v are
    zeros of those shapes (MindSpore's outputs).

    >>> s, u, v = Svd()(Tensor(np.array([[3.0, 0.0], [0.0, -4.0]], np.float32)))
    >>> s.asnumpy()
    array([4., 3.], dtype=float32)
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, full_matrices: bool = False, compute_uv: bool = True) -> None:
        validator.check_bool("full_matrices", full_matrices, self.name)
        validator.check_bool("compute_uv", compute_uv, self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        m, n, k = matrix_dims(self.name, "input", x_shape)
        batch = list(x_shape[:-2])
        if self.full_matrices:
            return batch + [k], batch + [m, m], batch + [n, n]
        return batch + [k], batch + [m, k], batch + [n, k]

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        dtype = float_dtype(self.name, "input", x_dtype)
        return dtype, dtype, dtype

    def kernel(self, x: np.ndarray) -> tuple:
        a = x.astype(compute_dtype(x.dtype), copy=False)
        if not self.compute_uv:
            _, u_shape, v_shape = self.infer_shape(list(x.shape))
            return (rounded(np.linalg.svd(a, compute_uv=False), x.dtype),
                    np.zeros(u_shape, x.dtype), np.zeros(v_shape, x.dtype))
        u, s, vt = np.linalg.svd(a, full_matrices=self.full_matrices)
        return rounded(s, x.dtype), rounded(u, x.dtype), rounded(vt.swapaxes(-1, -2), x.dtype)


def _rows(g: Any, v: Any) -> Any:
    """(..., k) as (..., 1, k): scales a matrix's columns."""
    return g.apply(Reshape(), [v, g.add_const(tuple(v.shape[:-1]) + (1, v.shape[-1]))])


def _cols(g: Any, v: Any) -> Any:
    """(..., k) as (..., k, 1): scales a matrix's rows."""
    return g.apply(Reshape(), [v, g.add_const(tuple(v.shape) + (1,))])


def _reciprocal_or_zero(g: Any, v: Any) -> Any:
    """1 / v, and 0 where v is 0: a repeated or zero singular value then adds nothing
    through the terms it would make infinite (the rule's exact where the singular vectors'
    gradients vanish there, as when only s or a product u S v^T is used), never NaN."""
    zero = g.apply(Equal(), [v, scalar(g, 0.0, v.dtype)])
    one = scalar(g, 1.0, v.dtype)
    safe = g.apply(Select(), [zero, one, v])
    return g.apply(Select(), [zero, scalar(g, 0.0, v.dtype), g.apply(RealDiv(), [one, safe])])


@bprop(Svd)
def svd_bprop(prim: Svd, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """x = u S v^T (reduced; distinct nonzero singular values): with F_ij = 1/(s_j^2 - s_i^2)
    off the diagonal (0 on it and where the gap is 0), J = F * (u^T du), K = F * (v^T dv),
    dx = u (diag(ds) + (J + J^T) S + S (K + K^T)) v^T
         + (I - u u^T) du S^-1 v^T + u S^-1 dv^T (I - v v^T).
    Without `compute_uv` only ds counts: dx = u diag(ds) v^T (u, v computed again)."""
    x, = inputs
    ds, du, dv = dout
    if not prim.compute_uv:
        full = g.apply(Svd(False, True), [x])
        u, v = g.getitem(full, 1), g.getitem(full, 2)
        return (mm(g, g.apply(Mul(), [u, _rows(g, ds)]), v, tb=True),)
    if prim.full_matrices:
        _reduced_only(prim.name, x.shape, tall=False)
    s, u, v = g.getitem(out, 0), g.getitem(out, 1), g.getitem(out, 2)
    eye = g.add_const(np.eye(s.shape[-1], dtype=s.dtype.np_dtype))
    s2 = g.apply(Mul(), [s, s])
    f = _reciprocal_or_zero(g, g.apply(Sub(), [_rows(g, s2), _cols(g, s2)]))  # s_j^2 - s_i^2
    j = g.apply(Mul(), [f, mm(g, u, du, ta=True)])
    kk = g.apply(Mul(), [f, mm(g, v, dv, ta=True)])
    s_row, s_col = _rows(g, s), _cols(g, s)
    core = g.apply(Add(), [
        g.apply(Mul(), [eye, _rows(g, ds)]),
        g.apply(Add(), [g.apply(Mul(), [g.apply(Add(), [j, mt(g, j)]), s_row]),
                        g.apply(Mul(), [s_col, g.apply(Add(), [kk, mt(g, kk)])])])])
    dx = mm(g, mm(g, u, core), v, tb=True)
    s_inv = _reciprocal_or_zero(g, s_row)
    du_s = g.apply(Mul(), [du, s_inv])                          # du S^-1
    left = g.apply(Sub(), [du_s, mm(g, u, mm(g, u, du_s, ta=True))])
    dv_s = g.apply(Mul(), [dv, s_inv])                          # dv S^-1
    right = g.apply(Sub(), [dv_s, mm(g, v, mm(g, v, dv_s, ta=True))])
    dx = g.apply(Add(), [dx, mm(g, left, v, tb=True)])
    return (g.apply(Add(), [dx, mm(g, u, right, tb=True)]),)


# -- Eig -----------------------------------------------------------------------------------
#: Eig's output dtype for each input dtype (MindSpore's: float32, float64 and the complex)
_EIG_OUT = {mstype.float32: mstype.complex64, mstype.float64: mstype.complex128,
            mstype.complex64: mstype.complex64, mstype.complex128: mstype.complex128}


def _eig(prim_name: str, x: np.ndarray, compute_v: bool) -> Any:
    """numpy's eig (or eigvals) of each matrix of x, complex; a matrix with a NaN or inf
    entry, or whose iteration does not converge, is the op's ValueError."""
    if not np.isfinite(x).all():
        index = next(i for i in np.ndindex(x.shape[:-2]) if not np.isfinite(x[i]).all()) \
            if x.ndim > 2 else ()
        raise _singular(prim_name, "x", index, "finite")
    fn = np.linalg.eig if compute_v else np.linalg.eigvals
    return per_matrix(prim_name, "x", fn, x, what="diagonalizable by LAPACK's iteration")


class Eig(PrimitiveWithInfer):
    """`Eig(compute_v=False)(x)` -> (eigen_values, eigen_vectors): the eigenvalues (..., n)
    of each general square matrix of x (..., n, n) and, with `compute_v`, the unit-length
    eigenvectors as the columns of (..., n, n) (x @ v = v * w); without it eigen_vectors is
    an empty tensor (shape (0,)), as MindSpore. float32 and complex64 give complex64,
    float64 and complex128 complex128; the eigenvalues are in LAPACK's order (none sorted).

    >>> w, v = Eig(True)(Tensor(np.array([[1.0, 0.0], [0.0, 2.0]], np.float32)))
    >>> w.asnumpy()
    array([1.+0.j, 2.+0.j], dtype=complex64)
    """

    fresh_outputs = True

    @prim_attr_register
    def __init__(self, compute_v: bool = False) -> None:
        validator.check_bool("compute_v", compute_v, self.name)

    def infer_shape(self, x_shape: list) -> tuple:
        n = check_square(self.name, "x", x_shape)
        batch = list(x_shape[:-2])
        return batch + [n], (batch + [n, n] if self.compute_v else [0])

    def infer_dtype(self, x_dtype: mstype.Type) -> tuple:
        validator.check_tensor_dtype_valid("x", x_dtype, tuple(_EIG_OUT), self.name)
        return _EIG_OUT[x_dtype], _EIG_OUT[x_dtype]

    def kernel(self, x: np.ndarray) -> tuple:
        out = _EIG_OUT[mstype.from_numpy(x.dtype)].np_dtype
        if not self.compute_v:
            return rounded(_eig(self.name, x, False), out), np.zeros((0,), out)
        w, v = _eig(self.name, x, True)
        return rounded(w, out), rounded(v, out)


class EigGrad(PrimitiveWithInfer):
    """`EigGrad()(x, w, v, dw, dv)` -> dx: Eig's backward (Internal; not exported), the
    adjoint of the eigendecomposition with unit-length eigenvectors (distinct eigenvalues):
    with E_ij = conj(w_j - w_i) off the diagonal,
        G = (V^H dV - V^H V Re(diag(V^H dV))) / E,   diag(G) = dw,
        dx = V^-H G V^H      (its real part for a real x).
    Without eigenvectors (v of shape (0,)) G = diag(dw) and V is computed again (this
    gradient does not depend on their scaling). The loss must not depend on the vectors'
    phases (Im diag(V^H dV) = 0), as for every eigenvector gradient."""

    def infer_shape(self, x_shape: list, w_shape: list, v_shape: list, dw_shape: list,
                    dv_shape: list) -> list:
        return list(x_shape)

    def infer_dtype(self, x_dtype: mstype.Type, *others: mstype.Type) -> mstype.Type:
        return x_dtype

    def kernel(self, x: np.ndarray, w: np.ndarray, v: np.ndarray, dw: np.ndarray,
               dv: np.ndarray) -> np.ndarray:
        if v.ndim != x.ndim:
            w, v = _eig(self.name, x, True)
            v = v.astype(dw.dtype)
        vh = np.conj(np.swapaxes(v, -1, -2))
        eye = np.eye(x.shape[-1], dtype=bool)
        if dv.ndim == x.ndim:
            vhdv = vh @ dv
            diag_re = np.real(np.diagonal(vhdv, axis1=-2, axis2=-1))
            g = vhdv - vh @ (v * diag_re[..., None, :])
            gap = np.conj(w[..., None, :] - w[..., :, None])
            g = g / np.where(eye, 1, gap)
        else:
            g = np.zeros(v.shape, v.dtype)
        g = np.where(eye, dw[..., :, None] * eye, g)
        dx = np.linalg.solve(vh, g @ vh)
        dx = dx if np.iscomplexobj(x) else dx.real
        return rounded(dx, x.dtype)


declare_without("sharding", EigGrad, reason="it is made only by autodiff, on the rank-local "
                                            "graph")
declare_without("bprop", EigGrad, reason="second derivatives of Eig are not supported")


@bprop(Eig, complex_values=True)
def eig_bprop(prim: Eig, inputs: list, out: Any, dout: list, g: Any) -> tuple:
    """EigGrad of x, the forward's eigenvalues and eigenvectors and their gradients (the
    empty eigenvector output of compute_v=False carries none)."""
    x, = inputs
    w, v = g.getitem(out, 0), g.getitem(out, 1)
    return (g.apply(EigGrad(), [x, w, v, dout[0], dout[1]]),)


# -- sharding --------------------------------------------------------------------------------
_WHOLE = "a factorisation reads the whole matrix"


@sharding_rule(_SquareToSquare)
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


@sharding_rule(Qr, Svd)
def decomposition_spec(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """The batch dims split freely; every matrix dim of the input and the factors stays
    whole."""
    nb = len(ins[0]) - 2
    batch = dims(nb, prefix="b")
    tails = [tuple(f"o{i}_{j}" for j in range(len(o) - nb)) for i, o in enumerate(outs)]
    whole = ("r", "c") + tuple(l for t in tails for l in t)
    return DimSpec((batch + ("r", "c"),), tuple(batch + t for t in tails),
                   unsplittable=tuple((l, _WHOLE) for l in whole))


@sharding_rule(Eig)
def eig_spec(prim: Eig, ins: list, outs: list, consts: dict) -> DimSpec:
    """The batch dims split freely (the eigenvalues and -vectors carry them); the matrix
    dims, and the empty eigenvector output of compute_v=False, stay whole."""
    batch = dims(len(ins[0]) - 2, prefix="b")
    vectors = batch + ("r", "c") if prim.compute_v else ("e",)
    whole = ("r", "c") if prim.compute_v else ("r", "c", "e")
    return DimSpec((batch + ("r", "c"),), (batch + ("c",), vectors),
                   unsplittable=tuple((l, _WHOLE) for l in whole))


# -- batch rules (vmap): each op maps over leading dims, so the batch axis is one more
batch_rule(_WritesResult, LogMatrixDeterminant, Qr, Svd)(leading_batch)
