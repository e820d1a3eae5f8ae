"""Checkpoints of pipelined networks against the serial run of the same training.

An integrated save gathers each Parameter on its stage and rank 0 writes them all: the
file equals the serial network's (and optimizer's) parameters. Per-rank files
(integrated_save=False) hold each stage's slices; merged, resharded or loaded together they
give the serial weights back. A whole checkpoint loads into a pipelined network, whose
training then continues as the serial one does."""
import json
import os
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

import msops as ms
from msops import dataset as ds, nn
from msops.communication import get_group_size, get_rank
from msops.train import ckpt_cli
from msops.train.callback import Callback, CheckpointConfig, ModelCheckpoint
from pipeline_nets import (Net, Tied, batch, check_stage_params, my_stage, pipelined,
                           train)

RANKS = (2, 4, 8)


def shared_dir():
    """One temporary folder, the same on every rank."""
    path = tempfile.mkdtemp(prefix="msops-pipe-ckpt-") if get_rank() == 0 else None
    return MPI.COMM_WORLD.bcast(path)


def serial_values(cell):
    return {p.name: p.asnumpy().copy() for p in cell.get_parameters()}


SPLIT = ((1, 1), (1, 2))
OPT_SHARD = {"enable_parallel_optimizer": True,
             "parallel_optimizer_config": {"parallel_optimizer_threshold": 0}}


def cases():
    """(stages, optimizer, strategy, context) that fit this world: 2 and 4 stages, a
    stage's devices splitting its MatMuls, or sharding the optimizer's state and weights."""
    out = [(2, "momentum", None, {}), (2, "adam", None, {})]
    if get_group_size() >= 4:
        out += [(4, "momentum", None, {}), (2, "adam", SPLIT, {}), (2, "adam", None, OPT_SHARD)]
    return out


@pytest.mark.parametrize("stages, optimizer, strategy, context", cases())
def test_integrated_save_equals_serial(stages, optimizer, strategy, context):
    """Every Parameter of the training cell (weights, moments, step counters), whole."""
    x, y = batch()
    _, _, serial_step = train(1, optimizer, stages, x, y)
    want = serial_values(serial_step)
    _, net, step = train(stages, optimizer, stages, x, y, strategy=strategy, **context)
    path = os.path.join(shared_dir(), "whole.safetensors")
    ms.save_checkpoint(step, path)
    got = ms.load_checkpoint(path)              # every rank reads rank 0's file
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        np.testing.assert_allclose(got[name].asnumpy(), w, rtol=2e-5, atol=1e-6,
                                   err_msg=name)
    ckpt = os.path.join(os.path.dirname(path), "whole.ckpt")
    ms.save_checkpoint(step, ckpt)                      # MindSpore's file: the same values
    for name, w in ms.load_checkpoint(ckpt).items():
        np.testing.assert_allclose(w.asnumpy(), got[name].asnumpy(), err_msg=name)


def test_integrated_save_of_a_weight_two_stages_share():
    """Tied weights (the first and the last stage read them): saved once, current."""
    x, _ = batch()
    for stages in sorted({2, min(4, get_group_size())}):
        _, _, serial_step = train(1, "adam", stages, x, x, make=Tied)
        want = serial_values(serial_step)
        _, _, step = train(stages, "adam", stages, x, x, make=Tied)
        path = os.path.join(shared_dir(), "tied.safetensors")
        ms.save_checkpoint(step, path)
        got = ms.load_checkpoint(path)
        assert sorted(got) == sorted(want)
        for name, w in want.items():
            np.testing.assert_allclose(got[name].asnumpy(), w, rtol=2e-5, atol=1e-6,
                                       err_msg=name)


@pytest.mark.parametrize("stages, optimizer, strategy, context", cases()[-3:])
def test_rank_files_merge_to_serial(stages, optimizer, strategy, context):
    """integrated_save=False: each rank's file holds its stage's Parameters (its slices);
    load_distributed_checkpoint, transform_checkpoints and `msops ckpt` rebuild them."""
    x, y = batch()
    _, serial, serial_step = train(1, optimizer, stages, x, y)
    want = serial_values(serial_step)
    _, net, step = train(stages, optimizer, stages, x, y, strategy=strategy, **context)
    src = shared_dir()
    mine = os.path.join(src, f"rank_{get_rank()}", f"net{get_rank()}.safetensors")
    os.makedirs(os.path.dirname(mine), exist_ok=True)
    ms.save_checkpoint(step, mine, integrated_save=False)
    MPI.COMM_WORLD.Barrier()
    saved = ms.load_checkpoint(mine)
    stage_weights = {b.w.name for b in net.blocks if b.pipeline_stage == my_stage(stages)}
    assert {n for n in saved if n.startswith("blocks.")} == stage_weights
    check_stage_params(net, serial, stages)

    files = [os.path.join(src, f"rank_{r}", f"net{r}.safetensors")
             for r in range(get_group_size())]
    fresh = Net(1)
    ms.reset_auto_parallel_context()
    assert ms.load_distributed_checkpoint(fresh, files)[0] == []
    for p in fresh.get_parameters():
        np.testing.assert_allclose(p.asnumpy(), want[p.name], rtol=2e-5, atol=1e-6)
    if get_rank() == 0:
        dst = os.path.join(src, "merged")
        ms.transform_checkpoints(src, dst, "whole")
        merged = ms.load_checkpoint(os.path.join(dst, "rank_0", "whole0.safetensors"))
        assert sorted(merged) == sorted(want)
        for name, w in want.items():
            np.testing.assert_allclose(merged[name].asnumpy(), w, rtol=2e-5, atol=1e-6)
        assert ckpt_cli.main(["verify", src]) == 0
    MPI.COMM_WORLD.Barrier()


