"""Device-matrix arithmetic against hand-written rank lists and numpy's row-major order."""
import math

import numpy as np
import pytest

from msops.parallel.device_matrix import (axis_coordinate, axis_groups, axis_position,
                                          axis_size, axis_stride, common_device_matrix,
                                          groups_over, rank_strides)

# dm (2, 3, 2): rank = 6*i + 2*j + k for coordinates (i, j, k); device axis 0 is k (the
# rightmost), axis 1 is j, axis 2 is i.
DM = (2, 3, 2)


def test_axes_are_counted_from_the_right():
    assert [axis_size((2, 3, 4), k) for k in range(3)] == [4, 3, 2]
    assert [axis_position((2, 3, 4), k) for k in range(3)] == [2, 1, 0]
    assert rank_strides((2, 3, 4)) == [1, 4, 12, 24]
    assert [axis_stride((2, 3, 4), k) for k in range(3)] == [1, 4, 12]


def test_axis_coordinate():
    # rank 22 of (2, 3, 4) is 1*12 + 2*4 + 2: coordinates (1, 2, 2)
    assert [axis_coordinate((2, 3, 4), k, 22) for k in range(3)] == [2, 2, 1]


@pytest.mark.parametrize("axis,groups", [
    (0, ((0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11))),
    (1, ((0, 2, 4), (1, 3, 5), (6, 8, 10), (7, 9, 11))),
    (2, ((0, 6), (1, 7), (2, 8), (3, 9), (4, 10), (5, 11))),
])
def test_axis_groups_by_hand(axis, groups):
    assert axis_groups(DM, axis) == groups
    assert groups_over(DM, (axis,)) == groups


@pytest.mark.parametrize("dm,axes,groups", [
    (DM, (0, 2), ((0, 1, 6, 7), (2, 3, 8, 9), (4, 5, 10, 11))),        # i major, k minor
    (DM, (2, 0), ((0, 1, 6, 7), (2, 3, 8, 9), (4, 5, 10, 11))),        # order given: same
    ((2, 2, 2), (1, 2), ((0, 2, 4, 6), (1, 3, 5, 7))),
    ((2, 2, 2), (0, 1, 2), ((0, 1, 2, 3, 4, 5, 6, 7),)),
])
def test_groups_over_several_axes_by_hand(dm, axes, groups):
    assert groups_over(dm, axes) == groups


@pytest.mark.parametrize("dm", [(2, 3, 2), (4, 1, 2), (3,), (2, 2, 2, 2)])
def test_axis_groups_are_the_ranks_differing_in_one_coordinate(dm):
    n = math.prod(dm)
    for axis in range(len(dm)):
        pos = -1 - axis                       # the convention: device axes from the right
        groups = axis_groups(dm, axis)
        assert sorted(r for g in groups for r in g) == list(range(n))
        for g in groups:
            cs = [np.unravel_index(r, dm) for r in g]                    # numpy's row-major
            assert [c[pos] for c in cs] == list(range(dm[pos]))         # ordered by coordinate
            others = {tuple(v for p, v in enumerate(c) if p != len(dm) + pos) for c in cs}
            assert len(others) == 1


def test_common_device_matrix():
    assert common_device_matrix((4, 2, 1), (2, 4, 1)) == (2, 2, 2)
    assert common_device_matrix((4, 1), (1, 1, 4)) == (4,)
    assert common_device_matrix((64, 64), (512, 8)) == (64, 8, 8)
    assert common_device_matrix((2, 3), (3, 2)) is None
    assert common_device_matrix((2, 4), (4,)) is None                 # 8 vs 4 devices
    assert common_device_matrix((1,), (1, 1)) == ()
