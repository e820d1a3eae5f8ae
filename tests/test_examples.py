"""The README's examples run as documented: under mpiexec on 4 ranks, asserting their results."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
# the script's folder comes first on sys.path: put this checkout's msops before any
# installed one (an editable install may point at another worktree)
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


@pytest.mark.parametrize("script,expect", [
    ("allgather.py", "AllGather on 4 ranks: [2, 3] -> [8, 3]"),
    ("semi_auto_parallel.py", "sharded output == serial output on 4 ranks"),
    ("quantized_alltoallv.py", "quantized AllToAllV pipeline on 4 ranks"),
    ("checkpoint.py", "checkpoint on 4 ranks: whole and shard files load back stand-alone"),
    ("sharding_propagation.py", "sharding propagation == serial on 4 ranks"),
    ("optimizer_sharding.py", "sharded parameters: 0.bias, 0.weight, 1.bias, 1.weight, 2.bias"),
    ("auto_parallel.py", "auto_parallel == serial on 4 ranks"),


    # the flagship GPT: 20 Adam steps, loss curve and parameters == serial, and exactly
    # Megatron's AllReduces per block (forward and backward); also with propagation
    ("transformer.py", "transformer == serial on 4 ranks"),
    ("transformer.py --propagate", "transformer == serial on 4 ranks (sharding propagation)"),
])
def test_example_runs_on_4_ranks(script, expect):
    script, *flags = script.split()
    cmd = ["mpiexec", "-n", "4", sys.executable, "-m", "mpi4py",
           str(ROOT / "examples" / script)] + flags
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert expect in proc.stdout


def _loss_curve(stdout):
    return [float(line.split()[3]) for line in stdout.splitlines() if line.startswith("epoch ")]


def test_distributed_sgd_4_ranks_follow_the_serial_loss_curve():
    """The seeds' synchronous SGD: 4 ranks, each on its quarter of every global batch,
    AllReduce-averaged gradients == the serial run's gradient of the whole batch."""
    script, epochs = str(ROOT / "examples" / "distributed_sgd.py"), ["--epochs", "3"]
    runs = {}
    for name, cmd in [("serial", [sys.executable, script, "--serial"] + epochs),
                      ("4 ranks", ["mpiexec", "-n", "4", sys.executable, "-m", "mpi4py",
                                   script] + epochs)]:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env=ENV)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs[name] = _loss_curve(proc.stdout)
    assert len(runs["serial"]) == 3 and runs["serial"][-1] < runs["serial"][0]  # it learns
    assert runs["4 ranks"] == pytest.approx(runs["serial"], rel=1e-5)
    assert "distributed SGD on 4 rank(s), 16 of every 64-sample batch each" in proc.stdout


def test_megatron_mlp_4_ranks_equal_the_serial_run():
    """examples/megatron_mlp.py: column- then row-split MatMuls (model parallel 2) x data
    parallel 2 on 4 ranks, TrainOneStepCell + Momentum: its loss curve and final (gathered)
    parameters equal the serial process's; the script also checks against an in-process
    serial run and exits non-zero when they differ."""
    script, args = str(ROOT / "examples" / "megatron_mlp.py"), ["--steps", "10",
                                                               "--print_every", "1"]
    runs = {}
    for name, cmd in [("serial", [sys.executable, script, "--serial"] + args),
                      ("4 ranks", ["mpiexec", "-n", "4", sys.executable, "-m", "mpi4py",
                                   script] + args)]:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env=ENV)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        lines = proc.stdout.splitlines()
        runs[name] = ([float(s.split()[3]) for s in lines if s.startswith("step ")],
                      {s.split()[1]: float(s.split()[3]) for s in lines if s.startswith("param ")})
    (serial_curve, serial_params), (curve, params) = runs["serial"], runs["4 ranks"]
    assert len(serial_curve) == 10 and serial_curve[-1] < 0.7 * serial_curve[0]   # it learns
    assert curve == pytest.approx(serial_curve, rel=1e-5)
    assert sorted(params) == ["b1", "b2", "w1", "w2"]
    assert params == pytest.approx(serial_params, rel=1e-5)
    assert ("Megatron MLP on 4 rank(s) (data parallel 2 x model parallel 2): 10 steps"
            in proc.stdout and "loss curve and parameters == the serial run" in proc.stdout)


def test_transformer_example_on_8_ranks():
    """The flagship at dp=4 x mp=2: still equal to serial, still Megatron's collectives."""
    cmd = ["mpiexec", "-n", "8", sys.executable, "-m", "mpi4py",
           str(ROOT / "examples" / "transformer.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT, env=ENV)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "transformer == serial on 8 ranks" in proc.stdout
    assert "4 forward, 4 backward collectives (Megatron predicts 4 AllReduce over mp each)" in proc.stdout
