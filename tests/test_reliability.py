"""Issue 16 under real mpiexec: a stuck or departed rank ends the job on every rank within
the configured timeout, with a report and no process left behind; msrun forwards signals,
cleans up and sets each rank's environment.

Each case is one small script on 2 ranks (the watchdog's cases cannot run inside the
pytest-per-rank files: they end the job by design).
"""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
TIMEOUT_S = 60
PRELUDE = """\
import os, sys, time
import numpy as np
import msops as ms
from msops import Tensor, ops
from msops.communication import init, get_rank
init()
r = get_rank()
x = Tensor(np.ones((2, 3), np.float32))
ops.AllReduce()(x)
"""


def _env(**extra: str) -> dict:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1", **extra)


def _left_behind(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (the test's tmp dir)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmd and state != "Z":
            found.append(f"{pid}: {cmd[:200]}")
    return found


def launch(tmp_path: Path, body: str, cmd: list | None = None, env: dict | None = None,
           ranks: int = 2) -> tuple[subprocess.CompletedProcess, float]:
    """Run `body` (after PRELUDE) on `ranks` ranks; fail on a hang; assert nothing is left."""
    job = tmp_path / "job.py"
    job.write_text(PRELUDE + textwrap.dedent(body))
    cmd = (cmd or ["mpiexec", "-n", str(ranks), sys.executable]) + [str(job)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env or _env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{cmd} hung for more than {TIMEOUT_S} s")
    seconds = time.monotonic() - start
    time.sleep(0.2)
    assert _left_behind(str(tmp_path)) == []
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), seconds


def test_a_rank_that_never_arrives_times_out_on_every_rank(tmp_path):
    """op_timeout from the environment; rank 1 sleeps instead of calling the AllReduce."""
    proc, seconds = launch(tmp_path, """
        if r == 0:
            ops.AllReduce()(x)
        else:
            time.sleep(40)
        print("unreachable", flush=True)
    """, env=_env(MSOPS_OP_TIMEOUT="1"))
    assert proc.returncode != 0
    assert "unreachable" not in proc.stdout
    err = proc.stderr
    assert "[rank 0] msops watchdog: AllReduce has waited" in err, err
    assert "longer than op_timeout (1 s)" in err
    assert re.search(r"waits in #2 AllReduce \(group 'world_group', x \(2, 3\) Float32\) at "
                     r"job.py:\d+: ops.AllReduce\(\)\(x\)", err), err
    assert "rank 1: runs outside any collective or Send/Receive (last call #1 AllReduce" in err
    assert "not arrived in AllReduce #2 of group 'world_group': rank(s) [1]" in err
    assert "recent calls of this rank (oldest first):\n    #1 AllReduce" in err
    assert seconds < 30, seconds  # (mostly start-up: 2 Pythons importing msops)


def test_a_receive_whose_sender_never_sends_times_out(tmp_path):
    proc, _ = launch(tmp_path, """
        ms.set_context(op_timeout=1)
        if r == 1:
            ops.Receive(3, 0, (2,), ms.float32)()
        else:
            time.sleep(40)
    """)
    assert proc.returncode != 0
    assert "[rank 1] msops watchdog: Receive has waited" in proc.stderr, proc.stderr
    assert re.search(r"waits in Receive \(group 'world_group', x \(2,\) Float32\) at "
                     r"job.py:\d+: ops.Receive\(3, 0, \(2,\), ms.float32\)\(\)", proc.stderr), \
        proc.stderr
    assert "rank 0: runs outside any collective or Send/Receive" in proc.stderr


def test_a_rank_that_exits_ends_the_job_at_once(tmp_path):
    """rank 1 skips a collective and leaves with sys.exit(0): no timeout needed."""
    proc, seconds = launch(tmp_path, """
        if r == 1:
            sys.exit(0)
        ops.AllGather()(x)
        print("unreachable", flush=True)
    """, env=_env(MSOPS_OP_TIMEOUT="600"))
    assert proc.returncode != 0
    assert "unreachable" not in proc.stdout
    assert "rank 1 has ended its script (last call #1 AllReduce" in proc.stderr, proc.stderr
    assert "waits in #2 AllGather" in proc.stderr
    assert seconds < 30, seconds  # (mostly start-up: 2 Pythons importing msops)


def test_an_uncaught_exception_under_plain_mpiexec_aborts(tmp_path):
    proc, seconds = launch(tmp_path, """
        if r == 1:
            raise RuntimeError("rank 1 gives up")
        ops.AllReduce()(x)
        print("unreachable", flush=True)
    """, env=_env(MSOPS_OP_TIMEOUT="600"))
    assert proc.returncode != 0
    assert "RuntimeError: rank 1 gives up" in proc.stderr
    assert "unreachable" not in proc.stdout
    assert seconds < 30, seconds  # (mostly start-up: 2 Pythons importing msops)


def test_a_compiled_graph_collective_is_watched_too(tmp_path):
    """GRAPH_MODE: rank 1 never runs the network; rank 0's compiled AllReduce times out
    and the report names the graph's source line."""
    proc, _ = launch(tmp_path, """
        from msops import nn
        ms.set_context(mode=ms.GRAPH_MODE, op_timeout=1)

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.ar = ops.AllReduce()

            def construct(self, v):
                return self.ar(v) * 2

        if r == 0:
            Net()(x)
        else:
            time.sleep(40)
    """)
    assert proc.returncode != 0
    assert re.search(r"waits in #\d+ AllReduce \(group 'world_group', x \(2, 3\) Float32\) "
                     r"at .*job.py:\d+: return self.ar\(v\) \* 2", proc.stderr), proc.stderr


def test_ranks_that_finish_together_exit_cleanly(tmp_path):
    proc, seconds = launch(tmp_path, """
        y = ops.AllGather()(x)
        open(f"rank{r}.txt", "w").write(f"done {y.shape}")
    """)
    assert proc.returncode == 0, proc.stderr
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)] == ["done (4, 3)"] * 2


