"""Runs inside every rank of `mpiexec -n N python -m pytest tests/ranks/<file>`.

The world is initialised once. A failing test prints its report and aborts the job,
so one rank's failure never leaves the others blocked in a collective.
"""
import sys

import pytest
from mpi4py import MPI

from msops.communication import init

init()


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.failed:
        sys.stdout.write(f"\n[rank {MPI.COMM_WORLD.rank}] FAILED {report.nodeid}\n"
                         f"{report.longreprtext}\n")
        sys.stdout.flush()
        MPI.COMM_WORLD.Abort(1)
