"""validator: every check passes its value through, or fails with the exact MindSpore message."""
import re

import pytest

import msops as ms
from msops.common import dtype as mstype
from msops.common import validator as v
from msops.common.validator import Rel


def exactly(exc: type, message: str):
    """pytest.raises that matches the whole message, character for character."""
    return pytest.raises(exc, match="^" + re.escape(message) + "$")


@pytest.mark.parametrize("rel,a,b,holds", [
    (Rel.EQ, 2, 2, True), (Rel.EQ, 2, 3, False), (Rel.NE, 2, 3, True), (Rel.NE, 2, 2, False),
    (Rel.LT, 2, 3, True), (Rel.LT, 3, 3, False), (Rel.LE, 3, 3, True), (Rel.LE, 4, 3, False),
    (Rel.GT, 4, 3, True), (Rel.GT, 3, 3, False), (Rel.GE, 3, 3, True), (Rel.GE, 2, 3, False),
])
def test_check_each_relation(rel, a, b, holds):
    if holds:
        assert v.check("a", a, "b", b, rel, "Op") == a
    else:
        with exactly(ValueError, f"For 'Op', the 'a' should be {rel.value} b: {b}, but got {a}."):
            v.check("a", a, "b", b, rel, "Op")


def test_check_message_of_allgather_rank():
    assert v.check("rank", 1, "rank_size", 2, Rel.LT, "AllGather") == 1
    with exactly(ValueError, "For 'AllGather', the 'rank' should be < rank_size: 2, but got 3."):
        v.check("rank", 3, "rank_size", 2, Rel.LT, "AllGather")


def test_check_without_op_name_and_custom_exception():
    with exactly(ValueError, "The 'x' should be == y: 2, but got 1."):
        v.check("x", 1, "y", 2)
    with exactly(IndexError, "For 'Op', the 'dim' should be < ndim: 2, but got 5."):
        v.check("dim", 5, "ndim", 2, Rel.LT, "Op", IndexError)
    assert v.prefix("Op") == "For 'Op', " and v.prefix(None) == ""


def test_check_value_type():
    assert v.check_value_type("group", "g", str, "AllGather") == "g"
    assert v.check_value_type("x", 1.5, (int, float), "Op") == 1.5
    assert v.check_value_type("flag", True, bool, "Op") is True
    assert v.check_value_type("x", True, [int, bool], "Op") is True
    with exactly(TypeError, "For 'AllGather', the type of 'group' should be str, but got int."):
        v.check_value_type("group", 1, str, "AllGather")
    with exactly(TypeError,
                 "For 'Op', the type of 'x' should be one of [int, float], but got str."):
        v.check_value_type("x", "1", (int, float), "Op")
    with exactly(TypeError, "For 'Op', the type of 'n' should be int, but got bool."):
        v.check_value_type("n", True, int, "Op")          # bool is not an int here


def test_check_int_and_bool():
    assert v.check_int("n", 3, "Op") == 3
    with exactly(TypeError, "For 'Op', the type of 'n' should be int, but got float."):
        v.check_int("n", 3.0, "Op")
    assert v.check_bool("mean_flag", False, "Op") is False
    with exactly(TypeError, "For 'Op', the type of 'mean_flag' should be bool, but got int."):
        v.check_bool("mean_flag", 1, "Op")


def test_check_string():
    assert v.check_string("op", "sum", ["sum", "max"], "AllReduce") == "sum"
    with exactly(ValueError, "For 'AllReduce', the 'op' should be one of ['sum', 'max'], "
                             "but got 'avg'."):
        v.check_string("op", "avg", ["sum", "max"], "AllReduce")
    with exactly(TypeError, "For 'AllReduce', the type of 'op' should be str, but got int."):
        v.check_string("op", 0, ["sum"], "AllReduce")


