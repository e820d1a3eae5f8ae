"""Runs inside every rank of `mpiexec -n N python -m pytest tests/ranks/<files>`.

The world is initialised once. A failing test prints its report and aborts the job,
so one rank's failure never leaves the others blocked in a collective.
"""
import os
import sys

import pytest
from mpi4py import MPI

from msops.communication import init

init()


#: where test_ranks.py reads each rank's outcomes ("<nodeid> <outcome>" a line)
_RESULTS = os.environ.get("MSOPS_RANK_RESULTS")


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if _RESULTS and (report.when == "call" or report.failed):
        with open(os.path.join(_RESULTS, f"rank{MPI.COMM_WORLD.rank}.txt"), "a") as f:
            f.write(f"{report.nodeid} {report.outcome}\n")
    if report.failed:
        sys.stdout.write(f"\n[rank {MPI.COMM_WORLD.rank}] FAILED {report.nodeid}\n"
                         f"{report.longreprtext}\n")
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)
