"""Products of vectors and matrices with `mindspore.ops`' names: `mv`, `dot`, `inner`,
`vecdot`, `tensor_dot`, `kron`, `cross`, the scaled sums `addmm`, `addmv`, `addbmm`,
`baddbmm`, `addr`, the distances `dist`, `cdist`, and `block_diag`, `cartesian_prod`.
Each is MatMul / BatchMatMul, element-wise ops, reductions and reshapes, so it traces,
differentiates and shards through their rules."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from msops.common import validator
from msops.common.tensor import Tensor, check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import matmul
from msops.ops.creation_func import meshgrid
from msops.ops.matrix_func import outer
from msops.ops.norm_func import vector_norm
from msops.primitives.array_ops import Concat, Reshape, Split, Transpose
from msops.primitives.math_ops import (BatchMatMul, MatMul, Mul, ReduceSum, Sub, check_rank,
                                       promoted)
from msops.primitives.stack_ops import Stack

__all__ = ["mv", "ger", "adjoint", "dot", "inner", "vecdot", "tensor_dot", "kron", "cross", "addmm", "addmv",
           "addbmm", "baddbmm", "addr", "dist", "cdist", "block_diag", "cartesian_prod"]


def _tensors(api: str, **named: Any) -> list:
    """The named arguments checked to be Tensors, cast to their promoted dtype."""
    for arg, v in named.items():
        check_tensor(api, arg, v)
    return list(promoted(tuple(named.values()))) if len(named) > 1 else list(named.values())


def _rank(api: str, arg: str, x: Any, low: int, high: int | None = None) -> None:
    check_rank(api, arg, x.shape, low, high)


# -- products ------------------------------------------------------------------------------
def mv(mat: Any, vec: Any) -> Tensor:
    """mat (n, m) @ vec (m,) -> (n,)."""
    mat, vec = _tensors("mv", mat=mat, vec=vec)
    _rank("mv", "mat", mat, 2, 2)
    _rank("mv", "vec", vec, 1, 1)
    return matmul(mat, vec)


def ger(input: Any, vec2: Any) -> Tensor:
    """The outer product of input (n,) and vec2 (m,) -> (n, m) (`outer`'s older name)."""
    input, vec2 = _tensors("ger", input=input, vec2=vec2)
    return outer(input, vec2)


def adjoint(x: Any) -> Tensor:
    """x (..., m, n) with its last two dims swapped (the conjugate transpose: msops's dtypes
    here are real)."""
    check_tensor("adjoint", "x", x)
    _rank("adjoint", "x", x, 2)
    n = len(x.shape)
    return _prim(Transpose)(x, tuple(range(n - 2)) + (n - 1, n - 2))


def tensor_dot(x1: Any, x2: Any, axes: Any) -> Tensor:
    """The sum of x1 * x2 over the paired `axes`: an int k pairs x1's last k dims with x2's
    first k, a pair (axes1, axes2) of ints or sequences names them; the output is x1's free
    dims then x2's (one MatMul between two transposed, flattened operands)."""
    api = "tensor_dot"
    x1, x2 = _tensors(api, x1=x1, x2=x2)
    n1, n2 = len(x1.shape), len(x2.shape)
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(n1, n2):
            raise ValueError(f"For '{api}', the 'axes' should be in [0, {min(n1, n2)}], but "
                             f"got {axes}.")
        a1, a2 = list(range(n1 - axes, n1)), list(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        a1, a2 = ([a] if isinstance(a, int) else list(a) for a in axes)
        a1 = [validator.check_axis_in_range(a, n1, "axes", api) for a in a1]
        a2 = [validator.check_axis_in_range(a, n2, "axes", api) for a in a2]
    else:
        raise TypeError(f"For '{api}', the 'axes' should be an int or a pair of ints or "
                        f"sequences of ints, but got {axes!r}.")
    s1, s2 = tuple(x1.shape), tuple(x2.shape)
    if len(a1) != len(a2) or len(set(a1)) != len(a1) or len(set(a2)) != len(a2) or \
            any(s1[i] != s2[j] for i, j in zip(a1, a2)):
        raise ValueError(f"For '{api}', the 'axes' should pair distinct dims of equal sizes, "
                         f"but got {axes!r} for shapes {list(s1)} and {list(s2)}.")
    free1 = [i for i in range(n1) if i not in a1]
    free2 = [j for j in range(n2) if j not in a2]
    contracted = math.prod(s1[i] for i in a1)
    left = _prim(Reshape)(_prim(Transpose)(x1, tuple(free1 + a1)),
                          (math.prod(s1[i] for i in free1), contracted))
    right = _prim(Reshape)(_prim(Transpose)(x2, tuple(a2 + free2)),
                           (contracted, math.prod(s2[j] for j in free2)))
    out = _prim(MatMul)(left, right)
    return _prim(Reshape)(out, tuple(s1[i] for i in free1) + tuple(s2[j] for j in free2))


def dot(input: Any, other: Any) -> Tensor:
    """numpy's dot of input (..., n) and other (..., n, m), both of rank >= 2: the sum over
    input's last dim and other's second last -> input.shape[:-1] + other.shape[:-2] +
    (m,)."""
    input, other = _tensors("dot", input=input, other=other)
    _rank("dot", "input", input, 2)
    _rank("dot", "other", other, 2)
    return tensor_dot(input, other, ((len(input.shape) - 1,), (len(other.shape) - 2,)))


def inner(input: Any, other: Any) -> Tensor:
    """The sum over the last dims of input and other -> input.shape[:-1] +
    other.shape[:-1]; a 0-d operand multiplies the other."""
    input, other = _tensors("inner", input=input, other=other)
    if not input.shape or not other.shape:
        return _prim(Mul)(input, other)
    return tensor_dot(input, other, ((len(input.shape) - 1,), (len(other.shape) - 1,)))


def vecdot(x: Any, y: Any, *, axis: int = -1) -> Tensor:
    """The dot products of x's and y's vectors along `axis`, broadcast (real inputs: the
    conjugate is x itself)."""
    x, y = _tensors("vecdot", x=x, y=y)
    validator.check_int("axis", axis, "vecdot")
    prod = _prim(Mul)(x, y)
    return _prim(ReduceSum)(prod, validator.check_axis_in_range(axis, len(prod.shape), "axis",
                                                                "vecdot"))


def kron(input: Any, other: Any) -> Tensor:
    """The Kronecker product: block (i, ...) of the output is input[i, ...] * other, ranks
    aligned from the right (out.shape[d] = input.shape[d] * other.shape[d])."""
    input, other = _tensors("kron", input=input, other=other)
    r = max(len(input.shape), len(other.shape))
    a = (1,) * (r - len(input.shape)) + tuple(input.shape)
    b = (1,) * (r - len(other.shape)) + tuple(other.shape)
    spread_a = tuple(v for d in a for v in (d, 1))
    spread_b = tuple(v for d in b for v in (1, d))
    prod = _prim(Mul)(_prim(Reshape)(input, spread_a), _prim(Reshape)(other, spread_b))
    return _prim(Reshape)(prod, tuple(x * y for x, y in zip(a, b)))


def cross(input: Any, other: Any, dim: int | None = None) -> Tensor:
    """The cross products of input's and other's 3-vectors along `dim` (None: the first dim
    of size 3); both of one shape."""
    api = "cross"
    input, other = _tensors(api, input=input, other=other)
    shape = tuple(input.shape)
    if shape != tuple(other.shape):
        raise ValueError(f"For '{api}', the 'other' should have the shape of 'input': "
                         f"{list(shape)}, but got {list(other.shape)}.")
    if dim is None:
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise ValueError(f"For '{api}', the 'input' should have a dim of size 3, but got "
                             f"shape {list(shape)}.")
    d = validator.check_axis_in_range(dim, len(shape), "dim", api)
    if shape[d] != 3:
        raise ValueError(f"For '{api}', the size of dim {dim} should be 3, but got "
                         f"{shape[d]} (shape {list(shape)}).")
    a, b = _prim(Split, d, 3)(input), _prim(Split, d, 3)(other)

    def term(i: int, j: int) -> Tensor:
        return _prim(Sub)(_prim(Mul)(a[i], b[j]), _prim(Mul)(a[j], b[i]))
    return _prim(Concat, d)((term(1, 2), term(2, 0), term(0, 1)))


# -- scaled sums ---------------------------------------------------------------------------
def _scaled_sum(api: str, input: Any, product: Tensor, beta: Any, alpha: Any) -> Tensor:
    """beta * input + alpha * product; beta == 0 ignores input (NaN there does not
    propagate, as MindSpore)."""
    for arg, v in (("beta", beta), ("alpha", alpha)):
        if not isinstance(v, (int, float, bool)):
            raise TypeError(f"For '{api}', the '{arg}' should be an int, float or bool, but "
                            f"got {type(v).__name__}.")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return (input if beta == 1 else input * beta) + scaled


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat1 (n, m) @ mat2 (m, p)), input broadcast to (n, p)."""
    input, mat1, mat2 = _tensors("addmm", input=input, mat1=mat1, mat2=mat2)
    _rank("addmm", "mat1", mat1, 2, 2)
    _rank("addmm", "mat2", mat2, 2, 2)
    return _scaled_sum("addmm", input, _prim(MatMul)(mat1, mat2), beta, alpha)


def addmv(x: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * x + alpha * (mat (n, m) @ vec (m,)), x broadcast to (n,)."""
    x, mat, vec = _tensors("addmv", x=x, mat=mat, vec=vec)
    return _scaled_sum("addmv", x, mv(mat, vec), beta, alpha)


def _batches(api: str, batch1: Any, batch2: Any) -> Tensor:
    _rank(api, "batch1", batch1, 3, 3)
    _rank(api, "batch2", batch2, 3, 3)
    if batch1.shape[0] != batch2.shape[0]:
        raise ValueError(f"For '{api}', the 'batch2' should hold as many matrices as 'batch1': "
                         f"{batch1.shape[0]}, but got {batch2.shape[0]}.")
    return _prim(BatchMatMul)(batch1, batch2)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * sum_i batch1[i] @ batch2[i] (batches (b, n, m), (b, m, p))."""
    input, batch1, batch2 = _tensors("addbmm", input=input, batch1=batch1, batch2=batch2)
    summed = _prim(ReduceSum)(_batches("addbmm", batch1, batch2), 0)
    return _scaled_sum("addbmm", input, summed, beta, alpha)


def baddbmm(input: Any, batch1: Any, batch2: Any, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (batch1 (b, n, m) @ batch2 (b, m, p)), input broadcast to
    (b, n, p)."""
    input, batch1, batch2 = _tensors("baddbmm", input=input, batch1=batch1, batch2=batch2)
    return _scaled_sum("baddbmm", input, _batches("baddbmm", batch1, batch2), beta, alpha)


def addr(x: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * x + alpha * outer(vec1 (n,), vec2 (m,)), x broadcast to (n, m)."""
    x, vec1, vec2 = _tensors("addr", x=x, vec1=vec1, vec2=vec2)
    _rank("addr", "vec1", vec1, 1, 1)
    _rank("addr", "vec2", vec2, 1, 1)
    return _scaled_sum("addr", x, outer(vec1, vec2), beta, alpha)


# -- distances -----------------------------------------------------------------------------
def _check_p(api: str, p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
        raise ValueError(f"For '{api}', the 'p' should be a number >= 0, but got {p!r}.")
    return p


def dist(input: Any, other: Any, p: Any = 2) -> Tensor:
    """The p-norm of input - other (broadcast) over every element: a 0-d Tensor."""
    input, other = _tensors("dist", input=input, other=other)
    return vector_norm(_prim(Sub)(input, other), _check_p("dist", p))


def cdist(x1: Any, x2: Any, p: float = 2.0) -> Tensor:
    """The p-norm distance between each row of x1 (B, P, M) and each row of x2 (B, R, M) ->
    (B, P, R) (2-D inputs: no B)."""
    api = "cdist"
    x1, x2 = _tensors(api, x1=x1, x2=x2)
    _rank(api, "x1", x1, 2, 3)
    if len(x2.shape) != len(x1.shape) or x2.shape[-1] != x1.shape[-1] or \
            (len(x1.shape) == 3 and x1.shape[0] != x2.shape[0]):
        raise ValueError(f"For '{api}', the 'x2' should be (B, R, M) beside 'x1' "
                         f"{list(x1.shape)} (its rank, batch and columns), but got "
                         f"{list(x2.shape)}.")
    lead = tuple(x1.shape[:-2])
    rows = _prim(Reshape)(x1, lead + (x1.shape[-2], 1, x1.shape[-1]))
    cols = _prim(Reshape)(x2, lead + (1,) + tuple(x2.shape[-2:]))
    return vector_norm(_prim(Sub)(rows, cols), _check_p(api, p), -1)


# -- assembling ----------------------------------------------------------------------------
def block_diag(*inputs: Any) -> Tensor:
    """The inputs (0-, 1- or 2-D) as blocks on the diagonal of one matrix, zeros elsewhere
    (a 0-d input is a (1, 1) block, a 1-D one a row)."""
    api = "block_diag"
    if not inputs:
        raise ValueError(f"For '{api}', the 'inputs' should hold at least one Tensor, but got "
                         f"none.")
    blocks = _tensors(api, **{f"inputs[{i}]": x for i, x in enumerate(inputs)})
    mats = []
    for i, x in enumerate(blocks):
        _rank(api, f"inputs[{i}]", x, 0, 2)
        shape = tuple(x.shape)
        mats.append(x if len(shape) == 2 else _prim(Reshape)(x, (1, max(math.prod(shape), 1))
                                                             if shape else (1, 1)))
    width = sum(m.shape[1] for m in mats)
    dtype = mats[0].dtype.np_dtype
    rows, left = [], 0
    for m in mats:
        h, w = m.shape
        parts = [Tensor(np.zeros((h, left), dtype))] if left else []
        parts.append(m)
        if width - left - w:
            parts.append(Tensor(np.zeros((h, width - left - w), dtype)))
        rows.append(parts[0] if len(parts) == 1 else _prim(Concat, 1)(tuple(parts)))
        left += w
    return rows[0] if len(rows) == 1 else _prim(Concat, 0)(tuple(rows))


def cartesian_prod(*inputs: Any) -> Tensor:
    """Every combination of one element of each 1-D input, in order: (N1 * ... * Nk, k)
    (one input: itself)."""
    api = "cartesian_prod"
    if not inputs:
        raise ValueError(f"For '{api}', the 'inputs' should hold at least one Tensor, but got "
                         f"none.")
    vecs = _tensors(api, **{f"inputs[{i}]": x for i, x in enumerate(inputs)})
    for i, v in enumerate(vecs):
        _rank(api, f"inputs[{i}]", v, 1, 1)
    if len(vecs) == 1:
        return vecs[0]
    grids = meshgrid(*vecs, indexing="ij")
    return _prim(Stack, 1)(tuple(_prim(Reshape)(g, (-1,)) for g in grids))

