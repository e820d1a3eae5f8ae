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
    with pytest.raises(ValueError, match=r"'segment_config' should be None"):
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
