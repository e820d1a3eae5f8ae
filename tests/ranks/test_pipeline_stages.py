"""Pipeline parallelism (pipeline_stages, Cell.pipeline_stage, nn.PipelineCell) against the
serial run of the same network.

Each rank keeps its stage's ops; the micro-batches' activations and gradients cross the
stages by Send/Receive. The oracle: every rank returns the serial losses, and holds the
serial parameters of its own stage after training (test_pipeline_sharded.py: with the
stage's devices sharding its ops)."""
import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank
from msops.parallel import gather_full
from pipeline_nets import (OPTIMIZERS, STEPS, Net, Tied, batch, check_stage_params, my_stage,
                           pipelined, train)

RANKS = (2, 4, 8)


def stage_counts():
    n = get_group_size()
    return [s for s in (2, 4) if n % s == 0 and s <= n]


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_training_equals_serial_on_every_stage_count(optimizer):
    x, y = batch()
    for stages in stage_counts():
        micro = max(stages, 2)
        want, serial, _ = train(1, optimizer, micro, x, y)
        got, net, _ = train(stages, optimizer, micro, x, y)
        np.testing.assert_allclose(got, want, rtol=2e-5)       # on every rank
        check_stage_params(net, serial, stages)


def test_fed_batch_slices_per_stage_device():
    """full_batch=False: the ranks at one position of each stage feed the same slice."""
    n = get_group_size()
    stages = 2
    per = n // stages
    x, y = batch(8 * per)
    want, serial, _ = train(1, "momentum", 2, x, y)
    k = get_rank() % per
    rows = x.shape[0] // per
    part = slice(k * rows, (k + 1) * rows)
    got, net, _ = train(stages, "momentum", 2, x[part], y[part], full_batch=False)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    check_stage_params(net, serial, stages)


def test_each_rank_runs_only_its_stage():
    """A rank's compiled step reads only its stage's Parameters, sends its activations
    forward and receives their gradients back (one of each per micro-batch and boundary)."""
    stages, micro = 2, 2
    x, y = batch()
    _, net, step = train(stages, "momentum", micro, x, y)
    graph = step._compile_cache.last_graph()
    mine = {b.w.name for b in net.blocks if b.pipeline_stage == my_stage(stages)}
    read = {p.value.name for p in graph.parameters if p.value.name.startswith("blocks.")}
    assert read == mine
    ops_ = [node.op for node in graph.nodes]
    if my_stage(stages) == 0:       # forward: one send per micro-batch; backward: receives
        assert ops_.count("Send") == micro and ops_.count("Receive") == micro + 1   # + loss
    else:
        assert ops_.count("Receive") == micro and ops_.count("Send") == micro + 1


def test_forward_only_compile_equals_serial():
    x, _ = batch()
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    want = Net(1)(Tensor(x)).asnumpy()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=get_group_size(),
                                 full_batch=True, pipeline_stages=2)
    got = gather_full(Net(2)(Tensor(x))).asnumpy()      # each stage returns the output
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_functional_step_equals_serial():
    """ms.jit over value_and_grad of a PipelineCell, PipelineGradReducer and the optimizer
    (MindSpore 2.x's functional pipeline step)."""
    x, y = batch()

    def run(stages):
        pipelined(stages)
        net = Net(stages)
        opt = OPTIMIZERS["momentum"](net.trainable_params())
        loss_net = nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), 2)
        grad_fn = ms.value_and_grad(loss_net, None, opt.parameters)
        reducer = nn.PipelineGradReducer(opt.parameters, scale_sense=2.0)

        @ms.jit
        def step(a, b):
            loss, grads = grad_fn(a, b)
            opt(reducer(grads))
            return loss
        return [float(step(Tensor(x), Tensor(y)).asnumpy()) for _ in range(STEPS)], net
    want, serial = run(1)
    got, net = run(2)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    check_stage_params(net, serial, 2)


def test_errors_are_raised_on_every_rank():
    x, y = batch()
    ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", device_num=get_group_size(),
                                 full_batch=True, pipeline_stages=2)
    ms.set_context(mode=ms.GRAPH_MODE)
    net = Net(2)
    net.blocks[3].pipeline_stage = 2
    with pytest.raises(ValueError, match=r"'pipeline_stage' should be < pipeline_stages 2, "
                                         r"but got 2"):
        net(Tensor(x))
    net = Net(2)
    cell = nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), 1)
    with pytest.raises(ValueError, match=r"'micro_size' should be >= pipeline_stages: 2, "
                                         r"but got 1"):
        cell(Tensor(x), Tensor(y))

    ms.reset_auto_parallel_context()
    if get_group_size() % 3:
        ms.set_auto_parallel_context(parallel_mode="semi_auto_parallel", pipeline_stages=3)
        with pytest.raises(ValueError, match=r"'pipeline_stages' should divide the world "
                                             r"size"):
            Net(3)(Tensor(x))


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_a_weight_shared_by_two_stages_trains_as_serial(optimizer):
    """Both stages read the tied weight; its gradient sums both stages' parts, one stage
    updates it and copies it to the other: every stage holding it keeps the serial value."""
    x, _ = batch()

    def run(stages, micro):
        pipelined(stages)
        net = Tied(stages)
        step = nn.TrainOneStepCell(nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()),
                                                   micro),
                                   OPTIMIZERS[optimizer](net.trainable_params()))
        return [float(step(Tensor(x), Tensor(x)).asnumpy()) for _ in range(STEPS)], net
    for stages in stage_counts():
        want, serial = run(1, stages)
        got, net = run(stages, stages)
        np.testing.assert_allclose(got, want, rtol=2e-5)
        if my_stage(stages) in (0, stages - 1):            # the stages holding w
            np.testing.assert_allclose(net.first.w.asnumpy(), serial.first.w.asnumpy(),
                                       rtol=2e-5, atol=1e-6)
