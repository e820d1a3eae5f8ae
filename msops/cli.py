"""`msrun`: launch a script on N ranks over the bundled MPI, with abort-on-error.

    msrun -n 4 train.py --epochs 2          # also: msrun --worker_num 4 ...
    python -m msops -n 4 train.py           # the same
    msops ckpt show|verify|merge|reshard ...  # checkpoint tools (see msops.train.ckpt_cli)

runs `mpiexec -n 4 <this python> -m mpi4py train.py --epochs 2`. mpi4py's runner calls
MPI_Abort when a rank ends with an uncaught exception, so one failing rank stops the
whole job instead of leaving the others blocked in a collective. The exit code is
mpiexec's (the failing rank's code). MPICH oversubscribes by default; with Open MPI
`--oversubscribe` is added, so N may exceed the number of cores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["main", "msops_main", "find_mpiexec", "mpiexec_command"]

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


def mpiexec_command(mpiexec: str, worker_num: int, script: str, args: Sequence[str],
                    open_mpi: bool = False, python: str | None = None) -> list[str]:
    """The command line that runs `script args` on `worker_num` ranks under mpi4py's runner
    (with `python`, default this interpreter)."""
    python = python or sys.executable
    extra = ["--oversubscribe"] if open_mpi else []
    return [mpiexec, *extra, "-n", str(worker_num), python, "-m", "mpi4py", script, *args]


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Run a Python script on N MPI ranks (abort-on-error).",
        epilog=f"`{prog} ckpt show|verify|merge|reshard ...`: checkpoint tools. "
               f"`{prog} plan ...` (dry-run planner) is not yet available.")
    p.add_argument("-n", "--worker_num", type=int, required=True, metavar="N",
                   help="number of ranks (processes) to launch")
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
    cmd = mpiexec_command(mpiexec, ns.worker_num, ns.script, ns.args, _is_open_mpi(mpiexec))
    sys.stdout.flush()
    try:
        code = subprocess.call(cmd)
    except KeyboardInterrupt:           # mpiexec got the same SIGINT and stops the ranks
        return 130
    return code if code >= 0 else 128 - code      # killed by signal s: the shell's 128 + s


def msops_main() -> int:
    """Entry point of the `msops` command (`msops ckpt ...`, or `msops -n N script.py`)."""
    return main(prog="msops")
