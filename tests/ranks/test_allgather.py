"""AllGather and AllReduce on real MPI worlds against numpy."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, ops
from msops.communication import get_group_size, get_rank

RANKS = (1, 2, 4, 8)


def test_allgather_seed000_example():
    n = get_group_size()
    out = ops.AllGather()(Tensor(np.ones([2, 8], np.float32)))
    np.testing.assert_array_equal(out.asnumpy(), np.ones([2 * n, 8], np.float32))


@pytest.mark.parametrize("dtype", [ms.bool_, ms.int8, ms.int64, ms.uint16, ms.float16,
                                   ms.bfloat16, ms.float32, ms.float64, ms.complex64,
                                   ms.complex128])
def test_allgather_every_dtype(dtype):
    n, r = get_group_size(), get_rank()
    np_t = ms.dtype_to_nptype(dtype)
    full = (np.arange(n * 3 * 2).reshape(n * 3, 2) % 7).astype(np_t)
    out = ops.AllGather()(Tensor(full[3 * r:3 * (r + 1)]))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.asnumpy(), full)


def test_allreduce_sum_float16_rounds_once():
    n = get_group_size()
    x = np.full([5], 0.1, np.float16)
    out = ops.AllReduce()(Tensor(x)).asnumpy()
    np.testing.assert_array_equal(out, (x.astype(np.float32) * n).astype(np.float16))