# -- msrun ------------------------------------------------------------------------------

MSRUN = [sys.executable, "-m", "msops"]


def test_msrun_sets_each_ranks_environment_and_thread_limits(tmp_path):
    proc, _ = launch(tmp_path, """
        keys = ("RANK_ID", "RANK_SIZE", "LOCAL_RANK", "DEVICE_ID", "OMP_NUM_THREADS",
                "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        print(f"env {r} {[os.environ.get(k) for k in keys]}", flush=True)   # one write
    """, cmd=MSRUN + ["-n", "2", "--tag_output"], env={
        k: v for k, v in _env(MKL_NUM_THREADS="3").items()
        if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")})
    assert proc.returncode == 0, proc.stderr
    cores = len(os.sched_getaffinity(0))
    share = str(max(1, cores // 2))
    for r in range(2):                  # (hydra may interleave the two ranks' chunks)
        assert f"env {r} {[str(r), '2', str(r), str(r), share, share, '3']}" in proc.stdout, \
            proc.stdout
        assert f"[{r}] " in proc.stdout                         # --tag_output


def test_msrun_hostfile(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    proc, _ = launch(tmp_path, """
        open(f"rank{r}.txt", "w").write(f"rank {r} of {os.environ['RANK_SIZE']}")
    """, cmd=MSRUN + ["-n", "2", "--hostfile", str(hosts)])
    assert proc.returncode == 0, proc.stderr
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)] == \
        ["rank 0 of 2", "rank 1 of 2"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_msrun_forwards_signals_and_leaves_nothing(tmp_path, sig):
    job = tmp_path / "job.py"
    job.write_text(PRELUDE + "print('ready', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen(MSRUN + ["-n", "2", str(job)], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready = 0
        while ready < 2:                           # both ranks started
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            ready += line.count("ready")           # (hydra may merge the ranks' lines)
        start = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 128 + sig
    assert time.monotonic() - start < 20
    assert _left_behind(str(tmp_path)) == []
