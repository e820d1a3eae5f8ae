"""Sharding rules: one dim-spec function per op family.

A primitive declares its family in the class attribute `sharding` ("elementwise",
"matmul", "reduce", "softmax", "batchnorm", "transpose", "concat", "split", "slice",
"onehot", "reshape"). Each rule returns the einsum-like `DimSpec` of one application,
from the prim's attrs, the global input/output shapes and the const inputs; the
partitioner turns it into layouts with `strategy.shard`.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from msops.parallel.strategy import DimSpec
from msops.primitives.math_ops import reduce_axes

__all__ = ["spec_of", "RULES"]

Shape = Sequence[int]


def _dims(n: int, offset: int = 0, prefix: str = "d") -> tuple:
    return tuple(f"{prefix}{offset + j}" for j in range(n))


def _broadcast_letters(shape: Shape, out: Shape, prefix: str = "d") -> tuple:
    """Letters of an input aligned to the output from the right; None where it broadcasts."""
    off = len(out) - len(shape)
    return tuple(None if (shape[j] == 1 and out[j + off] != 1) else f"{prefix}{j + off}"
                 for j in range(len(shape)))


def elementwise(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    out = outs[0]
    return DimSpec(tuple(_broadcast_letters(s, out) for s in ins), (_dims(len(out)),))


def matmul(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    ta, tb = prim.attrs.get("transpose_a", False), prim.attrs.get("transpose_b", False)
    a_mk = ("k", "m") if ta else ("m", "k")
    b_kn = ("n", "k") if tb else ("k", "n")
    out = outs[0]
    batch_out = out[:-2]
    a_batch = _broadcast_letters(ins[0][:-2], batch_out, "b")
    b_batch = _broadcast_letters(ins[1][:-2], batch_out, "b")
    return DimSpec((a_batch + a_mk, b_batch + b_kn), (_dims(len(batch_out), 0, "b") + ("m", "n"),),
                   reduction_name="reduction dim")


def reduce(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    x = ins[0]
    axes = reduce_axes(prim.name, len(x), consts.get(1, ()))
    letters = _dims(len(x))
    keep = prim.attrs.get("keep_dims", False)
    out = tuple((None if j in axes else l) for j, l in enumerate(letters)) if keep else \
        tuple(l for j, l in enumerate(letters) if j not in axes)
    return DimSpec((letters,), (out,))


def softmax(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    if len(ins) == 2:    # SoftmaxCrossEntropyWithLogits(logits, labels): a split class dim
        return DimSpec((("n", "c"), ("n", "c")), (("n",), ("n", "c")))  # is reduced across
    letters = _dims(len(ins[0]))
    axis = prim.attrs.get("axis", -1)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    bad = tuple((letters[a % len(letters)], f"Softmax normalises along axis {a}")
                for a in axes)
    return DimSpec((letters,), (letters,), unsplittable=bad)


def batchnorm(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    ndim = len(ins[0])
    x = tuple("c" if d == prim.channel_axis(ndim) else f"d{d}" for d in range(ndim))
    c = ("c",)
    return DimSpec((x, c, c, c, c), (x, c, c, c, c))


def transpose(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    letters = _dims(len(ins[0]))
    perm = consts[1]
    return DimSpec((letters,), (tuple(letters[p] for p in perm),))


def _axis_fixed(ins: list, outs: list, axis: int, what: str, n_out: int) -> DimSpec:
    letters = _dims(len(ins[0]))
    a = axis % len(letters)
    return DimSpec(tuple(letters for _ in ins), tuple(letters for _ in range(n_out)),
                   unsplittable=((letters[a], f"{what} along axis {axis}"),))


def concat(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    return _axis_fixed(ins, outs, prim.attrs.get("axis", 0), "Concat joins", 1)


def split(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    return _axis_fixed(ins, outs, prim.attrs.get("axis", 0), "Split cuts", len(outs))


def strided_slice(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """Only dims taken whole may stay split; a cut or shrunk dim must be whole on every rank.
    (A whole dim's global bounds clamp to the whole local block, so consts stay as they are.)"""
    x = ins[0]
    letters = _dims(len(x))
    index, _ = prim.index(x, consts[1], consts[2], consts[3])
    bad, out, dim = [], [], 0
    for entry in index:
        if entry is None:                         # a new axis
            out.append(None)
            continue
        letter = letters[dim]
        if isinstance(entry, slice):
            out.append(letter)
            if entry.indices(x[dim]) != (0, x[dim], 1):
                bad.append((letter, f"StridedSlice cuts dim {dim}"))
        else:
            bad.append((letter, f"StridedSlice shrinks dim {dim}"))
        dim += 1
    return DimSpec((letters,), (tuple(out) + letters[dim:],), unsplittable=tuple(bad))


def onehot(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    idx = _dims(len(ins[0]))
    axis = prim.attrs.get("axis", -1)
    out = list(idx)
    out.insert(len(idx) if axis == -1 else axis, None)
    return DimSpec((idx,) + tuple(() for _ in ins[1:]), (tuple(out),))


RULES: dict[str, Callable[..., DimSpec]] = {
    "elementwise": elementwise, "matmul": matmul, "reduce": reduce, "softmax": softmax,
    "batchnorm": batchnorm, "transpose": transpose, "concat": concat, "split": split,
    "slice": strided_slice, "onehot": onehot,
}


def spec_of(prim: Any, ins: list, outs: list, consts: dict) -> DimSpec:
    """The dim spec of `prim` applied to tensor inputs of shapes `ins` giving `outs`."""
    family = getattr(prim, "sharding", None)
    if family not in RULES:
        raise ValueError(f"For '{prim.name}', there is no sharding rule (family "
                         f"{family!r}); it cannot run in a parallel graph.")
    return RULES[family](prim, [tuple(s) for s in ins], [tuple(s) for s in outs], consts)
