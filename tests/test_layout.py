"""TensorLayout against numpy: slices, device groups, replicas, validity, strategies."""
import doctest
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import msops.parallel.layout as layout_mod
from layout_cases import layout_pairs
from msops.parallel import TensorLayout
from msops.parallel.device_matrix import common_device_matrix


def _coords(rank, dm):
    return np.unravel_index(rank, dm)          # row-major: numpy's reference


def test_docstring_example():
    result = doctest.testmod(layout_mod)
    assert result.attempted > 0 and result.failed == 0


def test_slice_of_dm_2x4_map_1_minus1():
    full = np.arange(16 * 32).reshape(16, 32)
    lay = TensorLayout((2, 4), (1, -1), (16, 32))
    assert lay.slice_shape == (8, 32)
    for r in range(8):
        # dim 0 is split over axis 1 = device_matrix[0] = 2: the rank's first coordinate
        np.testing.assert_array_equal(full[lay.slice_of(r)], np.split(full, 2, axis=0)[r // 4])
        assert lay.slice_index(r) == (r // 4, 0)


def test_slice_of_counts_axes_from_the_right():
    full = np.arange(16 * 32).reshape(16, 32)
    lay = TensorLayout((2, 4), (0, 1), (16, 32))        # dim 0 over size 4, dim 1 over size 2
    assert lay.slice_shape == (4, 16)
    for r in range(8):
        c = _coords(r, (2, 4))
        ref = np.split(np.split(full, 4, axis=0)[c[1]], 2, axis=1)[c[0]]
        np.testing.assert_array_equal(full[lay.slice_of(r)], ref)


def test_slice_of_3d_with_a_replica_axis():
    full = np.arange(4 * 3 * 6).reshape(4, 3, 6)
    lay = TensorLayout((2, 3, 2), (0, -1, 2), (4, 3, 6))
    for r in range(12):
        c = _coords(r, (2, 3, 2))
        ref = np.split(np.split(full, 2, axis=0)[c[2]], 2, axis=2)[c[0]]
        np.testing.assert_array_equal(full[lay.slice_of(r)], ref)


@pytest.mark.parametrize("tmap,block", [
    (((1, 0), -1), lambda c: c[0] * 2 + c[1]),        # axis 1 major: block = rank
    (((0, 1), -1), lambda c: c[1] * 2 + c[0]),        # axis 0 major
])
def test_multi_axis_map_is_major_first(tmap, block):
    full = np.arange(8 * 3).reshape(8, 3)
    lay = TensorLayout((2, 2), tmap, (8, 3))
    assert lay.slice_shape == (2, 3)
    for r in range(4):
        np.testing.assert_array_equal(full[lay.slice_of(r)],
                                      np.split(full, 4, axis=0)[block(_coords(r, (2, 2)))])


def test_axis_groups_dm_2x4():
    lay = TensorLayout((2, 4), (1, -1), (16, 32))
    assert lay.axis_groups(0) == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert lay.axis_groups(1) == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert lay.group_of(6, 0) == (4, 5, 6, 7)
    assert lay.group_of(6, 1) == (2, 6)


def test_group_of_by_hand():
    lay = TensorLayout((2, 3, 2), (-1,), (1,))          # rank = 6*i + 2*j + k
    assert lay.group_of(7, 0) == (6, 7)                 # rank 7 = (1, 0, 1): k varies
    assert lay.group_of(7, 1) == (7, 9, 11)             # j varies
    assert lay.group_of(7, 2) == (1, 7)                 # i varies


def test_replica_axes_and_group():
    lay = TensorLayout((2, 4), (1, -1), (16, 32))
    assert lay.replica_axes() == (0,)
    assert lay.replica_group(5) == (4, 5, 6, 7)
    lay = TensorLayout((2, 3, 2), (1, -1), (3, 5))
    assert lay.replica_axes() == (0, 2)
    assert lay.replica_group(3) == (2, 3, 8, 9)           # coords (a, 1, c)
    assert TensorLayout((4,), (0,), (8,)).replica_group(2) == (2,)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 4, 6, 8]).flatmap(lambda n: layout_pairs(n)))
def test_replica_group_is_the_ranks_holding_the_same_slice(pair):
    lay, _ = pair
    full = np.arange(math.prod(lay.tensor_shape)).reshape(lay.tensor_shape)
    for r in range(lay.device_num):
        same = tuple(q for q in range(lay.device_num)
                     if np.array_equal(full[lay.slice_of(q)], full[lay.slice_of(r)]))
        assert lay.replica_group(r) == same


def test_equality_hash_and_canonical_map():
    a = TensorLayout([2, 4], [1, -1], [16, 32])
    b = TensorLayout((2, 4), ((1,), ()), (16, 32))
    assert a == b and hash(a) == hash(b) and a.tensor_map == (1, -1)
    assert a != TensorLayout((2, 4), (-1, 1), (16, 32))
    assert a != TensorLayout((4, 2), (1, -1), (16, 32))
    assert {a: 1}[b] == 1
    with pytest.raises(AttributeError):
        a.tensor_map = (0, -1)


