"""RmsNorm, add_rms_norm, add_layer_norm and swiglu sharded under real MPI on 2, 4 and 8 ranks
equal the serial run (outputs and gradients): leading dims split with no collective in the
op; a split normalised dim of RmsNorm is refused naming the op."""
import numpy as np
import pytest
from parallel_oracle import check, check_grads, comm_ops

import msops as ms
from msops import Tensor, nn, ops
from msops.communication import get_group_size

RANKS = (2, 4, 8)
N = get_group_size()


def data(*shape, seed=0):
    rng = np.random.default_rng(sum(shape) * 7 + len(shape) + seed)
    return rng.standard_normal(shape).astype(np.float32)


class RmsNet(nn.Cell):
    def __init__(self, strategy, scalar=False):
        super().__init__()
        self.norm = ops.RmsNorm(1e-5).shard(strategy)
        self.scalar, self.sum = scalar, ops.ReduceSum()

    def construct(self, x, g):
        y, rstd = self.norm(x, g)
        if self.scalar:
            return self.sum(y * y, ()) + self.sum(rstd, ())
        return y, rstd


class FusedNet(nn.Cell):
    """add_rms_norm, add_layer_norm and swiglu under the data-parallel default strategy."""

    def __init__(self, scalar=False):
        super().__init__()
        self.scalar, self.sum = scalar, ops.ReduceSum()

    def construct(self, a, b, g, beta):
        y, rstd, x = ops.add_rms_norm(a, b, g)
        z, mean, rstd2, _ = ops.add_layer_norm(y, x, g, beta)
        s = ops.swiglu(z)
        if self.scalar:
            return self.sum(s * s, ()) + self.sum(rstd * mean, ()) + self.sum(rstd2, ())
        return s, rstd, mean, rstd2


@pytest.mark.parametrize("strategy", [((N, 1, 1), (1,)), ((1, N, 1), (1,)),
                                      ((2, N // 2, 1), (1,))], ids=str)
def test_rms_norm_leading_splits_equal_serial(strategy):
    inputs = [Tensor(data(2 * N, 2 * N, 6)), Tensor(data(6, seed=1))]
    graph = check(lambda: RmsNet(strategy), *inputs)
    assert comm_ops(graph) == []
    check_grads(lambda: ms.grad(RmsNet(strategy, True), (0, 1))(*inputs))


def test_fused_norms_and_swiglu_data_parallel_equal_serial():
    inputs = [Tensor(data(2 * N, 8)), Tensor(data(2 * N, 8, seed=1)), Tensor(data(8, seed=2)),
              Tensor(data(8, seed=3))]
    check(FusedNet, *inputs)
    check_grads(lambda: ms.grad(FusedNet(True), (0, 1, 2, 3))(*inputs))


def test_a_split_normalised_dim_is_refused_naming_the_op():
    net = RmsNet(((1, N), (N,)))
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                 full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        with pytest.raises(ValueError, match="RmsNorm.*normalises over them"):
            net(Tensor(data(N, 2 * N)), Tensor(data(2 * N)))
    finally:
        ms.reset_auto_parallel_context()
