"""Train on 4 ranks, save shards, reshard them for 2 (or 8) ranks with another strategy,
load into a fresh run on that many ranks and train on: the losses and final parameters equal training
the serial network without the interruption. Two real mpiexec launches."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import msops as ms

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "ranks"))
import crossrun_checkpoint as run  # noqa: E402


def _mpiexec(n, *args):
    path = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path)   # this tree's msops
    cmd = ["mpiexec", "-n", str(n), sys.executable, "-m", "mpi4py",
           str(HERE / "ranks" / "crossrun_checkpoint.py"), *args]
    proc = subprocess.run(cmd, cwd=HERE.parent, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{' '.join(cmd)}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("resume_ranks", [2, 8])
def test_save_on_4_ranks_resume_on_another_count_and_strategy(tmp_path, resume_ranks):
    ms.reset_auto_parallel_context()
    ms.set_context(mode=ms.GRAPH_MODE)
    serial = run.MLP()
    want_losses = run.steps(serial, 2 * run.STEPS)
    _mpiexec(4, "save", str(tmp_path))
    _mpiexec(resume_ranks, "resume", str(tmp_path))
    got_losses = json.load(open(tmp_path / "losses_save.json")) + \
        json.load(open(tmp_path / "losses_resume.json"))
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-5, atol=1e-6)
    final = ms.load_checkpoint(str(tmp_path / "final.safetensors"))
    for p in serial.get_parameters():
        np.testing.assert_allclose(final[p.name].asnumpy(), p.asnumpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=p.name)
    assert want_losses[-1] < want_losses[0]
    # the last compile (the training step's) named the ops under the step's cells
    saved = json.load(open(tmp_path / "strategy_resume.json"))["parallel_strategy_item"]
    m1 = [v for k, v in saved.items() if k.endswith("m1")]
    want = [[list(d) for d in run.RESUME_AS[resume_ranks][0]]]
    assert [v["parallel_strategy"] for v in m1] == want, saved