def test_printable_form():
    assert str(TensorLayout((2, 4), (1, -1), (16, 32))) == "L[dm=(2,4) map=(1,-1) shape=(16,32)]"
    assert repr(TensorLayout((2, 2), ((1, 0),), (8,))) == "L[dm=(2,2) map=((1,0),) shape=(8,)]"


@pytest.mark.parametrize("args,exc,match", [
    (((2, 4), (2, -1), (16, 32)), ValueError,
     r"'tensor_map\[0\]' should be in \[-1, 2\), but got 2"),
    (((2, 4), (-2, -1), (16, 32)), ValueError,
     r"'tensor_map\[0\]' should be in \[-1, 2\), but got -2"),
    (((2, 4), (0, 0), (16, 32)), ValueError,
     r"each device axis at most once, but got axis 0 twice"),
    (((2, 4), ((0, 1), 1), (16, 32)), ValueError,
     r"each device axis at most once, but got axis 1"),
    (((3,), (0,), (16,)), ValueError,
     r"'tensor_shape\[0\]' should be divisible by 3 .*but got 16"),
    (((2, 2), ((1, 0),), (6,)), ValueError,
     r"'tensor_shape\[0\]' should be divisible by 4 .*but got 6"),
    (((2, 4), (1,), (16, 32)), ValueError,
     r"'len\(tensor_map\)' should be == len\(tensor_shape\): 2, but got 1"),
    (((0, 4), (1, -1), (16, 32)), ValueError,
     r"'device_matrix\[0\]' should be a positive int, but got 0"),
    (((2, 4), (1, -1), (16, -3)), ValueError,
     r"'tensor_shape\[1\]' should be a non-negative int"),
    (((2, 4), (1.0, -1), (16, 32)), TypeError,
     r"type of 'tensor_map\[0\]' should be int, but got float"),
    (((2, 4), (1, -1), 16), TypeError,
     r"type of 'tensor_shape' should be one of \[tuple, list\]"),
])
def test_invalid_layouts(args, exc, match):
    with pytest.raises(exc, match=match):
        TensorLayout(*args)


def test_rank_out_of_range():
    lay = TensorLayout((2, 4), (1, -1), (16, 32))
    with pytest.raises(ValueError, match=r"'rank' should be in \[0, 8\), but got 8"):
        lay.slice_of(8)


def test_from_strategy_uses_every_device():
    lay = TensorLayout.from_strategy((4, 1), (16, 32), 4)          # seed 001 BatchNorm input
    assert (lay.device_matrix, lay.tensor_map) == ((4, 1), (1, 0))
    assert lay.slice_shape == (4, 32) and lay.replica_axes() == ()


def test_from_strategy_appends_the_repeat_axis_on_the_right():
    full = np.arange(16 * 32).reshape(16, 32)
    lay = TensorLayout.from_strategy((2, 1), (16, 32), 8)
    assert (lay.device_matrix, lay.tensor_map) == ((2, 1, 4), (2, 1))
    assert lay.replica_axes() == (0,)
    for r in range(8):          # neighbouring ranks are replicas: rank r holds block r // 4
        np.testing.assert_array_equal(full[lay.slice_of(r)], np.split(full, 2)[r // 4])
        assert lay.replica_group(r) == tuple(range(r // 4 * 4, r // 4 * 4 + 4))


@pytest.mark.parametrize("args,match", [
    (((2, 3), (16, 32), 12),
     r"'tensor_shape\[1\]' should be divisible by strategy\[1\]: 3, but got 32"),
    (((2, 3), (16, 33), 4),
     r"'device_num' should be a multiple of the devices the strategy \(2, 3\) uses \(6\), "
     r"but got 4"),
    (((2,), (16, 32), 4), r"'len\(strategy\)' should be == len\(tensor_shape\): 2, but got 1"),
    (((0, 1), (16, 32), 4), r"'strategy\[0\]' should be a positive int, but got 0"),
    (((1, 1), (16, 32), 0), r"'device_num' should be a positive int, but got 0"),
])
def test_from_strategy_errors(args, match):
    with pytest.raises(ValueError, match=r"For 'TensorLayout.from_strategy', the " + match):
        TensorLayout.from_strategy(*args)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([2, 4, 8, 12]).flatmap(lambda n: layout_pairs(n)))
def test_refine_keeps_every_rank_slice(pair):
    src, dst = pair
    dm = common_device_matrix(src.device_matrix, dst.device_matrix)
    if dm is None:
        dm = common_device_matrix(src.device_matrix, src.device_matrix)
    fine = src.refine(dm)
    assert fine.device_matrix == dm and fine.slice_shape == src.slice_shape
    assert all(fine.slice_of(r) == src.slice_of(r) for r in range(src.device_num))


def test_refine_rejects_a_coarser_matrix():
    with pytest.raises(ValueError, match=r"'device_matrix' should refine \(2, 2\), but got \(4,\)"):
        TensorLayout((2, 2), (1, 0), (4, 4)).refine((4,))
