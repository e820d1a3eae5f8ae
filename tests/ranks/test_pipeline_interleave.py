"""Interleaved (virtual) pipeline stages: `pipeline_config={"pipeline_interleave": True}`
and `Cell.pipeline_segment`. Block k of four runs on stage k % 2 in segment k // 2, so each
stage holds two chunks of the layers (virtual stages 0 1 | 2 3 on stages 0 1 0 1). Each
stage runs its blocks in the interleaved 1F1B order (written out by hand below) and the
run trains as the serial one, sharded within a stage on 4 ranks."""
import os

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size
from pipeline_nets import Block, batch, check_stage_params, my_stage, pipelined, train
from test_pipeline_checkpoint import serial_values, shared_dir
from test_pipeline_schedule import blocks

RANKS = (2, 4)
INTERLEAVE = {"pipeline_interleave": True}


class Chunked(nn.Cell):
    """Four blocks; block k on stage k % stages, segment k // stages (`segment_config`
    sets the segments when `by_config`)."""

    def __init__(self, stages, strategy=None, by_config=False):
        super().__init__()
        sizes = [6, 8, 8, 8, 4]
        self.blocks = nn.CellList([Block(sizes[k], sizes[k + 1], k, relu=k < 3,
                                         strategy=strategy) for k in range(4)])
        for k, b in enumerate(self.blocks):
            b.pipeline_stage = k % stages
            if not by_config:
                b.pipeline_segment = k // stages

    def construct(self, x):
        for b in self.blocks:
            x = b(x)
        return x


# stage -> its F/B blocks (micro-batch numbers) for 2 stages, 2 segments, 4 micro-batches:
# stage 0 warms up with (S - s - 1) * 2 + (V - 1) * S = 4 forwards (chunk 0 on micro-batches
# 0 1, chunk 2 on 0 1), stage 1 with 2; then one forward and one backward in turn, the
# backwards going through the chunks in reverse
INTERLEAVED_1F1B = ["F0 F1 F0 F1 F2 B0 F3 B1 F2 B0 F3 B1 B2 B3 B2 B3",
                    "F0 F1 F0 B0 F1 B1 F2 B0 F3 B1 F2 B2 F3 B3 B2 B3"]


def strategy():
    """Within a stage of 2 devices (4 ranks), the MatMul's output columns split in two."""
    return ((1, 1), (1, 2)) if get_group_size() == 4 else None


@pytest.mark.parametrize("scheduler", ["1f1b", "gpipe"])
def test_interleaved_stages_train_as_the_serial_run(scheduler):
    x, y = batch(32)
    want, serial, _ = train(1, "adam", 4, x, y)
    got, net, step = train(2, "adam", 4, x, y, make=lambda s: Chunked(s, strategy()),
                           pipeline_config=dict(INTERLEAVE, pipeline_scheduler=scheduler))
    np.testing.assert_allclose(got, want, rtol=2e-5)
    check_stage_params(net, serial, 2)
    order = INTERLEAVED_1F1B[my_stage(2)] if scheduler == "1f1b" else \
        "F0 F1 F2 F3 B3 B2 B1 B0"
    assert " ".join(blocks(step)) == order


def test_integrated_save_of_interleaved_stages_equals_serial():
    """Every Parameter of the training cell, whole: each gathered from the stage holding
    its chunk."""
    x, y = batch(32)
    _, _, serial_step = train(1, "adam", 4, x, y)
    want = serial_values(serial_step)
    _, _, step = train(2, "adam", 4, x, y, make=lambda s: Chunked(s, strategy()),
                       pipeline_config=INTERLEAVE)
    path = os.path.join(shared_dir(), "interleaved.safetensors")
    ms.save_checkpoint(step, path)
    got = ms.load_checkpoint(path)
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        np.testing.assert_allclose(got[name].asnumpy(), w, rtol=2e-5, atol=1e-6, err_msg=name)


def test_segment_config_names_the_cells():
    x, y = batch(32)
    want, _, _ = train(1, "momentum", 4, x, y)
    pipelined(2, pipeline_config=INTERLEAVE)
    net = Chunked(2, strategy(), by_config=True)
    step = nn.TrainOneStepCell(nn.PipelineCell(
        nn.WithLossCell(net, nn.MSELoss()), 4,
        segment_config={"network._backbone.blocks.2": 1, "_backbone.blocks.3": 1}),
        nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9))
    got = [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=2e-5)
    assert [b.pipeline_segment for b in net.blocks] == [-1, -1, 1, 1]


def test_a_segment_without_interleave_is_refused():
    x, y = batch(32)
    with pytest.raises(ValueError, match="'pipeline_segment' > 0 needs pipeline_config="):
        train(2, "adam", 4, x, y, make=lambda s: Chunked(s))


def test_interleaved_1f1b_needs_micro_batches_in_multiples_of_the_stages():
    x, y = batch(30)
    with pytest.raises(ValueError, match="'micro_size' should be a multiple of "
                                         "pipeline_stages: 2, but got 3"):
        train(2, "adam", 3, x, y, make=lambda s: Chunked(s), pipeline_config=INTERLEAVE)


def test_segment_property_checks_its_value():
    b = Block(2, 2, 0)
    with pytest.raises(ValueError, match="'pipeline_segment' should be >= 0, but got -1"):
        b.pipeline_segment = -1
    with pytest.raises(TypeError, match="'pipeline_segment' should be an int"):
        b.pipeline_segment = 1.0
    ms.reset_auto_parallel_context()