def test_check_positive_and_non_negative_int():
    assert v.check_positive_int(1, "split_count", "AlltoAll") == 1
    with exactly(ValueError, "For 'AlltoAll', the 'split_count' should be a positive int, "
                             "but got 0."):
        v.check_positive_int(0, "split_count", "AlltoAll")
    with exactly(TypeError, "For 'AlltoAll', the type of 'split_count' should be int, "
                            "but got float."):
        v.check_positive_int(2.0, "split_count", "AlltoAll")
    assert v.check_non_negative_int(0, "fusion", "AllGather") == 0
    with exactly(ValueError, "For 'AllGather', the 'fusion' should be a non-negative int, "
                             "but got -1."):
        v.check_non_negative_int(-1, "fusion", "AllGather")


@pytest.mark.parametrize("rel,inside,outside,text", [
    (Rel.INC_LEFT, [0, 4], [-1, 5], "in [0, 5)"),
    (Rel.INC_RIGHT, [1, 5], [0, 6], "in (0, 5]"),
    (Rel.INC_BOTH, [0, 5], [-1, 6], "in [0, 5]"),
    (Rel.INC_NEITHER, [1, 4], [0, 5], "in (0, 5)"),
])
def test_check_int_range(rel, inside, outside, text):
    for value in inside:
        assert v.check_int_range(value, 0, 5, rel, "root_rank", "Broadcast") == value
    for value in outside:
        with exactly(ValueError, f"For 'Broadcast', the 'root_rank' should be {text}, "
                                 f"but got {value}."):
            v.check_int_range(value, 0, 5, rel, "root_rank", "Broadcast")


def test_check_int_range_type_and_exception_class():
    with exactly(TypeError, "For 'Op', the type of 'k' should be int, but got str."):
        v.check_int_range("1", 0, 5, Rel.INC_LEFT, "k", "Op")
    with exactly(IndexError, "The 'k' should be in [0, 5), but got 7."):
        v.check_int_range(7, 0, 5, Rel.INC_LEFT, "k", None, IndexError)


def test_check_axis_in_range_normalises():
    assert [v.check_axis_in_range(a, 3, "axis", "Concat") for a in (-3, -1, 0, 2)] == [0, 2, 0, 2]
    with exactly(ValueError, "For 'Concat', the 'axis' should be in [-3, 3), but got 3."):
        v.check_axis_in_range(3, 3, "axis", "Concat")
    with exactly(ValueError, "For 'AlltoAll', the 'split_dim' should be in [-2, 2), but got -3."):
        v.check_axis_in_range(-3, 2, "split_dim", "AlltoAll")
    with exactly(TypeError, "For 'Concat', the type of 'axis' should be int, but got float."):
        v.check_axis_in_range(1.0, 3, "axis", "Concat")


def test_check_tensor_dtype_valid():
    floats = [ms.float16, ms.float32]
    assert v.check_tensor_dtype_valid("x", ms.float32, floats, "ReLU") is ms.float32
    with exactly(TypeError, "For 'ReLU', the 'x' should be a Tensor with dtype in "
                            "[Float16, Float32], but got Int8."):
        v.check_tensor_dtype_valid("x", ms.int8, floats, "ReLU")
    with exactly(TypeError, "For 'ReLU', the 'x' should be a Tensor, but got int."):
        v.check_tensor_dtype_valid("x", 3, floats, "ReLU")
    with exactly(TypeError, "For 'AllGather', the 'x' should be a Tensor with dtype in "
                            f"{list(mstype.all_types)}, but got String."):
        v.check_tensor_dtype_valid("x", ms.string, mstype.all_types, "AllGather")


def test_check_type_name():
    assert v.check_type_name("dst_type", ms.int8, [ms.int8, ms.float32], "Cast") is ms.int8
    with exactly(TypeError, "For 'Cast', the 'dst_type' should be one of [Int8, Float32], "
                            "but got String."):
        v.check_type_name("dst_type", ms.string, [ms.int8, ms.float32], "Cast")
