"""What batch rules share: moving a batch axis, aligning inputs, and the per-element path.

A batch rule (`@batch_rule(Cls)`, kind "batch" in rules.py) maps one primitive call over
a batch axis (vmap, graph/batching.py runs them): given the call's arguments, each one's
batch axis (`dims`: None when not batched; a tuple for a tuple argument) and the batch
size, it calls ordinary primitives and returns (output, output's batch axis). The
helpers here build those calls; values are anything a primitive takes (Tensors eagerly,
traced Tensors in a graph), read only through `.shape`.

`per_element` is the path of an op without a rule: the op once per batch element on
that element's slices (Unstack), the results stacked (Stack) at axis 0. It is correct
for every op, and slow: size calls instead of one.
"""
from __future__ import annotations

from typing import Any, Sequence

from msops.common import validator

__all__ = ["move_dim", "to_front", "rank_of", "pad_to_rank", "align_front", "broadcast_front",
           "with_attrs", "element_axis", "per_element", "fold_batch", "elementwise_batch",
           "leading_batch", "same_dim_batch"]


def rank_of(x: Any) -> int:
    return len(x.shape)


def move_dim(x: Any, src: int, dst: int) -> Any:
    """`x` with its axis `src` moved to `dst` (one Transpose; x itself when already there)."""
    from msops.primitives.array_ops import Transpose
    n = rank_of(x)
    src, dst = src % n, dst % n
    if src == dst:
        return x
    perm = [d for d in range(n) if d != src]
    perm.insert(dst, src)
    return Transpose()(x, tuple(perm))


def to_front(x: Any, dim: int) -> Any:
    """`x` with its batch axis `dim` moved to axis 0."""
    return move_dim(x, dim, 0)


def pad_to_rank(x: Any, rank: int) -> Any:
    """A batched `x` (batch axis 0) with dims of 1 inserted after the batch axis until each
    element has `rank` dims, so numpy broadcasting aligns elements, not the batch axis."""
    from msops.primitives.array_ops import Reshape
    shape = tuple(x.shape)
    missing = rank - (len(shape) - 1)
    if missing <= 0:
        return x
    return Reshape()(x, shape[:1] + (1,) * missing + shape[1:])


def align_front(args: Sequence[Any], dims: Sequence[Any], rank: int | None = None) -> list:
    """The batched arguments moved to axis 0 and padded to `rank` element dims (default:
    the largest element rank among the batched and unbatched ones); unbatched ones as they
    are (their rank is below the batched ones', so they broadcast against the elements)."""
    if rank is None:
        rank = max((rank_of(a) - (d is not None) for a, d in zip(args, dims)
                    if _is_value(a)), default=0)
    return [pad_to_rank(to_front(a, d), rank) if d is not None else a
            for a, d in zip(args, dims)]


def broadcast_front(x: Any, dim: int | None, size: int) -> Any:
    """`x` batched at axis 0: moved there, or (unbatched) repeated `size` times there."""
    from msops.primitives.shape_ops import BroadcastTo, ExpandDims
    if dim is not None:
        return to_front(x, dim)
    return BroadcastTo((size,) + tuple(x.shape))(ExpandDims()(x, 0))


def with_attrs(prim: Any, **changes: Any) -> Any:
    """A new primitive of `prim`'s class with its `__init__` arguments, `changes` applied."""
    attrs = dict(prim.init_attrs)
    attrs.update(changes)
    return type(prim)(**attrs)


def element_axis(prim: Any, axis: int, ndim: int, arg: str = "axis") -> int:
    """A per-element `axis` of an element of `ndim` dims, as an axis of the batched value
    (batch axis 0): normalised, then shifted past the batch axis."""
    return validator.check_axis_in_range(axis, ndim, arg, prim.name) + 1


def _is_value(a: Any) -> bool:
    return hasattr(a, "shape") and not isinstance(a, (tuple, list))


def per_element(prim: Any, args: Sequence[Any], dims: Sequence[Any], size: int) -> tuple:
    """The slow path, right for every op: `prim` on each batch element's slices of the
    batched arguments (the others as they are), the results stacked at axis 0. A random
    op draws anew for each element."""
    from msops.primitives.stack_ops import Stack, Unstack
    slices = []
    for a, d in zip(args, dims):
        if isinstance(d, tuple):                  # a tuple argument: per part
            parts = [Unstack(d_k)(t) if d_k is not None else None for t, d_k in zip(a, d)]
            slices.append([tuple(t if p is None else p[b] for t, p in zip(a, parts))
                           for b in range(size)])
        elif d is not None:
            slices.append(Unstack(d)(a))
        else:
            slices.append(None)
    results = [prim(*[a if s is None else s[b] for a, s in zip(args, slices)])
               for b in range(size)]
    first = results[0]
    if first is None:                             # an op without outputs (Print)
        return None, None
    if isinstance(first, tuple):
        return (tuple(Stack(0)(tuple(r[k] for r in results)) for k in range(len(first))),
                (0,) * len(first))
    return Stack(0)(tuple(results)), 0


def elementwise_batch(prim: Any, args: Sequence[Any], dims: Sequence[Any], size: int) -> tuple:
    """A broadcasting element-wise op: batched inputs moved to axis 0 and padded to the
    largest element rank; constants as they are."""
    tensors = [i for i, a in enumerate(args) if i not in prim.const_inputs and _is_value(a)]
    aligned = align_front([args[i] for i in tensors], [dims[i] for i in tensors])
    call = list(args)
    for i, a in zip(tensors, aligned):
        call[i] = a
    return prim(*call), 0


def leading_batch(prim: Any, args: Sequence[Any], dims: Sequence[Any], size: int) -> tuple:
    """An op mapping over leading dims its tensor inputs share (matrix ops on (..., n, n),
    element-wise ops taking one shape): every tensor input batched at axis 0, the unbatched
    ones repeated; every output batched at 0."""
    call = [a if i in prim.const_inputs or not _is_value(a) else broadcast_front(a, d, size)
            for i, (a, d) in enumerate(zip(args, dims))]
    out = prim(*call)
    return out, (0,) * len(out) if isinstance(out, tuple) else 0


def fold_batch(*folded: int) -> Any:
    """The rule of an op treating the leading dim (N) of its inputs at `folded` as
    independent items (convolution, pooling): those inputs batched at axis 0 (repeated when
    unbatched) with the batch folded into N, the op once, the output unfolded. A batched
    input elsewhere (a per-element conv weight) runs per element."""
    def rule(prim: Any, args: Sequence[Any], dims: Sequence[Any], size: int) -> tuple:
        from msops.primitives.array_ops import Reshape
        others = [d for i, d in enumerate(dims) if i not in folded]
        if any(d is not None for d in others) or \
                any(rank_of(args[i]) - (dims[i] is not None) < 1 for i in folded):
            return per_element(prim, args, dims, size)
        call = list(args)
        for i in folded:
            x = broadcast_front(args[i], dims[i], size)
            call[i] = Reshape()(x, (size * x.shape[1],) + tuple(x.shape[2:]))
        out = prim(*call)

        def unfold(o: Any) -> Any:
            return Reshape()(o, (size, o.shape[0] // size) + tuple(o.shape[1:]))
        if isinstance(out, tuple):
            return tuple(unfold(o) for o in out), (0,) * len(out)
        return unfold(out), 0
    return rule


def same_dim_batch(prim: Any, args: Sequence[Any], dims: Sequence[Any], size: int) -> tuple:
    """An op acting on each element of its one tensor input alone (a cast, an identity):
    the call as it is, the batch axis where it was."""
    return prim(*args), dims[0]
