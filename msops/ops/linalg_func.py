"""Linear-algebra functions with `mindspore.ops`' names: the functional forms of the
linalg primitives (`inverse`, `det`, `slogdet`, `cholesky`, `matrix_solve`, `qr`, `svd`, `eig`, ...)
and what is made of them (`logdet`, `pinv`, `matrix_power`, `cond`). Every input is a batch of
matrices (..., m, n); each function is primitive calls, so it traces, differentiates and
shards (batch dims) through their rules."""
from __future__ import annotations

from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import matmul
from msops.ops.norm_func import matrix_norm
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.elementwise_ops import Greater, Select, ZerosLike
from msops.primitives.linalg_ops import (Cholesky, Eig, LogMatrixDeterminant,
                                         MatrixDeterminant, MatrixExp, MatrixInverse,
                                         MatrixSolve, MatrixTriangularSolve, Qr, Svd,
                                         check_square)
from msops.primitives.householder_ops import Geqrf, Orgqr, Ormqr
from msops.primitives.lu_ops import LuSolve, LuUnpack
from msops.primitives.math_ops import (Add, BatchMatMul, MatMul, Mul, RealDiv, ReduceMax,
                                       compute_dtype)
from msops.primitives.reduce_ops import ReduceMin

__all__ = ["inverse", "det", "matrix_determinant", "slogdet", "log_matrix_determinant",
           "logdet", "cholesky", "cholesky_solve", "cholesky_inverse", "matrix_solve", "qr",
           "svd", "pinv", "lstsq", "matrix_power", "matrix_exp", "eig", "eigvals", "cond",
           "lu_unpack", "lu_solve", "geqrf", "orgqr", "ormqr"]


def _one_matrix_op(cls: type, api: str, doc: str) -> Any:
    """The functional form `api(input)` of the attribute-less primitive `cls`."""
    def call(input: Any) -> Any:
        check_tensor(api, "input", input)
        return _prim(cls)(input)
    call.__name__ = call.__qualname__ = api
    call.__doc__ = doc
    return call


inverse = _one_matrix_op(MatrixInverse, "inverse", "The inverse of each matrix of input "
                         "(..., n, n) (`MatrixInverse`).")
det = _one_matrix_op(MatrixDeterminant, "det", "The determinant of each matrix of input "
                     "(..., n, n) -> (...) (`MatrixDeterminant`).")
matrix_determinant = _one_matrix_op(MatrixDeterminant, "matrix_determinant",
                                    "`det` under its older name.")
slogdet = _one_matrix_op(LogMatrixDeterminant, "slogdet", "(sign, log|det|) of each matrix "
                         "of input (..., n, n) (`LogMatrixDeterminant`).")
matrix_exp = _one_matrix_op(MatrixExp, "matrix_exp", "The matrix exponential of each matrix "
                            "of input (..., n, n) (`MatrixExp`).")
log_matrix_determinant = _one_matrix_op(LogMatrixDeterminant, "log_matrix_determinant",
                                        "`slogdet` under its older name.")


def logdet(input: Any) -> Tensor:
    """log(det) of each matrix of input (..., n, n): NaN where the determinant is negative,
    -inf where it is 0 (log|det| kept where the sign is not negative)."""
    check_tensor("logdet", "input", input)
    sign, log_abs = _prim(LogMatrixDeterminant)(input)
    nan = Tensor(np.full((), np.nan, input.dtype.np_dtype))
    negative = _prim(Greater)(Tensor(np.zeros((), input.dtype.np_dtype)), sign)
    return _prim(Select)(negative, nan, log_abs)


def cholesky(input_x: Any, upper: bool = False) -> Tensor:
    """The Cholesky factor of each symmetric positive definite matrix of input_x: L lower
    (A = L L^T) or, with `upper`, U (A = U^T U) (`Cholesky(upper)`)."""
    check_tensor("cholesky", "input_x", input_x)
    return _prim(Cholesky, upper)(input_x)


def cholesky_solve(input: Any, input2: Any, upper: bool = False) -> Tensor:
    """x with A x = input (..., n, k), given A's Cholesky factor input2 (..., n, n): lower L
    (A = L L^T), or with `upper` U (A = U^T U); two triangular solves."""
    api = "cholesky_solve"
    check_tensor(api, "input", input)
    check_tensor(api, "input2", input2)
    validator.check_bool("upper", upper, api)
    first = _prim(MatrixTriangularSolve, not upper, upper)(input2, input)
    return _prim(MatrixTriangularSolve, not upper, not upper)(input2, first)


def cholesky_inverse(input_x: Any, upper: bool = False) -> Tensor:
    """The inverse of A from its Cholesky factor input_x (..., n, n): lower L (A = L L^T), or
    with `upper` U (A = U^T U)."""
    api = "cholesky_inverse"
    check_tensor(api, "input_x", input_x)
    n = check_square(api, "input_x", input_x.shape)
    eye = _prim(Add)(_prim(ZerosLike)(input_x), Tensor(np.eye(n, dtype=input_x.dtype.np_dtype)))
    return cholesky_solve(eye, input_x, upper)


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False) -> Tensor:
    """x with matrix @ x = rhs (matrix^T with `adjoint`), matrix (..., n, n), rhs (..., n, k)
    (`MatrixSolve(adjoint)`)."""
    check_tensor("matrix_solve", "matrix", matrix)
    check_tensor("matrix_solve", "rhs", rhs)
    return _prim(MatrixSolve, adjoint)(matrix, rhs)


