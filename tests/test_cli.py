"""msrun / python -m msops: launch, argument passing, exit codes, abort-on-error, errors."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from msops import cli

TIMEOUT_S = 60
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Launched jobs run from a temporary folder: import msops from this checkout, not whatever
# the editable install points at.
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(
    p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))


def run(cmd: list, cwd, timeout: float = TIMEOUT_S) -> tuple[subprocess.CompletedProcess, float]:
    """Run a launcher in its own session; on timeout kill the whole tree (mpiexec, ranks)."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{cmd} hung for more than {timeout} s")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), time.monotonic() - start


def script(tmp_path, body: str) -> str:
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


MSRUN = [os.path.join(os.path.dirname(sys.executable), "msrun")]
PY_M = [sys.executable, "-m", "msops"]


def test_msrun_runs_every_rank_with_its_arguments(tmp_path):
    job = script(tmp_path, """
        import sys
        import numpy as np
        from msops import Tensor, ops
        from msops.communication import get_group_size, get_rank, init
        init()
        r, n = get_rank(), get_group_size()
        out = ops.AllGather()(Tensor(np.array([r * 10 + 1], np.int32))).asnumpy()
        print(f"rank={r} size={n} args={sys.argv[1:]} gathered={out.tolist()}", flush=True)
    """)
    proc, _ = run(MSRUN + ["-n", "2", job, "--lr", "0.1", "-n", "7"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    # hydra forwards each rank's output in chunks: lines of two ranks may run together
    lines = sorted(re.findall(r"rank=\d+ size=\d+ args=\[[^]]*\] gathered=\[[^]]*\]",
                              proc.stdout))
    gathered = (np.arange(2) * 10 + 1).tolist()
    assert lines == [f"rank={r} size=2 args=['--lr', '0.1', '-n', '7'] gathered={gathered}"
                     for r in range(2)]


def test_a_failing_rank_aborts_the_job_quickly(tmp_path):
    job = script(tmp_path, """
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank == 1:
            raise RuntimeError("rank 1 gives up")
        MPI.COMM_WORLD.Barrier()           # rank 0 would wait here forever without the abort
        print("unreachable", flush=True)
    """)
    proc, seconds = run(PY_M + ["--worker_num", "2", job], tmp_path)
    assert proc.returncode != 0
    assert "RuntimeError: rank 1 gives up" in proc.stderr
    assert "unreachable" not in proc.stdout
    assert seconds < 20, f"abort took {seconds:.1f} s"


def test_exit_code_is_propagated(tmp_path):
    job = script(tmp_path, """
        import sys
        sys.exit(3)
    """)
    proc, _ = run(MSRUN + ["--worker_num=2", job], tmp_path)
    assert proc.returncode == 3


def test_plan_is_not_yet_available(tmp_path):
    proc, _ = run(PY_M + ["plan", "net.py"], tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("msops plan: not yet available.")


@pytest.mark.parametrize("argv,message", [
    (["-n", "0", "x.py"], "For 'msrun', the 'worker_num' should be a positive int, but got 0."),
    (["-n", "2", "missing.py"],
     "For 'msrun', the 'script' should be an existing file, but got 'missing.py'."),
    (["x.py"], "the following arguments are required: -n/--worker_num"),
    (["-n", "two", "x.py"], "argument -n/--worker_num: invalid int value: 'two'"),
])
def test_argument_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.py").write_text("")
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_command_line_uses_mpi4py_runner():
    cmd = cli.mpiexec_command("/opt/mpi/mpiexec", 4, "train.py", ["--epochs", "2"],
                              python="/venv/bin/python")
    assert cmd == ["/opt/mpi/mpiexec", "-n", "4", "/venv/bin/python", "-m", "mpi4py",
                   "train.py", "--epochs", "2"]
    assert cli.mpiexec_command("mpiexec", 8, "t.py", [], open_mpi=True, python="py") == \
        ["mpiexec", "--oversubscribe", "-n", "8", "py", "-m", "mpi4py", "t.py"]


def test_the_bundled_mpiexec_is_found_beside_python():
    found = cli.find_mpiexec()
    assert found == os.path.join(os.path.dirname(sys.executable), "mpiexec")
    assert not cli._is_open_mpi(found)             # the mpich wheel: no --oversubscribe


def test_mpiexec_on_path_and_missing(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    python = str(tmp_path / "venv" / "python")       # no mpiexec beside it
    assert cli.find_mpiexec(python, path=str(bin_dir)) == str(fake)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="msrun: no mpiexec beside .* or on PATH"):
        cli.find_mpiexec(python, path=str(empty))
    (tmp_path / "job.py").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", python)
    monkeypatch.setenv("PATH", str(empty))
    assert cli.main(["-n", "2", "job.py"]) == 127
    assert "pip install mpich" in capsys.readouterr().err
