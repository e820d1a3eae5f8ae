"""`msrun`: launch a script on N ranks over the bundled MPI, with abort-on-error.

    msrun -n 4 train.py --epochs 2          # also: msrun --worker_num 4 ...
    python -m msops -n 4 train.py           # the same
    msops ckpt show|verify|merge|reshard ...  # checkpoint tools (see msops.train.ckpt_cli)
    msrun -n 8 --hostfile hosts --tag_output train.py

runs `mpiexec -n 4 <this python> -c <bootstrap> train.py --epochs 2`. The bootstrap, before
the script (and numpy) is imported, sets each rank's `RANK_ID`, `RANK_SIZE`, `LOCAL_RANK`
and `DEVICE_ID` (= LOCAL_RANK) from the MPI launcher, limits BLAS/OpenMP threads
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS; each unless the user set it) to
the rank's share of the host's cores, then runs the script under mpi4py's runner, which
calls MPI_Abort when a rank ends with an uncaught exception, so one failing rank stops the
whole job instead of leaving the others blocked in a collective.

msrun starts mpiexec in a session of its own and forwards SIGINT and SIGTERM to it; it
returns only once mpiexec and every process of that session (hydra's proxies, the ranks)
are gone, killing what is left after a grace period. The exit code is mpiexec's (the
failing rank's code; 128 + s when killed by signal s). MPICH oversubscribes by default;
with Open MPI `--oversubscribe` is added, so N may exceed the number of cores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

__all__ = ["main", "msops_main", "find_mpiexec", "mpiexec_command", "BOOTSTRAP",
           "THREAD_VARS"]

_PLAN_NOT_YET = ("msops plan: not yet available. The dry-run planner/visualiser (layouts and "
                 "collectives of a compiled Cell for a simulated world) is planned; see "
                 "docs/design.md.")


def find_mpiexec(python: str | None = None, path: str | None = None) -> str:
    """The mpiexec beside `python` (default: this one; the `mpich` wheel installs it
    there), else the first on `path` (default: PATH)."""
    python = python or sys.executable
    beside = Path(python).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpiexec", path=path)
    if found is None:
        raise FileNotFoundError(
            f"msrun: no mpiexec beside {python} or on PATH. Install the bundled MPI with "
            f"`pip install mpich` (a dependency of msops) or put an MPI's mpiexec on PATH.")
    return found


def _is_open_mpi(mpiexec: str) -> bool:
    """Open MPI refuses more ranks than cores unless told `--oversubscribe`; MPICH rejects it."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Open MPI" in out or "OpenRTE" in out


#: the thread-count variables of OpenMP and the BLAS libraries numpy may load
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: what each rank runs first (`python -c BOOTSTRAP script args`): only os and sys are
#: imported before the thread limits are set, so numpy's BLAS reads them at load
BOOTSTRAP = """\
import os, sys
e = os.environ
def first(*names, default):
    return next((e[n] for n in names if e.get(n)), default)
rank = first('PMI_RANK', 'OMPI_COMM_WORLD_RANK', default='0')
size = first('PMI_SIZE', 'OMPI_COMM_WORLD_SIZE', default='1')
local = first('MPI_LOCALRANKID', 'OMPI_COMM_WORLD_LOCAL_RANK', default=rank)
local_size = int(first('MPI_LOCALNRANKS', 'OMPI_COMM_WORLD_LOCAL_SIZE', default=size))
e.update(RANK_ID=rank, RANK_SIZE=size, LOCAL_RANK=local, DEVICE_ID=local)
cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
for name in %r:
    if name not in e:
        e[name] = str(max(1, (cores or 1) // max(1, local_size)))
from mpi4py.run import main
sys.argv[:] = ['msrun'] + sys.argv[1:]
main()
""" % (THREAD_VARS,)


def mpiexec_command(mpiexec: str, worker_num: int, script: str, args: Sequence[str],
                    open_mpi: bool = False, python: str | None = None,
                    hostfile: str | None = None, tag_output: bool = False) -> list[str]:
    """The command line that runs `script args` on `worker_num` ranks through the bootstrap
    and mpi4py's runner (with `python`, default this interpreter): Open MPI or MPICH
    spellings of oversubscription, the host file and rank-prefixed output."""
    python = python or sys.executable
    extra = ["--oversubscribe"] if open_mpi else []
    if hostfile is not None:
        extra += ["--hostfile", hostfile] if open_mpi else ["-f", hostfile]
    if tag_output:
        extra += ["--tag-output"] if open_mpi else ["-prepend-rank"]
    return [mpiexec, *extra, "-n", str(worker_num), python, "-c", BOOTSTRAP, script, *args]


