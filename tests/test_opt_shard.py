"""The parallel optimizer's storage plan (pure: layouts only): which replica axes a
Parameter's dim 0 is sharded over, for each `optimizer_weight_shard_size`."""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor
from msops.parallel.device_matrix import groups_over
from msops.parallel.layout import TensorLayout
from msops.parallel.opt_shard import opt_shard_plan


@pytest.fixture(autouse=True)
def _context():
    yield
    ms.reset_auto_parallel_context()


def param(shape):
    return Parameter(Tensor(np.zeros(shape, np.float32)), "w")


def plan(layout, size=-1, threshold=0):
    ms.set_auto_parallel_context(enable_parallel_optimizer=True, parallel_optimizer_config={
        "parallel_optimizer_threshold": threshold, "optimizer_weight_shard_size": size})
    return opt_shard_plan(param(layout.tensor_shape), layout)


# (device matrix, tensor map, shape, shard size) -> (stored map, stored device matrix,
# shard groups of rank 0's partition, stored slice shape)
CASES = [
    # replicated over 8: the whole group, or its minor 4 / 2 ranks (the axis cut in two)
    (((8,), (-1, -1), (16, 4), -1), ((8,), (0, -1), ((0, 1, 2, 3, 4, 5, 6, 7),), (2, 4))),
    (((8,), (-1, -1), (16, 4), 4), ((2, 4), (0, -1), ((0, 1, 2, 3), (4, 5, 6, 7)), (4, 4))),
    (((8,), (-1, -1), (16, 4), 2), ((4, 2), (0, -1), ((0, 1), (2, 3)), (8, 4))),
    (((8,), (-1, -1), (16, 4), 16), ((8,), (0, -1), ((0, 1, 2, 3, 4, 5, 6, 7),), (2, 4))),
    # cols over the major axis (2), replicated over the minor (4): shard over 2 of the 4
    (((2, 4), (-1, 1), (8, 6), 2), ((2, 2, 2), (0, 2), ((0, 1), (2, 3)), (4, 3))),
    # rows over axis 0 (2), replicated over axis 1 (4): dim 0 split (rows, then shard)
    (((4, 2), (0, -1), (8, 6), -1), ((4, 2), ((0, 1), -1), ((0, 2, 4, 6),), (1, 6))),
    # replicated over two axes (2, 2) with size 4: both whole axes, major first
    (((2, 2, 2), (-1, 1), (8, 6), 4), ((2, 2, 2), ((2, 0), 1), ((0, 1, 4, 5),), (2, 3))),
]


@pytest.mark.parametrize("given,want", CASES)
def test_stored_layout(given, want):
    dm, tmap, shape, size = given
    got = plan(TensorLayout(dm, tmap, shape), size)
    want_dm, want_map, groups, slice_shape = want
    assert got.stored.device_matrix == want_dm
    assert got.stored.tensor_map == want_map
    assert groups_over(got.stored.device_matrix, got.shard_axes)[:len(groups)] == groups
    assert got.stored.slice_shape == slice_shape
    # every rank's stored rows are a block of its consumer slice's rows
    consumer = TensorLayout(dm, tmap, shape)
    for r in range(int(np.prod(dm))):
        rows, inner = consumer.slice_of(r)[0], got.stored.slice_of(r)[0]
        assert rows.start <= inner.start and inner.stop <= rows.stop


def test_not_sharded():
    lay = TensorLayout((8,), (-1, -1), (12, 4))
    assert plan(lay, 8) is None                               # 12 rows do not divide by 8
    assert plan(lay, 4) is not None                           # by 4 they do
    assert plan(lay, threshold=1) is None                     # 192 bytes < 1 KB
    assert plan(TensorLayout((8,), (0, -1), (16, 4))) is None   # not replicated
    ms.set_auto_parallel_context(enable_parallel_optimizer=False)
    assert opt_shard_plan(param((16, 4)), TensorLayout((8,), (-1, -1), (16, 4))) is None


def test_errors():
    lay = TensorLayout((8,), (-1, -1), (48, 4))
    with pytest.raises(ValueError, match=r"For 'set_auto_parallel_context', the "
                       r"'optimizer_weight_shard_size' should divide the replica group of "
                       r"Parameter 'w' \(8 ranks\), but got 3\."):
        plan(lay, 3)
    with pytest.raises(ValueError, match=r"should cut the replica axes \(2, 3\) of Parameter "
                       r"'w' into groups of consecutive replicas, but got 3\."):
        plan(TensorLayout((3, 2), (-1, -1), (48, 4)), 3)
    with pytest.raises(ValueError, match=r"'optimizer_weight_shard_size' should be -1 or a "
                       r"positive int, but got 0"):
        plan(lay, 0)
