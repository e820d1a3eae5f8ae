"""Per-parameter ("layer-wise") norms and trust ratios of Lamb and LARS.

`norm(x)` is the 2-norm of all of x's elements, written as a reduction over every dim. In
a parallel step x is this rank's slice of a split or opt-sharded Parameter (or of its
gradient, or of state laid out like it): the step's tail (msops/parallel/local_tail.py)
completes that reduction over the ranks holding the other slices, so the ratio each rank
applies to its slice is the serial one.
"""
from __future__ import annotations

from typing import Any

from msops.ops._dispatch import _prim
from msops.primitives.elementwise_ops import Greater, Minimum, OnesLike, Select, Sqrt
from msops.primitives.math_ops import ReduceSum, Square

__all__ = ["norm", "both_positive", "ratio_where"]


def norm(x: Any) -> Any:
    """sqrt(sum(x**2)) over every element of x (a 0-d value of x's dtype)."""
    return _prim(Sqrt)(_prim(ReduceSum)(_prim(Square)(x), ()))


def both_positive(a: Any, b: Any) -> Any:
    """a > 0 and b > 0 (0-d values)."""
    return _prim(Greater)(_prim(Minimum)(a, b), a * 0.0)


def ratio_where(cond: Any, numer: Any, denom: Any) -> Any:
    """numer / denom where `cond`, else 1 (0-d values; denom is not read elsewhere, so a
    zero there is no division): e.g. a layer whose weights or gradient are all zero keeps
    its rate instead of a 0 or a NaN."""
    ones = _prim(OnesLike)(numer)
    return _prim(Select)(cond, numer / _prim(Select)(cond, denom, ones), ones)
