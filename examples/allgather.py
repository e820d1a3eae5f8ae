"""AllGather over every rank: run with `mpiexec -n 4 python -m mpi4py examples/allgather.py`."""
import numpy as np

from msops import Tensor, ops
from msops.communication import get_group_size, get_rank, init

init()
rank, n = get_rank(), get_group_size()
x = Tensor(np.full([2, 3], rank, np.float32))
y = ops.AllGather()(x)
expected = np.repeat(np.arange(n, dtype=np.float32), 2)[:, None].repeat(3, axis=1)
assert np.array_equal(y.asnumpy(), expected)
if rank == 0:
    print(f"AllGather on {n} ranks: {list(x.shape)} -> {list(y.shape)}")
    print(y.asnumpy())