def qr(input: Any, mode: str = "reduced") -> tuple:
    """(Q, R) of each matrix of input (..., m, n): `mode` "reduced" gives Q (..., m, k) and
    R (..., k, n) with k = min(m, n), "complete" Q (..., m, m) and R (..., m, n) (`Qr`)."""
    check_tensor("qr", "input", input)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"For 'qr', the 'mode' should be 'reduced' or 'complete', but got "
                         f"{mode!r}.")
    return _prim(Qr, mode == "complete")(input)


def svd(input: Any, full_matrices: bool = False, compute_uv: bool = True) -> Any:
    """(s, u, v) with input = u diag(s) v^T for each matrix of input (..., m, n) (`Svd`); s
    alone without `compute_uv`."""
    check_tensor("svd", "input", input)
    out = _prim(Svd, full_matrices, compute_uv)(input)
    return out if compute_uv else out[0]


def _matmul(x: Any, y: Any, transpose_b: bool = False) -> Tensor:
    """x @ y for matrices or batches of one rank."""
    cls = MatMul if len(x.shape) == 2 else BatchMatMul
    return _prim(cls, False, transpose_b)(x, y)


def _scale_columns(x: Any, v: Any) -> Tensor:
    """x (..., m, k) with column j times v[..., j]."""
    return _prim(Mul)(x, _prim(Reshape)(v, tuple(v.shape[:-1]) + (1, v.shape[-1])))


