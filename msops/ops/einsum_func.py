"""`einsum`, as `mindspore.ops.einsum`: sums of products named by index letters
("bij,bjk->bik"). Operands are contracted left to right, two at a time: indices needed by
neither the other operand nor anything later are summed out first (ReduceSum); the pair is
then transposed to (batch, free, contracted) / (batch, contracted, free), reshaped to 3-D
(2-D without batch indices), multiplied by BatchMatMul / MatMul and reshaped back; the
result is transposed to the output order. So it traces, shards (through those ops' rules)
and differentiates. An ellipsis stands for the same dims in every operand that has one; an
index repeated within one operand (a diagonal) is not supported."""
from __future__ import annotations

import math
from typing import Any, Sequence

from msops.common.tensor import Tensor
from msops.ops._dispatch import _prim
from msops.primitives.array_ops import Reshape, Transpose
from msops.primitives.math_ops import BatchMatMul, MatMul, ReduceSum

__all__ = ["einsum"]

_ELLIPSIS = "..."


def _terms(equation: str, operands: Sequence[Any]) -> tuple[list, list]:
    """(labels of each operand, labels of the output): letters, and ("...", k) for the k-th
    dim an ellipsis stands for (counted from the right, so operands align like broadcasting)."""
    if not isinstance(equation, str):
        raise TypeError(f"For 'einsum', the 'equation' should be a str, but got "
                        f"{type(equation).__name__}.")
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"For 'einsum', the equation {equation!r} names {len(terms)} "
                         f"operands, but got {len(operands)}.")
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"For 'einsum', operand {i} should be a Tensor, but got "
                            f"{type(x).__name__}.")
    ellipsis_dims = 0
    labels = []
    for i, (term, x) in enumerate(zip(terms, operands)):
        head, dots, tail = term.partition(_ELLIPSIS)
        letters = head + tail
        if not all(c.isalpha() and c.isascii() for c in letters) or _ELLIPSIS in tail:
            raise ValueError(f"For 'einsum', the equation {equation!r} should hold letters, "
                             f"',', '->' and at most one '...' per operand, but operand {i} "
                             f"is {term!r}.")
        if len(set(letters)) != len(letters):
            raise NotImplementedError(f"For 'einsum', an index repeated within one operand "
                                      f"(a diagonal, operand {i} {term!r} of {equation!r}) "
                                      f"is not supported.")
        rank = len(x.shape)
        extra = rank - len(letters)
        if extra < 0 or (extra and not dots):
            raise ValueError(f"For 'einsum', operand {i} {term!r} of {equation!r} names "
                             f"{len(letters)} dims, but it has rank {rank}.")
        ellipsis_dims = max(ellipsis_dims, extra)
        labels.append(list(head) + [(_ELLIPSIS, extra - 1 - k) for k in range(extra)]
                      + list(tail))
    ell = [(_ELLIPSIS, ellipsis_dims - 1 - k) for k in range(ellipsis_dims)]
    if arrow:
        head, dots, tail = out.partition(_ELLIPSIS)
        letters = head + tail
        used = {c for lab in labels for c in lab}
        if not all(c in used for c in letters) or len(set(letters)) != len(letters) \
                or _ELLIPSIS in tail:
            raise ValueError(f"For 'einsum', the output {out!r} of {equation!r} should name "
                             f"each index of the operands at most once, and nothing else.")
        if ell and not dots:
            raise ValueError(f"For 'einsum', the output {out!r} of {equation!r} should hold "
                             f"'...' when an operand does (its dims are not summed).")
        return labels, list(head) + (ell if dots else []) + list(tail)
    counts: dict = {}
    for lab in labels:
        for c in lab:
            counts[c] = counts.get(c, 0) + 1
    once = sorted(c for c, n in counts.items() if n == 1 and isinstance(c, str))
    return labels, ell + once


def _sizes(equation: str, operands: Sequence[Any], labels: list) -> dict:
    sizes: dict = {}
    for x, lab in zip(operands, labels):
        for c, n in zip(lab, x.shape):
            if sizes.setdefault(c, n) != n:
                what = "the dims '...' stands for" if isinstance(c, tuple) else f"index '{c}'"
                raise ValueError(f"For 'einsum', {what} should have one size in every operand "
                                 f"of {equation!r} (no broadcasting), but got {sizes[c]} and "
                                 f"{n}.")
    return sizes


def _transpose(x: Any, labels: list, order: list) -> Any:
    perm = tuple(labels.index(c) for c in order)
    return x if perm == tuple(range(len(perm))) else _prim(Transpose)(x, perm)


def _reshape(x: Any, shape: tuple) -> Any:
    return x if tuple(x.shape) == tuple(shape) else _prim(Reshape)(x, shape)


def _sum_out(x: Any, labels: list, keep: set) -> tuple[Any, list]:
    """x summed over the indices not in `keep`."""
    axes = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not axes:
        return x, labels
    return _prim(ReduceSum, False)(x, axes), [c for c in labels if c in keep]


def _contract(x: Any, xl: list, y: Any, yl: list, keep: set, sizes: dict) -> tuple[Any, list]:
    """x * y summed over their shared indices not in `keep`, by one (batch) matmul."""
    x, xl = _sum_out(x, xl, keep | set(yl))
    y, yl = _sum_out(y, yl, keep | set(xl))
    batch = [c for c in xl if c in yl and c in keep]
    summed = [c for c in xl if c in yl and c not in keep]
    left = [c for c in xl if c not in yl]
    right = [c for c in yl if c not in xl]

    def size(group: list) -> int:
        return math.prod(sizes[c] for c in group)
    lead = (size(batch),) if batch else ()
    a = _reshape(_transpose(x, xl, batch + left + summed), lead + (size(left), size(summed)))
    b = _reshape(_transpose(y, yl, batch + summed + right), lead + (size(summed), size(right)))
    out = _prim(BatchMatMul if batch else MatMul)(a, b)
    labels = batch + left + right
    return _reshape(out, tuple(sizes[c] for c in labels)), labels


def einsum(equation: str, *operands: Any) -> Any:
    """The sum over the equation's contracted indices of the product of `operands`
    ("ij,jk->ik" a matmul, "bhqd,bhkd->bhqk" attention scores, "ii" is not supported). With
    no '->', the output holds the indices that appear once, in alphabetical order."""
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("For 'einsum', the 'operands' should hold at least one Tensor, but "
                         "got none.")
    labels, out = _terms(equation, operands)
    sizes = _sizes(equation, operands, labels)
    for x in operands[1:]:
        if x.dtype != operands[0].dtype:
            raise TypeError(f"For 'einsum', the operands should have one dtype, but got "
                            f"{operands[0].dtype} and {x.dtype}.")
    acc, acc_labels = operands[0], labels[0]
    for i in range(1, len(operands)):
        later = {c for lab in labels[i + 1:] for c in lab} | set(out)
        acc, acc_labels = _contract(acc, acc_labels, operands[i], labels[i], later, sizes)
    acc, acc_labels = _sum_out(acc, acc_labels, set(out))
    return _transpose(acc, acc_labels, out)
