"""Seed 002's quantized pipeline: int8 AllToAllV -> int32 sum -> float16 dequantize -> AllGather.

Every rank holds an int8-quantized partial result x_r (length L; one scale for all ranks).
The wanted result, on every rank, is scale * sum_r x_r. The heavy exchange moves int8:

  1. AllToAllV: x is cut into N shards (uneven when N does not divide L); shard j goes to
     rank j, so rank j receives shard j of every rank: N * len_j int8 values.
  2. Sum the N received shards, accumulated in int32 (int8 would overflow).
  3. Dequantize: float16(float32(sum) * scale), rounded to float16 once.
  4. AllGather the float16 shards (padded to the longest shard), then drop the padding:
     every rank ends with the whole float16 result, shape (L,).

Run:  mpiexec -n 4 python -m mpi4py examples/quantized_alltoallv.py
"""
from __future__ import annotations

import numpy as np

import msops as ms
from msops import Tensor, ops
from msops.communication import GlobalComm, get_group_size, get_rank, init


def shard_sizes(length: int, n: int) -> list[int]:
    """Lengths of the N shards of a vector of `length`: the first `length % n` one longer."""
    return [length // n + (j < length % n) for j in range(n)]


def quantized_alltoallv(x: Tensor, scale: float,
                        group: str = GlobalComm.WORLD_COMM_GROUP) -> Tensor:
    """scale * (sum of every rank's int8 vector x) as float16 of shape (L,), on every rank.

    x: this rank's int8 Tensor of shape (L,), L the same on every rank of `group`.
    """
    if x.dtype != ms.int8 or len(x.shape) != 1:
        raise TypeError(f"For 'quantized_alltoallv', the 'x' should be a 1-D Int8 Tensor, but "
                        f"got shape {list(x.shape)} and dtype {x.dtype}.")
    n, me = get_group_size(group), get_rank(group)
    sizes = shard_sizes(x.shape[0], n)
    received = ops.AllToAllV(group=group)(x, sizes, [sizes[me]] * n)      # int8 on the wire
    blocks = ops.Reshape()(received, (n, sizes[me]))                     # one row per sender
    total = ops.ReduceSum()(ops.Cast()(blocks, ms.int32), 0)            # int32 accumulation
    shard = ops.Cast()(ops.Cast()(total, ms.float32) * scale, ms.float16)
    width = max(sizes)
    padded = np.zeros(width, np.float16)
    padded[:sizes[me]] = shard.asnumpy()
    gathered = ops.AllGather(group)(Tensor(padded)).asnumpy().reshape(n, width)
    return Tensor(np.concatenate([gathered[j, :sizes[j]] for j in range(n)]))


def main() -> None:
    init()
    me, n = get_rank(), get_group_size()
    scale = 0.05
    x = np.random.default_rng(me).integers(-128, 128, 10, dtype=np.int8)
    y = quantized_alltoallv(Tensor(x), scale)
    # check against the same computation in float32 (every rank's x, gathered)
    every_x = ops.AllGather()(Tensor(x[None])).asnumpy()
    expected = every_x.astype(np.float32).sum(axis=0) * np.float32(scale)
    np.testing.assert_allclose(y.asnumpy().astype(np.float32), expected, rtol=2.0 ** -11)
    if me == 0:
        print(f"quantized AllToAllV pipeline on {n} ranks, scale {scale}:")
        print(f"  int8 x on rank 0: {x}")
        print(f"  float16 result:   {y.asnumpy()}")
        print(f"  float32 numpy:    {expected}")


if __name__ == "__main__":
    main()