def test_whole_checkpoint_resumes_pipelined_training():
    """A serial checkpoint loaded into a pipelined network: its training continues as the
    serial network's from the same checkpoint."""
    x, y = batch()
    stages = 2
    folder = shared_dir()
    path = os.path.join(folder, "serial.safetensors")
    _, first, _ = train(1, "momentum", stages, x, y)
    if get_rank() == 0:
        ms.save_checkpoint(first, path)
    MPI.COMM_WORLD.Barrier()
    loaded = ms.load_checkpoint(path)
    want, serial, _ = train(1, "momentum", stages, x, y, load=loaded)
    got, net, _ = train(stages, "momentum", stages, x, y, load=loaded)
    np.testing.assert_allclose(got, want, rtol=2e-5)
    check_stage_params(net, serial, stages)


class Losses(Callback):
    def __init__(self):
        self.values = []

    def on_train_step_end(self, run_context):
        self.values.append(float(run_context.original_args().net_outputs.asnumpy()))


def test_model_train_with_checkpoints_equals_serial():
    """Model.train of a PipelineCell, ModelCheckpoint saving the whole network each epoch:
    the losses and the last checkpoint (every stage's Parameters, gathered to rank 0)
    equal the serial run's."""
    x, y = batch(48, seed=3)
    folder = shared_dir()

    def fit(stages, directory):
        pipelined(stages)
        net = Net(stages)
        model = ms.Model(nn.PipelineCell(nn.WithLossCell(net, nn.MSELoss()), 2),
                         optimizer=nn.Momentum(net.trainable_params(), 0.05, 0.9))
        data = ds.NumpySlicesDataset((x, y), ["x", "y"], shuffle=False).batch(16)
        losses = Losses()
        save = ModelCheckpoint("net", directory, CheckpointConfig(save_checkpoint_steps=3))
        model.train(2, data, callbacks=[losses, save])
        return losses.values, net

    want, serial = ([], None)
    if get_rank() == 0:
        want, serial = fit(1, os.path.join(folder, "serial"))
    want = MPI.COMM_WORLD.bcast(want)
    got, net = fit(2, os.path.join(folder, "pipelined"))
    assert len(got) == 6
    np.testing.assert_allclose(got, want, rtol=2e-5)
    last = ms.load_checkpoint(os.path.join(folder, "pipelined", "net-2_3.safetensors"))
    if get_rank() == 0:
        ref = ms.load_checkpoint(os.path.join(folder, "serial", "net-2_3.safetensors"))
        assert sorted(last) == sorted(ref)
        for name, w in ref.items():
            np.testing.assert_allclose(last[name].asnumpy(), w.asnumpy(), rtol=2e-5,
                                       atol=1e-6, err_msg=name)
    MPI.COMM_WORLD.Barrier()


def test_strategy_files_record_stages_and_merge():
    """strategy_ckpt_save_file per rank: each file names its rank's stage and every op's
    stage (block k's MatMul on stage k * S // 4); merge_pipeline_strategys joins them, and
    the merged layouts place each weight's slices (the serial weights) as the ranks hold
    them."""
    x, y = batch()
    stages = 2
    folder = shared_dir()
    path = os.path.join(folder, "strategies", f"rank{get_rank()}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    strategy = ((1, 1), (1, 2)) if get_group_size() >= 4 else None
    _, serial, _ = train(1, "momentum", stages, x, y)
    _, net, _ = train(stages, "momentum", stages, x, y, strategy=strategy,
                      strategy_ckpt_save_file=path)
    mine = json.load(open(path))
    assert mine["current_stage"] == my_stage(stages)
    for k, b in enumerate(net.blocks):
        assert mine["parallel_strategy_item"][f"network._backbone.blocks.{k}.matmul"]["stage"] == \
            k * stages // 4
    MPI.COMM_WORLD.Barrier()
    merged = os.path.join(folder, "merged.json")
    if get_rank() == 0:
        ms.merge_pipeline_strategys(os.path.join(folder, "strategies"), merged)
    MPI.COMM_WORLD.Barrier()
    layouts = ms.build_searched_strategy(merged)
    position = get_rank() % (get_group_size() // stages)
    for b, want in zip(net.blocks, serial.blocks):
        if b.pipeline_stage == my_stage(stages):
            lay = layouts[b.w.name].layout
            np.testing.assert_allclose(b.w.asnumpy(), want.w.asnumpy()[lay.slice_of(position)],
                                       rtol=2e-5, atol=1e-6)