#: how long msrun waits for the job's processes to go after mpiexec ends or is signalled
GRACE_S = 5.0


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` now (hydra starts its proxies in sessions of their own,
    so a process group does not hold them): from /proc, empty where there is none."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as f:       # a zombie is gone already
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            left.add(pid)
        except (ProcessLookupError, FileNotFoundError):
            pass
        except OSError:
            left.add(pid)
    return left


def _reap(pids: set[int], grace: float = GRACE_S) -> None:
    """Wait until every process of `pids` (the job's, seen while it ran) is gone;
    SIGKILL what outlives `grace`."""
    deadline = time.monotonic() + grace
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in _alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def run_job(cmd: list[str]) -> int:
    """Run `cmd` (mpiexec), forwarding SIGINT and SIGTERM to it, and return its exit code
    once every process it started (proxies, ranks) is gone."""
    proc = subprocess.Popen(cmd, start_new_session=True)
    got: list[tuple[int, float]] = []
    seen: set[int] = set()

    def forward(signum: int, _frame: object) -> None:
        seen.update(_descendants(proc.pid))
        got.append((signum, time.monotonic()))
        try:
            proc.send_signal(signum)        # hydra passes it on to the ranks and stops
        except ProcessLookupError:
            pass
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        polls = 0
        while True:
            try:
                code = proc.wait(timeout=0.1)
                break
            except subprocess.TimeoutExpired:
                polls += 1
                if polls % 10 == 1:                     # the job's processes, once a second
                    seen.update(_descendants(proc.pid))
                if got and time.monotonic() - got[0][1] > GRACE_S:    # told to stop, slow
                    seen.update(_descendants(proc.pid))
                    proc.kill()
        _reap(seen)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if got and code >= 0:
        return 128 + got[0][0]
    return code if code >= 0 else 128 - code      # killed by signal s: the shell's 128 + s


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Run a Python script on N MPI ranks (abort-on-error).",
        epilog=f"`{prog} ckpt show|verify|merge|reshard ...`: checkpoint tools. "
               f"`{prog} plan ...` (dry-run planner) is not yet available.")
    p.add_argument("-n", "--worker_num", type=int, required=True, metavar="N",
                   help="number of ranks (processes) to launch")
    p.add_argument("--hostfile", default=None, metavar="PATH",
                   help="MPI host file (one host a line, 'host:slots'): ranks on several hosts")
    p.add_argument("--tag_output", action="store_true",
                   help="prefix every output line with its rank")
    p.add_argument("script", help="the Python script every rank runs")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    return p


def main(argv: Sequence[str] | None = None, prog: str = "msrun") -> int:
    """Entry point of `msrun` and `python -m msops`; returns the job's exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["ckpt"]:                     # checkpoint tools (msops.train.ckpt_cli)
        from msops.train.ckpt_cli import main as ckpt_main
        return ckpt_main(argv[1:], prog=f"{prog} ckpt")
    if argv[:1] == ["plan"]:
        print(_PLAN_NOT_YET, file=sys.stderr)
        return 2
    parser = _parser(prog)
    ns = parser.parse_args(argv)
    if ns.worker_num <= 0:
        parser.error(f"For '{prog}', the 'worker_num' should be a positive int, "
                     f"but got {ns.worker_num}.")
    if not Path(ns.script).is_file():
        parser.error(f"For '{prog}', the 'script' should be an existing file, "
                     f"but got '{ns.script}'.")
    try:
        mpiexec = find_mpiexec()
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 127
    if ns.hostfile is not None and not Path(ns.hostfile).is_file():
        parser.error(f"For '{prog}', the 'hostfile' should be an existing file, "
                     f"but got '{ns.hostfile}'.")
    cmd = mpiexec_command(mpiexec, ns.worker_num, ns.script, ns.args, _is_open_mpi(mpiexec),
                          hostfile=ns.hostfile, tag_output=ns.tag_output)
    sys.stdout.flush()
    return run_job(cmd)


def msops_main() -> int:
    """Entry point of the `msops` command (`msops ckpt ...`, or `msops -n N script.py`)."""
    return main(prog="msops")
