"""MindSpore-style argument checks with uniform messages.

Every message has the shape `For '<op>', the '<arg>' should be <expected>, but got <got>.`
so a user can tell the op, the argument, what was expected and what was given.
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Iterable, Sequence

from msops.common import dtype as mstype

__all__ = ["Rel", "check", "check_value_type", "check_positive_int", "check_non_negative_int",
           "check_int", "check_int_range", "check_bool", "check_tensor_dtype_valid",
           "check_axis_in_range", "check_string", "check_type_name", "prefix"]


class Rel(Enum):
    """Relations between two values, spelled as in messages."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    INC_NEITHER = "in ({}, {})"
    INC_LEFT = "in [{}, {})"
    INC_RIGHT = "in ({}, {}]"
    INC_BOTH = "in [{}, {}]"

    def holds(self, a: Any, b: Any) -> bool:
        return {
            "==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
            "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
        }[self.value]()

    def holds_range(self, v: Any, lo: Any, hi: Any) -> bool:
        left = lo <= v if self in (Rel.INC_LEFT, Rel.INC_BOTH) else lo < v
        right = v <= hi if self in (Rel.INC_RIGHT, Rel.INC_BOTH) else v < hi
        return left and right


def prefix(prim_name: str | None) -> str:
    """`For 'Op', ` or `` when there is no op name."""
    return f"For '{prim_name}', " if prim_name else ""


def _sentence(prim_name: str | None, text: str) -> str:
    msg = prefix(prim_name) + text
    return msg[0].upper() + msg[1:] if not prim_name else msg


def check(arg_name: str, arg_value: Any, value_name: str, value: Any, rel: Rel = Rel.EQ,
          prim_name: str | None = None, excp_cls: type = ValueError) -> Any:
    """Check `arg_value <rel> value`; e.g. `the 'rank' should be < rank_size: 2, but got 3.`"""
    if not rel.holds(arg_value, value):
        raise excp_cls(_sentence(prim_name, f"the '{arg_name}' should be {rel.value} "
                                            f"{value_name}: {value}, but got {arg_value}."))
    return arg_value


def _type_names(types: Iterable[type]) -> str:
    names = [t.__name__ for t in types]
    return names[0] if len(names) == 1 else "one of [" + ", ".join(names) + "]"


def check_value_type(arg_name: str, arg_value: Any, valid_types: type | Sequence[type],
                     prim_name: str | None = None) -> Any:
    """Check `isinstance(arg_value, valid_types)`; bool is not accepted as int."""
    types = tuple(valid_types) if isinstance(valid_types, (list, tuple)) else (valid_types,)
    ok = isinstance(arg_value, types)
    if ok and isinstance(arg_value, bool) and bool not in types:
        ok = False
    if not ok:
        raise TypeError(_sentence(prim_name, f"the type of '{arg_name}' should be "
                                             f"{_type_names(types)}, but got "
                                             f"{type(arg_value).__name__}."))
    return arg_value


def check_type_name(arg_name: str, arg_type: mstype.Type, valid: Sequence[mstype.Type],
                    prim_name: str | None = None) -> mstype.Type:
    """Check that an msops Type is one of `valid`."""
    if arg_type not in valid:
        raise TypeError(_sentence(prim_name, f"the '{arg_name}' should be one of {list(valid)}, "
                                             f"but got {arg_type!r}."))
    return arg_type


def check_int(arg_name: str, arg_value: Any, prim_name: str | None = None) -> int:
    """Check that a value is a Python int (not bool)."""
    return check_value_type(arg_name, arg_value, int, prim_name)


def check_bool(arg_name: str, arg_value: Any, prim_name: str | None = None) -> bool:
    return check_value_type(arg_name, arg_value, bool, prim_name)


def check_string(arg_name: str, arg_value: Any, valid: Sequence[str],
                 prim_name: str | None = None) -> str:
    """Check that a string is one of `valid`."""
    check_value_type(arg_name, arg_value, str, prim_name)
    if arg_value not in valid:
        raise ValueError(_sentence(prim_name, f"the '{arg_name}' should be one of {list(valid)}, "
                                              f"but got '{arg_value}'."))
    return arg_value


def check_positive_int(arg_value: Any, arg_name: str, prim_name: str | None = None) -> int:
    """Check that a value is an int > 0 (MindSpore's argument order: value first)."""
    check_int(arg_name, arg_value, prim_name)
    if arg_value <= 0:
        raise ValueError(_sentence(prim_name, f"the '{arg_name}' should be a positive int, "
                                              f"but got {arg_value}."))
    return arg_value


def check_non_negative_int(arg_value: Any, arg_name: str, prim_name: str | None = None) -> int:
    check_int(arg_name, arg_value, prim_name)
    if arg_value < 0:
        raise ValueError(_sentence(prim_name, f"the '{arg_name}' should be a non-negative int, "
                                              f"but got {arg_value}."))
    return arg_value


def check_int_range(arg_value: Any, lower: int, upper: int, rel: Rel, arg_name: str,
                    prim_name: str | None = None, excp_cls: type = ValueError) -> int:
    """Check `arg_value` is an int within the range `rel` describes."""
    check_int(arg_name, arg_value, prim_name)
    if not rel.holds_range(arg_value, lower, upper):
        raise excp_cls(_sentence(prim_name, f"the '{arg_name}' should be "
                                            f"{rel.value.format(lower, upper)}, "
                                            f"but got {arg_value}."))
    return arg_value


def check_axis_in_range(axis: Any, ndim: int, arg_name: str = "axis",
                        prim_name: str | None = None) -> int:
    """Check an axis is an int in [-ndim, ndim) and return it normalised to [0, ndim)."""
    check_int(arg_name, axis, prim_name)
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(_sentence(prim_name, f"the '{arg_name}' should be in "
                                              f"[{-ndim}, {ndim}), but got {axis}."))
    return axis % ndim if ndim else 0


def check_tensor_dtype_valid(arg_name: str, arg_dtype: mstype.Type,
                             valid_dtypes: Sequence[mstype.Type],
                             prim_name: str | None = None) -> mstype.Type:
    """Check a tensor's dtype is one of `valid_dtypes` (TypeError otherwise)."""
    if not isinstance(arg_dtype, mstype.Type):
        raise TypeError(_sentence(prim_name, f"the '{arg_name}' should be a Tensor, "
                                             f"but got {type(arg_dtype).__name__}."))
    if arg_dtype not in valid_dtypes:
        raise TypeError(_sentence(prim_name, f"the '{arg_name}' should be a Tensor with dtype "
                                             f"in {list(valid_dtypes)}, but got {arg_dtype!r}."))
    return arg_dtype
