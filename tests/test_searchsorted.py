"""SearchSorted / ops.searchsorted / ops.bucketize against numpy (np.searchsorted row by
row, np.digitize), eager and compiled, and their argument errors."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops


@pytest.fixture(params=["eager", "jit"])
def run(request):
    ms.set_context(mode=ms.GRAPH_MODE)
    return (lambda fn, *a: fn(*a)) if request.param == "eager" else \
        (lambda fn, *a: ms.jit(fn)(*a))


SEQ = np.array([[0.0, 1, 3, 5, 7], [2, 4, 6, 8, 10]], np.float32)
VALS = np.array([[3.0, 6, 9, -1], [3, 6, 11, 4]], np.float32)


@pytest.mark.parametrize("right", [False, True])
def test_rows_equal_numpy(right, run):
    got = run(lambda s, v: ops.searchsorted(s, v, right=right), Tensor(SEQ), Tensor(VALS))
    want = np.stack([np.searchsorted(SEQ[i], VALS[i], side="right" if right else "left")
                     for i in range(2)])
    assert got.dtype == ms.int64
    np.testing.assert_array_equal(got.asnumpy(), want)


def test_one_sequence_for_every_value_sorter_and_int32(run):
    seq = np.array([5, 1, 3, 3], np.int32)
    sorter = np.argsort(seq, kind="stable").astype(np.int64)
    vals = np.array([[0, 3], [4, 9]], np.int32)
    got = run(lambda s, v, o: ops.searchsorted(s, v, out_int32=True, side="right", sorter=o),
              Tensor(seq), Tensor(vals), Tensor(sorter))
    assert got.dtype == ms.int32
    np.testing.assert_array_equal(got.asnumpy(), np.searchsorted(seq, vals, side="right",
                                                                 sorter=sorter))


@pytest.mark.parametrize("right", [False, True])
def test_bucketize_equals_digitize(right, run):
    x = np.array([[-1.0, 0.0, 0.5, 2.0], [3.0, 5.0, 7.0, 2.0]], np.float32)
    bounds = [0.0, 2.0, 5.0]
    got = run(lambda t: ops.bucketize(t, bounds, right=right), Tensor(x))
    assert got.dtype == ms.int32
    # torch/MindSpore's right=False is numpy's right=True (boundaries[i-1] < x <= b[i])
    np.testing.assert_array_equal(got.asnumpy(), np.digitize(x, bounds, right=not right))


def test_no_gradient_reaches_the_inputs():
    g = ms.grad(lambda v: (ops.searchsorted(Tensor(SEQ), v).astype(ms.float32) * v).sum())(
        Tensor(VALS))
    want = np.stack([np.searchsorted(SEQ[i], VALS[i]) for i in range(2)]).astype(np.float32)
    np.testing.assert_array_equal(g.asnumpy(), want)        # only through the product


@pytest.mark.parametrize("call,error,match", [
    (lambda: ops.searchsorted(Tensor(SEQ), Tensor(VALS[:1])), ValueError,
     "should have the same dims but the last"),
    (lambda: ops.searchsorted(Tensor(SEQ), Tensor(VALS), side="left", right=True), ValueError,
     "contradicts right=True"),
    (lambda: ops.searchsorted(Tensor(SEQ), Tensor(VALS), side="up"), ValueError,
     "'side' should be 'left' or 'right'"),
    (lambda: ops.searchsorted(Tensor(SEQ), Tensor(VALS.astype(np.float64))), TypeError,
     "should have the dtype of 'sorted_sequence'"),
    (lambda: ops.SearchSorted(ms.float32), TypeError, "'dtype' should be mstype.int32"),
    (lambda: ops.bucketize(Tensor(VALS), "0,1"), TypeError, "'boundaries' should be a list"),
])
def test_errors_name_the_op(call, error, match):
    with pytest.raises(error, match=match):
        call()
