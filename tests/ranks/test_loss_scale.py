"""Loss scaling under real MPI on 2 and 4 ranks: an overflow on one rank only is every
rank's overflow (each skips the update and lowers the scale), and loss-scaled training in
data_parallel (GRAPH_MODE and PYNATIVE_MODE) and semi_auto_parallel equals the serial run."""
import numpy as np
import pytest

from parallel_oracle import DenseDP, data

import msops as ms
from msops import Parameter, Tensor, nn, ops
from msops.communication import get_group_size, get_rank

RANKS = (2, 4)
N, R = get_group_size(), get_rank()
X, Y = data(4 * N, 16, seed=3), data(4 * N, 8, seed=4)
OVERFLOWS = [False, True, False, False]          # step 2 overflows (on rank N - 1 only)
INIT, FACTOR = 2.0 ** 12, 2


def local(t, poisoned=False):
    """This rank's dim-0 slice of the global batch; `poisoned`: rank N-1's holds an inf."""
    b = t.shape[0] // N
    part = t.asnumpy()[R * b:(R + 1) * b].copy()
    if poisoned and R == N - 1:
        part[0, 0] = np.inf
    return Tensor(part)


def serial_reference():
    """The clean steps alone, serially, without a loss scale: the parameters after them."""
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    net = DenseDP()
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()),
                               nn.Momentum(net.trainable_params(), 0.05, 0.9))
    for over in OVERFLOWS:
        if not over:
            step(X, Y)
    return {p.name: p.asnumpy().copy() for p in net.trainable_params()}


def train_scaled(mode, parallel, **context):
    ms.set_auto_parallel_context(parallel_mode=parallel, device_num=N, gradients_mean=True,
                                 **context)
    try:
        ms.set_context(mode=mode)
        net = DenseDP()
        opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
        step = nn.TrainOneStepWithLossScaleCell(
            nn.WithLossCell(net, nn.MSELoss()), opt,
            nn.DynamicLossScaleUpdateCell(INIT, FACTOR, 1000))
        flags = []
        for over in OVERFLOWS:
            _, flag, _ = step(local(X), local(Y) if not over else local(Y, poisoned=True))
            flags.append(bool(flag.asnumpy()))
        params = {p.name: p.asnumpy().copy() for p in net.trainable_params()}
        layouts = {k: v.layout for k, v in net.parameter_layout_dict.items()}
        return flags, float(step.scale_sense.asnumpy()), int(opt.global_step.asnumpy()[0]), \
            params, layouts
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE], ids=["graph", "pynative"])
def test_data_parallel_overflow_on_one_rank_is_skipped_everywhere(mode):
    want = serial_reference()
    flags, scale, global_step, got, _ = train_scaled(mode, "data_parallel")
    assert flags == OVERFLOWS                       # every rank saw the overflow
    assert scale == INIT / FACTOR                   # and lowered its scale
    assert global_step == OVERFLOWS.count(False)    # and skipped that update
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_parallel_optimizer_shards_skip_the_overflowing_update_too():
    """enable_parallel_optimizer: each rank updates its dim-0 shard of every weight; the
    skipped update keeps every shard, and the shards equal the serial run's."""
    want = serial_reference()
    flags, scale, global_step, got, layouts = train_scaled(
        ms.GRAPH_MODE, "data_parallel", enable_parallel_optimizer=True,
        parallel_optimizer_config={"parallel_optimizer_threshold": 0})
    assert flags == OVERFLOWS and scale == INIT / FACTOR
    assert global_step == OVERFLOWS.count(False)
    assert any(lay.tensor_shape != lay.slice_shape for lay in layouts.values())  # sharded
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value[layouts[name].slice_of(R)], rtol=1e-4,
                                   atol=1e-5, err_msg=name)


class ColumnNet(nn.Cell):
    """x @ w with w split by columns over the ranks (semi_auto_parallel)."""

    def __init__(self, w):
        super().__init__()
        self.w = Parameter(Tensor(w), "w")
        self.matmul = ops.MatMul().shard(((1, 1), (1, N)))

    def construct(self, x):
        return self.matmul(x, self.w)


def _column_step(w, init):
    net = ColumnNet(w)
    opt = nn.SGD(net.trainable_params(), 0.1)
    step = nn.TrainOneStepWithLossScaleCell(nn.WithLossCell(net, nn.MSELoss()), opt,
                                            nn.DynamicLossScaleUpdateCell(init, 2, 1000))
    return net, step


def _run_column(w, init, x, y, steps, parallel):
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                     full_batch=True)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net, step = _column_step(w, init)
        flags = [bool(step(x, y)[1].asnumpy()) for _ in range(steps)]
        layout = net.parameter_layout_dict["w"].layout if parallel else None
        return flags, float(step.scale_sense.asnumpy()), net.w.asnumpy().copy(), layout
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _slice(whole, layout):
    """This rank's part of `whole` under the parameter's layout."""
    assert layout is not None and any(layout.dim_axes)
    return whole[layout.slice_of(R)]


