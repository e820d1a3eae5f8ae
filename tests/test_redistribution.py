"""The redistribution planner: exact steps for known transitions, bytes, and properties
(simulated on every rank against numpy slicing of the full tensor)."""
import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layout_cases import layout_pairs, split_moves
from msops.communication import SimulationError
from msops.parallel import TensorLayout, explain, plan
from msops.parallel.redistribution_emit import run_plan
from msops.parallel.redistribution_plan import (AllGatherDim, AllToAllDims, Slice, _plan,
                                                gather_then_slice_bytes, plan_bytes,
                                                simulate_plan)

SHAPE = (16, 32)


def _full(shape, dtype=np.int64):
    return np.arange(math.prod(shape)).astype(dtype).reshape(shape)


def _assert_redistributes(src, dst, steps):
    full = _full(src.tensor_shape)
    for r, got in enumerate(simulate_plan(steps, full, src, dst)):
        np.testing.assert_array_equal(got, full[dst.slice_of(r)], err_msg=f"rank {r}")


def test_seed001_batchnorm_to_matmul_is_one_allgather_dim0():
    bn_out = TensorLayout.from_strategy((4, 1), SHAPE, 4)          # BatchNorm (4, 1)
    mm_in = TensorLayout.from_strategy((1, 1), SHAPE, 4)           # MatMul ((1, 1), (1, 4)) x
    assert mm_in == TensorLayout((1, 1, 4), (2, 1), SHAPE)
    steps = plan(bn_out, mm_in)
    recv = 3 * (4 * 32) * 4          # three other ranks' (4, 32) float32 blocks
    assert steps == (AllGatherDim(0, 0, device_matrix=(4,), in_shape=(4, 32), out_shape=(16, 32),
                                  bytes_sent=recv, bytes_recv=recv),)
    _assert_redistributes(bn_out, mm_in, steps)


def test_split_moved_between_dims_is_one_alltoall():
    src, dst = TensorLayout((4,), (0, -1), SHAPE), TensorLayout((4,), (-1, 0), SHAPE)
    moved = (4 * 32) * 3 // 4 * 4    # keep one of 4 blocks, send three (float32)
    assert plan(src, dst) == (AllToAllDims(0, 1, 0, device_matrix=(4,), in_shape=(4, 32),
                                           out_shape=(16, 8), bytes_sent=moved,
                                           bytes_recv=moved),)
    assert gather_then_slice_bytes(src, dst) == 4 * moved
    _assert_redistributes(src, dst, plan(src, dst))


def test_replicate_to_split_is_one_local_slice():
    src, dst = TensorLayout((4,), (-1, -1), SHAPE), TensorLayout((4,), (-1, 0), SHAPE)
    assert plan(src, dst) == (Slice(1, 0, device_matrix=(4,), in_shape=(16, 32),
                                    out_shape=(16, 8)),)
    assert plan_bytes(plan(src, dst)) == (0, 0)


def test_equal_and_equivalent_layouts_need_no_step():
    a = TensorLayout((2, 4), (1, 0), SHAPE)
    assert plan(a, a) == ()
    # (4, 1) map (1, 0) and (4,) map (0, -1): the same slices, size-1 axes aside
    assert plan(TensorLayout((4, 1), (1, 0), SHAPE), TensorLayout((4,), (0, -1), SHAPE)) == ()


def test_slices_come_before_gathers_to_move_fewer_bytes():
    src, dst = TensorLayout((2, 2), (1, -1), SHAPE), TensorLayout((2, 2), (-1, 0), SHAPE)
    steps = plan(src, dst)
    assert [(type(s), s.dim, s.axis) for s in steps] == [(Slice, 1, 0), (AllGatherDim, 0, 1)]
    assert plan_bytes(steps) == (8 * 16 * 4, 8 * 16 * 4)       # gathers (8, 16), not (8, 32)
    _assert_redistributes(src, dst, steps)


