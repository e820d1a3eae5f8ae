"""Strategy checks and sharding rules: device matrices and tensor maps, worked by hand."""
import pytest

from msops import ops
from msops.parallel.strategy import data_parallel_strategy, shard
from msops.primitives.sharding import spec_of


def _shard(prim, in_shapes, out_shapes, strategy, n, consts=None):
    spec = spec_of(prim, in_shapes, out_shapes, consts or {})
    return shard(prim.name, spec, strategy, in_shapes, n)


def test_matmul_device_matrix_and_maps():
    # ((a, b), (b, c)) -> device matrix [a, b, c]; maps counted from the right
    sh = _shard(ops.MatMul(), [(16, 32), (32, 64)], [(16, 64)], ((2, 4), (4, 8)), 64)
    assert sh.device_matrix == (2, 4, 8)
    assert sh.in_maps == ((2, 1), (1, 0))
    assert sh.out_maps == ((2, 0),)
    assert sh.partial_axes == (1,)          # the reduction axis b needs an AllReduce
    assert sh.repeat == 1


def test_seed001_matmul_model_parallel():
    sh = _shard(ops.MatMul(), [(16, 32), (32, 8)], [(16, 8)], ((1, 1), (1, 4)), 4)
    assert sh.device_matrix == (4,)
    assert sh.in_maps == ((-1, -1), (-1, 0))
    assert sh.out_maps == ((-1, 0),)
    assert sh.partial_axes == ()


def test_repeated_calculation_appends_repeat_axis_on_the_right():
    sh = _shard(ops.MatMul(), [(16, 32), (32, 64)], [(16, 64)], ((2, 4), (4, 1)), 64)
    assert sh.device_matrix == (2, 4, 8)
    assert sh.repeat == 8
    assert sh.in_maps == ((2, 1), (1, -1))
    assert sh.out_maps == ((2, -1),)


def test_transposed_matmul_letters():
    prim = ops.MatMul(transpose_a=True, transpose_b=True)
    sh = _shard(prim, [(32, 16), (64, 32)], [(16, 64)], ((4, 2), (8, 4)), 64)
    # A is (k, m): k split 4, m split 2; B is (n, k): n split 8
    assert sh.device_matrix == (4, 2, 8)
    assert sh.in_maps == ((2, 1), (0, 2))
    assert sh.out_maps == ((1, 0),)
    assert sh.partial_axes == (2,)


def test_batchmatmul_broadcast_batch():
    sh = _shard(ops.BatchMatMul(), [(4, 8, 16), (16, 8)], [(4, 8, 8)], ((2, 2, 1), (1, 2)), 8)
    assert sh.device_matrix == (2, 2, 2)
    assert sh.in_maps == ((2, 1, -1), (-1, 0))
    assert sh.out_maps == ((2, 1, 0),)


def test_elementwise_broadcast_dim_must_not_split():
    with pytest.raises(ValueError, match=r"For 'Add', input 1 dim 0 is broadcast"):
        _shard(ops.Add(), [(8, 4), (1, 4)], [(8, 4)], ((2, 1), (2, 1)), 2)
    sh = _shard(ops.Add(), [(8, 4), (4,)], [(8, 4)], ((2, 2), (2,)), 4)
    assert sh.in_maps == ((1, 0), (0,))


@pytest.mark.parametrize("strategy,match", [
    (((2, 1),), r"should have one entry per tensor input \(2\), but got 1"),
    (((2, 1, 1), (1, 1)), r"input 0 should have length 2"),
    (((0, 1), (1, 1)), r"should be >= 1, but input 0 dim 0 has 0"),
    (((3, 1), (1, 1)), r"input 0 dim 0 of size 16 \(shape \(16, 32\)\) should be divisible by "
                       r"its strategy value 3"),
    (((2, 4), (2, 1)), r"should agree on the shared reduction dim 'k', but got 4 and 2"),
    (((4, 4), (4, 1)), r"needs 16 devices, but the stage has only 8"),
    (((1, 1), (1, 1 * 3)), r"should be divisible by its strategy value 3"),
])
def test_invalid_matmul_strategies(strategy, match):
    with pytest.raises(ValueError, match=match):
        _shard(ops.MatMul(), [(16, 32), (32, 64)], [(16, 64)], strategy, 8)


def test_strategy_must_divide_device_count():
    with pytest.raises(ValueError, match=r"uses 4 devices, which should divide the device "
                                         r"number 6"):
        _shard(ops.MatMul(), [(16, 32), (32, 64)], [(16, 64)], ((4, 1), (1, 1)), 6)


def test_binary_ops_disagree_on_dim():
    with pytest.raises(ValueError, match=r"For 'Mul', the strategies of input 0 dim 1 and "
                                         r"input 1 dim 1 should agree"):
        _shard(ops.Mul(), [(8, 8), (8, 8)], [(8, 8)], ((2, 2), (2, 1)), 4)


def test_softmax_axis_split_is_rejected():
    with pytest.raises(ValueError, match=r"For 'Softmax', input 0 dim 1 cannot be split "
                                         r"\(Softmax normalises along axis -1\)"):
        _shard(ops.Softmax(), [(8, 16)], [(8, 16)], ((2, 2),), 4)


def test_reduce_sum_partial_over_split_axis():
    sh = _shard(ops.ReduceSum(), [(8, 16)], [(8,)], ((2, 4),), 8, consts={1: 1})
    assert sh.device_matrix == (2, 4)
    assert sh.out_maps == ((1,),)
    assert sh.partial_axes == (0,)


def test_data_parallel_default():
    prim = ops.MatMul()
    spec = spec_of(prim, [(16, 32), (32, 8)], [(16, 8)], {})
    assert data_parallel_strategy(spec, [(16, 32), (32, 8)], 8) == ((8, 1), (1, 1))
    # a batch that does not divide stays whole
    spec = spec_of(prim, [(6, 32), (32, 8)], [(6, 8)], {})
    assert data_parallel_strategy(spec, [(6, 32), (32, 8)], 4) == ((1, 1), (1, 1))