def pinv(x: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix of x (..., m, n) -> (..., n, m), from
    its SVD: v diag(1/s) u^T over the singular values above max(atol, rtol * s_max) (the
    others count as 0). Without either tolerance, rtol = max(m, n) * eps of x's dtype (as
    MindSpore); `hermitian` is accepted (the SVD serves symmetric x as well)."""
    api = "pinv"
    check_tensor(api, "x", x)
    validator.check_bool("hermitian", hermitian, api)
    if len(x.shape) < 2:
        raise ValueError(f"For '{api}', the 'x' should be a matrix (..., m, n), but got shape "
                         f"{list(x.shape)}.")
    for arg, v in (("atol", atol), ("rtol", rtol)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                              or v < 0):
            raise ValueError(f"For '{api}', the '{arg}' should be None or a number >= 0, but "
                             f"got {v!r}.")
    np_dtype = x.dtype.np_dtype
    if rtol is None:
        rtol = 0.0 if atol is not None else \
            max(x.shape[-2:]) * float(np.finfo(compute_dtype(np_dtype)).eps)
    if not min(x.shape[-2:]):                    # no singular values: the empty (..., n, m)
        n = len(x.shape)
        return _prim(Transpose)(x, tuple(range(n - 2)) + (n - 1, n - 2))
    s, u, v = _prim(Svd, False, True)(x)
    cutoff = _prim(ReduceMax, True)(s, -1) * Tensor(np.asarray(rtol, np_dtype))
    if atol:
        cutoff = _prim(Select)(_prim(Greater)(cutoff, Tensor(np.asarray(atol, np_dtype))),
                               cutoff, Tensor(np.full(cutoff.shape, atol, np_dtype)))
    kept = _prim(Greater)(s, cutoff)
    one, zero = Tensor(np.ones((), np_dtype)), Tensor(np.zeros((), np_dtype))
    # 1/s where kept; the division reads 1 elsewhere, so no inf reaches the gradient
    inv_s = _prim(Select)(kept, _prim(RealDiv)(one, _prim(Select)(kept, s, one)), zero)
    return _matmul(_scale_columns(v, inv_s), u, transpose_b=True)


def lstsq(input: Any, A: Any) -> Tensor:
    """The least-squares solution y of input (m, n) @ y = A (m, k) or (m,) (for m < n the
    minimum-norm one): pinv(input) @ A, input of full rank."""
    api = "lstsq"
    check_tensor(api, "input", input)
    check_tensor(api, "A", A)
    if len(input.shape) != 2 or len(A.shape) not in (1, 2) or A.shape[0] != input.shape[0]:
        raise ValueError(f"For '{api}', the 'A' should be (m, k) or (m,) beside the 2-D "
                         f"'input' (m, n), but got shapes {list(input.shape)} and "
                         f"{list(A.shape)}.")
    return matmul(pinv(input), A)


def matrix_power(input: Any, n: int) -> Tensor:
    """input (..., m, m) to the integer power n by repeated squaring; n = 0 gives identities,
    n < 0 powers of the inverse."""
    api = "matrix_power"
    check_tensor(api, "input", input)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"For '{api}', the 'n' should be an int, but got {type(n).__name__}.")
    m = check_square(api, "input", input.shape)
    if n == 0:
        return _prim(Add)(_prim(ZerosLike)(input),
                          Tensor(np.eye(m, dtype=input.dtype.np_dtype)))
    base = _prim(MatrixInverse)(input) if n < 0 else input
    result, k = None, abs(n)
    while k:
        if k & 1:
            result = base if result is None else _matmul(result, base)
        k >>= 1
        if k:
            base = _matmul(base, base)
    return result


def eig(A: Any) -> tuple:
    """(eigenvalues (..., n), unit-length eigenvectors (..., n, n) as columns) of each general
    square matrix of A, complex (`Eig(compute_v=True)`)."""
    check_tensor("eig", "A", A)
    return _prim(Eig, True)(A)


def eigvals(A: Any) -> Tensor:
    """The eigenvalues (..., n) of each general square matrix of A, complex (`Eig()`)."""
    check_tensor("eigvals", "A", A)
    return _prim(Eig, False)(A)[0]


#: the matrix norms `cond` takes through A's inverse (None, 2 and -2 read the SVD)
_COND_NORMS = ("fro", "nuc", 1, -1, float("inf"), -float("inf"))


def cond(A: Any, p: Any = None) -> Tensor:
    """The condition number of each matrix of A (..., m, n) in the norm `p`: for None, 2 and
    -2 the ratio of the largest and smallest singular values (-2: smallest over largest; any
    m, n); for 'fro', 'nuc', inf, -inf, 1, -1, norm(A, p) * norm(inverse(A), p) (A square
    and invertible)."""
    api = "cond"
    check_tensor(api, "A", A)
    if len(A.shape) < 2:
        raise ValueError(f"For '{api}', the 'A' should be a matrix (..., m, n), but got shape "
                         f"{list(A.shape)}.")
    if isinstance(p, bool) or not (p is None or p in (2, -2) or p in _COND_NORMS):
        raise ValueError(f"For '{api}', the 'p' should be one of None, 'fro', 'nuc', inf, "
                         f"-inf, 1, -1, 2, -2, but got {p!r}.")
    if p is None or p in (2, -2):
        s = _prim(Svd, False, False)(A)[0]
        big, small = _prim(ReduceMax)(s, -1), _prim(ReduceMin)(s, -1)
        return _prim(RealDiv)(small, big) if p == -2 else _prim(RealDiv)(big, small)
    check_square(api, "A", A.shape)
    return _prim(Mul)(matrix_norm(A, p), matrix_norm(_prim(MatrixInverse)(A), p))


def lu_unpack(LU_data: Any, LU_pivots: Any, unpack_data: bool = True,
              unpack_pivots: bool = True) -> tuple:
    """(P, L, U) with A = P L U from LAPACK's packed LU_data (..., M, N) and 1-based
    LU_pivots (..., min(M, N)) (scipy.linalg.lu_factor's form, pivots + 1); P is None
    without `unpack_pivots`, L and U None without `unpack_data` (`LuUnpack`)."""
    check_tensor("lu_unpack", "LU_data", LU_data)
    check_tensor("lu_unpack", "LU_pivots", LU_pivots)
    p, low, up = _prim(LuUnpack, unpack_data, unpack_pivots)(LU_data, LU_pivots)
    return (p if unpack_pivots else None, low if unpack_data else None,
            up if unpack_data else None)


def lu_solve(b: Any, LU_data: Any, LU_pivots: Any) -> Tensor:
    """y with A y = b (..., m, k) for A = P L U given packed (LU_data (..., m, m), int32
    LU_pivots (..., m), 1-based) (`LuSolve`)."""
    for arg, v in (("b", b), ("LU_data", LU_data), ("LU_pivots", LU_pivots)):
        check_tensor("lu_solve", arg, v)
    return _prim(LuSolve)(b, LU_data, LU_pivots)


def geqrf(input: Any) -> tuple:
    """(y, tau): input (..., M, N) = Q R in LAPACK's Householder form, R on and above y's
    diagonal, the reflectors below it (`Geqrf`)."""
    check_tensor("geqrf", "input", input)
    return _prim(Geqrf)(input)


def orgqr(input: Any, input2: Any) -> Tensor:
    """The first N columns of H_1 ... H_K from the reflectors in input (..., M, N) and their
    coefficients input2 (tau, (..., K)) (`Orgqr`)."""
    check_tensor("orgqr", "input", input)
    check_tensor("orgqr", "input2", input2)
    return _prim(Orgqr)(input, input2)


def ormqr(input: Any, tau: Any, other: Any, left: bool = True,
          transpose: bool = False) -> Tensor:
    """Q @ other (`left`) or other @ Q, Q^H with `transpose`, for Q = H_1 ... H_K of the
    reflectors in input and tau (`Ormqr(left, transpose)`)."""
    for arg, v in (("input", input), ("tau", tau), ("other", other)):
        check_tensor("ormqr", arg, v)
    return _prim(Ormqr, left, transpose)(input, tau, other)
