"""The backward rules of _MiniStepAllGather and _MicroStepAllGather on real MPI worlds.

Every rank r computes loss_r = sum(op(x_r, z_r) * W_r) with z_r a Parameter (the
accumulation buffer, non-zero at the start). The reference is numpy over every rank's data
(each rank rebuilds every rank's arrays from seeds):
MiniStep: z_r += dout_r = W_r, then dx_r = rows r of sum_s z_s (/ n with mean_flag);
MicroStep: z_r = dout_r = W_r (the step's accumulated gradient replaces z's old value),
then dx_r = rows r of sum_s z_s (/ n with mean_flag).
"""
import numpy as np
import pytest

import msops as ms
from msops import Parameter, Tensor, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4, 8)


def data(rank, shape, salt=0):
    return np.random.default_rng(1000 * salt + rank).standard_normal(shape)


@pytest.fixture(params=[ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def mode(request):
    ms.set_context(mode=request.param)
    yield
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mean_flag", [False, True])
@pytest.mark.parametrize("kind", ["mini", "micro"])
def test_accumulation_backward_against_numpy(kind, mean_flag, mode):
    rank, n = get_rank(), get_group_size()
    rows = 2
    xs = [data(r, (rows, 3)) for r in range(n)]
    zs = [data(r, (rows * n, 3), salt=1) for r in range(n)]
    ws = [data(r, (rows * n, 3), salt=2) for r in range(n)]
    z = Parameter(Tensor(zs[rank].copy()), name="z")
    prim = ops._MiniStepAllGather(grad_accumulation_step=2, mean_flag=mean_flag) \
        if kind == "mini" else ops._MicroStepAllGather(mean_flag=mean_flag)
    w = Tensor(ws[rank])

    def loss(x):
        return ops.ReduceSum()(ops.Mul()(prim(x, z), w), ())

    got = ms.grad(loss)(Tensor(xs[rank])).asnumpy()
    z_after = [zr + wr for zr, wr in zip(zs, ws)] if kind == "mini" else ws
    want = np.sum(z_after, axis=0)[rows * rank:rows * (rank + 1)] / (n if mean_flag else 1)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(z.asnumpy(), z_after[rank], rtol=0, atol=0)


def test_ministep_accumulates_over_calls():
    """Two backward calls: z holds z0 + 2 W and the second gradient reduces that."""
    ms.set_context(mode=ms.GRAPH_MODE)
    rank, n = get_rank(), get_group_size()
    xs = [data(r, (1, 2)) for r in range(n)]
    zs = [data(r, (n, 2), salt=3) for r in range(n)]
    ws = [data(r, (n, 2), salt=4) for r in range(n)]
    z = Parameter(Tensor(zs[rank].copy()), name="z")
    prim = ops._MiniStepAllGather(grad_accumulation_step=2)
    w = Tensor(ws[rank])
    fn = ms.grad(lambda x: ops.ReduceSum()(ops.Mul()(prim(x, z), w), ()))
    fn(Tensor(xs[rank]))
    got = fn(Tensor(xs[rank])).asnumpy()
    want = np.sum([zr + 2 * wr for zr, wr in zip(zs, ws)], axis=0)[rank:rank + 1]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    ms.set_context(mode=ms.PYNATIVE_MODE)
