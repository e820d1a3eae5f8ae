"""The pipeline schedules: 1F1B (the default, MindSpore's) and GPipe.

Each stage's compiled step runs its micro-batches' forward (F) and backward (B) blocks in
the textbook order: GPipe all forwards then the backwards; 1F1B, on stage s of S, S - s - 1
forwards, then one forward and one backward in turn, then the last backwards. Both train as
the serial run; 1F1B plans fewer activation buffers."""
import numpy as np
import pytest

from msops.communication import get_group_size
from pipeline_nets import batch, check_stage_params, my_stage, train

RANKS = (2, 4)


def blocks(step):
    """The F/B block sequence of this rank's compiled step, read off its MatMuls."""
    graph = step._compile_cache.last_graph()
    seq = []
    for n in graph.nodes:
        if n.op == "MatMul" and n.id in graph.micro_of:
            m, phase = graph.micro_of[n.id]
            b = ("F", "B")[phase] + str(m)
            if not seq or seq[-1] != b:
                seq.append(b)
    return seq


# (stages, micro-batches) -> each stage's block order, written out by hand
ONE_F_ONE_B = {
    (2, 4): ["F0 F1 B0 F2 B1 F3 B2 B3",
             "F0 B0 F1 B1 F2 B2 F3 B3"],
    (4, 4): ["F0 F1 F2 F3 B0 B1 B2 B3",
             "F0 F1 F2 B0 F3 B1 B2 B3",
             "F0 F1 B0 F2 B1 F3 B2 B3",
             "F0 B0 F1 B1 F2 B2 F3 B3"],
}
GPIPE = "F0 F1 F2 F3 B3 B2 B1 B0"


def schedules():
    return [(s, m) for (s, m) in ONE_F_ONE_B if get_group_size() % s == 0]


@pytest.mark.parametrize("stages, micro", schedules())
def test_each_stage_runs_its_blocks_in_the_scheduled_order(stages, micro):
    x, y = batch(32)
    want, serial, _ = train(1, "adam", micro, x, y)
    for scheduler, order in (("1f1b", ONE_F_ONE_B[(stages, micro)][my_stage(stages)]),
                             ("gpipe", GPIPE)):
        got, net, step = train(stages, "adam", micro, x, y,
                               pipeline_config={"pipeline_scheduler": scheduler})
        assert " ".join(blocks(step)) == order, scheduler
        np.testing.assert_allclose(got, want, rtol=2e-5)
        check_stage_params(net, serial, stages)


def test_1f1b_plans_fewer_activation_buffers():
    """8 micro-batches of large activations on 2 stages: 1F1B keeps at most 2 in flight on
    a stage, GPipe all 8 (the executor's buffer plan, in bytes)."""
    x, y = batch(1024)
    planned = {}
    for scheduler in ("gpipe", "1f1b"):
        _, _, step = train(2, "momentum", 8, x, y,
                           pipeline_config={"pipeline_scheduler": scheduler})
        planned[scheduler] = sum(step._compile_cache._last_executor.plan.nbytes)
    assert planned["1f1b"] * 2 < planned["gpipe"], planned
