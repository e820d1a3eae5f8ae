"""nn.PipelineCell and Cell.pipeline_stage in one process: arguments, stage_config, and the
serial run (the stages only matter under pipeline_stages > 1: tests/ranks/test_pipeline_*)."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn


def net():
    ms.set_seed(2)
    return nn.SequentialCell([nn.Dense(3, 5, activation="relu"), nn.Dense(5, 2)])


def test_pipeline_stage_is_checked():
    cell = nn.Dense(2, 2)
    assert cell.pipeline_stage == -1
    cell.pipeline_stage = 3
    assert cell.pipeline_stage == 3
    with pytest.raises(TypeError, match=r"'pipeline_stage' should be an int, but got bool"):
        cell.pipeline_stage = True
    with pytest.raises(ValueError, match=r"'pipeline_stage' should be >= 0, but got -1"):
        cell.pipeline_stage = -1


def test_stage_config_sets_stages_by_cell_name():
    n = net()
    nn.PipelineCell(nn.WithLossCell(n, nn.MSELoss()), 2,
                    stage_config={"_backbone.0": 0, "network._backbone.1": 1})
    assert [n[0].pipeline_stage, n[1].pipeline_stage] == [0, 1]
    with pytest.raises(ValueError, match=r"'stage_config' should name cells of the network, "
                                         r"but got 'head'"):
        nn.PipelineCell(nn.WithLossCell(n, nn.MSELoss()), 2, stage_config={"head": 1})
    nn.PipelineCell(n, 2, segment_config={"1": 1})
    assert [n[0].pipeline_segment, n[1].pipeline_segment] == [-1, 1]
    with pytest.raises(ValueError, match=r"'segment_config' should name cells of the network, "
                                         r"but got 'x'"):
        nn.PipelineCell(n, 2, segment_config={"x": 1})
    with pytest.raises(ValueError, match=r"'micro_size'"):
        nn.PipelineCell(n, 0)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
def test_serial_run_sums_the_micro_batch_losses(mode):
    """Stand-alone, the stages are ignored: the sum of the micro-batches' mean losses."""
    ms.set_context(mode=mode)
    n = net()
    n[1].pipeline_stage = 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    got = nn.PipelineCell(nn.WithLossCell(n, nn.MSELoss()), 4)(Tensor(x), Tensor(y))
    w1, b1 = n[0].weight.asnumpy(), n[0].bias.asnumpy()
    w2, b2 = n[1].weight.asnumpy(), n[1].bias.asnumpy()
    pred = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    want = sum(np.mean((pred[k:k + 2] - y[k:k + 2]) ** 2) for k in range(0, 8, 2))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)
    ms.set_context(mode=ms.GRAPH_MODE)


def numpy_net(n, x):
    w1, b1 = n[0].weight.asnumpy(), n[0].bias.asnumpy()
    w2, b2 = n[1].weight.asnumpy(), n[1].bias.asnumpy()
    return np.maximum(x @ w1.T + b1, 0) @ w2.T + b2


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
def test_micro_batch_interleaved_sums_the_slices_outputs(mode):
    ms.set_context(mode=mode)
    n = net()
    x = np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)
    got = nn.MicroBatchInterleaved(n, 3)(Tensor(x)).asnumpy()
    want = sum(numpy_net(n, x[2 * i:2 * i + 2]) for i in range(3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"'MicroBatchInterleaved', the inputs' dim 0 should "
                                         r"be divisible by interleave_num: 4, but got shape "
                                         r"\[6, 3\]"):
        nn.MicroBatchInterleaved(n, 4)(Tensor(x))
    with pytest.raises(ValueError, match=r"'interleave_num'"):
        nn.MicroBatchInterleaved(n, 0)


@pytest.mark.parametrize("mode", [ms.GRAPH_MODE, ms.PYNATIVE_MODE])
def test_pipeline_grad_reducer_in_the_functional_step(mode):
    """MindSpore's functional pipeline step: the reducer hands the optimizer the summed
    micro-batch gradients divided by scale_sense (SGD: the weights move by lr * that)."""
    ms.set_context(mode=mode)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    n = net()
    before = [p.asnumpy().copy() for p in n.trainable_params()]
    loss_net = nn.PipelineCell(nn.WithLossCell(n, nn.MSELoss()), 2)
    opt = nn.SGD(n.trainable_params(), 0.1)
    grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)
    reducer = nn.PipelineGradReducer(opt.parameters, scale_sense=4.0)

    def step(a, b):
        loss, grads = grad_fn(a, b)
        opt(reducer(grads))
        return loss
    if mode == ms.GRAPH_MODE:
        step = ms.jit(step)
    step(Tensor(x), Tensor(y))
    # the same gradients by hand: the sum over the 2 micro-batches of d mean((out - y)^2)
    w1, b1, w2, b2 = before
    grads = [np.zeros_like(b) for b in before]
    for i in range(2):
        a, t = x[4 * i:4 * i + 4], y[4 * i:4 * i + 4]
        h = a @ w1.T + b1
        r = np.maximum(h, 0)
        d_out = 2 * (r @ w2.T + b2 - t) / t.size
        d_h = (d_out @ w2) * (h > 0)
        for k, g in enumerate((d_h.T @ a, d_h.sum(0), d_out.T @ r, d_out.sum(0))):
            grads[k] += g
    for p, b, g in zip(n.trainable_params(), before, grads):
        np.testing.assert_allclose(p.asnumpy(), b - 0.1 * g / 4.0, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"'scale_sense' should be a positive number"):
        nn.PipelineGradReducer(opt.parameters, scale_sense=0)
    with pytest.raises(ValueError, match=r"the number of 'grads' should be the number of "
                                         r"parameters: 4, but got 1"):
        reducer((Tensor(x),))