def test_semi_auto_overflow_in_one_ranks_slice_is_skipped_everywhere():
    """w's last column block is huge: only the last rank's gradient slice overflows at
    scale 2**100 (its outputs are ~1e12, the others' ~1); every rank skips its update and
    halves the scale, as the serial step does."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 2 * N)).astype(np.float32)
    w[:, -2:] *= np.float32(1e12)
    x = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
    y = Tensor(np.zeros((4, 2 * N), np.float32))
    flags, scale, got, layout = _run_column(w, 2.0 ** 100, x, y, 1, parallel=True)
    assert flags == [True] and scale == 2.0 ** 99
    np.testing.assert_array_equal(got, _slice(w, layout))        # this rank's, unchanged
    want_flags, want_scale, want_w, _ = _run_column(w, 2.0 ** 100, x, y, 1, parallel=False)
    assert want_flags == flags and want_scale == scale
    np.testing.assert_array_equal(want_w, w)


def test_semi_auto_scaled_training_equals_serial():
    rng = np.random.default_rng(6)
    w = rng.standard_normal((8, 2 * N)).astype(np.float32)
    x = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
    y = Tensor(rng.standard_normal((4, 2 * N)).astype(np.float32))
    flags, scale, got, layout = _run_column(w, 2.0 ** 10, x, y, 3, parallel=True)
    want_flags, want_scale, want_w, _ = _run_column(w, 2.0 ** 10, x, y, 3, parallel=False)
    assert flags == want_flags == [False] * 3 and scale == want_scale == 2.0 ** 10
    np.testing.assert_allclose(got, _slice(want_w, layout), rtol=1e-5, atol=1e-6)
    d = w.copy()                     # numpy SGD on mean((x w - y)^2), 3 steps
    xs, ys = x.asnumpy(), y.asnumpy()
    for _ in range(3):
        d -= 0.1 * xs.T @ (2.0 * (xs @ d - ys) / ys.size)
    np.testing.assert_allclose(want_w, d, rtol=1e-5, atol=1e-6)


class TwoStages(nn.Cell):
    """Blocks 0 1 on stage 0, blocks 2 3 on stage 1; stage 1 stops the gradient to stage 0,
    so an inf label overflows stage 1's gradients only: stage 0 (its gradients finite, its
    momentum still moving the weights) must skip its update on stage 1's word."""

    def __init__(self, stages):
        super().__init__()
        from pipeline_nets import Block
        sizes = [16, 8, 8, 8, 8]
        self.blocks = nn.CellList([Block(sizes[k], sizes[k + 1], k, relu=k < 3)
                                   for k in range(4)])
        for k, b in enumerate(self.blocks):
            b.pipeline_stage = k * stages // 4

    def construct(self, x):
        for k, b in enumerate(self.blocks):
            x = b(ops.stop_gradient(x) if k == 2 else x)
        return x


def train_pipelined_scaled(stages):
    ms.reset_auto_parallel_context()
    if stages > 1:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=N,
                                     pipeline_stages=stages, full_batch=True)
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        net = TwoStages(stages)
        opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
        step = nn.TrainOneStepWithLossScaleCell(
            nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), 2), opt,
            nn.DynamicLossScaleUpdateCell(INIT, FACTOR, 1000))
        flags, scales = [], []
        for over in OVERFLOWS:
            y = Y.asnumpy().copy()
            if over:
                y[-1, -1] = np.inf                  # the last micro-batch's label
            _, flag, scale = step(X, Tensor(y))     # every stage returns the outputs
            flags.append(bool(flag.asnumpy()))
            scales.append(float(scale.asnumpy()))
        return flags, scales, net
    finally:
        ms.reset_auto_parallel_context()
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_pipeline_stages_skip_an_overflowing_update_together():
    """2 stages (of 1 or 2 ranks each): stage 1's overflow is stage 0's too; flags, scales
    (the scale, a Parameter, lives on the stage updating it, stage 1; each step returns the
    one it used) and every stage's weights equal the serial loss-scaled run's."""
    want_flags, want_scales, serial = train_pipelined_scaled(1)
    assert want_flags == OVERFLOWS and want_scales == [INIT, INIT, INIT / FACTOR, INIT / FACTOR]
    flags, scales, net = train_pipelined_scaled(2)
    assert flags == want_flags and scales == want_scales
    stage = R // (N // 2)
    for k, (b, s) in enumerate(zip(net.blocks, serial.blocks)):
        if b.pipeline_stage == stage:
            np.testing.assert_allclose(b.w.asnumpy(), s.w.asnumpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"block {k}")