def test_matmul_chain_layouts_on_different_device_matrices():
    # MatMul ((4, 2), (2, 1)) output (a, c) -> next MatMul ((2, 4), (4, 1)) input
    src = TensorLayout((4, 2, 1), (2, 0), SHAPE)
    dst = TensorLayout((2, 4, 1), (2, 1), SHAPE)
    steps = plan(src, dst)
    assert [(type(s).__name__, s.device_matrix, s.in_shape, s.out_shape) for s in steps] == [
        ("AllToAllDims", (2, 2, 2), (4, 32), (8, 16)), ("Slice", (2, 2, 2), (8, 16), (8, 8))]
    assert (steps[0].src_dim, steps[0].dst_dim, steps[0].axis) == (0, 1, 1)
    assert plan_bytes(steps)[0] == 4 * 32 // 2 * 4
    _assert_redistributes(src, dst, steps)


def test_swapping_two_splits_parks_one_on_a_free_dim():
    src = TensorLayout((2, 2), (1, 0, -1), (4, 4, 4))
    dst = TensorLayout((2, 2), (0, 1, -1), (4, 4, 4))
    steps = plan(src, dst)
    assert [type(s) for s in steps] == [AllToAllDims] * 3
    assert plan_bytes(steps)[0] == 3 * (16 // 2) * 4 < gather_then_slice_bytes(src, dst)
    _assert_redistributes(src, dst, steps)


def test_matrices_without_common_refinement_gather_then_slice():
    src = TensorLayout((2, 3), (1, 0), (6, 6))
    dst = TensorLayout((3, 2), (0, 1), (6, 6))
    steps = plan(src, dst)
    assert [(type(s).__name__, s.device_matrix) for s in steps] == [
        ("AllGatherDim", (2, 3)), ("AllGatherDim", (2, 3)), ("Slice", (3, 2)), ("Slice", (3, 2))]
    assert plan_bytes(steps)[0] == gather_then_slice_bytes(src, dst) == (36 - 6) * 4
    _assert_redistributes(src, dst, steps)


def test_itemsize_scales_the_bytes():
    src, dst = TensorLayout((4,), (0, -1), SHAPE), TensorLayout((4,), (-1, -1), SHAPE)
    assert plan(src, dst, itemsize=2)[0].bytes_recv == 3 * 4 * 32 * 2
    assert gather_then_slice_bytes(src, dst, itemsize=8) == 3 * 4 * 32 * 8


def test_explain_rows():
    bn_out = TensorLayout.from_strategy((4, 1), SHAPE, 4)
    mm_in = TensorLayout.from_strategy((1, 1), SHAPE, 4)
    assert explain(bn_out, mm_in) == [
        "L[dm=(4,1) map=(1,0) shape=(16,32)] -> L[dm=(1,1,4) map=(2,1) shape=(16,32)]",
        "1. AllGatherDim(dim=0, axis=0) over 4 ranks: (4,32) -> (16,32), sends 1536 B, "
        "receives 1536 B",
        "total per rank: sends 1536 B, receives 1536 B (gather-then-slice: 1536 B)"]
    assert explain(bn_out, bn_out)[1] == "(no step: the layouts agree)"


def test_plan_is_cached():
    src, dst = TensorLayout((8,), (0, -1), SHAPE), TensorLayout((2, 4), (-1, 1), SHAPE)
    assert plan(src, dst) is plan(TensorLayout((8,), [0, -1], list(SHAPE)), dst)


@pytest.mark.parametrize("dst,exc,match", [
    (TensorLayout((4,), (0, -1), (16, 16)), ValueError,
     r"For 'plan', the 'dst' tensor_shape should be \(16, 32\) \(src's\), but got L\[dm=\(4,\)"),
    (TensorLayout((8,), (0, -1), SHAPE), ValueError,
     r"For 'plan', the 'dst' device count should be 4 \(src's\), but got 8"),
    ("L[dm=(4,)]", TypeError, r"For 'plan', the type of 'dst' should be TensorLayout, but got str"),
])
def test_plan_errors(dst, exc, match):
    with pytest.raises(exc, match=match):
        plan(TensorLayout((4,), (0, -1), SHAPE), dst)


def test_plan_itemsize_error():
    lay = TensorLayout((4,), (0, -1), SHAPE)
    with pytest.raises(ValueError, match=r"For 'plan', the 'itemsize' should be a positive int, "
                                         r"but got 0"):
        plan(lay, lay, itemsize=0)


def test_simulate_plan_checks_shapes():
    src, dst = TensorLayout((4,), (0, -1), SHAPE), TensorLayout((4,), (-1, 0), SHAPE)
    with pytest.raises(ValueError, match=r"the 'full' shape should be \(16, 32\)"):
        simulate_plan(plan(src, dst), _full((16, 16)), src, dst)
    with pytest.raises(ValueError, match=r"the 'local shape' should be \(4, 32\) \(the input "
                                         r"of step AllToAllDims"):
        simulate_plan(plan(src, dst), _full(SHAPE), dst, dst)


def test_run_plan_slices_locally_in_a_simulated_world(sim):
    sim(4, 2)
    src, dst = TensorLayout((4,), (-1, -1), SHAPE), TensorLayout((2, 2), (0, 1), SHAPE)
    full = _full(SHAPE)
    np.testing.assert_array_equal(run_plan(plan(src, dst), full), full[dst.slice_of(2)])


def test_run_plan_refuses_to_move_data_in_a_simulated_world(sim):
    sim(4, 1)
    src, dst = TensorLayout((4,), (0, -1), SHAPE), TensorLayout((4,), (-1, -1), SHAPE)
    with pytest.raises(SimulationError, match=r"For 'AllGather', data cannot move in a simulated"):
        run_plan(plan(src, dst), _full(SHAPE)[src.slice_of(1)])
    with pytest.raises(ValueError, match=r"For 'run_plan', the 'local shape' should be \(4, 32\)"):
        run_plan(plan(src, dst), _full(SHAPE))


@pytest.mark.parametrize("n", [2, 4, 8])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_pairs_redistribute_like_numpy_and_never_beat_by_gather(n, data):
    src, dst = data.draw(layout_pairs(n))
    steps = plan(src, dst)
    _assert_redistributes(src, dst, steps)
    shapes = [src.slice_shape] + [s.out_shape for s in steps]
    assert [s.in_shape for s in steps] == shapes[:-1] and shapes[-1] == dst.slice_shape
    sent, recv = plan_bytes(steps)
    assert sent == recv <= gather_then_slice_bytes(src, dst)


@pytest.mark.parametrize("n", [2, 4, 8])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_moving_a_split_between_dims_sends_at_most_1_over_n_of_gather_then_slice(n, data):
    src, dst, i, j, axis = data.draw(split_moves(n))
    size = src.axis_size(axis)
    steps = plan(src, dst)
    assert [(type(s), s.src_dim, s.dst_dim, s.group_size) for s in steps] == \
        [(AllToAllDims, i, j, size)]
    sent, recv = plan_bytes(steps)
    assert sent * size <= gather_then_slice_bytes(src, dst)
    assert sent == recv == math.prod(src.slice_shape) * (size - 1) // size * 4
    _assert_redistributes(src, dst, steps)


def _benchmark():
    """benchmarks/redistribution.py, whose chain of layouts the timing test reuses."""
    path = Path(__file__).parents[1] / "benchmarks" / "redistribution.py"
    spec = importlib.util.spec_from_file_location("redistribution_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_planning_a_1000_op_chain_on_4096_devices_takes_under_2s():
    chain = _benchmark().chain_layouts(1001)
    assert {lay.device_num for lay in chain} == {4096}
    _plan.cache_clear()
    start = time.perf_counter()
    steps = [plan(a, b) for a, b in zip(chain, chain[1:])]
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0
    for (a, b), s in zip(zip(chain, chain[1:]), steps):
        assert plan_bytes(s)[0] <= gather_then_slice_bytes(a, b)


def test_step_groups_index_and_coordinate_by_hand():
    # dm (2, 3, 2): rank = 6*i + 2*j + k; axis 1 is j
    step = Slice(0, 1, device_matrix=(2, 3, 2), in_shape=(12,), out_shape=(4,))
    assert step.group_size == 3
    assert step.groups() == ((0, 2, 4), (1, 3, 5), (6, 8, 10), (7, 9, 11))
    assert [step.group_index(r) for r in range(12)] == [0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3]
    assert [step.coordinate(r) for r in range(12)] == [0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]
