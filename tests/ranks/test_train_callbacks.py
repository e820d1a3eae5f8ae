"""OnRequestExit and BackupAndRestore in a data-parallel Model.train under real MPI: a
signal reaching one rank stops every rank at the same step (each saving its checkpoint),
and a failed run resumed from its backup ends with the serial run's parameters."""
import os
import signal
import tempfile

import numpy as np
import pytest

import msops as ms
from msops import Tensor, nn
from msops.communication import get_group_size, get_rank
from msops.dataset import NumpySlicesDataset

RANKS = (2,)
N, R = get_group_size(), get_rank()
RNG = np.random.default_rng(4)
X = RNG.standard_normal((4 * N, 5)).astype(np.float32)
Y = RNG.standard_normal((4 * N, 2)).astype(np.float32)
W0 = RNG.standard_normal((2, 5)).astype(np.float32)


def _shared_dir():
    """One temporary folder for every rank (rank 0's name, broadcast)."""
    from mpi4py import MPI
    name = tempfile.mkdtemp() if R == 0 else None
    return MPI.COMM_WORLD.bcast(name, root=0)


def _run(epochs, callbacks, parallel):
    """Model.train of Dense(5, 2) + Momentum over 2 batches an epoch: the whole data serially,
    each rank's shard in data_parallel."""
    ms.reset_auto_parallel_context()
    if parallel:
        ms.set_auto_parallel_context(parallel_mode="data_parallel", device_num=N,
                                     gradients_mean=True)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        net = nn.Dense(5, 2, weight_init=Tensor(W0), bias_init="zeros")
        model = ms.Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.1, 0.9))
        shards = dict(num_shards=N, shard_id=R) if parallel else {}
        data = NumpySlicesDataset({"x": X, "y": Y}, shuffle=False, **shards)
        model.train(epochs, data.batch(2 if parallel else 2 * N), callbacks=callbacks)
        return net.weight.asnumpy().copy()
    finally:
        ms.reset_auto_parallel_context()


def test_a_signal_on_one_rank_stops_every_rank_at_the_same_step():
    folder = _shared_dir()
    steps = []

    def step_end(ctx):
        steps.append(ctx.original_args().cur_step_num)
        if len(steps) == 3 and R == N - 1:
            os.kill(os.getpid(), signal.SIGTERM)
    got = _run(5, [ms.LambdaCallback(on_train_step_end=step_end),
                   ms.OnRequestExit(save_mindir=False, directory=folder)], parallel=True)
    assert steps == [1, 2, 3]
    saved = ms.load_checkpoint(os.path.join(folder, f"rank_{R}", "Net.ckpt"))
    np.testing.assert_array_equal(saved["weight"].asnumpy(), got)
    stopped_early = []
    want = _run(5, [ms.LambdaCallback(on_train_step_end=lambda ctx: (
        stopped_early.append(1), len(stopped_early) == 3 and ctx.request_stop()))],
        parallel=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_failed_data_parallel_run_resumes_from_its_backup():
    backup = os.path.join(_shared_dir(), "backup")

    def fail(ctx):
        if ctx.original_args().cur_epoch_num == 2:
            raise RuntimeError("node lost")
    with pytest.raises(RuntimeError, match="node lost"):
        _run(3, [ms.BackupAndRestore(backup), ms.LambdaCallback(on_train_step_begin=fail)],
             parallel=True)
    got = _run(3, [ms.BackupAndRestore(backup)], parallel=True)
    want = _run(3, [], parallel=False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
