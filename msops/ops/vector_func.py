"""Per-vector functions with `mindspore.ops`' names, arguments and defaults: cosine_similarity,
renorm and batch_dot. Composites of reductions, element-wise primitives and a BatchMatMul: a
split reduced dim is combined by its reduction's AllReduce, and they differentiate through
their primitives."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.ops.array_func import reshape, transpose
from msops.primitives.math_ops import BatchMatMul
from msops.primitives.elementwise_ops import Greater, Maximum, Pow, Select, Sqrt
from msops.primitives.math_ops import Add, Mul, RealDiv, ReduceSum, Square
from msops.primitives.unary_ops import Abs

__all__ = ["cosine_similarity", "renorm", "batch_dot"]


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-08) -> Any:
    """sum(x1 * x2) / max(||x1|| * ||x2||, eps) along dim (the 2-norms); x1 and x2 of one
    shape and one float dtype (no broadcasting, as MindSpore's)."""
    for arg, v in (("x1", x1), ("x2", x2)):
        check_tensor("cosine_similarity", arg, v)
        validator.check_tensor_dtype_valid(arg, v.dtype, mstype.float_type,
                                           "cosine_similarity")
    if tuple(x1.shape) != tuple(x2.shape):
        raise ValueError(f"For 'cosine_similarity', the 'x1' and 'x2' should have one shape, "
                         f"but got {list(x1.shape)} and {list(x2.shape)}.")
    validator.check_value_type("eps", eps, (float, int), "cosine_similarity")
    dim = validator.check_axis_in_range(dim, max(len(x1.shape), 1), "dim", "cosine_similarity")
    dot = _prim(ReduceSum)(_prim(Mul)(x1, x2), dim)
    norms = _prim(Mul)(_prim(Sqrt)(_prim(ReduceSum)(_prim(Square)(x1), dim)),
                       _prim(Sqrt)(_prim(ReduceSum)(_prim(Square)(x2), dim)))
    return _prim(RealDiv)(dot, _prim(Maximum)(norms, float(eps)))


def renorm(input: Any, p: int, axis: int, maxnorm: float) -> Any:
    """input with each sub-tensor along axis (input[i] for axis 0) whose p-norm exceeds
    maxnorm scaled down to norm maxnorm: by maxnorm / (norm + 1e-7), as MindSpore's."""
    check_tensor("renorm", "input", input)
    validator.check_tensor_dtype_valid("input", input.dtype, mstype.float_type, "renorm")
    validator.check_value_type("p", p, (int,), "renorm")
    validator.check_value_type("maxnorm", maxnorm, (float, int), "renorm")
    if p <= 0:
        raise ValueError(f"For 'renorm', the 'p' should be > 0, but got {p}.")
    if maxnorm < 0:
        raise ValueError(f"For 'renorm', the 'maxnorm' should be >= 0, but got {maxnorm}.")
    axis = validator.check_axis_in_range(axis, max(len(input.shape), 1), "axis", "renorm")
    others = tuple(d for d in range(len(input.shape)) if d != axis)
    powered = _prim(Abs)(input) if p == 1 else _prim(Pow)(_prim(Abs)(input), float(p))
    norm = _prim(ReduceSum, True)(powered, others)
    if p != 1:
        norm = _prim(Pow)(norm, 1.0 / p)
    scale = _prim(RealDiv)(float(maxnorm), _prim(Add)(norm, 1e-7))
    factor = _prim(Select)(_prim(Greater)(norm, float(maxnorm)), scale,
                           _prim(Add)(_prim(Mul)(norm, 0.0), 1.0))
    return _prim(Mul)(input, factor)


def _batch_dot_axes(x1: Any, x2: Any, axes: Any) -> tuple:
    """The contracted dims (a, b) of x1 and x2, checked: MindSpore's default is x1's last dim
    with x2's last (x2 2-D) or second-to-last; an int n means (n, n)."""
    n1, n2 = len(x1.shape), len(x2.shape)
    if axes is None:
        axes = (n1 - 1, n2 - 1 if n2 == 2 else n2 - 2)
    elif isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes, axes)
    elif not (isinstance(axes, (tuple, list)) and len(axes) == 2 and
              all(isinstance(a, int) and not isinstance(a, bool) for a in axes)):
        raise ValueError(f"For 'batch_dot', the 'axes' should be None, an int or two ints, but "
                         f"got {axes!r}.")
    a, b = (validator.check_axis_in_range(v, n, "axes", "batch_dot")
            for v, n in zip(axes, (n1, n2)))
    if a == 0 or b == 0:
        raise ValueError(f"For 'batch_dot', the 'axes' should not name the batch dim 0, but got "
                         f"{tuple(axes)}.")
    if x1.shape[a] != x2.shape[b]:
        raise ValueError(f"For 'batch_dot', the contracted dims should have one size, but got "
                         f"x1's dim {a} of {x1.shape[a]} and x2's dim {b} of {x2.shape[b]}.")
    return a, b


def batch_dot(x1: Any, x2: Any, axes: Any = None) -> Any:
    """Per batch element (dim 0), the dot product of x1 and x2 over one dim each: the output
    is (batch, x1's other dims, x2's other dims), (batch, 1) when nothing else is left (two
    2-D inputs). A BatchMatMul of the inputs with the contracted dims moved inward."""
    for arg, v in (("x1", x1), ("x2", x2)):
        check_tensor("batch_dot", arg, v)
        validator.check_tensor_dtype_valid(arg, v.dtype, mstype.float_type, "batch_dot")
        if len(v.shape) < 2:
            raise ValueError(f"For 'batch_dot', the '{arg}' should have rank >= 2, but got "
                             f"shape {list(v.shape)}.")
    if x1.dtype != x2.dtype:
        raise TypeError(f"For 'batch_dot', the 'x1' and 'x2' should have one dtype, but got "
                        f"{x1.dtype} and {x2.dtype}.")
    if x1.shape[0] != x2.shape[0]:
        raise ValueError(f"For 'batch_dot', the batch dims should agree, but got "
                         f"{x1.shape[0]} and {x2.shape[0]}.")
    a, b = _batch_dot_axes(x1, x2, axes)
    rest1 = [d for d in range(1, len(x1.shape)) if d != a]
    rest2 = [d for d in range(1, len(x2.shape)) if d != b]
    batch, size = x1.shape[0], x1.shape[a]
    left = reshape(transpose(x1, tuple([0] + rest1 + [a])), (batch, -1, size))
    right = reshape(transpose(x2, tuple([0, b] + rest2)), (batch, size, -1))
    out = _prim(BatchMatMul)(left, right)
    shape = [x1.shape[d] for d in rest1] + [x2.shape[d] for d in rest2]
    return reshape(out, tuple([batch] + (shape or [1])))
