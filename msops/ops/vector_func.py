"""Per-vector functions with `mindspore.ops`' names, arguments and defaults: cosine_similarity
and renorm. Composites of reductions and element-wise primitives: a split reduced dim is
combined by its reduction's AllReduce, and they differentiate through their primitives."""
from __future__ import annotations

from typing import Any

from msops.common import dtype as mstype
from msops.common import validator
from msops.common.tensor import check_tensor
from msops.ops._dispatch import _prim
from msops.primitives.elementwise_ops import Greater, Maximum, Pow, Select, Sqrt
from msops.primitives.math_ops import Add, Mul, RealDiv, ReduceSum, Square
from msops.primitives.unary_ops import Abs

__all__ = ["cosine_similarity", "renorm"]


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
